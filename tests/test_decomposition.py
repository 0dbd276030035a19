"""The generic Dantzig–Wolfe engine (lpmech.design.decomposition) against a full LP built with scipy."""

import math
import time

import highspy
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from lpmech import instance as li
from lpmech.design import Notion, NotionCertificate
from lpmech.design.decomposition import decompose
from lpmech.design.geoind import GeoInd
from lpmech.errors import InputError, IterationLimitError
from lpmech.models import omg
from lpmech.models.common import raise_for_status
from lpmech.models.omg import omg_large


class LDPRows(Notion):
    """A user notion in a few lines: ε-LDP as rows e^{−ε} v_i − v_j ≤ 0, optional forced zeros."""

    name = "ldp"

    def __init__(self, K, eps, zero_sets=None):
        super().__init__(K)
        self.eps, self.zero_sets = eps, zero_sets or {}

    def rows(self):
        i, j = np.nonzero(~np.eye(self.K, dtype=bool))
        n = i.size
        return sp.csr_matrix((np.concatenate([np.full(n, math.exp(-self.eps)), -np.ones(n)]),
                              (np.tile(np.arange(n), 2), np.concatenate([i, j]))), shape=(n, self.K))

    def zeros(self, k):
        return self.zero_sets.get(k)

    def certify(self, Z):
        real = float(np.max(np.log(Z.max(axis=0) / Z.min(axis=0))))
        return NotionCertificate(self.name, self.eps, real, 0.0, real <= self.eps * (1 + 1e-6))


def full_lp(notion, C, extra_rows=()):
    """min Σ C z over the K×n matrices with every notion row on every column, unit rows, extra rows
    (scipy linprog / HiGHS): the independent reference."""
    K, n = C.shape
    A = sp.csr_matrix(notion.rows())
    # column k's rows act on the variables z[i, k] = x[i·n + k]
    blocks = [A @ sp.csr_matrix((np.ones(K), (np.arange(K), np.arange(K) * n + k)), shape=(K, K * n))
              for k in range(n)]
    A_ub, b_ub = [sp.vstack(blocks)], [np.zeros(A.shape[0] * n)]
    for a, lo, hi in extra_rows:
        if hi is not None and math.isfinite(hi):
            A_ub.append(sp.csr_matrix(np.ravel(a)[None]))
            b_ub.append([hi])
        if lo is not None and math.isfinite(lo):
            A_ub.append(sp.csr_matrix(-np.ravel(a)[None]))
            b_ub.append([-lo])
    A_eq = sp.kron(sp.eye(K), np.ones((1, n)))
    ub = np.ones((K, n))
    for k in range(n):
        z = notion.zeros(k)
        if z is not None:
            ub[z, k] = 0
    bounds = list(zip(np.zeros(K * n), ub.ravel()))
    return linprog(np.ravel(C), A_ub=sp.vstack(A_ub), b_ub=np.concatenate(b_ub), A_eq=A_eq,
                   b_eq=np.ones(K), bounds=bounds, method="highs")


def _check(res, ref, C, rtol=1e-6):
    assert res.status == "optimal"
    Z = res.x.reshape(C.shape)
    assert np.abs(Z.sum(axis=1) - 1).max() <= 1e-8
    assert res.optimality.objective == pytest.approx(ref.fun, rel=rtol, abs=1e-10)
    assert float((C * Z).sum()) == pytest.approx(ref.fun, rel=rtol, abs=1e-10)
    assert res.optimality.bound <= ref.fun + 1e-9 * max(1, abs(ref.fun))  # a valid bound


def test_geoind_with_a_binding_floor_on_reporting_the_truth_equals_the_full_lp():
    inst = li.grid(3, 3, prior=np.random.default_rng(1).dirichlet(np.ones(9)))
    eps = 0.7
    notion = GeoInd(omg.factor_matrix(inst, eps))
    C = inst.prior[:, None] * inst.loss
    free = decompose(notion, C)
    truth = np.diag(inst.prior)  # Pr[report = truth] = Σ_i p_i z_ii
    p_free = float((truth * free.x.reshape(9, 9)).sum())
    p_max = -full_lp(notion, -truth).fun  # the largest Pr[report = truth] under the notion
    floor = p_free + 0.5 * (p_max - p_free)
    extra = [(truth, floor, None)]
    ref = full_lp(notion, C, extra)
    res = decompose(notion, C, extra_rows=extra)
    _check(res, ref, C)
    assert ref.fun > free.optimality.objective * (1 + 1e-3)  # the floor binds
    assert float((truth * res.x.reshape(9, 9)).sum()) >= floor - 1e-8


def test_an_expected_loss_cap_row_and_more_outputs_than_inputs():
    rng = np.random.default_rng(2)
    K, n = 6, 9
    notion = LDPRows(K, 1.2)
    C = rng.uniform(0, 1, (K, n))
    cap = rng.uniform(0, 1, (K, n))
    free = decompose(notion, C)
    used = float((cap * free.x.reshape(K, n)).sum())
    extra = [(cap, -np.inf, 0.9 * used)]
    ref = full_lp(notion, C, extra)
    res = decompose(notion, C, extra_rows=extra)
    _check(res, ref, C)
    _check(free, full_lp(notion, C), C)


def test_forced_zeros_and_a_user_notion_with_phase_one():
    rng = np.random.default_rng(3)
    K = 5
    notion = LDPRows(K, 0.9, zero_sets={0: np.array([0, 1, 2, 3, 4]), 2: np.array([1, 3, 4])})
    C = rng.uniform(0, 1, (K, K))
    res = decompose(notion, C, columns=[(k, np.ones(K)) for k in range(K)])
    ref = full_lp(notion, C)
    _check(res, ref, C)
    Z = res.x.reshape(K, K)
    assert np.abs(Z[:, 0]).max() == 0 and np.abs(Z[[1, 3, 4], 2]).max() == 0


def test_an_infeasible_row_is_proved_infeasible():
    K = 4
    notion = LDPRows(K, 0.5)
    truth = np.eye(K) / K
    # under ε-LDP, Pr[report = truth] ≤ e^ε / (e^ε + K − 1) < 0.9
    res = decompose(notion, np.ones((K, K)), extra_rows=[(truth, 0.9, None)])
    assert res.status == "infeasible"
    assert res.stats["phase1_bound"] > 0
    ref = full_lp(notion, np.ones((K, K)), [(truth, 0.9, None)])
    assert ref.status == 2  # scipy: infeasible


def test_round_cap_is_an_iteration_limit_not_a_time_limit():
    inst = li.grid(5, 5, prior=np.random.default_rng(5).dirichlet(np.ones(25)))
    res = omg_large.solve_decomposition(inst, 0.3, max_rounds=2, workers=1)
    assert res.status == "iteration_limit" and res.stats["max_rounds"] == 2
    with pytest.raises(IterationLimitError, match=r"iteration cap \(2\)"):
        raise_for_status(res, "OMG")


@pytest.mark.parametrize("stabilise", ["auto", 0.0, 0.7])
def test_every_smoothing_reaches_the_full_lp_optimum(stabilise):
    """Smoothing only moves the pricing points: fixed, off or self-adjusting, the same optimum as
    the full LP and a bound below it (a 6×6 grid at small ε, where smoothing matters most)."""
    inst = li.grid(6, 6, prior=np.random.default_rng(8).dirichlet(np.ones(36)))
    res = omg_large.solve_decomposition(inst, 0.3, stabilise=stabilise, workers=1)
    full = omg.solve(inst, 0.3, method="full")
    assert res.status == "optimal"
    assert res.optimality.objective == pytest.approx(full.objective, rel=1e-6)
    assert res.optimality.bound <= full.objective * (1 + 1e-9)
    if stabilise == "auto":
        assert res.stats["alphas"] and all(0 <= a <= 0.9 for a in res.stats["alphas"])
    with pytest.raises(InputError, match="stabilise"):
        omg_large.solve_decomposition(inst, 0.3, stabilise="strong")


def _metric_case(kind, seed):
    import networkx as nx

    rng = np.random.default_rng(seed)
    if kind == "points":
        inst = li.points(rng.uniform(0, 3, size=(12, 2)))
    elif kind == "graph":
        g = nx.connected_watts_strogatz_graph(12, 4, 0.3, seed=seed)
        for u, v in g.edges:
            g[u][v]["weight"] = float(rng.uniform(0.3, 1.5))
        inst = li.from_graph(g)
    elif kind == "latlon":  # lat/lon in degrees around Rome, km
        inst = li.latlon(np.column_stack([41.9 + rng.uniform(0, 0.05, 12), 12.5 + rng.uniform(0, 0.05, 12)]))
    else:  # a 5×5 unit grid
        inst = li.grid(5, 5)
    return inst.with_prior(rng.dirichlet(np.ones(inst.K)))


@pytest.mark.parametrize("kind", ["grid", "points", "graph", "latlon"])
@pytest.mark.parametrize("eps", [0.05, 1.0, 4.0, 10.0, 30.0])
def test_decomposition_meets_the_tolerance_and_equals_the_full_lp(kind, eps):
    """On every metric kind: the full LP's optimum, a valid bound, the certified gap (relative 1e-6
    or the absolute floor 1e-8·loss scale), few rounds, and realised ε within the certificate."""
    inst = _metric_case(kind, {"grid": 4, "points": 11, "graph": 12, "latlon": 13}[kind])
    res = omg.solve(inst, eps, method="decomposition")
    full = omg.solve(inst, eps, method="full")
    assert res.objective == pytest.approx(full.objective, rel=1e-6, abs=1e-12)
    assert res.bound <= full.objective * (1 + 1e-9) + 1e-15
    scale = (inst.prior[:, None] * inst.loss).max(axis=1).sum()
    assert res.optimality.gap_rel <= 1e-6 or res.optimality.gap_abs <= 1e-8 * scale
    assert res.certificate.realized_epsilon <= eps * (1 + 1e-6)
    assert res.stats["rounds"] < 1000


def _pricing_case(notion_kind, rng, n_points=14, eps=0.9, k=3):
    """A notion (Geo-Ind on random points, or ε-LDP rows with forced zeros), an output k, every
    row A of its cone and the upper bounds of its pricing LP."""
    if notion_kind == "geoind":
        inst = li.points(rng.uniform(0, 3, size=(n_points, 2)))
        notion = GeoInd(omg.factor_matrix(inst, eps, reduce=False))
    else:
        notion, k = LDPRows(9, 0.7, {2: [0, 5]}), 2
    ub = np.ones(notion.K)
    if notion.zeros(k) is not None:
        ub[notion.zeros(k)] = 0
    return notion, k, sp.csr_matrix(notion.rows()), ub


def whole_pricing_lp(w, A, ub):
    """scipy's optimum of the pricing LP with every row: min w·v, A v ≤ 0, 0 ≤ v ≤ ub, to 1e-10
    tolerances (at the defaults linprog misses such minima by up to ~1e-7)."""
    return linprog(w, A_ub=A, b_ub=np.zeros(A.shape[0]), bounds=list(zip(np.zeros(w.size), ub)),
                   method="highs", options={"primal_feasibility_tolerance": 1e-10,
                                            "dual_feasibility_tolerance": 1e-10})


def _prices_the_whole_lp(lp, w, A, ub):
    """``lp.price(w)`` gives the optimum of the pricing LP with every row (scipy linprog), a
    point of its cone, and a valid Lagrangian bound equal to it up to tolerances."""
    from lpmech.design.decomposition import lagrangian

    ref = whole_pricing_lp(w, A, ub)
    v, value, rho = lp.price(w)
    assert value == pytest.approx(ref.fun, abs=1e-8)
    assert float(w @ v) == pytest.approx(ref.fun, abs=1e-8)
    assert np.all(v >= 0) and np.all(v <= ub) and (A @ v).max(initial=0) <= 1e-9
    bound = float(lagrangian(rho, ub))
    assert bound <= ref.fun + 1e-12 and bound == pytest.approx(ref.fun, abs=1e-7)


@pytest.mark.parametrize("notion_kind", ["geoind", "ldp-zeros"])
def test_dual_pricing_lp_equals_the_primal_one_and_a_full_linprog(notion_kind):
    """The pricing LP solved as its dual (the default) and as the primal give the optimum of the
    whole pricing LP (every row, scipy linprog), over several objectives in a row (warm restarts),
    and their Lagrangian bounds are valid: below that optimum, and equal to it up to tolerances."""
    from lpmech.design.decomposition import DualPricingLP, PricingLP

    rng = np.random.default_rng(11)
    notion, k, A, ub = _pricing_case(notion_kind, rng)
    dual, primal = DualPricingLP(notion, k), PricingLP(notion, k)
    for _ in range(4):
        w = rng.normal(size=notion.K)
        for lp in (dual, primal):
            _prices_the_whole_lp(lp, w, A, ub)


@pytest.mark.parametrize("notion_kind", ["geoind", "ldp-zeros"])
def test_a_pricing_lp_put_to_sleep_prices_as_the_whole_lp(notion_kind):
    """An LP whose HiGHS model is freed after every pricing (:meth:`PricingLP.sleep`) and rebuilt
    from its kept rows and basis gives the whole pricing LP's optimum (scipy linprog, every row)
    and a valid bound, as a twin that stays awake does, over objectives in a row."""
    from lpmech.design.decomposition import DualPricingLP, PricingLP

    rng = np.random.default_rng(5)
    notion, k, A, ub = _pricing_case(notion_kind, rng, n_points=16, eps=0.8, k=4)
    for cls in (DualPricingLP, PricingLP):
        awake, asleep = cls(notion, k), cls(notion, k)
        for _ in range(5):
            w = rng.normal(size=notion.K)
            for lp in (awake, asleep):
                _prices_the_whole_lp(lp, w, A, ub)
            asleep.sleep()
            assert asleep.asleep and not awake.asleep
        assert asleep.n_rows > 0


@pytest.mark.parametrize("notion_kind", ["geoind", "ldp-zeros"])
def test_a_dual_pricing_lp_kept_optimal_without_a_run_prices_as_the_whole_lp(notion_kind):
    """Costs moved so little that the last basis stays optimal are answered from it without a
    HiGHS run (:meth:`DualPricingLP._still_optimal`): the same optimum and a valid bound as the
    whole pricing LP (scipy linprog) at each of them, and after the larger moves that need a run.
    The basic solution it reads (B⁻¹b, −activity for a basic row) is HiGHS' own after a run."""
    from lpmech.design.decomposition import DualPricingLP

    rng = np.random.default_rng(8)
    notion, k, A, ub = _pricing_case(notion_kind, rng, n_points=16, eps=0.8, k=4)
    lp, twin = DualPricingLP(notion, k), DualPricingLP(notion, k)
    twin._still_optimal = lambda: None  # always runs HiGHS
    moves, basic_rows = 0, 0
    for _ in range(4):
        w = rng.normal(size=notion.K)
        for step in (0.0, 1e-4, 1e-3, 1e-2, 3e-2, 1e-1, 3e-1):
            w = w + step * rng.normal(size=w.size)
            _prices_the_whole_lp(lp, w, A, ub)
            _prices_the_whole_lp(twin, w, A, ub)
            moves += step > 0
            h = twin.h
            basic = h.getBasicVariables()[1]
            at_row = basic < 0
            rows = -basic[at_row] - 1
            rhs = np.asarray(h.getLp().row_lower_).copy()
            rhs[rows] = 0.0
            xb = h.getBasisSolve(rhs)[1]
            sol = h.getSolution()
            assert np.allclose(xb[~at_row], np.asarray(sol.col_value)[basic[~at_row]], atol=1e-9)
            assert np.allclose(-xb[at_row], np.asarray(sol.row_value)[rows], atol=1e-9)
            basic_rows += int(at_row.sum())
    assert basic_rows > 0
    assert 4 <= lp.kept_runs < moves  # the path ran, and the larger moves needed a run


@pytest.mark.parametrize("workers", [1, 2])
def test_pricing_lps_asleep_for_lack_of_memory_reach_the_full_lp_optimum(workers, monkeypatch):
    """With no memory to spare (a memory limit of 0 bytes) every process puts each LP to sleep
    once priced; the solve still reaches the full LP's optimum with a valid bound."""
    from lpmech import resources
    from lpmech.design import decomposition as dec

    if resources.resident_bytes() is None:
        pytest.skip("no /proc/self/statm: the process' memory is unknown, no LP sleeps")
    monkeypatch.setattr(dec, "memory_limit", lambda workers: 0)
    inst = li.grid(5, 5, prior=np.random.default_rng(3).dirichlet(np.ones(25)))
    res = omg_large.solve_decomposition(inst, 0.5, workers=workers)
    full = omg.solve(inst, 0.5, method="full")
    assert res.status == "optimal"
    assert res.optimality.objective == pytest.approx(full.objective, rel=1e-6)
    assert res.optimality.bound <= full.objective * (1 + 1e-9)
    assert res.stats["pricing_asleep"] == 25


def test_resident_memory_counts_an_array_as_it_is_written_and_freed():
    """``resources.resident_bytes`` (what the pricing budget reads) grows by a 400 MB array once
    written, stays under the process' peak (``getrusage``), and drops when the array is freed."""
    import resource

    from lpmech import resources

    before = resources.resident_bytes()
    if before is None:
        pytest.skip("no /proc/self/statm")
    a = np.ones(50_000_000)  # 400 MB, every page written
    during = resources.resident_bytes()
    assert during - before >= 0.9 * a.nbytes
    assert during <= resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 * 1.01
    del a
    resources.release_free_memory()
    assert resources.resident_bytes() - before <= 0.1 * 400e6


def test_a_geoind_oracle_separates_to_the_tolerance_it_is_given():
    """A row violated by 1e-9 (v in [0, 1]) is found at the pricing LPs' tolerance and not at the
    notions' default; rows violated by less, or already in the LP, never."""
    from lpmech.design.decomposition import PRICING_SEPARATION_TOL
    from lpmech.design.notion import SEPARATION_TOL

    F = np.array([[1.0, 0.5, 0.25], [0.5, 1.0, 0.5], [0.25, 0.5, 1.0]])
    notion = GeoInd(F)
    start = notion.initial_rows(0)  # the star of 0: F_0j v_0 ≤ v_j
    v_viol = np.array([0.5, 1.0, 0.5 - 1e-9])  # F_12 v_1 − v_2 = 1e-9; every other row holds
    assert SEPARATION_TOL > 1e-9 > PRICING_SEPARATION_TOL
    assert notion.separator(0, start)(v_viol) is None
    rows = notion.separator(0, start, PRICING_SEPARATION_TOL)(v_viol)
    assert rows is not None and rows.shape[0] == 1
    assert float((rows @ v_viol)[0]) == pytest.approx(1e-9, rel=1e-6)
    near = np.array([0.5, 1.0, 0.5 - 1e-11])
    assert notion.separator(0, start, PRICING_SEPARATION_TOL)(near) is None
    sep = notion.separator(0, start, 1e-12)
    assert sep(v_viol) is not None and sep(v_viol) is None  # a row is returned once


def test_a_geoind_pricing_bound_meets_its_column_near_the_optimal_duals():
    """Near the master's optimal duals (costs C_k − μ·(1 + noise), warm across rounds) a Geo-Ind
    pricing LP's bound is valid (below the minimum over the whole cone, scipy linprog) and within
    1e-11 × max |w| of its column's value, a column exactly in the cone. (With the notions' 1e-8
    as the pricing oracle's tolerance these bounds lie up to 1.9e-10 × max |w| below their
    columns' values; at K = 400 such gaps summed to the whole gap left at the end.)"""
    from lpmech.design.decomposition import PRICING_LP, lagrangian

    rng = np.random.default_rng(5)
    inst = li.grid(12, 12).with_prior(rng.dirichlet(np.ones(144)))
    res = omg_large.solve_decomposition(inst, 1.0, workers=1, coarse=False)
    mu = res.duals[:inst.K]
    C = inst.prior[:, None] * inst.metric
    notion = GeoInd(omg.factor_matrix(inst, 1.0, reduce=False))
    A = sp.csr_matrix(notion.rows())
    K, ub = inst.K, np.ones(inst.K)
    rng = np.random.default_rng(1)
    for k in range(0, K, 13):
        lp = PRICING_LP(notion, k)
        for r in range(3):
            w = C[:, k] - mu * (1 + 10.0 ** (-2 - r) * rng.normal(size=K))
            v, value, rho = lp.price(w)
            bound = float(lagrangian(rho, ub))
            scale = float(np.abs(w).max())
            assert (A @ v).max() <= 1e-12 and value == pytest.approx(float(w @ v), abs=1e-15)
            assert value - bound <= 1e-11 * scale
            if r == 0:
                ref = linprog(w, A_ub=A, b_ub=np.zeros(A.shape[0]),
                              bounds=list(zip(np.zeros(K), ub)), method="highs",
                              options={"dual_feasibility_tolerance": 1e-10,
                                       "primal_feasibility_tolerance": 1e-10})
                assert bound <= ref.fun + 1e-12 * scale  # valid


def test_sifting_master_equals_a_linprog_over_every_column_it_has_seen():
    """Columns purged into the pool still count: after a purge, the master's optimum is the optimum
    over every column ever added (scipy linprog over all of them), pool columns come back when
    they price out, and without sifting the purged columns are lost (a worse or equal optimum)."""
    from lpmech.design.decomposition import Master

    rng = np.random.default_rng(21)
    K, n = 8, 8
    C = rng.uniform(0.1, 1.0, (K, n))
    cols = [(int(rng.integers(n)), rng.uniform(0.05, 1.0, K)) for _ in range(60)]
    cols += [(k, np.ones(K)) for k in range(n)]  # feasible: each row covered by an all-ones column
    V = np.column_stack([v for _, v in cols])
    cost = np.array([C[:, k] @ v for k, v in cols])
    ref = linprog(cost, A_eq=V, b_eq=np.ones(K), bounds=(0, None), method="highs")
    assert ref.status == 0
    values = {}
    for sift in (True, False):
        m = Master(C, [], sift=sift)
        for k, v in cols[:30]:
            m.add(k, v)
        m.start_phase_2()
        m.run()
        m.purge(10, 0)  # everything not basic leaves the LP
        for k, v in cols[30:]:
            m.add(k, v)
        y, values[sift] = m.run()
        Z = m.matrix()
        assert np.abs(Z.sum(axis=1) - 1).max() <= 1e-9
        assert float((C * Z).sum()) == pytest.approx(values[sift], rel=1e-9)
        if sift:
            assert m.pool_cols  # the purge filled the pool
            assert np.all(m.pool_cost - m.pool_M[:K].T @ y >= -1e-9)  # nothing left prices out
    assert values[True] == pytest.approx(ref.fun, rel=1e-9)
    assert values[False] >= ref.fun - 1e-9


def test_every_purge_into_the_pool_keeps_the_rounds_and_the_optimum():
    """Purging every round into the pool (sifting) reaches the full LP's optimum, and sifts columns
    back (the pool is used), where purging without a pool would regenerate them."""
    inst = li.grid(6, 6, prior=np.random.default_rng(8).dirichlet(np.ones(36)))
    full = omg.solve(inst, 0.3, method="full")
    res = omg_large.solve_decomposition(inst, 0.3, purge_after=1, workers=1)
    assert res.status == "optimal"
    assert res.optimality.objective == pytest.approx(full.objective, rel=1e-6)
    assert res.optimality.bound <= full.objective * (1 + 1e-9)
    assert res.stats["sifted"] > 0


def test_a_dual_start_prices_there_first_and_reaches_the_same_optimum():
    """``dual_start``: a pricing round at given multipliers before the first round. From the
    duals of a finished solve the bound starts at the optimum, so fewer rounds reach it."""
    inst = li.grid(6, 6, prior=np.random.default_rng(8).dirichlet(np.ones(36)))
    first = omg_large.solve_decomposition(inst, 0.3, workers=1)
    again = omg_large.solve_decomposition(inst, 0.3, workers=1, dual_start=first.duals)
    full = omg.solve(inst, 0.3, method="full")
    for res in (first, again):
        assert res.status == "optimal"
        assert res.optimality.objective == pytest.approx(full.objective, rel=1e-6)
        assert res.optimality.bound <= full.objective * (1 + 1e-9)
    assert again.stats["rounds"] < first.stats["rounds"]


def _dense_master():
    """A phase-2 master LP of 3000 dense three-point tent columns on a 12×12 grid (~1 s to solve)."""
    from lpmech.design.decomposition import Master

    T = np.exp(-0.5 * li.grid(12, 12).metric)
    rng = np.random.default_rng(4)
    m = Master(np.ones((144, 144)), [])
    for _ in range(3000):
        S = rng.choice(144, size=3, replace=False)
        m.add(int(S[0]), T[:, S].max(axis=1))
    m.start_phase_2()
    return m


def test_a_killed_pricing_worker_is_a_solver_error_not_a_closed_stdout():
    """A worker killed between rounds (as the kernel's OOM killer does) makes the next pricing
    round raise SolverError naming the worker, not the BrokenPipeError the command line reads
    as its own stdout closed (exit 141, no message)."""
    from lpmech.design.decomposition import ProcessPricer
    from lpmech.errors import SolverError

    inst = li.grid(4, 4, prior=np.random.default_rng(0).dirichlet(np.ones(16)))
    notion = GeoInd(omg.factor_matrix(inst, 1.0))
    W = inst.prior[:, None] * inst.loss - 0.01
    pricer = ProcessPricer(notion, 16, 2)
    try:
        assert len(pricer.price(np.arange(16), W, None)) == 16
        pricer.procs[0].kill()
        pricer.procs[0].join()
        with pytest.raises(SolverError, match="pricing worker process died"):
            pricer.price(np.arange(16), W, None)
        with pytest.raises(SolverError, match="pricing worker process died"):
            pricer.rows_of([0, 1])  # outputs of both workers: the dead one is named
    finally:
        pricer.close()


def test_a_time_limit_reaches_the_pricing_workers_and_the_master():
    """The user's deadline reaches the forked pricing workers (a round past it returns None, the
    same as in-process pricing) and the master LP (a HiGHS time limit: decompose ends
    ``time_limit``, the API raises TimeLimitError)."""
    from lpmech.design.decomposition import LocalPricer, ProcessPricer
    from lpmech.errors import TimeLimitError

    inst = li.grid(5, 5, prior=np.random.default_rng(0).dirichlet(np.ones(25)))
    notion = GeoInd(omg.factor_matrix(inst, 1.0))
    C = inst.prior[:, None] * inst.loss
    W = C - 0.01
    outputs = np.arange(25)
    for pricer in (ProcessPricer(notion, 25, 2), LocalPricer(notion, 25)):
        try:
            now = pricer.price(outputs, W, time.perf_counter() + 60)
            assert sorted(k for k, *_ in now) == list(range(25))
            assert pricer.price(outputs, W, time.perf_counter() - 1) is None
        finally:
            pricer.close()
    res = decompose(notion, C, time_limit=1e-9)
    assert res.status == "time_limit"
    with pytest.raises(TimeLimitError):
        raise_for_status(res, "OMG")
    # the master alone: a dense LP of ~1 s given a deadline that has passed stops at HiGHS' limit
    from lpmech.design.decomposition import _Stopped

    m = _dense_master()
    m.deadline = time.perf_counter()
    with pytest.raises(_Stopped):
        m.run()


def test_a_time_left_counts_from_now_not_from_the_model_s_first_run():
    """HiGHS compares ``time_limit`` with the total run time of a model object: after runs that
    took longer than the time left, ``set_time_left`` still lets the next run finish (a plain
    ``time_limit`` of the time left stops it at once), and a tiny time left stops it."""
    from lpmech.solvers.highs import set_time_left

    m = _dense_master()
    m.run()
    took = m.h.getRunTime()
    m.h.clearSolver()
    m.h.setOptionValue("time_limit", 0.5 * took)  # the trap: stops at once
    m.h.run()
    assert m.h.getModelStatus() == highspy.HighsModelStatus.kTimeLimit
    m.h.clearSolver()
    set_time_left(m.h, 20 * took)
    m.h.run()
    assert m.h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    m.h.clearSolver()
    set_time_left(m.h, 0.0)
    m.h.run()
    assert m.h.getModelStatus() == highspy.HighsModelStatus.kTimeLimit


@pytest.mark.parametrize("eps", [1.0, 4.5])
def test_trace_in_cost_units_and_absolute_floor(eps):
    """Every phase-2 line of the trace is in the caller's cost units (the last upper is the LP
    optimum by scipy), and the absolute floor stops the first round whose gap is under it, also
    after the internal rescale of a small optimum (tents as starting columns, whose master value
    at ε = 4.5 is far below the largest cost)."""
    inst = li.grid(4, 4).with_prior(np.random.default_rng(5).dirichlet(np.ones(16)))
    C = 1e3 * inst.prior[:, None] * inst.loss  # an arbitrary cost unit
    notion = GeoInd(omg.factor_matrix(inst, eps))
    ref = _geoind_reference(inst, eps, C)
    abs_tol = 3e-5 * ref
    tents = [(k, np.exp(-eps * inst.metric[:, k])) for k in range(16)]  # a small first upper
    # the equality form throughout (with Σ ≥ 1, a round's upper need not be a mechanism's)
    res = decompose(notion, C, columns=tents, tol=1e-15, abs_tol=abs_tol, stall_gap=1e9,
                    cover=False)
    assert res.status == "optimal" and res.stats["stop"] == "gap"
    phase2 = [t for t in res.stats["trace"] if t["phase"] == 2]
    best = np.maximum.accumulate([t["lower"] for t in phase2])
    gaps = np.array([t["upper"] for t in phase2]) - best
    assert phase2[-1]["upper"] == pytest.approx(res.optimality.objective, rel=1e-12)
    assert ref - 1e-9 * ref <= phase2[-1]["upper"] <= ref + abs_tol
    assert best[-1] <= ref * (1 + 1e-9)
    assert gaps[-1] <= abs_tol and (gaps[:-1] > abs_tol).all()


def _geoind_reference(inst, eps, C):
    """The Geo-Ind LP over every ordered pair (z_ik ≤ e^{ε d_ij} z_jk), by scipy: its optimum."""
    K = inst.K
    i, j = np.nonzero(~np.eye(K, dtype=bool))
    rows = sp.csr_matrix((np.concatenate([np.ones(i.size), -np.exp(eps * inst.metric[i, j])]),
                          (np.tile(np.arange(i.size), 2), np.concatenate([i, j]))), shape=(i.size, K))
    blocks = [rows @ sp.csr_matrix((np.ones(K), (np.arange(K), np.arange(K) * K + k)),
                                   shape=(K, K * K)) for k in range(K)]
    ref = linprog(C.ravel(), A_ub=sp.vstack(blocks), b_ub=np.zeros(i.size * K),
                  A_eq=sp.kron(sp.eye(K), np.ones((1, K))), b_eq=np.ones(K), bounds=(0, 1),
                  method="highs", options={"primal_feasibility_tolerance": 1e-10,
                                           "dual_feasibility_tolerance": 1e-10})
    assert ref.status == 0
    return float(ref.fun)


def test_pricers_hand_back_the_rows_of_each_pricing_lp():
    """``rows_of`` gives each output's rows as its pricing LP holds them, the same from forked
    workers as in-process: the starting rows among them, and the LP's optimum v meets every one."""
    from lpmech.design.decomposition import LocalPricer, ProcessPricer
    from lpmech.design.notion import start_rows

    inst = li.grid(4, 4, prior=np.random.default_rng(2).dirichlet(np.ones(16)))
    notion = GeoInd(omg.factor_matrix(inst, 1.0))
    W = inst.prior[:, None] * inst.loss - 0.02
    ks = [11, 0, 5]
    got = {}
    for pricer in (ProcessPricer(notion, 16, 2), LocalPricer(notion, 16)):
        try:
            priced = {k: v for k, v, *_ in pricer.price(np.arange(16), W, None)}
            got[pricer.backend] = pricer.rows_of(ks)
        finally:
            pricer.close()
    for k, Rp, Rl in zip(ks, got["process"], got["local"], strict=True):
        assert Rp.shape == Rl.shape and abs(Rp - Rl).max() == 0
        assert Rp.shape[0] > start_rows(notion, k).shape[0]  # the oracle added rows
        start = {tuple(r) for r in start_rows(notion, k).toarray()}
        assert start <= {tuple(r) for r in Rp.toarray()}
        assert (Rp @ priced[k]).max() <= 1e-9


def _geoind_lp(inst, eps, covering):
    """The whole Geo-Ind LP by scipy with unit rows Σ_k z_ik = 1, or ≥ 1 (``covering``): its
    optimum and the unit rows' multipliers (equality form)."""
    K = inst.K
    i, j = np.nonzero(~np.eye(K, dtype=bool))
    rows = sp.csr_matrix((np.concatenate([np.exp(-eps * inst.metric[i, j]), -np.ones(i.size)]),
                          (np.tile(np.arange(i.size), 2), np.concatenate([i, j]))), shape=(i.size, K))
    A = sp.vstack([rows @ sp.csr_matrix((np.ones(K), (np.arange(K), np.arange(K) * K + k)),
                                        shape=(K, K * K)) for k in range(K)])
    S = sp.kron(sp.eye(K), np.ones((1, K)))
    c = (inst.prior[:, None] * inst.loss).ravel()
    opts = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
    if covering:
        ref = linprog(c, A_ub=sp.vstack([A, -S]), b_ub=np.concatenate([np.zeros(A.shape[0]),
                      -np.ones(K)]), bounds=(0, 1), method="highs", options=opts)
        return float(ref.fun), None
    ref = linprog(c, A_ub=A, b_ub=np.zeros(A.shape[0]), A_eq=S, b_eq=np.ones(K), bounds=(0, 1),
                  method="highs", options=opts)
    return float(ref.fun), np.asarray(ref.eqlin.marginals)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("eps", [0.3, 1.0, 2.5])
def test_geoind_optimum_is_the_same_with_rows_covered_at_least_once(seed, eps):
    """Why the master may start with Σ ≥ 1: on Geo-Ind instances (grid and random points, costs
    ≥ 0) the LP with unit rows Σ ≥ 1 has the optimum of the one with Σ = 1, whose unit-row
    multipliers are ≥ 0 (so the sign restriction cuts no optimal dual off)."""
    rng = np.random.default_rng(seed)
    inst = (li.grid(4, 4) if seed % 2 else li.points(rng.uniform(0, 3, (14, 2))))
    inst = inst.with_prior(rng.dirichlet(np.ones(inst.K)))
    eq, mu = _geoind_lp(inst, eps, covering=False)
    ge, _ = _geoind_lp(inst, eps, covering=True)
    assert ge == pytest.approx(eq, rel=1e-8, abs=1e-12)
    assert mu.min() >= -1e-9


@pytest.mark.parametrize("cover_gap", [1e-4, 0.0])
@pytest.mark.parametrize("master", ["simplex", "dense-ipm"])
@pytest.mark.parametrize("eps", [0.3, 0.7, 2.0])
def test_covering_master_ends_on_a_mechanism_with_the_full_lp_optimum(eps, master, cover_gap,
                                                                     monkeypatch):
    """Phase 2 with unit rows Σ ≥ 1 (multipliers ≥ 0), then Σ = 1 from the gap ``cover_gap`` or
    (0) only where Σ ≥ 1 ends on a row covered twice: the optimum of the full LP by scipy, every
    row summing to 1 and a valid bound, as with Σ = 1 throughout; the rounds with Σ ≥ 1 come
    first, and the switch is where the stats say."""
    from lpmech.design import decomposition as dc

    monkeypatch.setattr(dc, "COVER_GAP", cover_gap)
    inst = li.grid(4, 4).with_prior(np.random.default_rng(3).dirichlet(np.ones(16)))
    notion = GeoInd(omg.factor_matrix(inst, eps))
    C = inst.prior[:, None] * inst.loss
    ref = _geoind_reference(inst, eps, C)
    res = decompose(notion, C, cover=True, master_algorithm=master, workers=1)
    eq = decompose(notion, C, cover=False, master_algorithm=master, workers=1)
    for r in (res, eq):
        Z = r.x.reshape(C.shape)
        assert r.status == "optimal"
        assert np.abs(Z.sum(axis=1) - 1).max() <= 1e-8
        assert float((C * Z).sum()) == pytest.approx(ref, rel=1e-6)
        assert r.optimality.bound <= ref * (1 + 1e-9)
    phase2 = [t for t in res.stats["trace"] if t["phase"] == 2]
    covering = [t["covering"] for t in phase2]
    n = sum(covering)
    assert n > 0 and covering == [True] * n + [False] * (len(covering) - n)
    assert res.stats["covered_until"] == (phase2[n - 1]["round"] if n < len(covering) else 0)
    assert not any(t["covering"] for t in eq.stats["trace"])


def test_covering_rows_need_costs_that_are_not_negative():
    inst = li.grid(2, 2)
    notion = GeoInd(omg.factor_matrix(inst, 1.0))
    with pytest.raises(InputError, match="cover"):
        decompose(notion, inst.loss - 0.5, cover=True)
    with pytest.raises(InputError, match="cover"):
        decompose(notion, inst.loss, cover="yes")
    with pytest.raises(InputError, match="extra rows"):
        decompose(notion, inst.loss, cover=True, extra_rows=[(np.eye(4), 0.1, None)])
    free = decompose(notion, inst.loss)  # the default: Σ = 1 throughout
    assert not any(t["covering"] for t in free.stats["trace"])


@pytest.mark.parametrize("rounds", [1, 3, 6])
def test_a_stop_while_covering_hands_over_a_mechanism(rounds):
    """Stopped by the round cap while the unit rows are Σ ≥ 1 (ε = 0.3: tents overlap), the
    decomposition hands over the last master optimum that is a mechanism: rows summing to 1, its
    objective its own expected loss, the bound below the full LP's optimum, and omg's certificate
    (every pair) passes on it."""
    from lpmech.errors import NotOptimalError
    from lpmech.models.common import certified_result

    inst = li.grid(5, 5, prior=np.random.default_rng(5).dirichlet(np.ones(25)))
    res = omg_large.solve_decomposition(inst, 0.3, max_rounds=rounds, workers=1)
    assert res.status == "iteration_limit"
    assert all(t["covering"] for t in res.stats["trace"] if t["phase"] == 2)
    Z = res.x.reshape(25, 25)
    C = inst.prior[:, None] * inst.loss
    assert np.abs(Z.sum(axis=1) - 1).max() <= 1e-8
    assert res.optimality.objective == pytest.approx(float((C * Z).sum()), rel=1e-12)
    ref = _geoind_reference(inst, 0.3, C)
    assert res.optimality.bound <= ref * (1 + 1e-9) <= res.optimality.objective * (1 + 1e-9)
    with pytest.raises(NotOptimalError) as err:
        certified_result(res, Z, inst, 0.3, name="OMG")
    handed = err.value.result
    assert handed.mechanism is not None
    assert handed.certificate.realized_epsilon <= 0.3 * (1 + 1e-6)


@pytest.mark.parametrize("metric", ["graph", "grid", "points"])
def test_a_purge_right_after_the_rows_become_equalities_keeps_a_feasible_master(metric):
    """The switch from Σ ≥ 1 to Σ = 1 followed by a purge in the next round (the graph instance of
    the sweep at ε = 1 switches in round 9, purges in round 10): the columns of the last Σ ≥ 1
    basis alone left its equality form infeasible, so every column counts as basic at the
    switch; the optimum is the full LP's."""
    from lpmech.models.omg import omg_sweep as sw

    inst = sw.make_instance(metric, "uniform", 36, 0)
    res = omg.solve(inst, 1.0, method="decomposition")
    full = omg.solve(inst, 1.0, method="full")
    assert res.status == "optimal"
    assert res.objective == pytest.approx(full.objective, rel=1e-6)
    if metric == "graph":
        assert res.stats["covered_until"] % 5 == 4  # the purge (every 5 rounds) comes next


def test_covering_rows_where_tents_overlap_and_no_locations_nearly_coincide():
    """OMG's rule for Σ ≥ 1 first: ε × the median nearest distance below 1, and no two locations
    within ε·d = 1e-3 (the sweep's near-duplicate instance ended in a HiGHS error after the switch)."""
    from lpmech.models.omg import omg_sweep as sw

    grid = li.grid(6, 6)
    assert omg_large.covering_rows(grid, 0.5) and not omg_large.covering_rows(grid, 1.0)
    near = sw.make_instance("neardup", "uniform", 36, 0)
    assert omg_large.tents_overlap(near, 0.3) and not omg_large.covering_rows(near, 0.3)
    pts = li.points(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 1.0 + 1e-4]]))
    assert omg_large.tents_overlap(pts, 0.5) and not omg_large.covering_rows(pts, 0.5)
    assert omg_large.covering_rows(pts, 50.0) is False  # no overlap at all there
