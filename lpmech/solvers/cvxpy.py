"""Solve a CVXPY problem (Clarabel by default) into a :class:`Result`.

The problem goes through CVXPY's documented three steps (``get_problem_data``, ``solve_via_data``,
``unpack_results``) so the raw solver output stays available. The bound is the solver's own dual
objective where it reports one (Clarabel: ``obj_val_dual``; SCS: ``info["dobj"]``), mapped back to
the problem's terms; it is the solver's claim, not an independent certificate. Every LP in this
package that needs a certified bound uses :mod:`lpmech.solvers.highs` or :mod:`lpmech.solvers.pyomo`,
whose bounds come from :func:`lpmech.certificate.lagrangian_bound`.
"""

from __future__ import annotations

import time

import cvxpy as cp

from ..certificate import OptimalityCertificate
from ..errors import InputError
from .result import Result, check_time_limit

_STATUS = {
    cp.OPTIMAL: "optimal", cp.OPTIMAL_INACCURATE: "optimal",
    cp.INFEASIBLE: "infeasible", cp.INFEASIBLE_INACCURATE: "infeasible",
    cp.UNBOUNDED: "unbounded", cp.UNBOUNDED_INACCURATE: "unbounded",
    cp.USER_LIMIT: "iteration_limit",  # or time_limit: see _limit_status
}
_TIME_LIMIT_OPTION = {"CLARABEL": "time_limit", "SCS": "time_limit_secs", "HIGHS": "time_limit"}


def solve_cvxpy(problem: cp.Problem, *, solver: str = "CLARABEL", time_limit: float | None = None,
                verbose: bool = False, **solver_options) -> Result:
    """Solve ``problem`` and return a :class:`Result` (``x`` unset: read the problem's variables)."""
    if solver not in cp.installed_solvers():
        raise InputError(f"CVXPY solver {solver!r} is not installed (have {cp.installed_solvers()})")
    if check_time_limit(time_limit) is not None and solver in _TIME_LIMIT_OPTION:
        solver_options[_TIME_LIMIT_OPTION[solver]] = float(time_limit)
    t0 = time.perf_counter()
    stats = {"solver": f"cvxpy/{solver}"}
    try:
        data, chain, inverse = problem.get_problem_data(solver, solver_opts=solver_options)
        raw = chain.solve_via_data(problem, data, False, verbose, solver_options)
        problem.unpack_results(raw, chain, inverse)
    except cp.error.SolverError as exc:
        stats.update(error=str(exc), time_s=time.perf_counter() - t0)
        return Result(status="error", stats=stats)
    except cp.error.DCPError as exc:
        raise InputError(f"the CVXPY problem is not DCP: {exc}") from None
    stats.update(time_s=time.perf_counter() - t0, cvxpy_status=problem.status)
    out = Result(status=_limit_status(problem.status, stats["time_s"], time_limit), stats=stats)
    if out.status == "optimal":
        bound = _dual_objective(problem, raw)
        out.optimality = OptimalityCertificate.from_values(
            float(problem.value), bound, source="solver dual objective")
    return out


def _limit_status(cvxpy_status: str, elapsed: float, time_limit: float | None) -> str:
    """The Result status of a CVXPY status; CVXPY's USER_LIMIT covers both the time limit and the
    iteration cap, told apart by whether the (set) time limit was used up."""
    status = _STATUS.get(cvxpy_status, "error")
    if status == "iteration_limit" and time_limit is not None and elapsed >= 0.95 * float(time_limit):
        return "time_limit"
    return status


def _dual_objective(problem: cp.Problem, raw) -> float | None:
    """The solver's dual objective in the problem's terms, or None where it reports none.

    The solver sees min f (or min −f for a maximisation) up to a constant; the sign and constant
    are recovered from the primal values.
    """
    if hasattr(raw, "obj_val_dual") and hasattr(raw, "obj_val"):  # Clarabel
        primal, dual = float(raw.obj_val), float(raw.obj_val_dual)
    elif isinstance(raw, dict) and "pobj" in raw.get("info", {}):  # SCS
        primal, dual = float(raw["info"]["pobj"]), float(raw["info"]["dobj"])
    else:
        return None
    sign = 1.0 if isinstance(problem.objective, cp.Minimize) else -1.0
    return sign * dual + (float(problem.value) - sign * primal)
