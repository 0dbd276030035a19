"""OMG (seed 002 (1)–(7)): our optimum against qif, Pyomo model against fast path, certificates."""

import math
import time

import cvxpy as cp
import networkx as nx
import numpy as np
import pyomo.environ as pyo
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lpmech import instance as li
from lpmech.errors import InfeasibleError, InputError, TimeLimitError
from lpmech.mechanism import realized_epsilon
from lpmech.models import omg
from lpmech.solvers.cvxpy import solve_cvxpy
from lpmech.solvers.highs import solve_lp

qif_dp = pytest.importorskip("qif.mechanism").d_privacy


def qif_optimum(inst, eps):
    """Optimal expected loss from the peer library qif (libqif) on the same instance.

    qif's ``d_priv_ch(i, j)`` marks the pairs whose constraint may be skipped (found by experiment:
    with it, qif's optimum is (ε, γ)-Geo-Ind and equals ours), so (ε, γ) uses ``d > γ``.
    """
    d, L, p = inst.metric, inst.loss, inst.prior
    kw = {}
    if math.isfinite(inst.gamma):
        kw["d_priv_ch"] = lambda i, j: bool(d[i, j] > inst.gamma)
    C = qif_dp.min_loss_given_d(p, inst.K, lambda i, j: eps * d[i, j], lambda i, j: L[i, j], **kw)
    return float((p[:, None] * L * C).sum())


def random_prior(K, seed):
    return np.random.default_rng(seed).dirichlet(np.ones(K))


def check_certified(res, inst, eps):
    z = res.mechanism.matrix
    assert res.status == "optimal"
    assert z.min() >= 0
    assert np.abs(z.sum(axis=1) - 1).max() <= 1e-9
    # the realised ε recomputed independently of the stored certificate
    real = realized_epsilon(z, inst.metric, inst.gamma)
    assert real == pytest.approx(res.certificate.realized_epsilon, rel=1e-12)
    assert real <= eps * (1 + 1e-6)
    assert res.bound <= res.objective + 1e-9
    # relative gap, or (for a near-zero optimum) an absolute gap at the scale of the solver's
    # feasibility tolerance times the loss: cleaning a 1e-9-feasible point moves that much mass
    assert res.gap <= 1e-6 or res.optimality.gap_abs <= 1e-8 * inst.loss.max()
    assert res.objective == pytest.approx(
        float((inst.prior[:, None] * inst.loss * z).sum()), rel=1e-12)


GRID = li.grid(4, 4, cell=0.5, prior=random_prior(16, 0))
POINTS = li.points(np.random.default_rng(1).uniform(0, 3, size=(12, 2)), prior=random_prior(12, 1))
_G = nx.connected_watts_strogatz_graph(12, 4, 0.3, seed=2)
for _u, _v in _G.edges:
    _G[_u][_v]["weight"] = 0.5 + ((_u * 7 + _v * 3) % 5) / 4
GRAPH = li.from_graph(_G, prior=random_prior(12, 2))
LATLON = li.latlon(np.column_stack([41.88 + 0.02 * np.arange(8) % 0.07, 12.45 + 0.013 * np.arange(8)]),
                   prior=random_prior(8, 3))


@pytest.mark.parametrize("inst,eps", [(GRID, 1.0), (POINTS, 0.7), (GRAPH, 0.8), (LATLON, 1.0)],
                         ids=["grid", "points", "graph", "latlon"])
def test_fast_path_equals_qif(inst, eps):
    res = omg.solve(inst, eps)
    check_certified(res, inst, eps)
    assert res.objective == pytest.approx(qif_optimum(inst, eps), rel=1e-6)


@pytest.mark.parametrize("gamma", [0.5, 0.8, 1.2])
def test_gamma_neighbours_equal_qif(gamma):
    inst = GRID.with_gamma(gamma)
    res = omg.solve(inst, 1.0)
    check_certified(res, inst, 1.0)
    assert res.objective == pytest.approx(qif_optimum(inst, 1.0), rel=1e-6)
    # fewer constraints than classical Geo-Ind: never a worse optimum
    assert res.objective <= omg.solve(GRID, 1.0).objective + 1e-9


def test_travel_cost_loss_equals_qif():
    rng = np.random.default_rng(5)
    tc = GRAPH.metric * rng.uniform(1.0, 1.3, size=GRAPH.metric.shape)  # asymmetric travel cost
    inst = GRAPH.with_loss(li.travel_cost_loss(tc, random_prior(12, 6)))
    res = omg.solve(inst, 1.0)
    check_certified(res, inst, 1.0)
    assert res.objective == pytest.approx(qif_optimum(inst, 1.0), rel=1e-6)


def _pyomo_rows(model):
    """Geo-Ind rows of the Pyomo model as {(i, k), (j, k), coefficients} tuples."""
    rows = set()
    for (i, j, k), con in model.geo_ind.items():
        assert con.upper == 0 and con.lower is None
        rows.add((i, j, k, round(pyo.value(model.factor[i, j]), 15)))
    return rows


def _fast_rows(lp, K):
    A = lp.A.tocsr()[: lp.n_geo_ind]
    rows = set()
    for r in range(A.shape[0]):
        cols, vals = A.indices[A.indptr[r]:A.indptr[r + 1]], A.data[A.indptr[r]:A.indptr[r + 1]]
        pos, neg = cols[vals > 0], cols[vals < 0]
        assert len(pos) == 1 and len(neg) == 1 and vals[vals < 0][0] == -1.0
        (i, k), (j, k2) = divmod(int(pos[0]), K), divmod(int(neg[0]), K)
        assert k == k2
        rows.add((i, j, k, round(float(vals[vals > 0][0]), 15)))
    return rows


@pytest.mark.parametrize("inst", [GRID, GRID.with_gamma(0.8), GRAPH], ids=["grid", "gamma", "graph"])
def test_pyomo_model_and_fast_path_agree(inst):
    eps = 0.9
    model = omg.build_pyomo(inst, eps)
    lp = omg.build_lp(inst, eps)
    pyomo_rows, fast_rows = _pyomo_rows(model), _fast_rows(lp, inst.K)
    assert len(model.geo_ind) == lp.n_geo_ind == len(fast_rows)
    assert pyomo_rows == fast_rows
    # brute count of the ordered neighbour pairs with no point strictly between them, times outputs
    d, K = inst.metric, inst.K
    between = [[any(0 < d[i, m] and 0 < d[m, j] and d[i, m] + d[m, j] <= d[i, j] + 1e-12
                    for m in range(K)) for j in range(K)] for i in range(K)]
    n_pairs = sum(1 for i in range(K) for j in range(K)
                  if i != j and d[i, j] <= inst.gamma and not between[i][j])
    assert lp.n_geo_ind == n_pairs * K
    n_all = sum(1 for i in range(K) for j in range(K) if i != j and d[i, j] <= inst.gamma)
    assert omg.build_lp(inst, eps, reduce=False).n_geo_ind == n_all * K >= lp.n_geo_ind
    res_p, res_f = omg.solve_model(model), omg.solve(inst, eps)
    check_certified(res_p, inst, eps)
    assert res_p.objective == pytest.approx(res_f.objective, rel=1e-9)
    assert res_p.bound == pytest.approx(res_f.bound, rel=1e-6)


def test_user_extended_pyomo_model_matches_extended_arrays():
    """A user's extra constraint (report the true cell 0 with probability ≥ 0.3) in both paths."""
    inst, eps = GRID, 1.0
    model = omg.build_pyomo(inst, eps)
    model.keep_home = pyo.Constraint(expr=model.z[0, 0] >= 0.3)
    res_p = omg.solve_model(model)
    lp = omg.build_lp(inst, eps)
    import scipy.sparse as sp
    row = sp.csr_matrix(([1.0], ([0], [0])), shape=(1, inst.K**2))
    res_f = solve_lp(lp.c, sp.vstack([lp.A, row]), np.r_[lp.row_lo, 0.3], np.r_[lp.row_hi, np.inf],
                     lp.col_lo, lp.col_hi)
    assert res_p.mechanism.matrix[0, 0] >= 0.3 - 1e-9
    assert res_p.objective == pytest.approx(res_f.optimality.objective, rel=1e-8)
    assert res_p.objective >= omg.solve(inst, eps).objective - 1e-12


def test_cvxpy_declaration_agrees_and_reports_dual_bound():
    """The same LP written independently in CVXPY, solved by Clarabel through solve_cvxpy."""
    inst, eps = GRID, 1.0
    K, d = inst.K, inst.metric
    Z = cp.Variable((K, K), nonneg=True)
    cons = [cp.sum(Z, axis=1) == 1]
    cons += [Z[i, :] <= math.exp(eps * d[i, j]) * Z[j, :]
             for i in range(K) for j in range(K) if i != j]
    prob = cp.Problem(cp.Minimize(cp.sum(cp.multiply(inst.prior[:, None] * inst.loss, Z))), cons)
    res = solve_cvxpy(prob, solver="CLARABEL")
    ref = omg.solve(inst, eps).objective
    assert res.status == "optimal"
    assert res.objective == pytest.approx(ref, rel=1e-6)
    assert res.bound == pytest.approx(ref, rel=1e-6)


def test_ipm_and_simplex_agree():
    a = omg.solve(GRID, 1.0, method="full", algorithm="ipm")
    b = omg.solve(GRID, 1.0, method="full", algorithm="simplex")
    check_certified(a, GRID, 1.0)
    assert a.objective == pytest.approx(b.objective, rel=1e-7)


def test_max_loss_infeasible_and_feasible():
    best = omg.solve(GRID, 1.0).objective
    with pytest.raises(InfeasibleError, match="infeasible"):
        omg.solve(GRID, 1.0, max_loss=0.9 * best)
    res = omg.solve(GRID, 1.0, max_loss=1.01 * best)
    assert res.objective == pytest.approx(best, rel=1e-9)
    with pytest.raises(InfeasibleError):
        omg.solve(GRID, 1.0, max_loss=0.9 * best, path="pyomo")


def test_time_limit_raises():
    inst = li.grid(7, 7)
    with pytest.raises(TimeLimitError, match="time limit") as info:
        omg.solve(inst, 1.0, method="full", time_limit=0.05)
    assert info.value.result.stats["highs_status"] == "Time limit reached"
    # the decomposition checks its limit between pricing solves
    t0 = time.perf_counter()
    with pytest.raises(TimeLimitError, match="time limit") as info:
        omg.solve(li.grid(8, 8), 1.0, method="decomposition", time_limit=1e-3)
    assert time.perf_counter() - t0 < 15
    assert info.value.result.status == "time_limit"
    # the Pyomo path passes the limit to its solver too (a 6x6 solve takes seconds)
    with pytest.raises(TimeLimitError, match="time limit") as info:
        omg.solve(li.grid(6, 6), 1.0, path="pyomo", time_limit=0.05)
    assert info.value.result.status == "time_limit"


def test_bad_epsilon_and_path():
    with pytest.raises(InputError, match="epsilon must be a positive"):
        omg.solve(GRID, 0.0)
    with pytest.raises(InputError, match="epsilon must be a positive"):
        omg.solve(GRID, float("nan"))
    with pytest.raises(InputError, match="unknown OMG path"):
        omg.solve(GRID, 1.0, path="magic")
    with pytest.raises(InputError, match="build_pyomo"):
        omg.solve_model(pyo.ConcreteModel())
    for path in ("fast", "pyomo"):
        with pytest.raises(InputError, match="time limit must be positive, got nan"):
            omg.solve(GRID, 1.0, path=path, time_limit=float("nan"))
        with pytest.raises(InputError, match="max_loss must be a finite number, got inf"):
            omg.solve(GRID, 1.0, path=path, max_loss=math.inf)


def test_single_location_and_disconnected_neighbour_graph():
    one = li.from_matrix([[0.0]])
    res = omg.solve(one, 1.0)
    assert res.mechanism.matrix.tolist() == [[1.0]]
    # γ below the cell size: no neighbour pairs, the identity is optimal with zero loss
    inst = li.grid(3, 2).with_gamma(0.5)
    res = omg.solve(inst, 1.0)
    assert res.objective == pytest.approx(0.0, abs=1e-12)
    assert np.allclose(res.mechanism.matrix, np.eye(6))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(K=st.integers(2, 7), seed=st.integers(0, 10_000), eps=st.floats(0.05, 4.0),
       gamma_q=st.sampled_from([None, 0.3, 0.6]), path=st.sampled_from(["fast", "pyomo"]))
def test_property_random_instances_solve_and_certify(K, seed, eps, gamma_q, path):
    rng = np.random.default_rng(seed)
    pts = rng.uniform(0, 2, size=(K, 2))
    inst = li.points(pts, prior=rng.dirichlet(np.ones(K)))
    if gamma_q is not None:
        inst = inst.with_gamma(max(np.quantile(inst.metric[inst.metric > 0], gamma_q), 1e-3))
    res = omg.solve(inst, eps, path=path)
    check_certified(res, inst, eps)
    assert res.objective == pytest.approx(qif_optimum(inst, eps), rel=1e-6, abs=1e-10)
