"""A stop requested anywhere in a public solve keeps the contract.

Each case is solved once without a stop (the reference optimum, and the number of times the run
asks :func:`lpmech.stop.requested`, which every driver and every interruptible HiGHS run does);
then again with a stop requested at the n-th such call, for n spread over the run. The run must
end either optimal at the reference optimum (the stop came after the last check) or with the
package's own exception for that reason (``InterruptError`` or ``TimeLimitError``), its result
of that status; a mechanism it hands over is certified, at or above the reference optimum (for
OMG and the design engine its objective is also recomputed from its matrix), and its bound lies
at or below the optimum (the local LIP solve has a local optimum and no bound). The request never
outlives the call. The reference is an unstopped run of the same path, so any mismatch is the
stop's doing.
"""

from __future__ import annotations

import functools
import os

import numpy as np
import pytest

from lpmech import datasets as ds
from lpmech import design, stop
from lpmech import instance as li
from lpmech.errors import InterruptError, TimeLimitError
from lpmech.models import le, lip, lrgeo, omg

_INST = li.grid(6, 6, prior=np.random.default_rng(0).dirichlet(np.ones(36)))
_INST100 = li.grid(10, 10, prior=np.random.default_rng(0).dirichlet(np.ones(100)))
_W = np.random.default_rng(3).dirichlet(np.ones(20))
_G = li.grid(5, 4, 1.0, unit="cell")
_SKEWED = li.grid(6, 6, 1.0, unit="cell").with_prior(np.random.default_rng(5).dirichlet(np.ones(36) * 0.3))
_ROAD = ds.synthetic_road_grid(6, 6, cell_km=0.9, rng=np.random.default_rng(3))
_TIED = lrgeo.LRGeoParams(epsilon=3.0, r_exp=1.0, gamma=1.5, lr_cap=6)


def _composed(method):
    notion = design.DPrivacy(_G.metric, 1.5) & design.LIP(_W, 2.0)
    return design.solve(notion, _W[:, None] * _G.metric, method=method, workers=1)


CASES = {
    "omg-full": lambda: omg.solve(_INST, 1.0, method="full"),
    "omg-cutting-plane": lambda: omg.solve(_INST, 1.0, method="cutting-plane"),
    "omg-decomposition": lambda: omg.solve(_INST, 1.0, method="decomposition"),
    "omg-decomposition-workers": lambda: omg.solve(_INST100, 1.0, method="decomposition"),  # K ≥ 100
    "design-full": lambda: _composed("full"),
    "design-decomposition": lambda: _composed("decomposition"),
    "design-outputs": lambda: _composed("outputs"),
    "le-support": lambda: le.solve(_SKEWED, 2.0, path="lp", lp_method="support"),
    "le-outputs": lambda: le.solve(_SKEWED, 2.0, path="lp", lp_method="outputs", workers=1),
    "le-decomposition": lambda: le.solve(_SKEWED, 2.0, path="lp", lp_method="decomposition", workers=1),
    "lip-exact": lambda: lip.solve(np.random.default_rng(1).dirichlet(np.ones(8)), 1.0,
                                   values=np.arange(8.0), method="exact"),
    "lip-local": lambda: lip.solve(np.random.default_rng(1).dirichlet(np.ones(12)), 1.0,
                                   values=np.arange(12.0), method="local", rng=np.random.default_rng(0)),
    "lrgeo-benders": lambda: lrgeo.solve(_ROAD, [0, 8, 21, 30], _TIED, executor="serial",
                                         relaxed_bound=False),
}
#: where the stop lands: these shares of the reference run's checks
SHARES = (0.0, 0.03, 0.15, 0.4, 0.75, 0.97)


@functools.cache
def reference(case: str) -> tuple[float, int, str]:
    """The case's optimum (a local one for ``lip-local``), the number of stop checks of its run
    (patched in by a counter) and its status."""
    real, calls, parent = stop.requested, [0], os.getpid()

    def counting():
        if os.getpid() == parent:  # (pricing workers forked from here count their own checks)
            calls[0] += 1
        return real()

    stop.requested = counting
    try:
        res = CASES[case]()
    finally:
        stop.requested = real
    assert res.status == ("feasible" if case == "lip-local" else "optimal")
    return float(res.objective), calls[0], res.status


def _matrix_loss(case: str, Z: np.ndarray) -> float | None:
    """The expected loss of a mechanism matrix, from its definition, for the OMG and design cases."""
    if case.startswith("omg"):
        inst = _INST100 if case.endswith("workers") else _INST
        return float((inst.prior[:, None] * inst.loss * Z).sum())
    if case.startswith("design"):
        return float((_W[:, None] * _G.metric * Z).sum())
    return None


@pytest.mark.parametrize("share", SHARES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_stop_anywhere_keeps_the_contract(case, share, monkeypatch):
    opt, total, status = reference(case)
    at = max(1, round(share * total))
    reason = "time_limit" if SHARES.index(share) % 2 else "interrupted"
    real, calls, parent = stop.requested, [0], os.getpid()

    def stopping():  # the request is the parent's, as Ctrl-C's or the deadline's is
        if os.getpid() == parent:
            calls[0] += 1
            if calls[0] == at:
                stop.request(reason)
        return real()

    monkeypatch.setattr(stop, "requested", stopping)
    tol = 1e-6 * max(1.0, abs(opt))
    try:
        res = CASES[case]()
    except (InterruptError, TimeLimitError) as exc:
        assert type(exc) is (InterruptError if reason == "interrupted" else TimeLimitError)
        res = exc.result
        assert res is not None and res.status == reason
        if res.mechanism is not None:
            assert res.certificate.satisfied
            if status == "optimal":  # (a local solve stopped early may end elsewhere)
                assert res.objective >= opt - tol
            loss = _matrix_loss(case, res.mechanism.matrix)
            if loss is not None:
                assert res.objective == pytest.approx(loss, rel=1e-9, abs=1e-12)
        if res.bound is not None:
            assert res.bound <= opt + tol
    else:  # only a stop late in the run may let it finish (the rest is certification)
        assert share > 0.5, "a stop requested early in the run did not stop it"
        assert res.status == status and res.objective == pytest.approx(opt, rel=1e-6, abs=1e-9)
    assert real() is None  # the outermost public call cleared the request
