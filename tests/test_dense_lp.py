"""The dense LP max Σ y s.t. Vᵀy ≤ c (the decomposition's master, dual form) by CVXOPT with the
numpy KKT solver, against HiGHS on the primal min c·λ, V λ = 1, λ ≥ 0 and CVXOPT's own solver."""

import os

import numpy as np
import pytest
from scipy.optimize import linprog

from lpmech.solvers import dense_lp


def _master(seed: int, K: int, n: int, eps: float = 1.0):
    """A Geo-Ind master: K random points in the unit square, columns in the cone (the tents
    e^{−ε d(·, k)}, a column of ones and random columns raised into the cone), each column of a
    random output k priced by the expected distance of a random prior."""
    rng = np.random.default_rng(seed)
    P = rng.uniform(0, 4, (K, 2))
    D = np.linalg.norm(P[:, None] - P[None], axis=2)
    T = np.exp(-eps * D)
    U = rng.uniform(0, 1, (K, n - K - 1)) ** 3
    V = np.column_stack([T, np.ones(K), (T[:, :, None] * U[:, None, :]).max(axis=0)])
    prior = rng.dirichlet(np.ones(K))
    out = rng.integers(0, K, n)
    out[:K] = np.arange(K)
    return V, np.einsum("i,ij,ij->j", prior, D[:, out], V)


SIZES = [(5, 12), (20, 60), (40, 300), (64, 200), (30, 31), (50, 500)]


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize(("K", "n"), SIZES)
def test_numpy_kkt_solves_the_master_to_highs_optimum(seed, K, n):
    """Optimal; Σ y equals HiGHS' primal optimum; y dual feasible and λ primal feasible (1e-8);
    the same iterations and objective as CVXOPT's own "chol" KKT solver."""
    V, c = _master(seed, K, n)
    ref = linprog(c, A_eq=V, b_eq=np.ones(K), bounds=(0, None), method="highs")
    sol = dense_lp.solve(V, c, tol=1e-9)
    assert sol["status"] == "optimal"
    y, lam = np.asarray(sol["x"]).ravel(), np.asarray(sol["z"]).ravel()
    assert y.sum() == pytest.approx(ref.fun, rel=1e-7)
    assert float(c @ lam) == pytest.approx(ref.fun, rel=1e-7)
    assert (V.T @ y - c).max() <= 1e-8
    assert np.abs(V @ lam - 1).max() <= 1e-8 and lam.min() >= -1e-12
    chol = dense_lp.solve(V, c, tol=1e-9, kkt="chol")
    assert chol["iterations"] == sol["iterations"]
    assert float(c @ np.asarray(chol["z"]).ravel()) == pytest.approx(float(c @ lam), rel=1e-8)


@pytest.mark.parametrize(("seed", "K", "n"), [(0, 20, 60), (0, 30, 31), (4, 64, 200)])
def test_numpy_kkt_stalls_where_cvxopt_s_own_stalls(seed, K, n):
    """Masters where CVXOPT's interior point stalls ("unknown", near a residual of 1e-6): the
    numpy KKT solver takes the same iterates, so the same stall, with the same duals (1e-6
    relative). Where the stall is declared can differ by an iteration between BLAS builds (the
    residuals there are at round-off: with numpy 2.4's OpenBLAS one master stops an iteration
    after CVXOPT's); then both stalls' duals are near HiGHS' optimum (Σ y to 1e-4 relative)."""
    V, c = _master(seed, K, n)
    ours, theirs = dense_lp.solve(V, c, tol=1e-9), dense_lp.solve(V, c, tol=1e-9, kkt="chol")
    assert ours["status"] == theirs["status"] == "unknown"
    y, y_ref = np.asarray(ours["x"]).ravel(), np.asarray(theirs["x"]).ravel()
    if ours["iterations"] == theirs["iterations"]:
        assert np.abs(y - y_ref).max() <= 1e-6 * max(1.0, np.abs(y_ref).max())
    else:
        assert abs(ours["iterations"] - theirs["iterations"]) == 1
        ref = linprog(c, A_eq=V, b_eq=np.ones(K), bounds=(0, None), method="highs").fun
        for dual in (y, y_ref):
            assert dual.sum() == pytest.approx(ref, rel=1e-4)


def test_a_singular_master_raises_as_cvxopt_does():
    """A row no column covers (no weights can meet it): the first KKT system is singular, and the
    numpy solver ends the solve as CVXOPT's does (ValueError), which the master answers with HiGHS."""
    V, c = _master(0, 6, 10)
    V[2] = 0.0
    for kkt in ("numpy", "chol"):
        with pytest.raises(ValueError, match="Rank"):
            dense_lp.solve(V, c, tol=1e-9, kkt=kkt)


def test_only_cvxopt_and_scipy_pools_are_held_to_one_thread(monkeypatch):
    """Inside the solve (seen from the KKT solver) the pools loaded from CVXOPT's and SciPy's
    packages run one thread and numpy's keeps its own count; the limits are lifted after it."""
    import numpy
    from threadpoolctl import threadpool_info

    home = os.path.dirname(numpy.__file__)
    before = {d["filepath"]: d["num_threads"] for d in threadpool_info()}
    seen = []
    real = dense_lp._normal_kkt

    def watched(Gt, stop=None):
        factor = real(Gt, stop)

        def recording(W):
            seen.append({d["filepath"]: d["num_threads"] for d in threadpool_info()})
            return factor(W)

        return recording

    monkeypatch.setattr(dense_lp, "_normal_kkt", watched)
    assert dense_lp.solve(*_master(1, 10, 30), tol=1e-9)["status"] == "optimal"
    assert seen
    for path, threads in seen[0].items():
        if path.startswith(home):
            assert threads == before[path]
        elif "cvxopt" in path or "scipy" in path:
            assert threads == 1
    assert {d["filepath"]: d["num_threads"] for d in threadpool_info()} == before


def test_unknown_kkt_solver_is_refused():
    from lpmech.errors import InputError

    with pytest.raises(InputError, match="unknown KKT solver"):
        dense_lp.solve(*_master(0, 4, 6), tol=1e-9, kkt="ldl")


def test_a_stop_ends_the_interior_point_within_an_iteration():
    """``stop()`` is asked once per iteration: true at its 4th call, the solve ends there with
    Stopped (a whole solve takes more iterations); never true, the same solve as without it."""
    V, c = _master(3, 40, 300)
    whole = dense_lp.solve(V, c, tol=1e-9)
    assert whole["iterations"] > 4
    calls = []

    def stop():
        calls.append(1)
        return len(calls) >= 4

    with pytest.raises(dense_lp.Stopped):
        dense_lp.solve(V, c, tol=1e-9, stop=stop)
    assert len(calls) == 4
    again = dense_lp.solve(V, c, tol=1e-9, stop=lambda: False)
    assert again["iterations"] == whole["iterations"]
    assert np.array_equal(np.asarray(again["x"]), np.asarray(whole["x"]))
