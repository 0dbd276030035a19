"""The proximal-point prototype (benchmarks/prototypes/omg_prox_duals.py) against independent solves."""

import cvxpy as cp
import numpy as np
import pytest

from lpmech import instance as li
from lpmech.design import decomposition as dec
from lpmech.models import omg
from tests.conftest import load_prototype


@pytest.fixture(scope="module")
def proto():
    return load_prototype("omg_prox_duals")


@pytest.mark.parametrize("t", [0.01, 1.0, 100.0])
def test_prox_point_is_the_qp_optimum(proto, t):
    """The proximal point by CVXOPT with the normal-equations KKT solver equals Clarabel's
    solution of the same QP, max Σy − ‖y − centre‖²/(2t) over Vᵀy ≤ c."""
    rng = np.random.default_rng(1)
    K, n = 12, 40
    V = rng.random((K, n)) + 0.05
    c = rng.random(n) + 0.5
    centre = rng.normal(size=K) * 0.1
    y, iters = proto.prox_point(V, c, centre, t)
    assert iters > 0
    z = cp.Variable(K)
    cp.Problem(cp.Maximize(cp.sum(z) - cp.sum_squares(z - centre) / (2 * t)),
               [V.T @ z <= c]).solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10,
                                     tol_feas=1e-10)
    assert np.abs(y - z.value).max() <= 1e-5 * max(1.0, np.abs(z.value).max())
    assert (V.T @ y <= c + 1e-7).all()


@pytest.mark.parametrize("arm", ["prox", "prox=100"])
def test_prox_solve_reaches_the_full_lp_optimum(proto, arm):
    g, eps = 5, 1.0
    inst = li.grid(g, g).with_prior(np.random.default_rng(0).dirichlet(np.ones(g * g)))
    full = omg.solve(inst, eps, method="full")
    proto.ProxState.beta, proto.ProxState.fixed = 100.0 if arm == "prox=100" else 1.0, arm != "prox"
    r, _ = proto.solve(inst, eps, prox=True)
    assert abs(r.objective - full.objective) <= 1e-6 * abs(full.objective)
    assert any(row["smoothed"] for row in r.stats["trace"])  # some rounds priced a proximal point
    assert dec._State is not proto.ProxState  # the package's class is back after the call
