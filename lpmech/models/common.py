"""Machinery every model shares: turning a solver's point into a certified :class:`Result`."""

from __future__ import annotations

import functools
import math

import numpy as np

from ..certificate import OptimalityCertificate
from ..errors import (
    CertificationError,
    InfeasibleError,
    InputError,
    IterationLimitError,
    NotOptimalError,
    SolverError,
    TimeLimitError,
)
from ..instance import Instance
from ..mechanism import (
    EPS_RTOL,
    Mechanism,
    PrivacyCertificate,
    certify,
    check_epsilon_scale,
    clean_and_certify,
)
from ..progress import verbose_logging
from ..solvers.result import Result


def check_model_inputs(instance, epsilon, *, max_loss=None, method: str | None = None,
                       what: str = "OMG") -> float:
    """Boundary checks of a Geo-Ind model's ``solve``: an :class:`Instance` (not a bare matrix),
    a number ``max_loss``, ε within the metric's usable range
    (:func:`lpmech.mechanism.check_epsilon_scale`), and, with ``method``, memory for the solve
    (:func:`lpmech.resources.require_omg_memory`). Returns ε as a float."""
    if not isinstance(instance, Instance):
        raise InputError(f"{what}: expected an lpmech Instance (e.g. lpmech.instance.from_matrix(D) for "
                         f"a distance matrix D), got {type(instance).__name__}")
    if max_loss is not None:
        if isinstance(max_loss, bool) or not isinstance(max_loss, int | float | np.integer | np.floating):
            raise InputError(f"max_loss must be a number, got {max_loss!r}")
        if not math.isfinite(max_loss):
            raise InputError(f"max_loss must be a finite number, got {max_loss!r}")
    eps = check_epsilon_scale(epsilon, instance.metric, gamma=instance.gamma)
    if method is not None:
        from ..resources import require_omg_memory

        require_omg_memory(instance.K, method)
    return eps


def verbose_entry(fn):
    """Decorator of a model's ``solve(..., verbose=False)``: with ``verbose=True`` its log lines
    (and those of everything it calls) reach stderr from a plain script, without the user setting
    up logging (:func:`lpmech.progress.verbose_logging`)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with verbose_logging(bool(kwargs.get("verbose", False))):
            return fn(*args, **kwargs)

    return wrapper


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


#: a solve is ``optimal`` only when its certified gap is within this relative tolerance (or the
#: absolute gap within ``GAP_ABS_TOL``, for optima near 0); otherwise ``feasible``
GAP_TOL, GAP_ABS_TOL = 1e-6, 1e-9


def gap_status(optimality: OptimalityCertificate | None, gap_tol: float = GAP_TOL) -> str:
    """``optimal`` if ``optimality`` carries a bound within ``gap_tol`` of the objective (relative,
    or absolute ``GAP_ABS_TOL``), else ``feasible``: a mechanism without a proved bound is not
    called optimal."""
    if optimality is None or optimality.gap_abs is None:
        return "feasible"
    ok = optimality.gap_rel <= gap_tol or optimality.gap_abs <= GAP_ABS_TOL
    return "optimal" if ok else "feasible"


def certified_result(res: Result, raw_matrix, instance: Instance, epsilon: float, *,
                     name: str, gamma: float | None = None, rtol: float = EPS_RTOL,
                     gap_tol: float = GAP_TOL) -> Result:
    """Clean ``raw_matrix``, certify it under (ε, γ)-Geo-Ind, and fill ``res`` in.

    The objective reported is the expected loss of the *cleaned* matrix under the instance's prior
    and loss, so the gap to the solver's dual bound is honest; the status stays ``optimal`` only if
    that gap is within ``gap_tol`` (:func:`gap_status`), else it becomes ``feasible`` (e.g. the
    spanner approximation). Raises :class:`~lpmech.errors.CertificationError` if the realised ε
    exceeds ε·(1 + rtol).
    """
    if res.status != "feasible":  # a feasible point is certified too; its gap decides the status
        raise_for_status(res, name)
    gamma = instance.gamma if gamma is None else gamma
    z, cert = clean_and_certify(raw_matrix, instance.metric, epsilon, gamma, rtol=rtol)
    require_certified(cert, name, "the solve is not trustworthy", result=res)
    mech = Mechanism(z, name=name, certificate=cert)
    objective = mech.expected_loss(instance.prior, instance.loss)
    bound = None if res.optimality is None else res.optimality.bound
    res.mechanism, res.certificate = mech, cert
    res.optimality = OptimalityCertificate.from_values(objective, bound)
    res.status = gap_status(res.optimality, gap_tol)
    res.stats.setdefault("model", name)
    res.stats["epsilon"] = float(epsilon)
    res.stats["gamma"] = float(gamma) if math.isfinite(gamma) else "inf"
    res.stats["K"] = instance.K
    return res


def certified_mechanism(matrix, instance: Instance | None, epsilon: float, *, name: str,
                        notion: str = "geo-ind", hint: str = "") -> Mechanism:
    """A closed-form mechanism with its privacy certificate (baselines and closed forms).

    ``instance`` gives the metric and γ; it may be ``None`` for ``notion="ldp"``. Raises
    :class:`~lpmech.errors.CertificationError` (with ``hint`` appended) if the matrix does not
    satisfy ε·(1 + rtol).
    """
    z = np.asarray(matrix, float)
    z = z / z.sum(axis=1, keepdims=True)
    metric, gamma = (None, math.inf) if instance is None else (instance.metric, instance.gamma)
    cert = certify(z, metric, epsilon, gamma, notion=notion)
    require_certified(cert, name, hint)
    return Mechanism(z, name=name, certificate=cert)


def require_certified(cert: PrivacyCertificate, name: str, hint: str = "", *, result=None) -> None:
    """The one place a mechanism that fails its privacy certificate becomes an error."""
    if not cert.satisfied:
        raise CertificationError(
            f"{name}: realised epsilon {cert.realized_epsilon:.9g} exceeds the target "
            f"{cert.target_epsilon:g}·(1+{cert.rtol:g})" + (f"; {hint}" if hint else ""),
            result=result)
