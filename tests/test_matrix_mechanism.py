"""Matrix mechanism under metric LDP (seed 003 §3): every number checked a second way."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from lpmech.errors import InfeasibleError, InputError, TimeLimitError
from lpmech.models.matrix import matrix_mechanism as mm

# ------------------------------------------------------------------------------- workloads


def test_all_ranges_is_every_interval():
    W = mm.all_ranges(3)
    expected = [[1, 0, 0], [1, 1, 0], [1, 1, 1], [0, 1, 0], [0, 1, 1], [0, 0, 1]]
    assert W.tolist() == expected  # the paper's W_3 plus its missing row [0,1,1] (spec §5.5)
    W7 = mm.all_ranges(7)
    assert W7.shape == (28, 7)
    brute = {tuple(int(lo <= k <= hi) for k in range(7)) for lo in range(7) for hi in range(lo, 7)}
    assert {tuple(map(int, row)) for row in W7} == brute


def test_strategies_span_the_domain():
    for m in (1, 5, 8, 13):
        H, Haar = mm.hierarchical(m), mm.haar(m)
        assert np.linalg.matrix_rank(H) == m and np.linalg.matrix_rank(Haar) == m
        assert (H[0] == 1).all()  # root first
        # every column of the binary tree lies in one node per level: ceil(log2 m) + 1 levels
        assert (H.sum(axis=0) == int(np.ceil(np.log2(m))) + 1).all()
    Hr = mm.haar(8)
    G = Hr @ Hr.T
    assert np.allclose(G, np.diag(np.diag(G)))  # orthogonal rows on a power of two


def test_metrics_match_their_definitions():
    E = mm.es_metric(5, [1, 3], 0.5).matrix
    for x, y in itertools.product(range(5), repeat=2):
        want = 0 if x == y else (0.5 if {x, y} & {1, 3} else 1.0)
        assert E[x, y] == want
    sizes = (3, 2, 4)
    L1 = mm.l1_metric(sizes, 0.7).matrix
    cells = list(itertools.product(*[range(s) for s in reversed(sizes)]))  # last dim outermost
    cells = [c[::-1] for c in cells]
    ind = [1 + c[0] + 3 * c[1] + 6 * c[2] for c in cells]  # spec §1.6 index map, 1-based
    assert ind == list(range(1, 25))
    for i, j in itertools.product(range(24), repeat=2):
        assert L1[i, j] == pytest.approx(0.7 * sum(abs(a - b) for a, b in zip(cells[i], cells[j])))
    assert mm.line_metric(4, 2.0).matrix[0, 3] == 6.0


def test_metric_validation():
    with pytest.raises(InputError, match="epsilon"):
        mm.es_metric(5, 1, 0.0)
    with pytest.raises(InputError, match="S must"):
        mm.es_metric(5, [7], 1.0)
    with pytest.raises(InputError, match="symmetric"):
        mm.metric_from_matrix([[0, 1], [2, 0]])
    with pytest.raises(InputError, match="triangle"):
        mm.metric_from_matrix([[0, 1, 5], [1, 0, 1], [5, 1, 0]])
    with pytest.raises(InputError, match="unknown workload"):
        mm.make_workload("ranged", 4)
    with pytest.raises(InputError, match="columns"):
        mm.make_workload(np.ones((2, 3)), 4)
    with pytest.raises(InputError, match="too large"):
        mm.make_workload("ranges", 1000)
    with pytest.raises(InputError, match="range_mechanism"):
        mm.l1_metric(100, 1.0, D=2)


# ----------------------------------------------------------------------------- Proposition 2


def _brute_loss(A, u):
    m = A.shape[1]
    return np.array([[sum(u[k] * abs(A[k, x] - A[k, y]) for k in range(A.shape[0]))
                      for y in range(m)] for x in range(m)])


@pytest.mark.parametrize("kind", ["binary", "haar", "identity"])
def test_pair_loss_fast_paths_equal_the_definition(kind):
    rng = np.random.default_rng(1)
    A = {"binary": (rng.random((7, 6)) < 0.5).astype(float), "haar": mm.haar(6),
         "identity": np.eye(6)}[kind]
    u = rng.random(A.shape[0])
    assert np.allclose(mm.pair_loss(A, u), _brute_loss(A, u), atol=1e-12)


def test_certificate_detects_violations_and_noise_free_rows():
    m, eps = 8, 1.0
    A = mm.prefix(m)
    met = mm.line_metric(m, eps)
    s = np.r_[np.full(m - 1, 1 / eps), 0.0]  # s_m = 0 is fine: the last row of L_m is constant
    cert = mm.certify_strategy(A, s, met)
    assert cert.satisfied and cert.realized_epsilon == pytest.approx(eps)
    cert = mm.certify_strategy(A, s * 0.9, met)
    assert not cert.satisfied and cert.realized_epsilon == pytest.approx(eps / 0.9)
    assert cert.violation_ratio == 1.0  # every pair x<x' sums (x'−x) terms of 1/(0.9/ε)
    s_bad = s.copy()
    s_bad[2] = 0.0  # a noise-free row that separates values: no privacy
    assert mm.certify_strategy(A, s_bad, met).realized_epsilon == np.inf


def test_composition_proposition5():
    # two certified encoders run on the same value compose to E1 + E2 (Appendix B)
    m = 9
    e1, e2 = mm.es_metric(m, 2, 0.5), mm.line_metric(m, 0.3)
    r1, r2 = mm.solve_frequency(e1), mm.solve("ranges", e2, strategy="prefix")
    A = np.vstack([r1.mechanism.A, r2.mechanism.A])
    s = np.r_[r1.mechanism.s, r2.mechanism.s]
    both = mm.metric_from_matrix(e1.matrix + e2.matrix)
    assert mm.certify_strategy(A, s, both).satisfied
    assert np.allclose(mm.privacy_loss(A, s), mm.privacy_loss(r1.mechanism.A, r1.mechanism.s)
                       + mm.privacy_loss(r2.mechanism.A, r2.mechanism.s))
    assert not mm.certify_strategy(A, s, e1).satisfied


# ---------------------------------------------------------------------------- Proposition 3


def test_estimator_unbiased_and_variance_matches_monte_carlo():
    m, n, eps, reps = 5, 30, 1.0, 3000
    W = mm.all_ranges(m)
    res = mm.solve("ranges", mm.line_metric(m, eps), strategy="prefix")
    mech = res.mechanism
    rng = np.random.default_rng(7)
    x = rng.integers(0, m, n)
    truth = W @ np.bincount(x, minlength=m)
    err = np.array([mech.estimate(mech.encode(x, rng)) - truth for _ in range(reps)])
    # unbiased: each query's mean error within 4.5 standard errors (15 queries)
    se = np.sqrt(mech.query_variances(n) / reps)
    ok = se > 1e-9
    assert (np.abs(err.mean(axis=0))[ok] <= 4.5 * se[ok]).all()
    assert ok.sum() == 14 and (np.abs(err[:, ~ok]) < 1e-9).all()  # the whole-domain query is exact (s_m = 0)
    total = (err ** 2).sum(axis=1)
    ci = 4.0 * total.std(ddof=1) / np.sqrt(reps)
    assert abs(total.mean() - mech.total_error(n)) <= ci
    # and Proposition 3 equals the paper's closed form 2nm(m−1)/ε²
    assert mech.total_error(n) == pytest.approx(2 * n * m * (m - 1) / eps ** 2, rel=1e-6)


# ------------------------------------------------------------------------------ program (2)


@pytest.mark.parametrize("k", [0, 1, 10, 40, 50, 51, 100])
def test_program2_equals_es_closed_form(k):
    res = mm.solve_frequency(mm.es_metric(100, k, 1.0))
    cf = (k ** (1 / 3) + (100 - k) ** (1 / 3)) ** 3 * 2 if 0 < k <= 50 else (800 if k else 200)
    assert res.objective == pytest.approx(cf, rel=1e-6)
    assert res.bound <= res.objective * (1 + 1e-12) and res.gap <= 1e-6
    assert res.certificate.satisfied
    assert mm.certify_strategy(np.eye(100), res.mechanism.s, mm.es_metric(100, k, 1.0)).satisfied


def test_fig1_ratios_from_the_spec():
    ratios = {k: mm.solve_frequency(mm.es_metric(100, k, 2.0), n=3).objective / (8 * 3 * 100 / 4)
              for k in (1, 10, 40)}
    assert ratios[1] == pytest.approx(0.445, abs=5e-4)
    assert ratios[10] == pytest.approx(0.731, abs=5e-4)
    assert ratios[40] == pytest.approx(0.987, abs=5e-4)


def test_program2_lazy_equals_monolithic_and_scipy_on_arbitrary_metric():
    rng = np.random.default_rng(3)
    xy = rng.random((40, 2))
    E = 3 * np.sqrt(((xy[:, None] - xy[None]) ** 2).sum(-1))
    met = mm.metric_from_matrix(E)
    lazy = mm.solve_frequency(met, lazy=True)
    full = mm.solve_frequency(met, lazy=False)
    assert lazy.stats["pairs_used"] < full.stats["pairs_used"] == 780
    assert lazy.objective == pytest.approx(full.objective, rel=1e-6)
    assert lazy.bound <= full.objective * (1 + 1e-9) and lazy.gap <= 1e-6
    # an independent solver (SLSQP in u) on a small instance
    m = 6
    met6 = mm.metric_from_matrix(E[:m, :m])
    iu = np.triu_indices(m, 1)
    cons = {"type": "ineq", "fun": lambda u: E[:m, :m][iu] - (u[iu[0]] + u[iu[1]])}
    # start at a feasible, well-scaled point (half the shortest distance), and check the reference
    # itself: an SLSQP that stops at its start point must fail the test, not define the answer
    u0 = np.full(m, 0.45 * E[:m, :m][iu].min())
    sol = minimize(lambda u: 2 * np.sum(u ** -2.0), u0, jac=lambda u: -4 * u ** -3.0,
                   constraints=[cons], bounds=[(1e-6, None)] * m, method="SLSQP",
                   options={"ftol": 1e-10, "maxiter": 1000})
    assert sol.success, sol.message
    assert cons["fun"](sol.x).min() >= -1e-9 and np.abs(sol.x - u0).max() > 1e-3
    ours = mm.solve_frequency(met6)
    assert ours.objective == pytest.approx(sol.fun, rel=1e-5)


def test_lagrangian_bound_is_valid_for_any_multipliers():
    met = mm.es_metric(12, 3, 1.0)
    opt = mm.solve_frequency(met).objective
    iu = np.triu_indices(12, 1)
    M = mm._pair_rows(np.eye(12), *iu)
    rng = np.random.default_rng(0)
    for _ in range(20):
        lam = rng.exponential(size=M.shape[0]) * rng.random()
        assert mm.lagrangian_bound(2 * np.ones(12), M, met.matrix[iu], lam) <= opt * (1 + 1e-12)


# ------------------------------------------------------------------------------ program (1)


@pytest.mark.parametrize("lazy", [False, True])
def test_prefix_strategy_equals_paper_closed_form(lazy):
    m, eps, n = 10, 0.5, 4
    res = mm.solve("ranges", mm.line_metric(m, eps), strategy="prefix", n=n, lazy=lazy)
    assert res.objective == pytest.approx(2 * n * m * (m - 1) / eps ** 2, rel=1e-6)  # 180n/ε² · …
    assert res.stats["closed_form"] == pytest.approx(2 * n * m * (m - 1) / eps ** 2)
    assert np.allclose(res.mechanism.s, np.r_[np.full(m - 1, 1 / eps), 0.0], rtol=1e-6)
    assert np.allclose((res.mechanism.B ** 2).sum(axis=0), m)  # diag(BᵀB) = m (spec §2.4)
    pre = mm.solve("prefix", mm.line_metric(m, eps), strategy="prefix", n=n, lazy=lazy)
    assert pre.objective == pytest.approx(2 * n * (m - 1) / eps ** 2, rel=1e-6)


def test_alternating_reconstruction_never_worse_and_certified():
    met = mm.line_metric(12, 1.0)
    pinv = mm.solve("ranges", met, strategy="hierarchical")
    alt = mm.solve("ranges", met, strategy="hierarchical", reconstruction="alternate")
    assert alt.objective <= pinv.objective * (1 + 1e-9)
    assert np.allclose(alt.mechanism.B @ alt.mechanism.A, mm.all_ranges(12), atol=1e-6)
    for r in (pinv, alt):
        assert mm.certify_strategy(r.mechanism.A, r.mechanism.s, met).satisfied
        assert r.mechanism.total_error(1) == pytest.approx(r.objective)


def test_constant_workload_needs_no_noise():
    # the total count n is known exactly from a constant strategy row (s = 0, error 0)
    res = mm.solve(np.ones((1, 5)), mm.line_metric(5, 1.0), strategy=np.ones((1, 5)))
    assert res.objective == 0.0 and res.mechanism.s.tolist() == [0.0]
    assert res.certificate.satisfied and res.certificate.realized_epsilon == 0.0


def _line_scale_program_by_slsqp(W, A, eps):
    """Program (1)'s total error for a fixed strategy A under ε|x − x'|, solved here by SLSQP:
    min Σ_j 2‖B[:, j]‖² s_j² s.t. Σ_j |A_jx − A_jx'| / s_j ≤ ε|x − x'|, B = W A⁺. On the line
    only adjacent pairs bind (|·| is subadditive and the distance additive); in t = log(1/s). Rows
    no pair tells apart, or no query uses, carry no noise cost and are left out. SLSQP's end point
    is scaled back onto the constraints, so the value returned is that of a feasible point."""
    B = W @ np.linalg.pinv(A)
    c = 2 * (B ** 2).sum(axis=0)
    M = np.abs(np.diff(A, axis=1)).T  # adjacent pairs × strategy rows
    keep = M.any(axis=0) & (c > 1e-12)
    M, c = M[:, keep], c[keep]
    y0 = np.full(c.size, np.log(eps / M.sum(axis=1).max()))  # feasible start
    sol = minimize(lambda y: (c * np.exp(-2 * y)).sum(), y0, jac=lambda y: -2 * c * np.exp(-2 * y),
                   constraints=[{"type": "ineq", "fun": lambda y: eps - M @ np.exp(y),
                                 "jac": lambda y: -M * np.exp(y)}],
                   method="SLSQP", options={"ftol": 1e-15, "maxiter": 2000})
    u = np.exp(sol.x)
    u /= max(1.0, (M @ u).max() / eps)  # onto the constraints
    return float((c / u ** 2).sum())


def test_choose_strategy_heuristic():
    m, eps = 16, 1.0
    best = mm.choose_strategy("ranges", mm.line_metric(m, eps))
    table = best.stats["candidates"]
    # each candidate's error against an independent solve of its scale program (SLSQP: a feasible
    # point, so ours is at most its value); the heuristic keeps the least of those
    W = mm.all_ranges(m)
    ref = {name: _line_scale_program_by_slsqp(W, build(m), eps)
           for name, build in (("identity", mm.identity), ("prefix", mm.prefix),
                               ("hierarchical", mm.hierarchical))}
    assert set(table) == set(ref)
    for name, value in ref.items():
        assert table[name] == pytest.approx(value, rel=1e-5)
        assert table[name] <= value * (1 + 1e-9)
    assert best.stats["strategy"] == min(ref, key=ref.get) == "prefix"
    assert best.objective == pytest.approx(2 * m * (m - 1) / eps ** 2, rel=1e-6)  # §3.3 closed form
    best = mm.choose_strategy("identity", mm.es_metric(16, 2, 1.0))
    assert best.stats["strategy"] == "identity"
    assert best.objective == pytest.approx(mm.es_closed_form(16, 2, 1.0), rel=1e-6)


def test_errors():
    E = np.array([[0, 0, 1], [0, 0, 1], [1, 1, 0]], float)
    with pytest.raises(InfeasibleError, match="E\\(0, 1\\) = 0"):
        mm.solve_frequency(mm.metric_from_matrix(E))
    with pytest.raises(InputError, match="not answerable"):
        mm.solve("identity", mm.line_metric(4, 1.0), strategy=np.ones((1, 4)))
    with pytest.raises(InputError, match="n \\(number of users\\)"):
        mm.solve_frequency(mm.es_metric(5, 1, 1.0), n=0)
    with pytest.raises(InputError, match="at least 2"):
        mm.solve_frequency(mm.es_metric(1, 0, 1.0))
    with pytest.raises(TimeLimitError):
        mm.solve_frequency(mm.es_metric(60, 5, 1.0), lazy=False, time_limit=1e-4)
    mech = mm.MatrixMechanism(np.eye(3), np.eye(3), np.ones(3))
    with pytest.raises(InputError, match=r"integers in 0\.\.2"):
        mech.encode(np.array([0, 3]), np.random.default_rng(0))


# ------------------------------------------------------------------------------------- CLI


def _run_json(capsys, *argv):
    import json

    from lpmech.cli import main

    code = main(["mm", *argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_cli_default_is_program2_under_es(capsys):
    code, out = _run_json(capsys)
    assert code == 0 and out["status"] == "optimal" and out["m"] == 100
    for key in ("objective", "bound", "gap", "closed_form", "time_s"):
        assert key in out
    cf = 2 * (10 ** (1 / 3) + 90 ** (1 / 3)) ** 3
    assert out["closed_form"] == pytest.approx(cf) and out["objective"] == pytest.approx(cf, rel=1e-6)
    assert out["bound"] <= out["objective"] and out["realized_epsilon"] <= 1 + 1e-6


def test_cli_ranges_matrix_file_and_errors(capsys, tmp_path):
    code, out = _run_json(capsys, "--workload", "ranges", "--metric", "line", "--m", "12",
                          "--strategy", "auto", "--epsilon", "2", "--n", "5")
    assert code == 0 and out["strategy"] == "prefix"
    assert out["objective"] == pytest.approx(2 * 5 * 12 * 11 / 4, rel=1e-6)
    E = mm.es_metric(8, 3, 1.0).matrix
    np.save(tmp_path / "E.npy", E)
    code, out = _run_json(capsys, "--metric", "matrix", "--distances", str(tmp_path / "E.npy"))
    assert code == 0 and out["closed_form"] is None
    assert out["objective"] == pytest.approx(mm.es_closed_form(8, 3, 1.0), rel=1e-6)
    code, out = _run_json(capsys, "--m", "5", "--S", "9")
    assert code == 2 and out["error_type"] == "InputError"


def test_program_epsilon_range_is_input_error_and_its_edges_solve():
    with pytest.raises(InputError, match=r"epsilon 1e\+155 is outside the usable range"):
        mm.es_metric(10, 3, 1e155)
    with pytest.raises(InputError, match=r"epsilon 1e-300 is outside the usable range"):
        mm.line_metric(10, 1e-300)
    with pytest.raises(InputError, match="positive values in"):
        mm.metric_from_matrix(1e-200 * mm.es_metric(5, 2, 1.0).matrix)
    for eps in mm.EPS_RANGE:  # homogeneous: the optimum is the closed form at any usable ε
        res = mm.solve_frequency(mm.es_metric(12, 3, eps))
        assert res.objective == pytest.approx(mm.es_closed_form(12, 3, 1.0) / eps ** 2, rel=1e-6)
        assert res.gap <= 1e-6
