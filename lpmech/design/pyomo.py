"""The declarative Pyomo model of a design problem (:mod:`lpmech.design.engine`), for users who extend it.

    model = build_pyomo(problem)          # or build_pyomo(notion, prior=p, loss=L)
    model.my_row = pyo.Constraint(expr=model.z[0, 0] >= 0.1)
    res = solve_model(model)              # certified like every other path

Components: ``I`` (inputs), ``N`` (outputs), ``R`` (the notion's rows), ``z[i, k]`` in [0, 1]
(entries the notion forces to zero are fixed at 0), ``t[a, k]`` (the notion's auxiliary variables
t_k = B z_k, if any, e.g. P·z_k of ε-LIP), ``privacy[r, k]`` (row r of the notion on output k:
Σ_i A_ri z_ik + Σ_a A_r,K+a t_ak ≤ 0), ``unit[i]`` (Σ_k z_ik = 1), ``extra[e]`` (the extra rows) and the
objective ``cost`` (Σ C_ik z_ik). It is the same LP as the engine's ``"full"`` path (a test checks
both give the same optimum).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import InputError
from ..solvers.result import Result
from .notion import aux_upper
from .problem import Problem, certified_result

__all__ = ["build_pyomo", "solve_model"]


def build_pyomo(problem, costs=None, **kwargs):
    """The design problem as a Pyomo ``ConcreteModel`` (see the module docstring).

    ``problem`` is a :class:`~lpmech.design.problem.Problem`, or a notion followed by the arguments
    of :meth:`Problem.make` (``costs`` or ``prior=, loss=``, ``extra_rows=``).
    """
    import pyomo.environ as pyo  # imported on use: Pyomo takes ~1 s to import

    if not isinstance(problem, Problem):
        problem = Problem.make(problem, costs, **kwargs)
    K, n = problem.K, problem.n
    R = sp.csr_matrix(problem.notion.rows())
    C = problem.C
    m = pyo.ConcreteModel(name=problem.name)
    m.I = pyo.RangeSet(0, K - 1)
    m.N = pyo.RangeSet(0, n - 1)
    m.R = pyo.RangeSet(0, R.shape[0] - 1) if R.shape[0] else pyo.Set(initialize=[])
    m.z = pyo.Var(m.I, m.N, bounds=(0.0, 1.0))
    aux_hi = aux_upper(problem.notion)  # the notion's auxiliary variables t = B z_k, if any
    m.A = pyo.RangeSet(0, aux_hi.size - 1) if aux_hi.size else pyo.Set(initialize=[])
    m.t = pyo.Var(m.A, m.N, bounds=lambda b, a, k: (0.0, float(aux_hi[a])))
    allowed = problem.allowed()
    for i, k in zip(*np.nonzero(~allowed)):
        m.z[int(i), int(k)].fix(0.0)
    row_terms = [list(zip(R.indices[R.indptr[r]:R.indptr[r + 1]].tolist(),
                          R.data[R.indptr[r]:R.indptr[r + 1]].tolist())) for r in range(R.shape[0])]

    def privacy(b, r, k):
        terms = [a * (b.z[i, k] if i < K else b.t[i - K, k]) for i, a in row_terms[r] if a != 0]
        return sum(terms) <= 0 if terms else pyo.Constraint.Skip

    m.privacy = pyo.Constraint(m.R, m.N, rule=privacy)
    m.unit = pyo.Constraint(m.I, rule=lambda b, i: sum(b.z[i, k] for k in b.N) == 1)
    m.E = pyo.RangeSet(0, len(problem.extra_rows) - 1) if problem.extra_rows else pyo.Set(initialize=[])

    def extra(b, e):
        A, lo, hi = problem.extra_rows[e]
        body = sum(float(A[i, k]) * b.z[i, k] for i, k in zip(*np.nonzero(A)))
        return (None if not np.isfinite(lo) else lo, body, None if not np.isfinite(hi) else hi)

    m.extra = pyo.Constraint(m.E, rule=extra)
    m.cost = pyo.Objective(expr=sum(float(C[i, k]) * m.z[i, k] for i, k in zip(*np.nonzero(C))),
                           sense=pyo.minimize)
    m._lpmech_design = problem
    return m


def solve_model(model, *, solver: str = "appsi_highs", time_limit: float | None = None,
                tee: bool = False, gap_tol: float = 1e-6) -> Result:
    """Solve a (possibly user-extended) model from :func:`build_pyomo` into a certified Result.

    The mechanism is certified against the *notion* (and the extra rows of the problem); rows a
    user added to the model are the user's to check.
    """
    problem = getattr(model, "_lpmech_design", None)
    if problem is None:
        raise InputError("solve_model() needs a model made by lpmech.design.pyomo.build_pyomo")
    from ..solvers.pyomo import solve_pyomo

    res = solve_pyomo(model, solver=solver, time_limit=time_limit, tee=tee)
    res.stats["path"] = "pyomo"
    raw = None
    if res.status == "optimal":
        raw = np.array([[model.z[i, k].value or 0.0 for k in range(problem.n)]
                        for i in range(problem.K)])
    return certified_result(res, problem, raw, gap_tol=gap_tol)
