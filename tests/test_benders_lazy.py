"""Benders speed-ups of issue 13, each against an independent computation.

* lazy block rows: a subproblem solved with its lazy rows added only when violated has the value
  of the full LP (HiGHS on all rows) and a cut that is tight there and valid elsewhere;
* partial Benders (retained blocks, ``retain_after``): the monolithic optimum, certified;
* the whole LP by row generation over the lazy rows (the retention endgame): the optimum of HiGHS
  on all rows, a feasible point of all rows, a Lagrangian bound valid for the whole LP;
* CLR-Geo's master rows with the mass the ties force on free entries: satisfied by the
  monolithic optimum of the whole LP (valid), and stronger than the plain unit rows;
* the cross-user GV sweep over nonzeros: equal to the definition evaluated pair by pair;
* own-row cost and travel error: equal to eqs. (3)–(5) summed by hand.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from lpmech import datasets as ds
from lpmech.models import lrgeo
from lpmech.solvers.benders import (
    BendersProblem,
    Block,
    solve_benders,
    solve_block,
    solve_monolithic,
    solve_whole_lazy,
)
from lpmech.solvers.highs import solve_lp

GRID = ds.synthetic_road_grid(6, 6, cell_km=0.9, rng=np.random.default_rng(3))
USERS = [0, 8, 21, 30]


def lazy_problem(seed: int, M: int = 3, ny: int = 4, nx: int = 6, rows: int = 14) -> BendersProblem:
    """Random block LPs around a known feasible point; the ≤ rows are lazy, the = rows are not."""
    rng = np.random.default_rng(seed)
    y0 = rng.uniform(0, 1, ny)
    blocks = []
    for m in range(M):
        A = sp.random(rows, nx, density=0.5, random_state=rng.integers(1 << 30), format="csr")
        G = sp.random(rows, ny, density=0.4, random_state=rng.integers(1 << 30), format="csr")
        G.data -= 0.5
        x0 = rng.uniform(0, 1, nx)
        act = A @ x0 + G @ y0
        eq = np.arange(rows) < 2
        lo = np.where(eq, act, -np.inf)
        hi = np.where(eq, act, act + rng.uniform(0, 0.02, rows))
        blocks.append(Block(c=rng.uniform(0, 1, nx), A=A, G=G, row_lo=lo, row_hi=hi, col_lo=np.zeros(nx),
                            col_hi=np.ones(nx), name=str(m), lazy=~eq))
    prob = BendersProblem(alpha=rng.uniform(-0.5, 1, ny), blocks=blocks, y_hi=np.ones(ny))
    prob.y0 = y0  # every block is feasible there
    return prob


@pytest.mark.parametrize("seed", range(4))
def test_lazy_block_equals_full_lp_and_cut_is_valid(seed):
    prob = lazy_problem(seed)
    rng = np.random.default_rng(seed + 100)
    b = prob.blocks[0]
    y0 = prob.y0
    full = solve_lp(b.c, b.A, b.row_lo - b.G @ y0, b.row_hi - b.G @ y0, b.col_lo, b.col_hi)
    assert full.status == "optimal"
    out = solve_block(b, y0, penalty=1e3 * max(1.0, b.c.max()))
    assert out["slack"] <= 1e-9
    assert out["value"] == pytest.approx(full.objective, abs=1e-8)
    assert out["const"] + out["coef"] @ y0 == pytest.approx(full.objective, abs=1e-7)  # tight at y0
    assert 0 < len(out["basis"][0]) < int(b.lazy.sum())  # some lazy rows entered, not all
    for _ in range(10):  # valid elsewhere: below the full LP's value
        y = rng.uniform(0, 1, prob.n_y)
        r = solve_lp(b.c, b.A, b.row_lo - b.G @ y, b.row_hi - b.G @ y, b.col_lo, b.col_hi)
        if r.status == "optimal":
            assert out["const"] + out["coef"] @ y <= r.objective + 1e-7
    # the warm state (rows in the model, basis) gives the same answer at another point
    y1 = np.clip(y0 + rng.uniform(-0.05, 0.05, prob.n_y), 0, 1)
    warm = solve_block(b, y1, penalty=1e3 * max(1.0, b.c.max()), basis=out["basis"])
    cold = solve_block(b, y1, penalty=1e3 * max(1.0, b.c.max()))
    assert warm["value"] == pytest.approx(cold["value"], abs=1e-8)


@pytest.mark.parametrize("seed", range(3))
def test_benders_with_lazy_rows_and_retention_equals_monolithic(seed):
    prob = lazy_problem(seed)
    mono = solve_monolithic(prob)
    assert mono.status == "optimal"
    kw = dict(executor="serial", abs_tol=1e-8, rel_tol=0, max_iter=300)
    for extra in ({}, {"retain": [1]}, {"retain": [0, 1, 2]}, {"retain_after": 1}):
        res = solve_benders(prob, **kw, **extra)
        assert res.status == "optimal", extra
        assert res.objective == pytest.approx(mono.objective, abs=1e-6), extra
        assert res.bound <= mono.objective + 1e-7, extra
        c, A, lo, hi, _clo, _chi = prob.as_lp()
        ax = A @ res.x
        assert (ax >= lo - 1e-7).all() and (ax <= hi + 1e-7).all()
        assert float(c @ res.x) == pytest.approx(res.objective, abs=1e-7)
        if extra.get("retain") == [0, 1, 2]:  # the master is the whole LP: certified at once
            assert res.stats["iterations"] == 1
        if "retain_after" in extra:
            assert res.stats["iterations"] <= 2


@pytest.mark.parametrize("source", ["random", "clr"])
def test_whole_lp_with_lazy_rows_equals_all_rows(source):
    prob = lazy_problem(5) if source == "random" else clr(3.0, 1.0).problem
    c, A, lo, hi, clo, chi = prob.as_lp()
    full = solve_lp(c, A, lo, hi, clo, chi)  # HiGHS on every row at once
    assert full.status == "optimal"
    states = None
    if source == "clr":  # seeded with the lazy rows the blocks held at some y (as in solve_benders)
        y = np.full(prob.n_y, 0.3) * np.minimum(prob.y_hi, 1.0)
        states = [solve_block(b, y, penalty=1e4)["basis"] for b in prob.blocks]
    res = solve_whole_lazy(prob, states=states)
    assert res.status == "optimal"
    assert res.stats["rows_in_model"] < A.shape[0]  # some rows were never needed
    assert res.objective == pytest.approx(full.objective, rel=1e-7, abs=1e-9)
    ax = A @ res.x  # feasible for every row, also those never in the model
    assert (ax >= lo - 1e-8).all() and (ax <= hi + 1e-8).all()
    assert (res.x >= clo - 1e-9).all() and (res.x <= chi + 1e-9).all()
    assert float(c @ res.x) == pytest.approx(res.objective, abs=1e-12)
    # its bound is certified for the whole LP: at most the optimum of all rows, and close to it
    assert res.bound <= full.objective + 1e-8
    assert res.bound == pytest.approx(full.objective, rel=1e-7, abs=1e-9)


def clr(epsilon, r_exp, **kw):
    P = lrgeo.LRGeoParams(epsilon=epsilon, r_exp=r_exp, gamma=1.5, lr_cap=6)
    return lrgeo.clr_problem(lrgeo.build_structure(GRID, USERS, P), **kw)


@pytest.mark.parametrize("epsilon,r_exp", [(2.0, 1.0), (5.0, 1.5), (10.0, 0.5)])
def test_implied_mass_rows_are_valid_and_stronger(epsilon, r_exp):
    c = clr(epsilon, r_exp)
    prob = c.problem
    mono = solve_monolithic(prob)
    assert mono.status == "optimal"
    y, _ = prob.split(mono.x)
    assert (prob.master_A @ y <= prob.master_hi + 1e-7).all()  # the optimum satisfies them
    # without any master rows the whole LP has the same optimum (the rows are implied)
    bare = clr(epsilon, r_exp, master_unit_rows=False).problem
    bare.y_hi = np.full(bare.n_y, np.inf)
    assert solve_monolithic(bare).objective == pytest.approx(mono.objective, rel=1e-7, abs=1e-10)
    # stronger than the plain rows Σ_tied a_ik y_k ≤ 1: extra positive coefficients on free entries
    n_plain = sum(int((~m).sum()) for m in c.xmasks)  # one coefficient per tied entry
    assert prob.master_A.nnz > n_plain


def test_lrgeo_solve_auto_retention_and_pure_cuts_agree_with_monolithic():
    P = lrgeo.LRGeoParams(epsilon=3.0, r_exp=1.0, gamma=1.5, lr_cap=6)
    mono = lrgeo.solve(GRID, USERS, P, method="monolithic", executor="serial", relaxed_bound=False)
    auto = lrgeo.solve(GRID, USERS, P, executor="serial", abs_tol=0, rel_tol=1e-7, relaxed_bound=False)
    pure = lrgeo.solve(GRID, USERS, P, executor="serial", abs_tol=0, rel_tol=1e-7, relaxed_bound=False,
                       retain_after=None, max_iter=400)
    for r in (auto, pure):
        assert r.status == "optimal"
        assert r.stats["cost"] == pytest.approx(mono.stats["cost"], rel=1e-6)
    assert auto.stats["retain_after"] == lrgeo.RETAIN_AFTER and auto.stats["iterations"] <= 2
    assert pure.stats["retained_blocks"] == 0 and pure.stats["iterations"] > auto.stats["iterations"]
    if auto.stats["retained_blocks"]:  # the endgame's whole LP reports its rounds
        whole = auto.stats["whole_lp"]
        assert len(whole["trace"]) == whole["rounds"] and whole["trace"][-1]["violated"] == 0
    assert "whole_lp" not in pure.stats
    with pytest.raises(lrgeo.InputError):
        lrgeo.solve(GRID, USERS, P, executor="serial", retain_after=0)


def violations_by_definition(Z, d, epsilon, gamma, distinct):
    bad, total, worst, n = 0, 0.0, 0.0, 0
    for i in range(Z.shape[0]):
        for j in range(Z.shape[0]):
            if i == j or d[i, j] > gamma or (distinct and d[i, j] == 0):
                continue
            for k in range(Z.shape[1]):
                v = Z[i, k] - np.exp(epsilon * d[i, j]) * Z[j, k]
                n += 1
                worst = max(worst, v)
                if v > 1e-12:
                    bad += 1
                    total += v
    return {"gv_ratio": bad / n, "gve_mean": total / bad if bad else 0.0, "gve_max": worst, "pairs": n}


@pytest.mark.parametrize("seed", range(3))
def test_gv_sweep_equals_definition(seed):
    rng = np.random.default_rng(seed)
    pts = rng.uniform(0, 2, (14, 2))
    pts[7:10] = pts[:3]  # repeated places (d = 0), as in overlapping LR sets
    d = np.linalg.norm(pts[:, None] - pts[None], axis=-1)
    Z = rng.random((14, 9)) * (rng.random((14, 9)) < 0.4)
    Z /= np.maximum(Z.sum(axis=1, keepdims=True), 1e-300)
    for distinct in (False, True):
        got = lrgeo.geo_ind_violations(Z, d, 1.3, 1.0, distinct=distinct)
        ref = violations_by_definition(Z, d, 1.3, 1.0, distinct)
        assert got["pairs"] == ref["pairs"] and got["gv_ratio"] == pytest.approx(ref["gv_ratio"], abs=0)
        assert got["gve_mean"] == pytest.approx(ref["gve_mean"], rel=1e-12)
        assert got["gve_max"] == pytest.approx(ref["gve_max"], rel=1e-12)


def test_travel_error_and_own_row_cost_by_hand():
    s = lrgeo.build_structure(GRID, USERS, lrgeo.LRGeoParams(epsilon=3.0, r_exp=1.0, gamma=1.5, lr_cap=6))
    tc, q = s.travel_cost, s.targets
    rows, cols = [0, 5], [1, 2, 30]
    te = lrgeo.travel_error(tc, q, rows, cols)
    for a, i in enumerate(rows):
        for b, k in enumerate(cols):
            assert te[a, b] == pytest.approx(sum(q[ll] * abs(tc[i, ll] - tc[k, ll]) for ll in range(s.K)),
                                             rel=1e-12)
    rng = np.random.default_rng(0)
    mats = []
    for u in s.users:
        Z = np.zeros((u.n, s.K))
        Z[:, u.cols] = rng.random((u.n, u.cols.size))
        mats.append(Z / Z.sum(axis=1, keepdims=True))
    own = lrgeo.own_row_cost(s, mats)
    for m, u in enumerate(s.users):
        ref = sum(mats[m][0, k] * sum(q[ll] * abs(tc[u.user, ll] - tc[k, ll]) for ll in range(s.K))
                  for k in range(s.K))
        assert own[m] == pytest.approx(ref, rel=1e-10)


def test_relaxed_values_with_lazy_rows_equal_the_full_lps():
    """solve_block_alone on a lazy CLR-Geo block (the relaxed problem (29)–(30)) = HiGHS on all rows."""
    from lpmech.solvers.benders import solve_block_alone

    c = clr(3.0, 1.0, exponential=False)
    for b in c.problem.blocks:
        assert b.lazy is not None and b.lazy.any()
        full = solve_lp(b.c, b.A, b.row_lo, b.row_hi, b.col_lo, b.col_hi)
        assert solve_block_alone(b) == pytest.approx(full.objective, rel=1e-7, abs=1e-10)


class _FlakyHighs:
    """A HiGHS model whose runs number ``fail`` (1-based) stop at once (iteration limit 0): the
    status a numerical breakdown leaves (neither optimal, infeasible nor a time limit)."""

    def __init__(self, h, fail):
        self._h, self._fail, self._runs = h, set(fail), 0

    def __getattr__(self, name):
        return getattr(self._h, name)

    def run(self):
        self._runs += 1
        if self._runs not in self._fail:
            return self._h.run()
        self._h.setOptionValue("simplex_iteration_limit", 0)
        self._h.setOptionValue("ipm_iteration_limit", 0)
        try:
            return self._h.run()
        finally:
            self._h.setOptionValue("simplex_iteration_limit", 2**31 - 1)
            self._h.setOptionValue("ipm_iteration_limit", 2**31 - 1)


@pytest.mark.parametrize("fail, steps", [({2}, ["steepest edge"]), ({2, 3}, ["steepest edge", "cold start"]),
                                         ({2, 3, 4}, ["steepest edge", "cold start", "ipm"])])
def test_whole_lp_with_lazy_rows_recovers_from_a_failed_round(monkeypatch, fail, steps):
    """A warm re-solve that breaks down is retried (steepest edge, cold, IPM) in the same model; the
    result is still the optimum of HiGHS on all rows, feasible for all rows, with a valid bound."""
    import lpmech.solvers.highs as highs_mod

    prob = clr(3.0, 1.0).problem
    c, A, lo, hi, clo, chi = prob.as_lp()
    full = solve_lp(c, A, lo, hi, clo, chi)
    made = highs_mod.new_highs
    monkeypatch.setattr(highs_mod, "new_highs", lambda *a, **k: _FlakyHighs(made(*a, **k), fail))
    res = solve_whole_lazy(prob)
    assert res.stats["recoveries"] == steps
    assert res.status == "optimal"
    tr = res.stats["trace"]  # one entry per round; the failed round carries its recovery steps
    assert [t["round"] for t in tr] == list(range(1, res.stats["rounds"] + 1))
    assert tr[1]["recoveries"] == steps and all(not t["recoveries"] for t in tr[:1] + tr[2:])
    assert all(t["status"] == "Optimal" for t in tr) and tr[-1]["violated"] == 0
    assert np.all(np.diff([t["rows"] for t in tr]) > 0) and tr[-1]["rows"] == res.stats["rows_in_model"]
    assert res.objective == pytest.approx(full.objective, rel=1e-7, abs=1e-9)
    ax = A @ res.x
    assert (ax >= lo - 1e-8).all() and (ax <= hi + 1e-8).all()
    assert res.bound <= full.objective + 1e-8
    assert res.bound == pytest.approx(full.objective, rel=1e-7, abs=1e-9)


def test_whole_lp_with_lazy_rows_reports_an_unrecovered_breakdown(monkeypatch):
    import lpmech.solvers.highs as highs_mod

    made = highs_mod.new_highs
    monkeypatch.setattr(highs_mod, "new_highs", lambda *a, **k: _FlakyHighs(made(*a, **k), range(2, 9)))
    res = solve_whole_lazy(clr(3.0, 1.0).problem)
    assert res.status == "error" and res.x is None
    assert res.stats["recoveries"] == ["steepest edge", "cold start", "ipm"]


def test_a_stop_during_the_retained_whole_lp_is_an_interrupt(monkeypatch):
    """Ctrl-C while Benders' endgame solves the whole LP ends the solve as interrupted, not as a
    solver error, and the interrupted LP's point (infeasible, of low cost) is not taken for an
    incumbent: the upper bound handed over is at or above the monolithic optimum, and the cuts'
    lower bound at or below it. The request does not outlive the call."""
    from lpmech import stop
    from lpmech.errors import InterruptError
    from lpmech.solvers import benders

    P = lrgeo.LRGeoParams(epsilon=3.0, r_exp=1.0, gamma=1.5, lr_cap=6)
    mono = lrgeo.solve(GRID, USERS, P, method="monolithic", executor="serial", relaxed_bound=False)
    whole = benders.solve_whole_lazy

    def interrupted(*args, **kwargs):
        stop.request("interrupted")
        return whole(*args, **kwargs)

    monkeypatch.setattr(benders, "solve_whole_lazy", interrupted)
    with pytest.raises(InterruptError) as err:
        lrgeo.solve(GRID, USERS, P, executor="serial", abs_tol=0, rel_tol=1e-7, relaxed_bound=False)
    res = err.value.result
    assert res.status == "interrupted" and stop.requested() is None
    assert res.stats["upper_bound"] >= mono.objective - 1e-9
    assert 0.0 < res.stats["lower_bound"] <= mono.objective + 1e-9
