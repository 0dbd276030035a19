"""Tests of lpmech.certificate.lagrangian_bound and lpmech.solvers.highs.solve_lp, against scipy's
linprog, exhaustive vertex enumeration, and a hand-written weak-duality formula."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from lpmech.certificate import OptimalityCertificate, lagrangian_bound, trivial_bound
from lpmech.errors import InputError
from lpmech.solvers.highs import solve_lp

INF = math.inf

# ------------------------------------------------------------------------------------ references


def random_lp(seed, *, m=None, n=None):
    """A feasible LP ``min c·x, lo ≤ Ax ≤ hi, cl ≤ x ≤ ch`` with some one-sided rows.

    Feasible by construction (rows are built around A·x0 with x0 inside the box).
    """
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 7)) if m is None else m
    n = int(rng.integers(2, 7)) if n is None else n
    A = rng.normal(size=(m, n))
    A[rng.random((m, n)) < 0.2] = 0.0
    x0 = rng.normal(size=n)
    ax = A @ x0
    lo, hi = ax - rng.random(m), ax + rng.random(m)
    lo[rng.random(m) < 0.3] = -INF
    hi[rng.random(m) < 0.3] = INF
    eq = rng.random(m) < 0.15
    lo[eq] = hi[eq] = ax[eq]
    cl, ch = x0 - rng.uniform(0.1, 2, n), x0 + rng.uniform(0.1, 2, n)
    c = rng.normal(size=n)
    return c, A, lo, hi, cl, ch


def scipy_optimum(c, A, lo, hi, cl, ch, method="highs-ipm"):
    """Optimum by scipy.optimize.linprog (interior point, not our dual simplex path)."""
    ub_rows, ub_rhs, eq_rows, eq_rhs = [], [], [], []
    for i in range(A.shape[0]):
        if lo[i] == hi[i]:
            eq_rows.append(A[i])
            eq_rhs.append(lo[i])
            continue
        if math.isfinite(hi[i]):
            ub_rows.append(A[i])
            ub_rhs.append(hi[i])
        if math.isfinite(lo[i]):
            ub_rows.append(-A[i])
            ub_rhs.append(-lo[i])
    res = linprog(c, A_ub=np.array(ub_rows) if ub_rows else None, b_ub=ub_rhs or None,
                  A_eq=np.array(eq_rows) if eq_rows else None, b_eq=eq_rhs or None,
                  bounds=[(None if not math.isfinite(a) else a, None if not math.isfinite(b) else b)
                          for a, b in zip(cl, ch, strict=True)],
                  method=method, options={"primal_feasibility_tolerance": 1e-10,
                                          "dual_feasibility_tolerance": 1e-10})
    return res


def vertex_optimum(c, A, lo, hi, cl, ch, tol=1e-9):
    """Exact optimum of a tiny bounded LP by enumerating every vertex (all n-subsets of the
    hyperplanes a_i·x = lo_i/hi_i and x_j = cl_j/ch_j)."""
    n = A.shape[1]
    planes = []
    for i in range(A.shape[0]):
        for b in {lo[i], hi[i]}:
            if math.isfinite(b):
                planes.append((A[i], b))
    for j in range(n):
        e = np.zeros(n)
        e[j] = 1.0
        planes += [(e, cl[j]), (e, ch[j])]
    best = INF
    for sub in itertools.combinations(planes, n):
        M = np.array([p[0] for p in sub])
        if abs(np.linalg.det(M)) < 1e-10:
            continue
        x = np.linalg.solve(M, np.array([p[1] for p in sub]))
        ax = A @ x
        if ((ax >= lo - tol) & (ax <= hi + tol)).all() and ((x >= cl - tol) & (x <= ch + tol)).all():
            best = min(best, float(c @ x))
    return best


def g_by_hand(c, A, lo, hi, cl, ch, y):
    """The Lagrangian dual function inf_{x in box, s in [lo, hi]} c·x + y·(s − A x), written out
    term by term; multipliers whose side is infinite are zeroed first (another valid y)."""
    y = [0.0 if (yi > 0 and not math.isfinite(lo[i])) or (yi < 0 and not math.isfinite(hi[i]))
         else float(yi) for i, yi in enumerate(y)]
    total = 0.0
    for i, yi in enumerate(y):
        if yi > 0:
            total += yi * lo[i]
        elif yi < 0:
            total += yi * hi[i]
    for j in range(A.shape[1]):
        rho = c[j] - sum(A[i, j] * y[i] for i in range(A.shape[0]))
        if rho > 0:
            total += -INF if not math.isfinite(cl[j]) else rho * cl[j]
        elif rho < 0:
            total += -INF if not math.isfinite(ch[j]) else rho * ch[j]
    return total


def farkas_value(A, lo, hi, cl, ch, y):
    """min_{s ∈ [lo, hi]} y·s − max_{x ∈ box} (Aᵀy)·x; > 0 proves that no x satisfies the LP."""
    val = 0.0
    for i, yi in enumerate(y):
        if yi > 0:
            val += yi * lo[i]
        elif yi < 0:
            val += yi * hi[i]
    g = A.T @ y
    for j, gj in enumerate(g):
        if gj > 0:
            val -= gj * ch[j]
        elif gj < 0:
            val -= gj * cl[j]
    return val


# ----------------------------------------------------------------------------- lagrangian_bound


@pytest.mark.parametrize("seed", range(30))
def test_bound_with_optimal_duals_equals_independent_optimum(seed):
    c, A, lo, hi, cl, ch = random_lp(seed)
    ref = scipy_optimum(c, A, lo, hi, cl, ch)
    assert ref.status == 0
    res = solve_lp(c, A, lo, hi, cl, ch)
    assert res.status == "optimal"
    assert res.objective == pytest.approx(ref.fun, rel=1e-8, abs=1e-8)
    b = lagrangian_bound(c, A, lo, hi, cl, ch, res.duals)
    assert b == pytest.approx(ref.fun, rel=1e-8, abs=1e-8)
    assert b == pytest.approx(g_by_hand(c, A, lo, hi, cl, ch, res.duals), rel=1e-12, abs=1e-12)
    # sparse A gives the same number, and solve_lp reports that bound
    assert lagrangian_bound(c, sp.csr_matrix(A), lo, hi, cl, ch, res.duals) == pytest.approx(b)
    assert res.bound == pytest.approx(b, rel=1e-12, abs=1e-12)
    assert res.optimality.gap_abs == pytest.approx(res.objective - b, abs=1e-15)


@pytest.mark.parametrize("seed", range(12))
def test_bound_matches_vertex_enumeration(seed):
    c, A, lo, hi, cl, ch = random_lp(1000 + seed, m=3, n=2 + seed % 2)
    exact = vertex_optimum(c, A, lo, hi, cl, ch)
    res = solve_lp(c, A, lo, hi, cl, ch, offset=2.5)
    assert res.objective == pytest.approx(exact + 2.5, rel=1e-9, abs=1e-9)
    assert res.bound == pytest.approx(exact + 2.5, rel=1e-8, abs=1e-8)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10_000), data=st.data())
def test_random_multipliers_never_exceed_optimum(seed, data):
    c, A, lo, hi, cl, ch = random_lp(seed)
    ref = scipy_optimum(c, A, lo, hi, cl, ch)
    y = np.array(data.draw(st.lists(st.floats(-50, 50), min_size=A.shape[0],
                                    max_size=A.shape[0])))
    b = lagrangian_bound(c, A, lo, hi, cl, ch, y)
    assert math.isfinite(b)  # all variable bounds finite: the bound is finite
    assert b <= ref.fun + 1e-9 * (1 + abs(ref.fun))
    assert b == pytest.approx(g_by_hand(c, A, lo, hi, cl, ch, y), rel=1e-10, abs=1e-10)


@pytest.mark.parametrize("seed", range(10))
def test_wrong_sign_on_infinite_side_is_ignored(seed):
    c, A, lo, hi, cl, ch = random_lp(2000 + seed, m=6, n=4)
    lo[0], hi[0] = -INF, 1e6  # row 0 has only an upper side (slack at the optimum)
    lo[1], hi[1] = -1e6, INF  # row 1 has only a lower side (slack at the optimum)
    ref = scipy_optimum(c, A, lo, hi, cl, ch)
    res = solve_lp(c, A, lo, hi, cl, ch)
    assert abs(res.duals[0]) < 1e-12 and abs(res.duals[1]) < 1e-12  # inactive rows
    y = res.duals.copy()
    y[0], y[1] = 7.0, -3.0  # wrong signs: +7 pairs with lo = -inf, -3 with hi = +inf
    b = lagrangian_bound(c, A, lo, hi, cl, ch, y)
    # ignoring them leaves the optimal duals: the bound is still the optimum
    assert b == pytest.approx(ref.fun, rel=1e-8, abs=1e-8)
    # and with random other multipliers, still finite and below the optimum
    rng = np.random.default_rng(seed)
    y = rng.normal(size=6) * 5
    y[0], y[1] = abs(y[0]) + 1, -abs(y[1]) - 1
    b = lagrangian_bound(c, A, lo, hi, cl, ch, y)
    assert math.isfinite(b) and b <= ref.fun + 1e-9
    y_fixed = y.copy()
    y_fixed[:2] = 0.0
    assert b == pytest.approx(lagrangian_bound(c, A, lo, hi, cl, ch, y_fixed), rel=1e-13)
    assert b == pytest.approx(g_by_hand(c, A, lo, hi, cl, ch, y_fixed), rel=1e-10, abs=1e-10)


def test_bound_is_minus_inf_towards_an_infinite_variable_bound():
    # min x s.t. x ≥ 1 (row), x free: y = 0 gives ρ = 1 > 0 towards x_lo = -inf: g(0) = -inf;
    # y = 1 gives ρ = 0 and g(1) = 1, the optimum.
    A = np.array([[1.0]])
    args = (np.array([1.0]), A, [1.0], [INF], [-INF], [INF])
    assert lagrangian_bound(*args, [0.0]) == -INF
    assert lagrangian_bound(*args, [1.0]) == pytest.approx(1.0)
    assert lagrangian_bound(*args, [0.5]) == -INF


def test_bound_with_optimal_duals_one_sided_variables():
    # covering LPs min c·x, A x ≥ b, x ≥ 0 (the shape of a Pyomo NonNegativeReals model)
    for seed in range(40):
        rng = np.random.default_rng(seed)
        m, n = int(rng.integers(2, 8)), int(rng.integers(2, 8))
        A = rng.random((m, n)) + 0.1
        c = rng.random(n) + 0.1
        lo, hi, cl, ch = rng.random(m), np.full(m, INF), np.zeros(n), np.full(n, INF)
        ref = scipy_optimum(c, A, lo, hi, cl, ch)
        res = solve_lp(c, A, lo, hi, cl, ch)
        assert lagrangian_bound(c, A, lo, hi, cl, ch, res.duals) == pytest.approx(
            ref.fun, rel=1e-8), seed


def test_optimality_certificate_values():
    cert = OptimalityCertificate.from_values(10.0, 9.5)
    assert (cert.gap_abs, cert.gap_rel) == (0.5, 0.05)
    assert OptimalityCertificate.from_values(1.0, -INF).bound is None


# ---------------------------------------------------------------------------------------- solve_lp


@pytest.mark.parametrize("seed", range(8))
def test_infeasible_with_farkas_ray(seed):
    c, A, lo, hi, cl, ch = random_lp(3000 + seed)
    # add a row a·x ≥ (max of a·x over the box) + 0.5: no x in the box satisfies it
    rng = np.random.default_rng(seed)
    a = rng.normal(size=A.shape[1])
    top = sum(max(a[j] * cl[j], a[j] * ch[j]) for j in range(A.shape[1]))
    A, lo, hi = np.vstack([A, a]), np.append(lo, top + 0.5), np.append(hi, INF)
    assert scipy_optimum(c, A, lo, hi, cl, ch).status == 2  # scipy agrees: infeasible
    res = solve_lp(c, A, lo, hi, cl, ch, want_ray=True)
    assert res.status == "infeasible" and res.optimality is None
    y = res.ray
    assert y is not None
    y = y / np.abs(y).max()
    # HiGHS' convention (found by experiment): y_i > 0 pairs with the row's lower side and
    # y_i < 0 with its upper side, so a positive y never sits on an infinite lower side ...
    assert not ((y > 1e-12) & np.isinf(lo)).any()
    assert not ((y < -1e-12) & np.isinf(hi)).any()
    # ... and the Farkas inequality min_s y·s > max_x (Aᵀy)·x proves infeasibility
    assert farkas_value(A, lo, hi, cl, ch, y) > 1e-6


def test_infeasible_free_variables_ray_annihilates_a():
    # x1 + x2 ≥ 2 and x1 + x2 ≤ 1 with free x: the ray must have Aᵀy = 0 and y·(lo|hi) > 0
    A = np.array([[1.0, 1.0], [1.0, 1.0], [1.0, -1.0]])
    lo, hi = np.array([2.0, -INF, -5.0]), np.array([INF, 1.0, 5.0])
    res = solve_lp(np.array([1.0, 0.0]), A, lo, hi, [-INF, -INF], [INF, INF], want_ray=True)
    assert res.status == "infeasible"
    y = res.ray / np.abs(res.ray).max()
    np.testing.assert_allclose(A.T @ y, 0.0, atol=1e-9)
    np.testing.assert_allclose(y, [1.0, -1.0, 0.0], atol=1e-9)
    assert y[0] * lo[0] + y[1] * hi[1] == pytest.approx(1.0)


def test_unbounded():
    # min −x1 − x2 s.t. x1 − x2 ≤ 1, x ≥ 0: x = (t, t) is feasible with objective −2t
    A = np.array([[1.0, -1.0]])
    args = (np.array([-1.0, -1.0]), A, [-INF], [1.0], [0.0, 0.0], [INF, INF])
    assert scipy_optimum(*args).status == 3  # scipy agrees: unbounded
    res = solve_lp(*args)
    assert res.status == "unbounded"
    assert res.optimality is None and res.bound is None


def _big_lp(seed=1, m=600, n=800):
    rng = np.random.default_rng(seed)
    A = sp.random(m, n, density=0.05, random_state=seed, format="csr")
    A.data = rng.random(A.nnz)
    c = -rng.random(n)
    return c, A, np.full(m, -INF), np.ones(m), np.zeros(n), np.ones(n)


def test_time_limit():
    c, A, lo, hi, cl, ch = _big_lp()
    full = solve_lp(c, A, lo, hi, cl, ch)
    assert full.status == "optimal" and full.stats["simplex_iterations"] > 100
    res = solve_lp(c, A, lo, hi, cl, ch, time_limit=1e-4)
    assert res.status == "time_limit"
    assert res.optimality is None  # no claimed optimum or bound
    with pytest.raises(InputError, match="time limit must be positive"):
        solve_lp(c, A, lo, hi, cl, ch, time_limit=0)


def test_bad_method():
    with pytest.raises(InputError, match=r"unknown HiGHS method 'dual'"):
        solve_lp([1.0], [[1.0]], [0.0], [1.0], [0.0], [1.0], method="dual")


def test_bad_shapes():
    with pytest.raises(InputError, match=r"do not fit A of shape \(1, 2\)"):
        solve_lp([1.0], [[1.0, 2.0]], [0.0], [1.0], [0.0], [1.0])


@pytest.mark.parametrize("method", ["ipm", "choose"])
def test_other_methods_agree(method):
    c, A, lo, hi, cl, ch = random_lp(77, m=6, n=6)
    ref = scipy_optimum(c, A, lo, hi, cl, ch, method="highs-ds")
    res = solve_lp(c, A, lo, hi, cl, ch, method=method)
    assert res.objective == pytest.approx(ref.fun, rel=1e-7, abs=1e-7)
    assert res.bound == pytest.approx(ref.fun, rel=1e-7, abs=1e-7)


def test_warm_start_from_basis():
    c, A, lo, hi, cl, ch = _big_lp(seed=3, m=150, n=200)
    cold = solve_lp(c, A, lo, hi, cl, ch)
    assert cold.status == "optimal" and cold.stats["simplex_iterations"] > 0
    warm = solve_lp(c, A, lo, hi, cl, ch, warm_start=cold.stats["basis"])
    assert warm.objective == pytest.approx(cold.objective, rel=1e-10)
    assert warm.stats["simplex_iterations"] <= cold.stats["simplex_iterations"]
    # a nearby problem (costs moved by 1%) from the old basis: same optimum as scipy, and no
    # more iterations than a cold start of that problem
    rng = np.random.default_rng(3)
    c2 = c * (1 + 0.01 * rng.standard_normal(c.size))
    cold2 = solve_lp(c2, A, lo, hi, cl, ch)
    warm2 = solve_lp(c2, A, lo, hi, cl, ch, warm_start=cold.stats["basis"])
    ref = scipy_optimum(c2, A.toarray(), lo, hi, cl, ch, method="highs-ipm")
    assert warm2.objective == pytest.approx(ref.fun, rel=1e-8)
    assert warm2.bound == pytest.approx(ref.fun, rel=1e-8)
    assert warm2.stats["simplex_iterations"] <= cold2.stats["simplex_iterations"]


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), K=st.integers(1, 6), n=st.integers(1, 6))
def test_trivial_bound_is_the_lp_minimum_over_row_stochastic_matrices(seed, K, n):
    """Σ_i min_k C_ik equals min Σ C·z over row-stochastic z (an LP solved by linprog), so it is a
    valid bound for every mechanism LP, whatever privacy rows it adds."""
    rng = np.random.default_rng(seed)
    C = rng.normal(size=(K, n))
    A_eq = np.kron(np.eye(K), np.ones((1, n)))
    ref = linprog(C.ravel(), A_eq=A_eq, b_eq=np.ones(K), bounds=(0, None), method="highs")
    assert ref.status == 0
    assert trivial_bound(C) == pytest.approx(ref.fun, rel=1e-9, abs=1e-12)
    z = rng.dirichlet(np.ones(n), size=K)
    assert trivial_bound(C) <= float((C * z).sum()) + 1e-12


def test_certified_bound_near_zero_is_valid_and_at_least_the_trivial_one():
    """At ε·d ≈ 19 the OMG optimum is ~1e-8, where the certified bound (the larger of the Lagrangian
    and Σ_i min_k p_i L_ik = 0) must still be valid: never above the optimum that scipy's own HiGHS
    finds, at tight tolerances, on the unreduced LP written from the definition."""
    from scipy.optimize import linprog

    from lpmech import instance as li
    from lpmech.models import omg

    K, eps = 3, 19.0  # e^{-ε d} ≥ 5e-9 here: the reference LP below keeps every coefficient
    inst = li.points([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]).with_prior([0.9, 0.09, 0.01])
    res = omg.solve(inst, eps, method="full")
    # the LP from the definition: e^{-ε d_ij} z_ik ≤ z_jk for all i ≠ j, k; rows sum to 1
    rows = []
    for i, j, k in itertools.product(range(K), range(K), range(K)):
        if i != j:
            r = np.zeros(K * K)
            r[i * K + k], r[j * K + k] = math.exp(-eps * inst.metric[i, j]), -1.0
            rows.append(r)
    ref = linprog((inst.prior[:, None] * inst.loss).ravel(), A_ub=np.array(rows), b_ub=np.zeros(len(rows)),
                  A_eq=np.kron(np.eye(K), np.ones((1, K))), b_eq=np.ones(K), bounds=(0, 1), method="highs",
                  options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    assert ref.status == 0
    assert trivial_bound(inst.prior[:, None] * inst.loss) == 0.0
    assert 0.0 <= res.bound <= ref.fun + 1e-12
    assert res.objective >= ref.fun - 1e-9  # a certified mechanism cannot beat the optimum
    assert res.status == "optimal"


def test_relative_gap_near_zero_optimum_is_honest():
    """An MSE of 1e-100 with the bound 0 has a relative gap of 1 (nothing relative is proved), not
    1e-88 (the old floor of 1e-12 on the denominator); the absolute floor still certifies it."""
    from lpmech.solvers.result import GAP_ABS_TOL, gap_status

    tiny = OptimalityCertificate.from_values(1e-100, 0.0)
    assert tiny.gap_rel == 1.0 and tiny.gap_abs == 1e-100
    assert gap_status(tiny, scale=1.0) == "optimal"  # 1e-100 ≤ GAP_ABS_TOL·1
    assert gap_status(OptimalityCertificate.from_values(1e-3, 0.0), scale=1e-3 / GAP_ABS_TOL / 2) \
        == "feasible"
    assert OptimalityCertificate.from_values(0.0, 0.0).gap_rel == 0.0
    assert OptimalityCertificate.from_values(0.0, -1e-9).gap_rel == math.inf
