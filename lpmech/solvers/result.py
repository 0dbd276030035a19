"""The one result type every solve returns."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..certificate import OptimalityCertificate
from ..errors import (
    InfeasibleError,
    InputError,
    InterruptError,
    IterationLimitError,
    NotOptimalError,
    SolverError,
    TimeLimitError,
)
from ..mechanism import Mechanism, PrivacyCertificate

#: statuses a Result can carry, and what each one says:
#:
#: - ``optimal``: a certified mechanism with a dual bound and a gap within the method's tolerance;
#: - ``feasible``: a certified mechanism whose optimality is *not* proved (a local optimum, or a gap
#:   above tolerance); ``bound``/``gap`` say what is known;
#: - ``closed_form``: a paper's closed form evaluated as written (``paper`` mode), not an optimum;
#: - ``infeasible`` / ``unbounded``: the model has no (bounded) optimum;
#: - ``time_limit``: the wall-clock limit the user set was reached;
#: - ``iteration_limit``: an iteration or round cap was reached first;
#: - ``interrupted``: a stop was requested (Ctrl-C, :mod:`lpmech.stop`);
#: - ``error``: anything else (the error says what).
STATUSES = ("optimal", "feasible", "closed_form", "infeasible", "unbounded", "time_limit",
            "iteration_limit", "interrupted", "error")

#: the statuses of a run stopped short of its end (the mechanism, if any, is the incumbent)
STOPS = ("time_limit", "iteration_limit", "interrupted")

#: the CLI's exit code for each status (2 bad input is never a status; 5 comes from a failed certificate)
EXIT_CODES = {"optimal": 0, "closed_form": 0, "feasible": 4, "infeasible": 3, "unbounded": 1,
              "time_limit": 4, "iteration_limit": 4, "interrupted": 4, "error": 1}


def check_time_limit(time_limit) -> float | None:
    """A solver time limit in seconds: ``None`` (no limit) or a positive number (``inf`` allowed)."""
    if time_limit is None:
        return None
    try:
        t = float(time_limit)
    except (TypeError, ValueError):
        raise InputError(f"time limit must be a number of seconds, got {time_limit!r}") from None
    if not t > 0:  # also NaN
        raise InputError(f"time limit must be positive, got {time_limit!r}")
    return t


@dataclasses.dataclass
class Result:
    """Outcome of a solve: the certified mechanism, its optimality certificate and statistics.

    Every ``solve`` of the package returns one (as scipy's solvers return an ``OptimizeResult``).

    Attributes
    ----------
    status : str
        One of ``STATUSES``: ``"optimal"`` (certified gap), ``"feasible"``, ``"closed_form"``,
        ``"infeasible"``, ``"unbounded"``, ``"time_limit"``, ``"iteration_limit"``,
        ``"interrupted"`` (the last three: stopped short, ``STOPS``) or ``"error"``.
    mechanism : Mechanism or None
        The certified :class:`~lpmech.mechanism.Mechanism` (``None`` from the raw solver layer,
        which returns only ``x``; the model layer turns ``x`` into a mechanism).
    certificate : PrivacyCertificate or None
        The mechanism's :class:`~lpmech.mechanism.PrivacyCertificate`.
    optimality : OptimalityCertificate or None
        Objective of the certified point, dual bound and gap.
    stats : dict
        Solver name, times (s), sizes, iterations, and the choices made.
    x : numpy.ndarray or None
        The solver's primal vector (column order of the model).
    duals : numpy.ndarray or None
        The solver's row duals, where it gives them.
    ray : numpy.ndarray or None
        A dual ray (Farkas certificate) of an infeasible LP, where asked for and available.
    objective, bound, gap : float or None
        Read from ``optimality``: the objective, the dual bound and the relative gap
        (objective − bound) / |objective|.

    Examples
    --------
    >>> from lpmech import instance as li
    >>> from lpmech.models import omg
    >>> res = omg.solve(li.grid(3, 3), 1.0)
    >>> print(res.status, res.mechanism.shape, f"{res.objective:.4f}", f"{res.bound:.4f}")
    optimal (9, 9) 0.8839 0.8839
    >>> summary = res.summary()
    >>> print(summary["status"], summary["K"], f"{summary['realized_epsilon']:.4f}")
    optimal 9 1.0000
    """

    status: str
    mechanism: Mechanism | None = None
    certificate: PrivacyCertificate | None = None
    optimality: OptimalityCertificate | None = None
    stats: dict[str, Any] = dataclasses.field(default_factory=dict)
    x: np.ndarray | None = dataclasses.field(default=None, repr=False)
    duals: np.ndarray | None = dataclasses.field(default=None, repr=False)
    ray: np.ndarray | None = dataclasses.field(default=None, repr=False)

    @property
    def objective(self) -> float | None:
        return None if self.optimality is None else self.optimality.objective

    @property
    def bound(self) -> float | None:
        return None if self.optimality is None else self.optimality.bound

    @property
    def gap(self) -> float | None:
        """Relative gap (objective − bound) / |objective|."""
        return None if self.optimality is None else self.optimality.gap_rel

    def summary(self) -> dict[str, Any]:
        """A flat, JSON-ready dict: status, K, objective, bound, gap, realized_epsilon, time_s, ..."""
        cert = self.certificate
        opt = self.optimality
        out = {
            "status": self.status,
            "K": None if self.mechanism is None else self.mechanism.shape[0],
            "objective": None if opt is None else opt.objective,
            "bound": None if opt is None else opt.bound,
            "gap": None if opt is None else opt.gap_rel,
            "gap_abs": None if opt is None else opt.gap_abs,
            "realized_epsilon": None if cert is None else cert.realized_epsilon,
            "target_epsilon": None if cert is None else cert.target_epsilon,
            "worst_violation": None if cert is None else cert.worst_violation,
            "time_s": self.stats.get("time_s"),
        }
        out.update({k: v for k, v in self.stats.items() if k not in out and _jsonable(v)})
        return out


def raise_for_status(res: Result, what: str) -> None:
    """Raise the package's exception for a solve that did not reach an optimum."""
    if res.status == "optimal":
        return
    t = res.stats.get("time_s")
    took = f" after {t:.1f}s" if t is not None else ""
    if res.status == "infeasible":
        raise InfeasibleError(f"{what} is infeasible: no mechanism satisfies all its constraints "
                              "(check added constraints and parameters)", result=res)
    if res.status == "time_limit":
        raise TimeLimitError(f"{what}: time limit reached{took} without an optimal solution; "
                             "raise --time-limit or use a smaller instance", result=res)
    if res.status == "interrupted":
        kept = ("; the best certified mechanism and bound are kept" if res.mechanism is not None
                else ", before any certified mechanism")
        raise InterruptError(f"{what}: interrupted{took}{kept}", result=res)
    if res.status == "iteration_limit":
        cap = res.stats.get("max_iter") or res.stats.get("max_rounds")
        raise IterationLimitError(f"{what}: iteration cap{f' ({cap})' if cap else ''} reached{took} "
                                  "without a certified optimum; raise the cap (--max-iter) or loosen "
                                  "the tolerance", result=res)
    if res.status == "feasible":
        raise NotOptimalError(f"{what}: a certified mechanism was found{took} but its optimality is "
                              "not proved", result=res)
    raise SolverError(f"{what}: solver ended with status {res.status!r} "
                      f"({res.stats.get('highs_status') or res.stats.get('termination', '')})",
                      result=res)


#: a solve is ``optimal`` only when its certified gap is within ``GAP_TOL`` relative, or within
#: ``GAP_ABS_TOL``·scale absolute (for optima near 0; scale = Σ_i max_k p_i L_ik, the expected loss
#: of the worst report, which bounds every objective); otherwise ``feasible``
GAP_TOL, GAP_ABS_TOL = 1e-6, 1e-8


def gap_status(optimality: OptimalityCertificate | None, gap_tol: float = GAP_TOL, *,
               scale: float = 1.0) -> str:
    """``optimal`` if ``optimality`` carries a bound within ``gap_tol`` of the objective (relative,
    or absolute ``GAP_ABS_TOL``·``scale``), else ``feasible``: a mechanism without a proved bound is
    not called optimal. The absolute floor is what LP tolerances can resolve: HiGHS ends LPs whose
    optimum is ~1e-5 of the loss scale (ε·d in the tens) with absolute gaps of a few 1e-9."""
    if optimality is None or optimality.gap_abs is None:
        return "feasible"
    ok = optimality.gap_rel <= gap_tol or optimality.gap_abs <= GAP_ABS_TOL * max(scale, 0.0)
    return "optimal" if ok else "feasible"


def _jsonable(v) -> bool:
    return isinstance(v, (str, int, float, bool, type(None))) or (
        isinstance(v, (list, tuple)) and all(isinstance(e, (str, int, float, bool)) for e in v))
