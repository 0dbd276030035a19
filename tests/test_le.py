"""LE mechanism (seed 000 §IV): closed form vs LP, KKT certificates, grid scale path."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lpmech import estimation as est
from lpmech.errors import InfeasibleError, InputError
from lpmech.instance import from_matrix, grid, line
from lpmech.mechanism import realized_epsilon
from lpmech.models import baselines
from lpmech.models import le as L

# --------------------------------------------------------------------- closed forms (spec §2.4)


@pytest.mark.parametrize("eps", [1e-5, 0.3, 1.0, 2.5])
def test_1d_le_is_truncated_geometric(eps):
    inst = line(12)
    mech = L.le(inst, eps)
    geo = baselines.geometric(inst, eps)
    # at eps = 1e-5, E = 1 - eps·d + ... holds ~11 significant digits of p: p is exact to ~1e-6
    rtol = 1e-7 if eps > 1e-3 else 1e-5
    np.testing.assert_allclose(mech.matrix, geo.matrix, rtol=rtol, atol=1e-12)
    p = np.diag(mech.matrix)  # p_kk = E^{-1}1: 1/(1+e^-eps) at the ends, tanh(eps/2) inside
    np.testing.assert_allclose(p[[0, -1]], 1 / (1 + math.exp(-eps)), rtol=rtol)
    np.testing.assert_allclose(p[1:-1], math.tanh(eps / 2), rtol=rtol)
    assert mech.certificate.realized_epsilon == pytest.approx(eps, rel=1e-6)


def test_unit_metric_le_is_grr():
    m, eps = 7, 0.8
    mech = L.le(from_matrix(1.0 - np.eye(m)), eps)
    np.testing.assert_allclose(mech.matrix, baselines.randomized_response(m, eps).matrix, atol=1e-13)
    e = math.exp(eps)
    assert mech.matrix[0, 0] == pytest.approx(e / (e + m - 1), rel=1e-12)


def test_spec_reference_values():
    # spec §2.4 / §5.6 (independent numpy computation): 1-D m=100 and 10x10 at eps = 1
    m, rho = 100, math.exp(-1.0)
    P = L.le(line(m), 1.0).matrix
    closed = 1 - (2 / (1 + rho) + (m - 2) * (1 - rho) / (1 + rho)) / m
    c = np.full(m, 10.0)
    assert est.range_error(P, c, line(m).metric) == pytest.approx(closed, rel=1e-10)
    assert est.mse_theory(P, c) / 1000 == pytest.approx(8.608, rel=1e-3)
    g = grid(10, 10)
    P2 = L.le(g, 1.0).matrix
    assert est.range_error(P2, np.ones(100), g.metric) == pytest.approx(0.7866, abs=1e-4)
    assert est.mse_theory(P2, np.full(100, 10.0)) / 1000 == pytest.approx(80.04, rel=1e-3)
    assert np.diag(P2).min() == pytest.approx(0.1035, abs=1e-4)


# --------------------------------------------------------------- precondition and the clear error


def test_infeasible_epsilon_names_threshold():
    with pytest.raises(InfeasibleError, match=r"epsilon >= 0\.8776") as info:
        L.le(grid(3, 3), 0.5)
    assert "negative entries" in str(info.value)
    # the threshold, computed again by a plain scan, agrees with spec §2.4 (3x3: 0.877695)
    thr = L.feasibility_threshold(lambda e: L.le_diagonal(grid(3, 3).metric, e).min(), 0.5)
    assert thr == pytest.approx(0.877695, abs=2e-6)
    d = grid(3, 3).metric
    assert L.le_diagonal(d, thr * (1 - 1e-4)).min() < 0 <= L.le_diagonal(d, thr * (1 + 1e-5)).min()


def test_grid_threshold_matches_dense_and_spec():
    with pytest.raises(InfeasibleError, match=r"epsilon >= 0\.6653") as info:
        L.GridLE(10, 10, 0.5)
    # the first negative p_kk sit diagonally next to the corners (spec §2.4), 4 of them at eps = 0.5
    assert any(f"(row {a}, col {b})" in str(info.value) for a in (1, 8) for b in (1, 8))
    assert "4 negative entries" in str(info.value)
    with pytest.raises(InfeasibleError, match=r"epsilon >= 0\.6653"):
        L.le(grid(10, 10), 0.5)


def test_bad_inputs():
    with pytest.raises(InputError, match="gamma"):
        L.le(grid(2, 2, gamma=1.5), 1.0)
    with pytest.raises(InputError, match="epsilon"):
        L.le(grid(2, 2), -1)
    with pytest.raises(InputError, match="singular"):
        L.le(from_matrix(np.zeros((2, 2))), 1.0)
    with pytest.raises(InputError, match="path"):
        L.solve(grid(2, 2), 1.0, path="magic")


# ------------------------------------------------------------------- LP (8)+(12) == LE (Thm 1)


@pytest.mark.parametrize("inst, eps", [
    (line(6), 0.7), (line(6), 3.0),
    (grid(3, 3), 1.0), (grid(3, 2), 2.0),
    (grid(3, 3, metric="manhattan"), 0.4), (grid(3, 2, metric="manhattan"), 1.5),
])
def test_le_equals_pyomo_lp_optimum_uniform(inst, eps):
    mech = L.le(inst, eps)
    res = L.solve_pyomo_model(L.build_pyomo(inst, eps))
    le_obj = 1 - np.diag(mech.matrix).mean()
    assert res.objective == pytest.approx(le_obj, abs=1e-7)
    assert res.gap is not None and abs(res.bound - le_obj) < 1e-7
    np.testing.assert_allclose(res.mechanism.matrix, mech.matrix, atol=1e-6)


def test_pyomo_and_fast_lp_same_model():
    inst, eps = grid(3, 2), 1.3
    full = L.build_lp(inst, eps, reduce=False)
    model = L.build_pyomo(inst, eps, reduce=False)
    assert full.A.shape[0] == len(model.geo_ind) + len(model.unit) == 6 * 5 * 6 + 6  # m²(m−1) + m
    reduced = L.build_lp(inst, eps)
    assert reduced.A.shape[0] == len(L.build_pyomo(inst, eps).geo_ind) + 6 < full.A.shape[0]
    fast = L.solve(inst, eps, path="lp")  # reduced rows, sparse HiGHS
    pyo = L.solve_pyomo_model(model)  # all rows, declarative
    assert fast.objective == pytest.approx(pyo.objective, abs=1e-9)
    assert full.solve().objective == pytest.approx(pyo.objective, abs=1e-9)


def test_le_infeasible_falls_back_to_lp():
    # spec §2.7: 3x3 at eps = 0.5, LP optimum -sum p_kk = -2.0227 (LE's infeasible point: -2.0498)
    res = L.solve(grid(3, 3), 0.5)
    assert res.stats["le_feasible"] is False and res.stats["path"] == "lp"
    assert res.objective == pytest.approx(1 - 2.0227 / 9, abs=1e-4)
    assert res.stats["epsilon_threshold"] == pytest.approx(0.877695, abs=2e-6)
    assert res.certificate.realized_epsilon <= 0.5 * (1 + 1e-6)
    with pytest.raises(InfeasibleError):
        L.solve(grid(3, 3), 0.5, path="closed")


# ------------------------------------------------------------------------------------ KKT


@pytest.mark.parametrize("inst", [line(30), grid(6, 6), grid(10, 10), grid(5, 4, metric="manhattan")])
@pytest.mark.parametrize("eps", [1.0, 2.0])
def test_kkt_residuals_theorem1(inst, eps):
    r = L.kkt(inst, eps)
    assert r.max_residual <= 1e-9
    assert r.holds()
    # the multipliers' Lagrangian bound equals LE's objective -sum p_kk (zero duality gap)
    assert r.bound == pytest.approx(r.objective, abs=1e-9)
    assert r.objective == pytest.approx(-np.trace(L.le(inst, eps).matrix), abs=1e-9)


def test_kkt_fails_where_le_is_infeasible():
    r = L.kkt(grid(6, 6), 0.5)  # spec §2.6: stationarity holds, primal and dual feasibility fail
    assert r.stationarity <= 1e-12
    assert r.box > 1e-3 and r.dual > 1e-3
    assert not r.holds()


def test_weighted_lp_dual_test():
    inst = line(8)
    eps = 1.0
    E = np.exp(-eps * inst.metric)
    # a prior with E^-1 w >= 0 (w = E·positive): LE optimal, certified by the KKT bound
    w = E @ np.linspace(1, 2, 8)
    w /= w.sum()
    good = L.solve(inst.with_prior(w), eps)
    assert good.stats["lp_dual_test"] and good.stats["path"] == "closed"
    assert good.gap <= 1e-9
    lp = L.solve(inst.with_prior(w), eps, path="lp")
    assert lp.objective == pytest.approx(good.objective, abs=1e-8)
    # a spiky prior: E^-1 w has negative entries, LE is not optimal; the LP gives the gap
    w2 = np.zeros(8)
    w2[[2, 5]] = 0.5
    bad = L.solve(inst.with_prior(w2), eps)
    assert not bad.stats["lp_dual_test"] and bad.stats["path"] == "lp"
    assert bad.stats["engine_method"] == "full"  # solved by the design engine
    le_err = 1 - (w2 * np.diag(L.le(inst, eps).matrix)).sum()
    assert bad.stats["le_objective"] == pytest.approx(le_err, abs=1e-12)
    assert bad.stats["le_gap"] == pytest.approx(le_err - bad.objective, abs=1e-12)
    assert bad.stats["le_gap"] > 0.05  # LE keeps mass on cells no user holds
    assert bad.bound <= bad.objective + 1e-9


@pytest.mark.parametrize("method", ["full", "support", "outputs", "decomposition"])
def test_lp8_through_the_engine_equals_the_omg_lp_and_linprog(method):
    """LP (8)+(12) through lpmech.design (each engine path) = the sparse OMG LP of the same model
    (L.build_lp) = a dense scipy linprog written here from (8) with unscaled rows over all pairs."""
    from scipy.optimize import linprog

    rng = np.random.default_rng(12)
    inst = grid(3, 3).with_prior(rng.dirichlet(np.full(9, 0.4)))
    eps = 0.9
    res = L.solve(inst, eps, path="lp", lp_method=method, workers=1)
    assert res.stats["engine_method"] == method and res.stats["path"] == "lp"
    fast = L.build_lp(inst, eps).solve()
    m, d, w = 9, inst.metric, inst.prior
    rows = []
    for k in range(m):
        for i in range(m):
            for j in range(m):
                if i != j:
                    a = np.zeros((m, m))
                    a[i, k], a[j, k] = 1.0, -math.exp(eps * d[i, j])
                    rows.append(a.ravel())
    c = (w[:, None] * (1 - np.eye(m))).ravel()
    ref = linprog(c, A_ub=np.array(rows), b_ub=np.zeros(len(rows)), A_eq=np.kron(np.eye(m), np.ones(m)),
                  b_eq=np.ones(m), bounds=(0, 1), method="highs")
    assert res.objective == pytest.approx(ref.fun, abs=1e-8)
    assert res.objective == pytest.approx(fast.objective, abs=1e-8)
    assert res.bound <= ref.fun + 1e-9 and res.gap <= 1e-6
    assert realized_epsilon(res.mechanism.matrix, d) <= eps * (1 + 1e-6)


def test_lp_method_is_checked():
    with pytest.raises(InputError, match="LP method"):
        L.solve(grid(2, 2), 1.0, path="lp", lp_method="simplex-please")


# -------------------------------------------------------------------------------- grid path


@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
def test_grid_le_matches_dense(metric):
    W, H, eps = 7, 5, 1.2
    g = L.GridLE(W, H, eps, metric=metric)
    inst = grid(W, H, metric=metric)
    P = L.le(inst, eps).matrix
    np.testing.assert_allclose(g.dense(), P, atol=1e-12)
    np.testing.assert_allclose(g.p, np.diag(P), atol=1e-12)
    rng = np.random.default_rng(3)
    cstar = rng.integers(0, 20, W * H).astype(float)
    counts = est.reported_counts(P, cstar, rng)[1]
    np.testing.assert_allclose(g.estimate(counts), est.estimate_counts(P, counts), atol=1e-8)
    for r in (0, 1, math.sqrt(2), 2, 3.5):
        assert g.range_error(cstar, r) == pytest.approx(est.range_error(P, cstar, inst.metric, r),
                                                        abs=1e-12)
    assert g.mse_theory(cstar)[0] == pytest.approx(est.mse_theory(P, cstar), rel=1e-8)
    # the analytic certificate equals the brute-force realised epsilon
    assert g.certificate.realized_epsilon == pytest.approx(realized_epsilon(P, inst.metric), rel=1e-9)


def test_grid_mse_hutchinson_estimate():
    W, H, eps = 12, 10, 1.0
    g = L.GridLE(W, H, eps)
    cstar = np.full(W * H, 5.0)
    exact = g.mse_theory(cstar)[0]
    g_est = L.GridLE(W, H, eps)
    g_est.dense_max = 0  # force the stochastic estimate
    val, se = g_est.mse_theory(cstar, rng=np.random.default_rng(0), probes=200)
    assert se > 0 and abs(val - exact) <= 4 * se


def test_grid_le_large_reference():
    g = L.GridLE(100, 100, 1.0)  # spec §5.6: min p_kk 0.1035, max 0.5347 on 100x100 at eps = 1
    assert g.p.min() == pytest.approx(0.1035, abs=1e-4)
    assert g.p.max() == pytest.approx(0.5347, abs=1e-4)
    assert g.stats["residual"] <= 1e-9
    man = L.GridLE(100, 100, 0.01, metric="manhattan")  # feasible for every eps (spec §2.4)
    p1 = np.r_[1 / (1 + math.exp(-0.01)), np.full(98, math.tanh(0.005)), 1 / (1 + math.exp(-0.01))]
    np.testing.assert_allclose(man.p, np.kron(p1, p1), rtol=1e-9)


# ------------------------------------------------------------------------------------ CLI


def _run(capsys, argv):
    from lpmech.cli import main

    code = main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_cli_json_matches_spec_values(capsys):
    import json

    code, out, _ = _run(capsys, ["le", "--grid", "10x10", "--epsilon", "1", "--kkt", "--json"])
    assert code == 0
    res = json.loads(out)
    for key in ("status", "m", "realized_epsilon", "colocation_error", "mse_theory", "kkt_residual",
                "time_s"):
        assert key in res
    assert res["m"] == 100 and res["status"] == "optimal"
    assert res["colocation_error"] == pytest.approx(0.7866, abs=1e-4)  # spec §5.6
    assert res["mse_theory"] == pytest.approx(80.04, rel=1e-3)
    assert res["kkt_residual"] <= 1e-9
    assert res["realized_epsilon"] == pytest.approx(1.0, rel=1e-9)


@pytest.mark.parametrize("method", ["full", "support", "outputs"])
def test_cli_lp_method_through_the_engine(capsys, method):
    import json

    # 3x3 at eps = 0.5: LE is infeasible; the LP (8) optimum is -sum p_kk = -2.0227 (spec §2.7)
    code, out, _ = _run(capsys, ["le", "--grid", "3x3", "--epsilon", "0.5", "--lp", "--lp-method",
                                 method, "--json"])
    assert code == 0
    res = json.loads(out)
    assert res["path"] == "lp" and res["lp_method"] == method and res["status"] == "optimal"
    assert res["objective"] == pytest.approx(1 - 2.0227 / 9, abs=1e-4)
    assert res["realized_epsilon"] <= 0.5 * (1 + 1e-6)


def test_cli_scale_path_manhattan_closed_form(capsys):
    import json

    code, out, _ = _run(capsys, ["le", "--grid", "40x30", "--metric", "manhattan", "--epsilon", "0.8",
                                 "--kkt", "--json"])
    assert code == 0
    res = json.loads(out)
    assert res["path"] == "grid-kronecker" and res["m"] == 1200

    def p1(n, e):
        return np.r_[1 / (1 + math.exp(-e)), np.full(n - 2, math.tanh(e / 2)), 1 / (1 + math.exp(-e))]

    assert res["colocation_error"] == pytest.approx(1 - p1(40, 0.8).mean() * p1(30, 0.8).mean(), abs=1e-12)
    assert res["kkt_residual"] <= 1e-9


def test_cli_infeasible_epsilon(capsys):
    import json

    code, out, err = _run(capsys, ["le", "--grid", "10x10", "--epsilon", "0.5", "--json"])
    assert code == 3
    assert "epsilon >= 0.6653" in err and err.count("\n") == 1
    assert json.loads(out)["epsilon_threshold"] == pytest.approx(0.665389, abs=1e-5)
    code, _, err = _run(capsys, ["le", "--grid", "40x30", "--epsilon", "0.5"])
    assert code == 3 and "epsilon >= 0.665" in err


def test_cli_estimate_recovers_expected_counts(capsys, tmp_path):
    inst = grid(4, 3)
    P = L.le(inst, 1.5).matrix
    cstar = np.arange(12.0)
    np.save(tmp_path / "c.npy", P.T @ cstar)  # the expected reports: (15) must return c*
    code, _, _ = _run(capsys, ["le", "--grid", "4x3", "--epsilon", "1.5", "--estimate",
                               str(tmp_path / "c.npy"), "--out", str(tmp_path / "est.npy")])
    assert code == 0
    np.testing.assert_allclose(np.load(tmp_path / "est.npy"), cstar, atol=1e-9)
    code, _, err = _run(capsys, ["le", "--grid", "4x3", "--out", str(tmp_path / "x.npy")])
    assert code == 2 and "--estimate" in err
    assert not (tmp_path / "x.npy").exists()


# ------------------------------------------- issue 11: LE is not "optimal" for any prior


@pytest.mark.parametrize("seed", [0, 1, 2, 5])
def test_closed_form_for_a_prior_it_does_not_solve_is_feasible_with_a_valid_bound(seed):
    """With a prior for which LE fails the dual test, the closed path is status feasible and its
    bound lies below the LP (8) optimum (solved independently by the declarative Pyomo model) and
    above both the plain Lagrangian bound and 0; the auto path returns that LP optimum, optimal."""
    inst = grid(3, 3).with_prior(np.random.default_rng(seed).dirichlet(np.ones(9) * 0.5))
    closed = L.solve(inst, 1.0, path="closed")
    lp_opt = L.solve_pyomo_model(L.build_pyomo(inst, 1.0)).objective
    if closed.stats["lp_dual_test"]:  # LE is the optimum for this prior (Theorem 1's test)
        assert closed.status == "optimal" and closed.objective == pytest.approx(lp_opt, abs=1e-8)
        return
    assert closed.status == "feasible"
    lagrange = 1 + L.kkt(inst, 1.0, inst.prior).bound
    assert max(lagrange, 0.0) - 1e-12 <= closed.bound <= lp_opt + 1e-9 < closed.objective
    auto = L.solve(inst, 1.0)
    assert auto.status == "optimal" and auto.stats["path"] == "lp"
    assert auto.objective == pytest.approx(lp_opt, abs=1e-8)


def test_knapsack_bound_is_tight_for_the_uniform_prior():
    """For w uniform the knapsack bound is 1 − S/m, the LE optimum itself (Theorem 1)."""
    inst = grid(4, 3)
    S = L.le_diagonal(inst.metric, 0.8).sum()
    assert L.closed_form_bound(inst.metric, 0.8, inst.prior) == pytest.approx(1 - S / 12, rel=1e-9)
    assert L.solve(inst, 0.8).objective == pytest.approx(1 - S / 12, rel=1e-9)


def test_grid_path_infeasible_error_carries_the_dense_threshold():
    """The grid path's InfeasibleError has a Result with the same stats as the dense path's, and
    the threshold of an independent (dense) bisection."""
    with pytest.raises(InfeasibleError) as dense:
        L.solve(grid(6, 6), 0.3, path="closed")
    with pytest.raises(InfeasibleError) as fast:
        L.GridLE(6, 6, 0.3)
    d, g = dense.value.result, fast.value.result
    assert d.status == g.status == "infeasible"
    assert set(d.stats) == set(g.stats)
    assert g.stats["epsilon_threshold"] == pytest.approx(d.stats["epsilon_threshold"], rel=1e-5)
