"""Pricing on stateful Dask actors (a LocalCluster) gives the local optimum; workers ignore Ctrl-C."""

import os
import signal
import time

import numpy as np
import pytest

from lpmech import instance as li
from lpmech.design import decomposition as dc
from lpmech.design.geoind import GeoInd
from lpmech.models import omg
from lpmech.models.omg import omg_large

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as c:
        yield c


def test_dask_actors_give_the_local_optimum(client):
    inst = li.grid(4, 4, prior=np.random.default_rng(7).dirichlet(np.ones(16)))
    local = omg_large.solve_decomposition(inst, 0.9, workers=1)
    dask = omg_large.solve_decomposition(inst, 0.9, executor=client)
    assert dask.stats["backend"] == "dask" and local.stats["backend"] == "local"
    assert dask.stats["workers"] == 2
    assert dask.optimality.objective == pytest.approx(local.optimality.objective, rel=1e-9)
    full = omg.solve(inst, 0.9, method="full").objective  # the independent reference
    assert dask.optimality.objective == pytest.approx(full, rel=1e-7)
    assert dask.optimality.bound <= full * (1 + 1e-9)


def test_dask_actors_hand_back_the_rows_of_each_pricing_lp(client):
    """``rows_of`` from the actors equals the rows of the same LPs priced in this process."""
    inst = li.grid(4, 4, prior=np.random.default_rng(2).dirichlet(np.ones(16)))
    notion = GeoInd(omg.factor_matrix(inst, 1.0))
    W = inst.prior[:, None] * inst.loss - 0.02
    dask = dc.make_pricer(notion, 16, executor=client)
    local = dc.LocalPricer(notion, 16)
    try:
        dask.price(np.arange(16), W, None)
        local.price(np.arange(16), W, None)
        ks = [9, 2, 15, 4]
        for Rd, Rl in zip(dask.rows_of(ks), local.rows_of(ks), strict=True):
            assert Rd.shape == Rl.shape and abs(Rd - Rl).max() == 0
    finally:
        dask.close()


def test_generic_decompose_on_dask_with_an_extra_row(client):
    inst = li.grid(3, 3, prior=np.random.default_rng(8).dirichlet(np.ones(9)))
    notion = GeoInd(omg.factor_matrix(inst, 0.6))
    C = inst.prior[:, None] * inst.loss
    truth = np.diag(inst.prior)
    extra = [(truth, 0.3, None)]
    a = dc.decompose(notion, C, extra_rows=extra, executor=client)
    b = dc.decompose(notion, C, extra_rows=extra, executor="local")
    assert a.status == b.status == "optimal"
    assert a.optimality.objective == pytest.approx(b.optimality.objective, rel=1e-9)
    assert float((truth * a.x.reshape(9, 9)).sum()) >= 0.3 - 1e-8


def test_process_workers_ignore_sigint_and_are_stopped_by_the_parent():
    inst = li.grid(3, 3)
    notion = GeoInd(omg.factor_matrix(inst, 1.0))
    pricer = dc.make_pricer(notion, 9, executor="process", workers=2)
    procs = list(pricer.procs)
    try:
        pids = [p.pid for p in procs]
        for pid in pids:
            os.kill(pid, signal.SIGINT)
        time.sleep(0.2)
        assert all(p.is_alive() for p in pricer.procs)  # a Ctrl-C reaches the group: ignored
        W = inst.prior[:, None] * inst.loss - 0.05
        got = {k: v for k, v, _, _ in pricer.price(np.arange(9), W, None)}
        local = dc.LocalPricer(notion, 9)
        ref = {k: v for k, v, _, _ in local.price(np.arange(9), W, None)}
        for k in range(9):  # the same pricing optimum (value) as in this process
            assert W[:, k] @ got[k] == pytest.approx(W[:, k] @ ref[k], abs=1e-12)
    finally:
        pricer.close()
    assert not any(p.is_alive() for p in procs)
