"""LIP at large d: the exact pricing oracles against brute-force enumeration of the section's
vertices, and the certified column generation against the exact vertex method."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from lpmech.models import lip
from lpmech.models.lip.lip_optimize import price_rank1, price_separable


def _box_vertices(P, lo, hi):
    """Every vertex of {lo ≤ c ≤ hi, P·c = 1}: all coordinates at a bound but one (brute force)."""
    d = P.size
    for j in range(d):
        others = [x for x in range(d) if x != j]
        for bits in itertools.product((lo, hi), repeat=d - 1):
            c = np.empty(d)
            c[others] = bits
            c[j] = (1 - P[others] @ c[others]) / P[j]
            if lo - 1e-12 <= c[j] <= hi + 1e-12:
                yield c


@pytest.mark.parametrize("seed", range(6))
def test_exact_pricing_equals_enumeration(seed):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(2, 8))
    P = rng.dirichlet(np.ones(d)) if seed % 2 else np.full(d, 1 / d)
    eps = float(rng.uniform(0.3, 2.5))
    lo, hi = np.exp(-eps), np.exp(eps)
    y, w = rng.normal(size=d), rng.normal(size=d) * P
    alpha = P ** 2 * rng.uniform(0.5, 2.0, size=d)
    V = list(_box_vertices(P, lo, hi))
    brute1 = max((w @ c) ** 2 + y @ c for c in V)
    brute2 = max(float((alpha * c * c + y * c).sum()) for c in V)
    gains, pts = price_rank1(P, w, y, lo, hi)
    assert gains[0] == pytest.approx(brute1, abs=1e-10)
    assert (w @ pts[0]) ** 2 + y @ pts[0] == pytest.approx(gains[0], abs=1e-10)
    assert abs(P @ pts[0] - 1) < 1e-12 and pts.min() >= lo - 1e-12 and pts.max() <= hi + 1e-12
    ub, c, best, _ = price_separable(P, alpha, y, lo, hi)
    assert best == pytest.approx(brute2, abs=1e-10)
    assert float((alpha * c * c + y * c).sum()) == pytest.approx(best, abs=1e-12)
    assert ub >= brute2 - 1e-10 and ub - brute2 <= 1e-9
    # identical items (histogram with a uniform prior): the exchange-argument enumeration
    Pu, au = np.full(d, 1 / d), np.full(d, 1 / d ** 2)
    brute3 = max(float((au * c * c + y * c).sum()) for c in _box_vertices(Pu, lo, hi))
    ub3, _, best3, _ = price_separable(Pu, au, y, lo, hi)
    assert ub3 == pytest.approx(brute3, abs=1e-10) and best3 == pytest.approx(brute3, abs=1e-10)


@pytest.mark.parametrize("task", ["sum", "hist"])
@pytest.mark.parametrize("prior", ["uniform", "dirichlet"])
def test_exact_colgen_equals_vertex_method(task, prior):
    rng = np.random.default_rng(3)
    for d in (3, 5, 7):
        P = np.full(d, 1 / d) if prior == "uniform" else rng.dirichlet(np.ones(d))
        for eps in (0.5, 2.0):
            v = lip.solve(P, eps, task=task, method="vertex")
            e = lip.solve(P, eps, task=task, method="exact")
            assert e.status == "optimal"
            assert e.certificate.satisfied
            assert e.objective == pytest.approx(v.objective, rel=1e-6)
            assert e.bound <= v.objective * (1 + 1e-9) + 1e-12  # a valid lower bound
            assert e.gap <= 1e-6 * max(1.0, e.objective)


def test_exact_d20_certified_and_not_above_local():
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(20))
    e = lip.solve(P, 1.0, task="sum", method="exact")
    loc = lip.solve(P, 1.0, task="sum", method="local", rng=np.random.default_rng(1), starts=2)
    assert e.status == "optimal" and loc.status == "feasible" and loc.bound is None
    assert e.gap <= 1e-6 * e.objective
    assert e.bound <= loc.objective + 1e-9  # the bound holds for every LIP channel
    assert e.objective <= loc.objective + 1e-9
    assert lip.lip_epsilon(e.mechanism.matrix, P) <= 1.0 * (1 + 1e-6)


def test_exact_refuses_families_without_exact_pricing():
    from lpmech.errors import InputError

    with pytest.raises(InputError, match="exact"):
        lip.solve([0.2, 0.3, 0.5], 1.0, method="exact", notion="ldp", task="hist")


def test_api_raises_on_a_stop_without_certified_optimum():
    from lpmech.errors import NotOptimalError, TimeLimitError

    rng = np.random.default_rng(4)
    P = rng.dirichlet(np.ones(15))
    with pytest.raises(TimeLimitError) as exc:
        lip.solve(P, 1.0, task="hist", method="exact", time_limit=1e-3)
    r = exc.value.result
    assert r.status == "time_limit" and r.certificate.satisfied and r.bound is not None
    loc = lip.solve(P, 1.0, task="hist", method="local", rng=np.random.default_rng(0), starts=1)
    assert loc.status == "feasible" and loc.bound is None  # the user's explicit choice: returned
    assert r.bound <= loc.objective + 1e-9  # the bound holds for every eps-LIP channel
    # auto on a family without exact pricing (histogram, latent secret, d > 8) falls back to the
    # local solve: no certified optimum, so it raises, with the certified-private result attached
    T = rng.dirichlet(np.ones(9), size=3)
    Pl = rng.dirichlet(np.ones(3)) @ T
    with pytest.raises(NotOptimalError) as exc2:
        lip.solve(Pl, 1.0, T=T, task="hist", rng=np.random.default_rng(0), starts=1)
    assert exc2.value.result.status == "feasible"
    assert lip.lip_epsilon(exc2.value.result.mechanism.matrix, Pl, T) <= 1.0 * (1 + 1e-6)


def _box_vertices_array(P, lo, hi):
    """The same vertices as :func:`_box_vertices`, as an array (vectorised brute force, d ≤ ~12)."""
    d = P.size
    bits = np.array(list(itertools.product((0, 1), repeat=d - 1)), bool)
    out = []
    for j in range(d):
        others = np.array([x for x in range(d) if x != j])
        C = np.empty((bits.shape[0], d))
        C[:, others] = np.where(bits, hi, lo)
        C[:, j] = (1 - C[:, others] @ P[others]) / P[j]
        out.append(C[(C[:, j] >= lo - 1e-12) & (C[:, j] <= hi + 1e-12)])
    return np.vstack(out)


@pytest.mark.parametrize("seed", range(4))
def test_batched_separable_branch_and_bound_equals_enumeration(seed):
    """The batched branch and bound (many nodes per step) at d = 11 with a skewed prior: its optimum
    equals brute-force enumeration of the section's vertices, and its upper bound stays valid when a
    node cap, the relative rule or ``stop_above`` ends the search early."""
    rng = np.random.default_rng(100 + seed)
    d = 11
    P = rng.dirichlet(np.full(d, 0.5))
    P = np.maximum(P, 1e-3)
    P /= P.sum()
    eps = float(rng.uniform(1.0, 4.0))
    lo, hi = np.exp(-eps), np.exp(eps)
    alpha = P ** 2
    y = rng.normal(scale=P.mean() ** 2 * 3, size=d) - 1.5 * alpha  # near-degenerate gains, as late duals
    C = _box_vertices_array(P, lo, hi)
    vals = (alpha * C * C + y * C).sum(axis=1)
    brute = float(vals.max())
    pool: list = []
    ub, c, best, _ = price_separable(P, alpha, y, lo, hi, pool=pool)
    assert best == pytest.approx(brute, abs=1e-12 * max(1.0, abs(brute)))
    assert ub >= brute - 1e-13 and ub - brute <= 1e-10
    assert abs(P @ c - 1) < 1e-12 and c.min() >= lo - 1e-12 and c.max() <= hi + 1e-12
    assert all(float((alpha * p * p + y * p).sum()) == pytest.approx(v, abs=1e-12) for v, p in pool)
    ub1, _, best1, _ = price_separable(P, alpha, y, lo, hi, max_batch=1)  # one node at a time
    assert best1 == pytest.approx(brute, abs=1e-12 * max(1.0, abs(brute))) and ub1 >= brute - 1e-13
    for kw in ({"max_nodes": 3}, {"max_nodes": 40}, {"rel": 0.5}, {"stop_above": float(np.median(vals))}):
        ub2, _, best2, _ = price_separable(P, alpha, y, lo, hi, **kw)
        assert ub2 >= brute - 1e-13 and best2 <= brute + 1e-13
    # enough: a bound at or below it is all the caller needs; the bound stays valid either way
    spread = float(vals.max() - np.median(vals))
    for en in (brute - 0.1 * spread, brute + 0.01 * spread):
        ub3, _, best3, _ = price_separable(P, alpha, y, lo, hi, enough=en)
        assert ub3 >= brute - 1e-13 and best3 <= brute + 1e-13
        if en >= brute:
            assert ub3 <= en + 1e-13


def _hist_mse(Q, P):
    """MSE of the MMSE estimator of the one-hot vector e_X from the output (histogram task), by
    Bayes' rule column by column: Σ_k Σ_x P_x Q_xk ‖e_x − posterior_k‖² (independent of the solver's
    column utilities)."""
    mse = 0.0
    for q in Q.T:
        lam = float(P @ q)
        if lam <= 0:
            continue
        post = P * q / lam
        mse += sum(P[x] * q[x] * float(((np.eye(P.size)[x] - post) ** 2).sum()) for x in range(P.size))
    return mse


@pytest.mark.parametrize("eps", [4.0, 6.0])
def test_exact_histogram_wide_box_certified(eps):
    """Regression (Gowalla d = 86, eps = 4 not certified): at large eps the columns' Σ c is far from
    their mass λ = P·c, and a master whose reduced costs were per unit of Σ c kept columns whose gain
    per unit of mass exceeded the gap target below its dual tolerance (the same columns came back
    every round; this cell stopped at the time limit with gap 7e-5). The certified MSE is checked by
    Bayes' rule, and the bound against an independent local solve."""
    P = np.random.default_rng(0).dirichlet(np.full(30, 0.3))
    P = np.maximum(P, 1e-6)
    P /= P.sum()
    e = lip.solve(P, eps, task="hist", method="exact", time_limit=60)
    assert e.status == "optimal" and e.certificate.satisfied
    assert e.objective - e.bound <= 1e-6 * e.objective
    Q = e.mechanism.matrix
    assert np.abs(Q.sum(axis=1) - 1).max() < 1e-9 and Q.min() >= 0
    assert lip.lip_epsilon(Q, P) <= eps * (1 + 1e-6)
    assert _hist_mse(Q, P) == pytest.approx(e.objective, rel=1e-9)
    loc = lip.solve(P, eps, task="hist", method="local", rng=np.random.default_rng(1), starts=2)
    assert e.bound <= _hist_mse(loc.mechanism.matrix, P) + 1e-12
    assert e.stats["repeated_columns"] == 0


@pytest.mark.parametrize("seed", range(8))
def test_counts_knapsack_pricing_equals_enumeration(seed):
    """The dynamic programme for an empirical prior (P = counts / N) against brute-force enumeration
    of the section's vertices: the same max, a point of the section attaining it."""
    from lpmech.models.lip.lip_optimize import counts_denominator, price_separable_counts

    rng = np.random.default_rng(200 + seed)
    d = int(rng.integers(2, 11))
    n = rng.integers(1, 40, size=d)
    P = n / n.sum()
    N = counts_denominator(P)
    assert N is not None and np.abs(P * N - np.round(P * N)).max() < 1e-9
    Pd = rng.dirichlet(np.ones(d)) + 1e-7
    assert counts_denominator(Pd / Pd.sum()) is None  # not an empirical prior
    eps = float(rng.uniform(0.5, 5.0))
    lo, hi = np.exp(-eps), np.exp(eps)
    alpha = P ** 2
    y = rng.normal(scale=P.mean() ** 2 * 3, size=d) - 1.5 * alpha  # near-degenerate, as late duals
    C = _box_vertices_array(P, lo, hi)
    brute = float((alpha * C * C + y * C).sum(axis=1).max())
    best, c = price_separable_counts(P * N, alpha, y, lo, hi)
    assert best == pytest.approx(brute, abs=1e-12 * max(1.0, abs(brute)))
    assert float((alpha * c * c + y * c).sum()) == pytest.approx(best, abs=1e-12)
    assert abs(P @ c - 1) < 1e-12 and c.min() >= lo - 1e-12 and c.max() <= hi + 1e-12


def test_empirical_prior_certified_by_the_knapsack_fallback():
    """An empirical prior (counts / N) whose converged master leaves the secant branch and bound on a
    plateau above the gap target: without the exact fallback the column generation stops
    ``feasible``; with it, certified. The certified MSE by Bayes' rule, the bound against a local
    solve."""
    from lpmech.models.lip.lip import _scenarios, family_rows
    from lpmech.models.lip.lip_estimation import value_matrix
    from lpmech.models.lip.lip_optimize import ExactPricing, solve_colgen

    d, eps = 40, 4.0
    n = np.maximum(1, np.round(np.random.default_rng(1).dirichlet(np.full(d, 0.5)) * 3000)).astype(int)
    P = n / n.sum()
    scen = _scenarios(P, None, None)
    V, rows = value_matrix("hist", d, None), family_rows("lip", scen, eps)
    runs = {}
    for fallback in (False, True):
        pricing = ExactPricing.make(scen, V, "lip", eps)
        assert pricing.den is not None
        if not fallback:
            pricing.den = None
        runs[fallback] = solve_colgen(scen, V, rows, pricing, gap_tol=0.9e-6, time_limit=60)
    assert runs[False][2]["stop"] == "feasible"
    _, lb, info = runs[True]
    assert info["stop"] == "optimal" and info["exact_fallback"] >= 1
    assert runs[False][1] <= lb  # the exact oracle's bound is the better one
    e = lip.solve(P, eps, task="hist", method="exact", time_limit=60)
    assert e.status == "optimal" and e.objective - e.bound <= 1e-6 * e.objective
    assert _hist_mse(e.mechanism.matrix, P) == pytest.approx(e.objective, rel=1e-9)
    loc = lip.solve(P, eps, task="hist", method="local", rng=np.random.default_rng(1), starts=2)
    assert e.bound <= _hist_mse(loc.mechanism.matrix, P) + 1e-12


# ------------------------------------------------------------------ priors with tiny entries

_spiky = st.tuples(st.integers(3, 8), st.integers(0, 2**31 - 1),
                   st.sampled_from([0.03, 0.05, 0.2]), st.sampled_from([0.1, 0.5, 1.0, 2.0, 4.0]),
                   st.sampled_from(["sum", "hist"]))


@settings(max_examples=25, deadline=None)
@given(_spiky)
def test_exact_equals_vertex_on_spiky_priors(case):
    """Dirichlet(α ≤ 0.2) priors carry entries down to 1e-30: the posterior-form master holds
    their rows to its tolerance only (row sums 0.12 … 2.2 seen), which the repair must refill
    without losing the optimum. Checked against the vertex method (a different algorithm)."""
    d, seed, alpha, eps, task = case
    P = np.random.default_rng(seed).dirichlet(np.full(d, alpha))
    # a near point mass: the histogram's MSE (Σ P_k(1 − P_k) at most) falls below what the
    # master's dual tolerance resolves (the sum task is centred: see the next test)
    assume(task == "sum" or P.max() < 1 - 1e-4)
    v = lip.solve(P, eps, task=task, method="vertex")
    e = lip.solve(P, eps, task=task, method="exact")
    assert v.status == e.status == "optimal"
    assert lip.lip_epsilon(e.mechanism.matrix, P) <= eps * (1 + 1e-6)
    assert np.allclose(e.mechanism.matrix.sum(axis=1), 1, atol=1e-12)
    assert e.objective == pytest.approx(v.objective, rel=2e-6, abs=1e-12)
    assert e.bound <= v.objective * (1 + 1e-9) + 1e-12


def test_exact_sum_on_a_near_point_mass_prior():
    """MSE 2.5e-6 against E[V²] ≈ 1: the master works on the centred values, else its dual
    tolerance (1e-10, HiGHS' floor) leaves a 4e-5 relative gap. Checked against the vertex method."""
    P = np.array([1.04956593e-09, 9.99997507e-01, 2.49182831e-06])
    P = P / P.sum()
    v = lip.solve(P, 0.1, task="sum", method="vertex")
    e = lip.solve(P, 0.1, task="sum", method="exact")
    assert e.status == "optimal"
    assert e.objective == pytest.approx(v.objective, rel=1e-6)
    assert e.bound <= v.objective * (1 + 1e-9)


def test_repair_refills_rows_of_tiny_prior_at_the_noise_cost():
    """A certified optimum whose rows of prior 1e-12 and 1e-9 are scaled by 1.6 and 0.5 (what a
    posterior-form master's tolerance allows): the repair gives rows summing to 1, every privacy
    row satisfied, and the MSE of the optimum to 1e-9 (before: the columns were merged)."""
    from lpmech.models.lip.lip_estimation import mmse_mse, value_matrix

    P = np.array([0.3, 1e-12, 0.25, 1e-9, 0.45 - 1e-12 - 1e-9])
    eps = 0.5
    V = value_matrix("sum", 5, None)
    Q = lip.solve(P, eps, method="vertex").mechanism.matrix
    A = lip.family_rows("lip", lip._scenarios(P), eps)
    noisy = Q.copy()
    noisy[1] *= 1.6
    noisy[3] *= 0.5
    R = lip.repair_columns(noisy, A)
    assert np.allclose(R.sum(axis=1), 1, atol=1e-14)
    assert (A @ R).max() <= 1e-15
    assert lip.lip_epsilon(R, P) <= eps * (1 + 1e-9)
    assert mmse_mse(R, P, V) == pytest.approx(mmse_mse(Q, P, V), rel=1e-9)


def test_auto_without_an_exact_method_returns_a_certified_local_channel_in_the_error():
    """LDP and a histogram at d = 10: no exact pricing, so auto falls back to the local solve
    (seeded when no rng is given) and raises NotOptimalError with the certified channel attached
    (before: an InputError asking for an rng the user never chose to need)."""
    from lpmech.errors import NotOptimalError

    P = np.random.default_rng(4).dirichlet(np.ones(10))
    with pytest.raises(NotOptimalError) as info:
        lip.solve(P, 1.0, notion="ldp", task="hist")
    Q = info.value.result.mechanism.matrix
    assert info.value.result.status == "feasible"
    assert np.allclose(Q.sum(axis=1), 1)
    used = Q.sum(axis=0) > 0
    ratio = Q[:, None, used] / Q[None, :, used]  # every pair of inputs, every used output
    assert np.log(ratio.max()) <= 1.0 * (1 + 1e-6)


def test_auto_recovers_a_certified_channel_where_the_lp_pricing_fails():
    """LDP, sum, d = 10, prior entries down to 8e-11: the LP pricing in posterior form is
    ill-posed (HiGHS: infeasible). ``auto`` falls back to the local solve, whose channel the
    NotOptimalError carries, certified (checked here by every ratio); ``exact`` still raises."""
    from lpmech.errors import LpmechError, NotOptimalError

    P = np.array([5.393283112884548e-05, 7.809500972683832e-05, 1.8008589275233614e-05,
                  7.841621803301304e-11, 2.3654401621390707e-05, 0.4087756965962764,
                  1.6320256056095517e-08, 7.525066604234952e-09, 0.054721008655119266,
                  0.5363295799931134])
    P = P / P.sum()
    try:
        res = lip.solve(P, 1.0, notion="ldp", task="sum")
    except NotOptimalError as exc:  # the expected path while the LP pricing is ill-posed here
        res = exc.result
        assert "exact_error" in res.stats
    except LpmechError as exc:  # pragma: no cover - anything else is the bug this test guards
        pytest.fail(f"auto raised {type(exc).__name__}: {exc}")
    Q = res.mechanism.matrix
    assert np.allclose(Q.sum(axis=1), 1)
    used = Q.sum(axis=0) > 0
    assert np.log((Q[:, None, used] / Q[None, :, used]).max()) <= 1.0 * (1 + 1e-6)
