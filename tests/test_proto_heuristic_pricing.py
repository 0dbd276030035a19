"""The heuristic-pricing prototype (benchmarks/prototypes/omg_heuristic_pricing.py) against the full LP."""

import numpy as np
import pytest

from lpmech import instance as li
from lpmech.models import omg
from tests.conftest import load_prototype


@pytest.fixture(scope="module")
def proto():
    return load_prototype("omg_heuristic_pricing")


def _brute_in_cone(V, metric, eps, tol=1e-12):
    """max over (i, j, column) of e^{−ε d_ij} v_i − v_j (≤ tol: every column in the Geo-Ind cone)."""
    F = np.exp(-eps * metric)
    return float((F[:, :, None] * V[:, None, :] - V[None, :, :]).max())


@pytest.mark.parametrize("g, eps, mode", [(5, 1.0, "replace"), (6, 0.5, "warmup"), (5, 2.0, "add")])
def test_prototype_optimum_equals_full_lp(proto, g, eps, mode):
    rng = np.random.default_rng(0)
    inst = li.grid(g, g).with_prior(rng.dirichlet(np.ones(g * g)))
    full = omg.solve(inst, eps, method="full")
    out = proto.solve(inst, eps, mode=mode, workers=1)
    assert out["status"] == "optimal"
    assert abs(out["objective"] - full.objective) <= 1e-6 * abs(full.objective)
    assert out["bound"] <= out["objective"] * (1 + 1e-12)
    assert out["bound"] <= full.objective * (1 + 1e-9)
    assert out["realized_eps"] <= eps * (1 + 1e-6)
    st = out["state"]
    assert st.heur_found > 0  # the heuristic did offer columns
    V = np.column_stack([v for _, v in st.heur_cols])
    assert V.min() >= 0 and V.max() <= 1
    assert _brute_in_cone(V, inst.metric, eps) <= 1e-12


def test_multi_tents_in_cone_and_value(proto):
    rng = np.random.default_rng(1)
    inst = li.grid(6, 6)
    eps = 0.7
    T = np.exp(-eps * inst.metric)
    W = rng.normal(size=(inst.K, 20))
    V, val, napex = proto.multi_tents(T, W)
    assert np.allclose(val, np.einsum("ik,ik->k", W, V))
    assert _brute_in_cone(V, inst.metric, eps) <= 1e-12
    # never worse than the best single tent, and better for some column with more than one apex
    single = (T.T @ W).min(axis=0)
    assert (val <= single + 1e-12).all()
    assert (val[napex > 1] < single[napex > 1] - 1e-9).all() and (napex > 1).any()
