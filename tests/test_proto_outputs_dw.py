"""The output-generation-by-decomposition prototype (benchmarks/prototypes/outputs_by_decomposition.py)
against the full LP of the same composed problem."""

import numpy as np
import pytest

from lpmech import instance as li
from lpmech.design import LIP, DPrivacy, solve
from lpmech.design.problem import Problem
from tests.conftest import load_prototype


@pytest.fixture(scope="module")
def proto():
    return load_prototype("outputs_by_decomposition")


@pytest.mark.parametrize("eps_lip", [1.0, 2.0])
def test_bracket_holds_the_full_lp_optimum(proto, eps_lip):
    """Its upper (a restricted optimum) and lower (L(μ) over every output) bracket the full LP's
    optimum of Geo-Ind ∧ LIP, and meet it at the stop."""
    g = 4
    inst = li.grid(g, g).with_prior(np.random.default_rng(3).dirichlet(np.ones(g * g)))
    notion = DPrivacy(inst, 1.0) & LIP(inst.prior, eps_lip)
    ref = solve(notion, prior=inst.prior, loss=inst.loss, method="full")
    problem = Problem.make(notion, prior=inst.prior, loss=inst.loss)
    x, upper, lower, rounds, trace = proto.solve_outputs_dw(problem, time_limit=120)
    assert rounds >= 1 and x is not None
    assert lower <= ref.objective + 1e-7 <= upper + 2e-7
    assert upper - lower <= 1e-6 * abs(upper)
    assert abs(float((problem.C * x).sum()) - upper) <= 1e-9
    assert np.abs(x.sum(axis=1) - 1).max() <= 1e-7
    for t in trace:  # every round's bound is below the optimum
        assert t["lower"] <= ref.objective + 1e-7


def test_restricted_view_maps_outputs(proto):
    """Output s of the restricted notion starts from the rows of output S[s]."""
    inst = li.grid(3, 3)
    notion = DPrivacy(inst, 1.0)
    S = [5, 2, 7]
    view = proto.restricted(notion, S)
    for s, k in enumerate(S):
        a, b = view.initial_rows(s), notion.initial_rows(k)
        assert a.shape == b.shape and (a != b).nnz == 0
    assert view.K == notion.K
