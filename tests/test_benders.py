"""Benders driver: optimum equals the monolithic LP, bounds behave (Prop. 4.3), executors agree."""

from __future__ import annotations

import concurrent.futures as cf
import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from lpmech.errors import InfeasibleError, InputError
from lpmech.solvers.benders import BendersProblem, Block, affine_cut, solve_benders, solve_monolithic
from lpmech.solvers.highs import solve_lp


def random_problem(seed: int, M: int = 3, ny: int = 4, nx: int = 5, rows: int = 6) -> BendersProblem:
    """A random feasible block-angular LP: costs ≥ 0, rows built around a known feasible point."""
    rng = np.random.default_rng(seed)
    y0 = rng.uniform(0, 1, ny)
    blocks = []
    for m in range(M):
        A = sp.random(rows, nx, density=0.6, random_state=rng.integers(1 << 30), format="csr")
        G = sp.random(rows, ny, density=0.5, random_state=rng.integers(1 << 30), format="csr")
        G.data -= 0.5
        x0 = rng.uniform(0, 1, nx)
        act = A @ x0 + G @ y0
        lo = np.where(rng.random(rows) < 0.5, act - rng.uniform(0, 0.3, rows), -np.inf)
        hi = np.where(np.isinf(lo), act + rng.uniform(0, 0.3, rows), np.inf)
        blocks.append(Block(c=rng.uniform(0, 1, nx), A=A, G=G, row_lo=lo, row_hi=hi,
                            col_lo=np.zeros(nx), col_hi=np.ones(nx), name=str(m)))
    return BendersProblem(alpha=rng.uniform(-0.5, 1, ny), blocks=blocks, y_hi=np.ones(ny))


def check_trace(res):
    lbs = [t["lower_bound"] for t in res.stats["trace"]]
    ubs = [t["upper_bound"] for t in res.stats["trace"]]
    assert all(b >= a - 1e-12 for a, b in itertools.pairwise(lbs)), "LB decreased"
    assert all(u >= lb - 1e-7 for lb, u in zip(lbs, ubs)), "UB below LB"


@pytest.mark.parametrize("seed", range(6))
def test_benders_equals_monolithic(seed):
    prob = random_problem(seed)
    mono = solve_monolithic(prob)
    assert mono.status == "optimal"
    res = solve_benders(prob, executor="serial", abs_tol=1e-7, rel_tol=0, max_iter=300)
    assert res.status == "optimal"
    assert res.objective == pytest.approx(mono.objective, abs=1e-6)
    assert res.bound <= mono.objective + 1e-7 <= res.objective + 2e-7
    check_trace(res)
    # the returned point is feasible for the monolithic LP and has the reported value
    c, A, lo, hi, _clo, _chi = prob.as_lp()
    ax = A @ res.x
    assert (ax >= lo - 1e-7).all() and (ax <= hi + 1e-7).all()
    assert float(c @ res.x) == pytest.approx(res.objective, abs=1e-7)


def test_plain_benders_without_stabilisation_agrees():
    prob = random_problem(11)
    a = solve_benders(prob, executor="serial", abs_tol=1e-7, rel_tol=0, stabilise=0, max_iter=300)
    b = solve_monolithic(prob)
    assert a.objective == pytest.approx(b.objective, abs=1e-6)
    check_trace(a)


def test_affine_cut_is_a_valid_minorant():
    """Cut from the duals at one y lies below the true value function at other y (weak duality)."""
    prob = random_problem(3, M=1)
    b = prob.blocks[0]
    rng = np.random.default_rng(0)
    y0 = rng.uniform(0, 1, prob.n_y) * 0.1
    r0 = solve_lp(b.c, b.A, b.row_lo - b.G @ y0, b.row_hi - b.G @ y0, b.col_lo, b.col_hi)
    const, coef = affine_cut(b.c, b.A, b.G, b.row_lo, b.row_hi, b.col_lo, b.col_hi, r0.duals)
    assert const + coef @ y0 == pytest.approx(r0.objective, abs=1e-8)  # tight at y0
    for _ in range(10):
        y = rng.uniform(0, 1, prob.n_y)
        r = solve_lp(b.c, b.A, b.row_lo - b.G @ y, b.row_hi - b.G @ y, b.col_lo, b.col_hi)
        if r.status == "optimal":
            assert const + coef @ y <= r.objective + 1e-8


def test_process_pool_and_dask_executors_agree():
    prob = random_problem(2)
    serial = solve_benders(prob, executor="serial", abs_tol=1e-8, rel_tol=0)
    with cf.ProcessPoolExecutor(max_workers=2) as ex:
        pool = solve_benders(prob, executor=ex, abs_tol=1e-8, rel_tol=0)
    default = solve_benders(prob, abs_tol=1e-8, rel_tol=0)  # its own process pool
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        dask = solve_benders(prob, executor=client.get_executor(), abs_tol=1e-8, rel_tol=0)
    for r in (pool, default, dask):
        assert r.objective == pytest.approx(serial.objective, abs=1e-9)
        assert r.stats["iterations"] == serial.stats["iterations"]
    assert dask.stats["executor"] != "serial"


def test_infeasible_problem_raises():
    A = sp.csr_matrix(np.ones((1, 1)))
    G = sp.csr_matrix(np.ones((1, 1)))
    # x + y ≥ 3 with x, y ∈ [0, 1]: infeasible; Benders must prove it (feasibility cut then master)
    blk = Block(c=np.ones(1), A=A, G=G, row_lo=np.array([3.0]), row_hi=np.array([np.inf]),
                col_lo=np.zeros(1), col_hi=np.ones(1))
    prob = BendersProblem(alpha=np.ones(1), blocks=[blk], y_hi=np.ones(1))
    assert solve_monolithic(prob).status == "infeasible"
    with pytest.raises(InfeasibleError):
        solve_benders(prob, executor="serial")


@pytest.mark.parametrize("recourse", ["farkas", "elastic"])
def test_feasibility_cut_needed_and_found(recourse):
    """x + y ≥ 1.5, x ≤ 1 forces y ≥ 0.5 although alpha pushes y to 0: Farkas cuts, or the elastic
    penalty (complete recourse: no feasibility cut at all), both reach the optimum by hand."""
    blk = Block(c=np.array([1.0]), A=sp.csr_matrix([[1.0]]), G=sp.csr_matrix([[1.0]]),
                row_lo=np.array([1.5]), row_hi=np.array([np.inf]), col_lo=np.zeros(1), col_hi=np.ones(1))
    prob = BendersProblem(alpha=np.array([2.0]), blocks=[blk], y_hi=np.array([5.0]))
    res = solve_benders(prob, executor="serial", abs_tol=1e-9, rel_tol=0, recourse=recourse)
    # optimum by hand: y = 0.5, x = 1: cost 2·0.5 + 1 = 2
    assert res.status == "optimal"
    assert res.objective == pytest.approx(2.0, abs=1e-8)
    n_feas = sum(t["feasibility_cuts"] for t in res.stats["trace"])
    assert (n_feas >= 1) if recourse == "farkas" else (n_feas == 0)
    check_trace(res)


def test_elastic_penalty_below_threshold_is_raised():
    """A penalty U = 0.1 below the multiplier of x + y ≥ 1.5 (which is 2 = α: y is the cheaper way
    to cover the row) makes slack the cheapest; the driver must raise U and still certify 2."""
    blk = Block(c=np.array([1.0]), A=sp.csr_matrix([[1.0]]), G=sp.csr_matrix([[1.0]]),
                row_lo=np.array([1.5]), row_hi=np.array([np.inf]), col_lo=np.zeros(1), col_hi=np.ones(1))
    prob = BendersProblem(alpha=np.array([2.0]), blocks=[blk], y_hi=np.array([5.0]))
    res = solve_benders(prob, executor="serial", abs_tol=1e-9, rel_tol=0, penalty=0.1)
    assert res.status == "optimal" and res.objective == pytest.approx(2.0, abs=1e-8)
    assert res.stats["penalty_raises"] >= 1


def test_iteration_cap_is_its_own_status():
    """A cap of one iteration cannot certify a problem that needs more (monolithic says so)."""
    prob = random_problem(4)
    full = solve_benders(prob, executor="serial", abs_tol=1e-9, rel_tol=0, max_iter=300)
    assert full.status == "optimal" and full.stats["iterations"] > 1
    capped = solve_benders(prob, executor="serial", abs_tol=1e-9, rel_tol=0, max_iter=1)
    assert capped.status == "iteration_limit"
    assert capped.stats["max_iter"] == 1
    if capped.objective is not None:  # a best point, if any, is feasible: no better than the optimum
        assert capped.objective >= solve_monolithic(prob).objective - 1e-7


def test_bad_input():
    prob = random_problem(0)
    with pytest.raises(InputError):
        solve_benders(prob, executor=object())
    with pytest.raises(InputError):
        solve_benders(prob, executor="serial", max_iter=0)
    with pytest.raises(InputError, match="unbounded"):
        BendersProblem(alpha=-np.ones(prob.n_y), blocks=prob.blocks)
    with pytest.raises(InputError, match="columns"):
        BendersProblem(alpha=np.ones(prob.n_y + 1), blocks=prob.blocks)
