"""The pricing replay (benchmarks/prototypes/omg_pricing_replay.py) against scipy's whole pricing LP."""

import numpy as np
import pytest
import scipy.sparse as sp

from lpmech import instance as li
from lpmech.design.geoind import GeoInd, factor_matrix
from tests.conftest import load_prototype
from tests.test_decomposition import whole_pricing_lp


@pytest.fixture(scope="module")
def proto():
    return load_prototype("omg_pricing_replay")


@pytest.mark.parametrize("eps", [0.5, 1.0])
def test_replayed_pricing_optima_are_the_whole_pricing_lps(proto, eps):
    """Every round's costs recorded from a solve, replayed: each optimum equals scipy's pricing LP
    with every Geo-Ind row written (min w·v over 0 ≤ v ≤ 1, F_ij v_i ≤ v_j), and the outputs of
    value 0 counted are those whose optimum is 0."""
    g = 4
    inst = li.grid(g, g).with_prior(np.random.default_rng(3).dirichlet(np.ones(g * g)))
    rounds = proto.record(inst, eps)
    assert len(rounds) >= 2 and all(W.shape == (inst.K, inst.K) for W in rounds)
    F = factor_matrix(inst, eps)
    notion = GeoInd(F, closure=np.exp(-eps * inst.metric).T.copy())
    ks = list(range(0, inst.K, 3))
    rows, values = proto.replay(notion, rounds, ks)
    assert len(rows) == len(values) == len(rounds)
    A, ub = sp.csr_matrix(notion.rows()), np.ones(inst.K)
    for W, found, row in zip(rounds, values, rows):
        for k, value in zip(ks, found):
            ref = whole_pricing_lp(W[:, k], A, ub)
            assert value == pytest.approx(ref.fun, abs=1e-8 * max(1.0, np.abs(W[:, k]).max()))
        assert row["zero_outputs"] == sum(abs(v) <= 1e-12 for v in found)
    assert rows[0]["runs_per_lp"] >= 1.0
