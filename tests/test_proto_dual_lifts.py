"""The dual-lift prototype (benchmarks/prototypes/omg_dual_lifts.py): every lifted point's
Lagrangian bound lies below the optimum of the full OMG LP, and the lifts keep their sums."""

import numpy as np
import pytest

from lpmech import instance as li
from lpmech.models import omg
from tests.conftest import load_prototype


@pytest.fixture(scope="module")
def proto():
    return load_prototype("omg_dual_lifts")


def test_lifted_bounds_are_below_the_full_optimum(proto):
    g = 6
    inst = li.grid(g, g).with_prior(np.random.default_rng(1).dirichlet(np.ones(g * g)))
    ref = omg.solve(inst, 1.0, method="full")
    rows = proto.bounds(inst, 1.0, [1.0, 0.9])
    assert {r["lift"] for r in rows} == {"prior mass", "bilinear", "bilinear rescaled"}
    for r in rows:
        assert r["bound"] <= ref.objective + 1e-7
    sums = {(r["lift"], r["theta"]): r["sum_y"] for r in rows}
    assert sums[("bilinear rescaled", 1.0)] == pytest.approx(sums[("prior mass", 1.0)], rel=1e-12)
    assert sums[("prior mass", 0.9)] == pytest.approx(0.9 * sums[("prior mass", 1.0)], rel=1e-12)


def test_bilinear_lift_reproduces_a_linear_multiplier(proto):
    """A per-mass multiplier linear in the coordinates is interpolated exactly."""
    g = 5
    inst = li.grid(g, g).with_prior(np.random.default_rng(2).dirichlet(np.ones(g * g)))
    S = omg.omg_large.coarse_points(inst)
    coarse, _ = omg.omg_large.coarse_instance(inst, S)
    a = np.array([0.3, -0.2])
    mu = coarse.prior * (1.0 + inst.coords[S] @ a)
    y = proto.bilinear_lift(inst, S, coarse, mu)
    assert np.allclose(y, inst.prior * (1.0 + inst.coords @ a), atol=1e-12)


def test_solves_from_shrunk_duals_meet_the_full_optimum(proto, monkeypatch):
    """Started at θ·y for any θ, the decomposition certifies the full LP's optimum."""
    monkeypatch.setattr(omg.omg_large, "COARSE_MIN_K", 20)  # a coarse start at K = 36
    g = 6
    inst = li.grid(g, g).with_prior(np.random.default_rng(4).dirichlet(np.ones(g * g)))
    ref = omg.solve(inst, 0.5, method="full")
    rows = proto.solves(inst, 0.5, [1.0, 0.5], repeat=1)
    for r in rows:
        assert r["status"] == "optimal"
        assert r["objective"] == pytest.approx(ref.objective, rel=2e-6)
