"""Solve a CVXPY problem (Clarabel by default) into a :class:`Result`.

The bound is the solver's dual objective where the solver reports one (Clarabel: ``obj_val_dual``; for
other solvers the bound is ``None``). Models that need
an independently certified bound (every LP in this package) use :mod:`lpmech.solvers.highs` or
:mod:`lpmech.solvers.pyomo`, whose bounds come from :func:`lpmech.certificate.lagrangian_bound`.
"""

from __future__ import annotations

import time

import cvxpy as cp

from ..certificate import OptimalityCertificate
from ..errors import InputError
from .result import Result

_STATUS = {
    cp.OPTIMAL: "optimal", cp.OPTIMAL_INACCURATE: "optimal",
    cp.INFEASIBLE: "infeasible", cp.INFEASIBLE_INACCURATE: "infeasible",
    cp.UNBOUNDED: "unbounded", cp.UNBOUNDED_INACCURATE: "unbounded",
    cp.USER_LIMIT: "time_limit",
}


def solve_cvxpy(problem: cp.Problem, *, solver: str | None = "CLARABEL",
                time_limit: float | None = None, verbose: bool = False, **solver_options) -> Result:
    """Solve ``problem`` and return a :class:`Result` (``x`` unset: read the problem's variables)."""
    if solver is not None and solver not in cp.installed_solvers():
        raise InputError(f"CVXPY solver {solver!r} is not installed (have {cp.installed_solvers()})")
    if time_limit is not None:
        key = {"CLARABEL": "time_limit", "SCS": "time_limit_secs", "HIGHS": "time_limit"}.get(solver)
        if key:
            solver_options[key] = float(time_limit)
    t0 = time.perf_counter()
    try:
        problem.solve(solver=solver, verbose=verbose, **solver_options)
    except cp.error.SolverError as exc:
        return Result(status="error", stats={"solver": f"cvxpy/{solver}", "error": str(exc),
                                             "time_s": time.perf_counter() - t0})
    status = _STATUS.get(problem.status, "error")
    stats = {"solver": f"cvxpy/{solver or problem.solver_stats.solver_name}",
             "time_s": time.perf_counter() - t0, "cvxpy_status": problem.status}
    out = Result(status=status, stats=stats)
    if status == "optimal":
        bound = _dual_objective(problem)
        out.optimality = OptimalityCertificate.from_values(
            float(problem.value), bound, source="solver dual objective")
    return out


def _dual_objective(problem: cp.Problem) -> float | None:
    """The solver's dual objective in the problem's terms, where the solver reports it (Clarabel).

    The solver sees the canonicalised problem (min f, or min −f for a maximisation, up to a
    constant); the constant is recovered from the primal values.
    """
    extra = problem.solver_stats.extra_stats
    if extra is None or not hasattr(extra, "obj_val_dual") or not hasattr(extra, "obj_val"):
        return None
    sign = 1.0 if isinstance(problem.objective, cp.Minimize) else -1.0
    offset = float(problem.value) - sign * float(extra.obj_val)
    return sign * float(extra.obj_val_dual) + offset
