"""Solve a Pyomo model (HiGHS through Pyomo's appsi interface by default) into a :class:`Result`.

For a linear model the bound is certified independently of the solver: the active constraints are
compiled to ``r_lo ≤ A x ≤ r_hi`` (Pyomo's standard representation) and the duals it returns go
through :func:`lpmech.certificate.lagrangian_bound`. For a nonlinear model the bound is ``None``.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np
import pyomo.environ as pyo
import scipy.sparse as sp
from pyomo.opt import TerminationCondition as TC
from pyomo.repn import generate_standard_repn

from ..certificate import OptimalityCertificate, lagrangian_bound
from ..errors import InputError
from .result import Result, check_time_limit

log = logging.getLogger(__name__)

_STATUS = {
    # a local optimum (non-convex models) is certified feasible, not proved optimal
    TC.optimal: "optimal", TC.globallyOptimal: "optimal", TC.locallyOptimal: "feasible",
    TC.infeasible: "infeasible", TC.infeasibleOrUnbounded: "infeasible",
    TC.unbounded: "unbounded", TC.maxTimeLimit: "time_limit", TC.maxIterations: "iteration_limit",
}


def solve_pyomo(model: pyo.ConcreteModel, *, solver: str = "appsi_highs",
                time_limit: float | None = None, options: dict | None = None,
                tee: bool = False) -> Result:
    """Solve ``model`` (one active objective) and return a :class:`Result`.

    ``Result.x`` holds the values of ``stats["variables"]`` (the model's variables in compile order);
    read the model's own variables for the solution in model terms.
    """
    if not hasattr(model, "dual"):
        model.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)
    opt = pyo.SolverFactory(solver)
    if opt is None or not opt.available(exception_flag=False):
        raise InputError(f"Pyomo solver {solver!r} is not available")
    kwargs = {"tee": tee, "load_solutions": False}
    if options:
        kwargs["options"] = dict(options)
    if check_time_limit(time_limit) is not None:
        kwargs["timelimit"] = float(time_limit)  # Pyomo's solver-independent keyword
    t0 = time.perf_counter()
    try:
        res = opt.solve(model, **kwargs)
    except ValueError as exc:  # e.g. an empty or malformed model
        raise InputError(f"Pyomo could not solve the model: {exc}") from None
    t_solve = time.perf_counter() - t0
    tc = res.solver.termination_condition
    status = _STATUS.get(tc, "error")
    stats = {"solver": f"pyomo/{solver}", "time_s": t_solve, "termination": str(tc)}
    out = Result(status=status, stats=stats)
    if status != "optimal":
        return out
    model.solutions.load_from(res)
    obj = next(model.component_data_objects(pyo.Objective, active=True))
    value = float(pyo.value(obj.expr))
    sign = 1.0 if obj.sense == pyo.minimize else -1.0
    bound = _linear_bound(model, obj, sign)
    if bound is not None:
        bound *= sign
    out.optimality = OptimalityCertificate.from_values(value, bound)
    return out


def _linear_bound(model, obj, sign: float) -> float | None:
    """Lagrangian bound of the model's linear relaxation from its ``dual`` suffix, or None."""
    orepn = generate_standard_repn(obj.expr, compute_values=True)
    if not orepn.is_linear():
        return None
    index: dict[int, int] = {}
    variables = []

    def col(v):
        key = id(v)
        if key not in index:
            index[key] = len(variables)
            variables.append(v)
        return index[key]

    rows, cols, vals, lo, hi, y = [], [], [], [], [], []
    for r, con in enumerate(model.component_data_objects(pyo.Constraint, active=True)):
        repn = generate_standard_repn(con.body, compute_values=True)
        if not repn.is_linear():
            return None
        for v, a in zip(repn.linear_vars, repn.linear_coefs):
            rows.append(r)
            cols.append(col(v))
            vals.append(float(a))
        const = float(repn.constant)
        lo.append(-math.inf if con.lower is None else float(pyo.value(con.lower)) - const)
        hi.append(math.inf if con.upper is None else float(pyo.value(con.upper)) - const)
        y.append(float(model.dual.get(con, 0.0) or 0.0))
    c_entries = [(col(v), float(a)) for v, a in zip(orepn.linear_vars, orepn.linear_coefs)]
    n = len(variables)
    c = np.zeros(n)
    for j, a in c_entries:
        c[j] += sign * a
    A = sp.csr_matrix((vals, (rows, cols)), shape=(len(lo), n))
    col_lo = np.array([-math.inf if v.lb is None else v.lb for v in variables], float)
    col_hi = np.array([math.inf if v.ub is None else v.ub for v in variables], float)
    bound = lagrangian_bound(c, A, lo, hi, col_lo, col_hi, sign * np.array(y))
    return bound + sign * float(orepn.constant)
