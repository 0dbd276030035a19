"""The dense interior-point master and the compiled Geo-Ind oracle against independent computations:
the whole LP by scipy's linprog, the simplex master, and the numpy oracle."""

import numpy as np
import pytest
import scipy.sparse as sp

from lpmech import instance as li
from lpmech.design import decomposition as dec
from lpmech.design import geoind
from lpmech.design.decomposition import decompose
from lpmech.design.geoind import GeoInd
from lpmech.models import omg
from lpmech.models.common import certified_result
from lpmech.models.omg import omg_large
from tests.test_decomposition import LDPRows, _check, _metric_case, full_lp


@pytest.mark.parametrize("kind", ["grid", "points", "graph", "latlon"])
@pytest.mark.parametrize("eps", [0.3, 1.0, 4.0])
def test_dense_ipm_master_equals_the_whole_lp(kind, eps):
    """Geo-Ind on every metric kind: the interior-point master reaches the optimum of the whole LP
    (every row written, HiGHS), with a valid bound, row sums 1 to 1e-8, and the simplex master's
    optimum. (scipy's linprog is no reference at ε = 4: its default tolerances miss the optimum
    0.0614 by 1e-5 relative.)"""
    inst = _metric_case(kind, {"grid": 4, "points": 11, "graph": 12, "latlon": 13}[kind])
    notion = GeoInd(omg.factor_matrix(inst, eps))
    C = inst.prior[:, None] * inst.loss
    ref = omg.solve(inst, eps, method="full", reduce=False, merge=False).objective
    res = decompose(notion, C, master_algorithm="dense-ipm", workers=1)
    assert res.status == "optimal" and res.stats["master"] == "dense-ipm"
    Z = res.x.reshape(C.shape)
    assert np.abs(Z.sum(axis=1) - 1).max() <= 1e-8
    assert res.optimality.objective == pytest.approx(ref, rel=1e-6)
    assert float((C * Z).sum()) == pytest.approx(ref, rel=1e-6)
    assert res.optimality.bound <= ref * (1 + 1e-9)
    simplex = decompose(notion, C, master_algorithm="simplex", workers=1)
    assert res.optimality.objective == pytest.approx(simplex.optimality.objective, rel=1e-6)


def test_dense_ipm_master_with_extra_rows_and_phase_one_keeps_the_simplex_there():
    """Extra rows (a cap on an expected loss) and forced zeros (phase 1): the master falls back to
    HiGHS' simplex where the interior point does not apply, and still equals the whole LP."""
    rng = np.random.default_rng(2)
    K, n = 6, 9
    notion = LDPRows(K, 1.2, zero_sets={0: np.arange(K), 3: np.array([1, 4])})
    C = rng.uniform(0, 1, (K, n))
    cap = rng.uniform(0, 1, (K, n))
    free = decompose(notion, C, master_algorithm="dense-ipm")
    _check(free, full_lp(notion, C), C)
    extra = [(cap, -np.inf, 0.9 * float((cap * free.x.reshape(K, n)).sum()))]
    res = decompose(notion, C, extra_rows=extra, master_algorithm="dense-ipm")
    _check(res, full_lp(notion, C, extra), C)


def test_a_failed_interior_point_solve_falls_back_to_the_simplex(monkeypatch):
    """No KKT solver left to try: every solve goes to HiGHS' simplex, with the same optimum."""
    monkeypatch.setattr(dec, "IPM_KKT", ())
    inst = _metric_case("points", 11)
    notion = GeoInd(omg.factor_matrix(inst, 1.0))
    C = inst.prior[:, None] * inst.loss
    res = decompose(notion, C, master_algorithm="dense-ipm", workers=1)
    _check(res, full_lp(notion, C), C)


def test_omg_decomposition_with_the_dense_master_is_certified():
    """Through the OMG path (a 6×6 grid): certified against the full LP."""
    inst = li.grid(6, 6, prior=np.random.default_rng(8).dirichlet(np.ones(36)))
    raw = omg_large.solve_decomposition(inst, 0.7, master_algorithm="dense-ipm", workers=1)
    res = certified_result(raw, raw.x.reshape(36, 36), inst, 0.7, name="OMG")
    full = omg.solve(inst, 0.7, method="full")
    assert res.objective == pytest.approx(full.objective, rel=1e-6)
    assert res.bound <= full.objective * (1 + 1e-9)
    assert res.certificate.realized_epsilon <= 0.7 * (1 + 1e-6)
    assert raw.stats["master"] == "dense-ipm"


@pytest.mark.parametrize("seed", range(6))
def test_compiled_oracle_returns_the_numpy_oracle_s_rows(seed, monkeypatch):
    """The numba oracle and the numpy one give the same rows, call after call (the ``present``
    mask grows: a bit set in the compiled one, K not a multiple of 8), on a factor matrix with
    zeros (γ) and vectors with zeros and ties."""
    rng = np.random.default_rng(seed)
    K = 40 + seed
    inst = li.points(rng.uniform(0, 4, size=(K, 2)))
    F = omg.factor_matrix(inst.with_gamma(2.5), 0.9)
    notion = GeoInd(F)
    start = notion.initial_rows(seed % K)
    got = {}
    for backend, min_k in (("numba", 1), ("numpy", 10 ** 9)):
        monkeypatch.setattr(geoind, "JIT_MIN_K", min_k)
        sep = notion.separator(seed % K, start)
        vrng = np.random.default_rng(100 + seed)
        rows = []
        for _ in range(5):
            v = vrng.random(K) ** 4
            v[vrng.random(K) < 0.2] = 0.0
            v[:3] = v[3]  # ties
            out = sep(v)
            rows.append(None if out is None else sp.csr_matrix(out))
        got[backend] = rows
    for a, b in zip(got["numba"], got["numpy"]):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.shape == b.shape and (a != b).nnz == 0


def _case_with_tents(kind, seed, *, ones):
    """A small OMG case at ε = 1: its notion, costs, the whole LP's optimum (the reference) and
    starting columns: every tent, and with ``ones`` a column of ones for every output."""
    inst = _metric_case(kind, seed)
    notion = GeoInd(omg.factor_matrix(inst, 1.0))
    C = inst.prior[:, None] * inst.loss
    ref = omg.solve(inst, 1.0, method="full", reduce=False, merge=False).objective
    T = notion.closure.T
    cols = [(k, T[:, k]) for k in range(inst.K)]
    if ones:
        cols += [(k, np.ones(inst.K)) for k in range(inst.K)]
    return notion, C, ref, cols


def test_a_stalled_interior_point_keeps_its_duals_and_takes_weights_on_their_support(monkeypatch):
    """Every CVXOPT solve reported stalled (status "unknown", as near a residual of 1e-6): the
    weights come from non-negative least squares on the columns tight at its duals, exact to
    1e-9, and the optimum is the whole LP's."""
    import cvxopt.solvers

    def stalling(real):
        def stalled(*args, **kwargs):
            sol = dict(real(*args, **kwargs))
            sol["status"] = "unknown"
            return sol
        return stalled

    for name in ("lp", "conelp"):  # CVXOPT's KKT solvers, and the numpy one
        monkeypatch.setattr(cvxopt.solvers, name, stalling(getattr(cvxopt.solvers, name)))
    used, support = [], dec.DenseIPMMaster._support_weights

    def recorded(self, V, c, y):
        lam = support(self, V, c, y)
        used.append(lam is not None)
        return lam

    monkeypatch.setattr(dec.DenseIPMMaster, "_support_weights", recorded)
    # ones and tents: the first master (phase 1 skipped) has full rank, so its duals are real
    notion, C, ref, cols = _case_with_tents("points", 11, ones=True)
    res = decompose(notion, C, columns=cols, master_algorithm="dense-ipm", workers=1)
    Z = res.x.reshape(C.shape)
    assert res.status == "optimal"
    assert np.abs(Z.sum(axis=1) - 1).max() <= 1e-9
    assert float((C * Z).sum()) == pytest.approx(ref, rel=1e-6)
    assert res.optimality.bound <= ref * (1 + 1e-9)
    assert used and all(used)  # every stalled solve had its weights (a singular one: simplex)


def test_auto_picks_the_dense_master_for_dense_cones_from_300_rows():
    """``"auto"``: the interior point for a cone whose rows chain every location (Geo-Ind, and an
    intersection with it) from K = 300; the simplex below, for a cone without chains (γ under
    the smallest distance) and for a notion that does not say."""
    from lpmech.design.notion import Intersection, Notion
    from lpmech.errors import InputError

    inst = li.grid(3, 3)
    chained = GeoInd(omg.factor_matrix(inst, 1.0))
    cut = GeoInd(omg.factor_matrix(inst.with_gamma(0.5), 1.0))
    assert chained.dense_columns and not cut.dense_columns and not Notion(9).dense_columns
    assert Intersection([cut, chained]).dense_columns
    assert dec._master_algorithm("auto", dec.DENSE_MASTER_MIN_K, True) == "dense-ipm"
    assert dec._master_algorithm("auto", dec.DENSE_MASTER_MIN_K - 1, True) == "simplex"
    assert dec._master_algorithm("auto", 10 * dec.DENSE_MASTER_MIN_K, False) == "simplex"
    with pytest.raises(InputError, match="master_algorithm"):
        dec._master_algorithm("interior", 400, True)


@pytest.mark.parametrize("ones", [True, False])
def test_phase_1_is_skipped_only_when_a_column_of_ones_meets_the_unit_rows(monkeypatch, ones):
    """With a column of ones (weight 1 meets every unit row) no phase-1 master is solved; with
    tents only, phase 1 runs on HiGHS' simplex. Both reach the whole LP's optimum."""
    simplex = []
    real = dec.Master._solve

    def counted(self):
        simplex.append(self.phase)
        return real(self)

    monkeypatch.setattr(dec.Master, "_solve", counted)
    notion, C, ref, cols = _case_with_tents("grid", 16, ones=ones)
    res = decompose(notion, C, columns=cols, master_algorithm="dense-ipm", workers=1)
    assert res.status == "optimal"
    assert res.optimality.objective == pytest.approx(ref, rel=1e-6)
    assert res.optimality.bound <= ref * (1 + 1e-9)
    assert (1 not in simplex) if ones else (simplex[:1] == [1])


def test_the_dense_master_solves_again_only_when_its_lp_changed(monkeypatch):
    """An unchanged LP keeps its last solve (no interior point run); new costs (a rescale), a new
    column or a purge solve again, and the rescaled duals are the old ones over the factor."""
    from lpmech.solvers import dense_lp

    calls = []
    real = dense_lp.solve

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(dense_lp, "solve", counted)
    inst = _metric_case("grid", 21)
    notion = GeoInd(omg.factor_matrix(inst, 1.0))
    C = inst.prior[:, None] * inst.loss
    T = notion.closure.T
    m = dec.DenseIPMMaster(C, [], "simplex")
    for k in range(inst.K):
        m.add(k, np.ones(inst.K))
        m.add(k, T[:, k].copy())
    m.start_phase_2()
    y1, v1 = m.run()
    assert len(calls) == 1
    y2, v2 = m.run()
    assert len(calls) == 1 and np.array_equal(y1, y2) and v1 == v2
    m.rescale(2.0)
    y3, v3 = m.run()
    assert len(calls) == 2
    assert v3 == pytest.approx(v1 / 2, rel=1e-8)
    assert np.allclose(y3, y1 / 2, atol=1e-7)
    m.add(0, 0.5 * np.ones(inst.K) + 0.5 * T[:, 1])
    m.run()
    assert len(calls) == 3
    before = len(m.vs)
    m.purge(100, 1)  # every column without weight in the last solve leaves
    assert len(m.vs) < before
    m.run()
    assert len(calls) == 4


@pytest.mark.parametrize("seed", range(4))
def test_compiled_repair_equals_the_numpy_repair(seed, monkeypatch):
    """One column raised into the cone by the numba kernel and by the numpy max-product: the same
    vector, which satisfies every row, on points with γ (zeros in F) and columns with zeros."""
    rng = np.random.default_rng(seed)
    K = 50
    inst = li.points(rng.uniform(0, 4, size=(K, 2)))
    notion = GeoInd(omg.factor_matrix(inst.with_gamma(2.5), 0.8))
    v = rng.random(K) ** 3
    v[rng.random(K) < 0.3] = 0.0
    got = {}
    for backend, min_k in (("numba", 1), ("numpy", 10 ** 9)):
        monkeypatch.setattr(geoind, "JIT_MIN_K", min_k)
        got[backend] = notion.repair(v[:, None])[:, 0]
    assert np.array_equal(got["numba"], got["numpy"])
    out = got["numba"]
    assert (out >= v).all()
    F = notion.F
    assert (F * out[:, None] <= out[None, :] * (1 + 1e-12)).all()  # F_ij out_i ≤ out_j


def test_a_stop_during_an_interior_point_solve_keeps_the_last_master(monkeypatch):
    """A stop requested as the third master solve starts ends that solve at its first iteration:
    the decomposition returns ``interrupted`` with the last solved master's mechanism (row sums 1)
    and a bound below the whole LP's optimum, which lies below the mechanism's loss."""
    from lpmech import stop
    from lpmech.solvers import dense_lp

    inst = _metric_case("points", 11)
    notion = GeoInd(omg.factor_matrix(inst, 0.5))
    C = inst.prior[:, None] * inst.loss
    ref = omg.solve(inst, 0.5, method="full", reduce=False, merge=False).objective
    real, calls = dense_lp.solve, []

    def solve(*args, **kwargs):
        calls.append(None)
        if len(calls) == 3:
            stop.request("interrupted")
        sol = real(*args, **kwargs)  # the third raises dense_lp.Stopped
        calls[-1] = int(sol["iterations"])
        return sol

    monkeypatch.setattr(dense_lp, "solve", solve)
    try:
        res = decompose(notion, C, master_algorithm="dense-ipm", workers=1)
    finally:
        stop.clear()
    assert len(calls) == 3 and calls[-1] is None  # the third solve did not end
    assert res.status == "interrupted"
    assert res.stats["ipm_iterations"] == sum(c for c in calls if c is not None)
    Z = res.x.reshape(C.shape)
    assert np.abs(Z.sum(axis=1) - 1).max() <= 1e-8
    assert res.optimality.bound <= ref * (1 + 1e-9) <= float((C * Z).sum()) * (1 + 1e-9)
