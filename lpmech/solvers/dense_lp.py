"""The dense LP ``max Σ_i y_i  s.t.  Vᵀ y ≤ c`` by CVXOPT's interior point, its products by numpy.

This is the dual of the decomposition's phase-2 master (``min c·λ, V λ = 1, λ ≥ 0``; V is K×n and
dense): :class:`lpmech.design.decomposition.DenseIPMMaster` solves it every round. An iteration of
the interior point is one normal matrix M = V D⁻² Vᵀ (an n×K×K product), one K×K Cholesky factor
and a few products with V; CVXOPT's own KKT solver does them with the OpenBLAS bundled in its wheel,
about 1.6× slower per flop than numpy's on the development machine (K = 1,024, n = 8,126: the
product 0.167 s against 0.101 s). :func:`solve` with ``kkt="numpy"`` hands CVXOPT the products as
functions and solves its KKT systems by the normal equations with numpy's BLAS, while the other
BLAS pools (CVXOPT's, SciPy's) are held to one thread: idle OpenBLAS threads spin, and three pools
on two cores ran the same solve 1.3× slower than CVXOPT alone. The iterates are CVXOPT's (the same
iterations, objective and weights as its ``"chol"`` KKT solver).
"""

from __future__ import annotations

import contextlib
import os

import numpy as np

from ..errors import InputError

#: KKT solvers :func:`solve` accepts: this module's numpy one, and CVXOPT's own
KKT_SOLVERS = ("numpy", "chol", "chol2")

_POOLS = None


def _other_pools():
    """The BLAS thread pools loaded from CVXOPT's and SciPy's packages (never numpy's own)."""
    global _POOLS
    if _POOLS is None:
        import cvxopt
        import scipy
        from threadpoolctl import ThreadpoolController

        homes = tuple(os.path.dirname(m.__file__) for m in (cvxopt, scipy))  # a prefix of
        # their wheels' ".libs" folders as well
        ctl = ThreadpoolController()
        _POOLS = ctl.select(filepath=[lc.filepath for lc in ctl.lib_controllers
                                      if lc.filepath and lc.filepath.startswith(homes)])
    return _POOLS


class Stopped(Exception):
    """The ``stop`` callable of :func:`solve` asked the interior point to end."""


def _normal_kkt(Gt: np.ndarray, stop=None, shift: float = 0.0):
    """CVXOPT's ``kktsolver`` for ``G = Gt`` (n×K) and no equality rows, by the normal equations.

    For the scaling W = diag(d) CVXOPT asks for ux, uz with P ux + Gᵀuz = bx, G ux − W²uz = bz
    (and W uz back in z), P = ``shift``·I (0 for an LP; a QP's ``coneqp`` with P = shift·I): ux =
    M⁻¹(bx + Gᵀ D⁻² bz), M = P + Gᵀ D⁻² G factored once per iteration (where ``stop()``, if given
    and true, ends the solve with :class:`Stopped`)."""
    import scipy.linalg as sla
    from cvxopt import matrix

    def factor(W):
        if stop is not None and stop():
            raise Stopped
        s = 1.0 / np.asarray(W["d"]).ravel()
        Gs = Gt * s[:, None]
        M = Gs.T @ Gs
        if shift:
            M[np.diag_indices_from(M)] += shift
        try:
            L = sla.cho_factor(M, lower=True, check_finite=False)
        except np.linalg.LinAlgError as exc:  # CVXOPT ends the solve on ArithmeticError
            raise ArithmeticError(str(exc)) from None

        def f(x, y, z):
            bz = s * np.asarray(z).ravel()
            ux = sla.cho_solve(L, np.asarray(x).ravel() + Gs.T @ bz, check_finite=False)
            x[:] = matrix(ux)
            z[:] = matrix(Gs @ ux - bz)

        return f

    return factor


def _products(Gt: np.ndarray):
    """G as CVXOPT's function form: y := α G x + β y (``trans="T"``: with Gᵀ)."""
    from cvxopt import matrix

    def G(x, y, alpha=1.0, beta=0.0, trans="N"):
        r = (Gt @ np.asarray(x).ravel()) if trans == "N" else (Gt.T @ np.asarray(x).ravel())
        r *= alpha
        if beta != 0.0:
            r += beta * np.asarray(y).ravel()
        y[:] = matrix(r)

    return G


def solve(V: np.ndarray, c: np.ndarray, *, tol: float, kkt: str = "numpy",
          refinement: int = 2, maxiters: int = 200, stop=None) -> dict:
    """CVXOPT's solution of ``max Σ y  s.t.  Vᵀ y ≤ c`` (its ``"status"``, ``"x"`` = y, ``"z"`` = the
    constraints' multipliers λ, ``"iterations"``), with feasibility, absolute and relative
    tolerance ``tol``. Raises what CVXOPT raises (``ValueError``, ``ArithmeticError``) on a
    singular first KKT system, :class:`~lpmech.errors.InputError` on an unknown ``kkt``, and
    :class:`Stopped` when ``stop()`` (a callable, checked once per iteration of the numpy KKT
    solver) turns true."""
    from cvxopt import matrix, solvers

    if kkt not in KKT_SOLVERS:
        raise InputError(f"unknown KKT solver {kkt!r}: use one of {KKT_SOLVERS}")
    K, n = V.shape
    opts = {"show_progress": False, "abstol": tol, "reltol": tol, "feastol": tol,
            "maxiters": maxiters, "refinement": refinement}
    q, h = matrix(-np.ones(K)), matrix(np.asarray(c, float))
    if kkt != "numpy":
        return solvers.lp(q, matrix(np.ascontiguousarray(V.T)), h, kktsolver=kkt, options=opts)
    Gt = np.asarray(V, float).T
    pools = _other_pools()
    with pools.limit(limits=1) if pools.lib_controllers else contextlib.nullcontext():
        return solvers.conelp(q, _products(Gt), h, {"l": n, "q": [], "s": []},
                              kktsolver=_normal_kkt(Gt, stop), options=opts)


__all__ = ["KKT_SOLVERS", "Stopped", "solve"]
