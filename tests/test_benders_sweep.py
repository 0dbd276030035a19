"""CLR-Geo Benders against the monolithic LP over the sweep ε × r_exp of issue 13 (small grids).

Every cell: Benders (elastic complete recourse, the default) must end ``optimal`` with a certified
gap and reach the monolithic LP's optimum within 1e-6 relative; the monolithic value is the
independent reference (one LP with every user's block). Also: the three executors agree.
"""

from __future__ import annotations

import concurrent.futures as cf

import numpy as np
import pytest

from lpmech import datasets as ds
from lpmech.models import lrgeo
from lpmech.solvers.benders import solve_benders, solve_monolithic

EPSILONS = (1.0, 2.0, 3.0, 5.0, 10.0)
R_EXPS = (0.5, 1.0, 1.5, 3.5)
# 5×5 cells of 0.9 km (≈ 5 km across, so r_exp = 3.5 km still leaves exponential entries), 3 users
GRID = ds.synthetic_road_grid(5, 5, cell_km=0.9, rng=np.random.default_rng(7))
USERS = [0, 9, 17]


def clr(epsilon, r_exp):
    P = lrgeo.LRGeoParams(epsilon=epsilon, r_exp=r_exp, gamma=1.5, lr_cap=6)
    return lrgeo.clr_problem(lrgeo.build_structure(GRID, USERS, P))


@pytest.mark.parametrize("r_exp", R_EXPS)
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_sweep_cell_benders_equals_monolithic(epsilon, r_exp):
    prob = clr(epsilon, r_exp).problem
    mono = solve_monolithic(prob)
    assert mono.status == "optimal"
    res = solve_benders(prob, executor="serial", abs_tol=0.0, rel_tol=1e-7, max_iter=300)
    assert res.status == "optimal", res.stats["trace"][-1]
    # both points are feasible to HiGHS' 1e-7 row tolerance: at an optimum ~1e-3 (ε = 10) that moves the
    # value by a few 1e-9 either way (highspy 1.16: Benders 1.8e-9 below the monolithic value)
    assert res.objective == pytest.approx(mono.objective, rel=1e-6, abs=1e-8)
    assert res.bound <= mono.objective * (1 + 1e-7) + 1e-9
    # the returned point is feasible for the monolithic LP and has the reported value
    c, A, lo, hi, _clo, _chi = prob.as_lp()
    ax = A @ res.x
    assert (ax >= lo - 1e-7).all() and (ax <= hi + 1e-7).all()
    assert float(c @ res.x) == pytest.approx(res.objective, rel=1e-9, abs=1e-9)


def test_farkas_recourse_also_reaches_the_optimum_on_a_binding_cell():
    """The paper's feasibility cuts stay available (and correct) for comparison."""
    prob = clr(3.0, 1.0).problem
    mono = solve_monolithic(prob)
    res = solve_benders(prob, executor="serial", abs_tol=0.0, rel_tol=1e-7, max_iter=500, recourse="farkas")
    assert res.status == "optimal"
    assert res.objective == pytest.approx(mono.objective, rel=1e-6)


def test_executors_give_the_same_optimum_and_iterations():
    """Serial, process pool and Dask: the tasks carry their warm bases, so the cuts are the same."""
    prob = clr(2.0, 1.0).problem
    kw = dict(abs_tol=0.0, rel_tol=1e-7, max_iter=300)
    serial = solve_benders(prob, executor="serial", **kw)
    with cf.ProcessPoolExecutor(max_workers=2) as ex:
        pool = solve_benders(prob, executor=ex, **kw)
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        dask = solve_benders(prob, executor=client.get_executor(), **kw)
    mono = solve_monolithic(prob).objective
    assert serial.objective == pytest.approx(mono, rel=1e-6)
    for r in (pool, dask):
        assert r.status == "optimal"
        assert r.objective == pytest.approx(serial.objective, rel=1e-12, abs=1e-12)
        assert r.stats["iterations"] == serial.stats["iterations"]
