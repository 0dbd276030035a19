"""Machinery every model shares: turning a solver's point into a certified :class:`Result`.

:func:`raise_for_status` and :func:`gap_status` live beside :class:`Result` in
:mod:`lpmech.solvers.result` (the design engine needs them and imports no model); they are imported
here for the models.
"""

from __future__ import annotations

import contextlib
import functools
import math

import numpy as np

from .. import stop
from ..certificate import OptimalityCertificate, trivial_bound
from ..errors import CertificationError, InputError
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
from ..solvers.result import GAP_TOL, STOPS, Result, gap_status, raise_for_status


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


#: seconds per K²·n of cleaning and certifying a K×n mechanism (:func:`certified_result`; measured
#: at K = n = 1,024: 13.2 s on a loaded 2-core machine, 1.2e-8 s per K³; over 22 s on 2 pinned cores
#: of a 16-core machine), with a margin: what a stopped solve reserves to hand over its incumbent
CERTIFY_S = 3e-8


def reserve_certification(K: int, n: int | None = None) -> None:
    """Tell a deadline (:func:`lpmech.stop.reserve`) how long certifying a K×n mechanism takes."""
    stop.reserve(CERTIFY_S * K * K * (K if n is None else n))


def verbose_entry(fn):
    """Decorator of a model's ``solve(..., verbose=False)``: with ``verbose=True`` its log lines
    (and those of everything it calls) reach stderr from a plain script, without the user setting
    up logging (:func:`lpmech.progress.verbose_logging`); a stop request (Ctrl-C) it saw is
    cleared when the outermost such call returns (:func:`lpmech.stop.scope`)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with verbose_logging(bool(kwargs.get("verbose", False))), stop.scope():
            return fn(*args, **kwargs)

    return wrapper


def certified_result(res: Result, raw_matrix, instance: Instance, epsilon: float, *,
                     name: str, gamma: float | None = None, rtol: float = EPS_RTOL,
                     gap_tol: float = GAP_TOL) -> Result:
    """Clean ``raw_matrix``, certify it under (ε, γ)-Geo-Ind, and fill ``res`` in.

    The objective reported is the expected loss of the *cleaned* matrix under the instance's prior
    and loss, so the gap to the solver's dual bound is honest; the status stays ``optimal`` only if
    that gap is within ``gap_tol`` (:func:`gap_status`), else it becomes ``feasible`` (e.g. the
    spanner approximation). Raises :class:`~lpmech.errors.CertificationError` if the realised ε
    exceeds ε·(1 + rtol). A run stopped short (status in :data:`~lpmech.solvers.result.STOPS`)
    with an incumbent ``raw_matrix`` raises its error with the incumbent certified in ``result``
    (mechanism, objective, the best bound and the gap), or without a mechanism if the incumbent
    fails its certificate.
    """
    gamma = instance.gamma if gamma is None else gamma
    if res.status in STOPS:
        if raw_matrix is not None:
            with contextlib.suppress(CertificationError):
                _attach(res, raw_matrix, instance, epsilon, gamma, rtol, name)
        raise_for_status(res, name)
    if res.status != "feasible":  # a feasible point is certified too; its gap decides the status
        raise_for_status(res, name)
    _attach(res, raw_matrix, instance, epsilon, gamma, rtol, name)
    scale = float(np.sum(np.max(instance.prior[:, None] * instance.loss, axis=1)))
    res.status = gap_status(res.optimality, gap_tol, scale=scale)
    res.stats.setdefault("model", name)
    res.stats["epsilon"] = float(epsilon)
    res.stats["gamma"] = float(gamma) if math.isfinite(gamma) else "inf"
    res.stats["K"] = instance.K
    return res


def _attach(res: Result, raw_matrix, instance: Instance, epsilon: float, gamma: float, rtol: float,
            name: str) -> None:
    """Put the cleaned, certified mechanism of ``raw_matrix`` into ``res``, with its expected loss
    and the best bound (raises :class:`CertificationError` if it fails its certificate)."""
    z, cert = clean_and_certify(raw_matrix, instance.metric, epsilon, gamma, rtol=rtol)
    require_certified(cert, name, "the solve is not trustworthy", result=res)
    mech = Mechanism(z, name=name, certificate=cert)
    objective = mech.expected_loss(instance.prior, instance.loss)
    bound = None if res.optimality is None else res.optimality.bound
    # every row's expected loss is at least its smallest loss: sharper near 0, and the bound a
    # run stopped before its first complete pricing round still has
    if bound is not None or res.status in STOPS:
        bound = max(-math.inf if bound is None else bound,
                    trivial_bound(instance.prior[:, None] * instance.loss))
    res.mechanism, res.certificate = mech, cert
    res.optimality = OptimalityCertificate.from_values(objective, bound)


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
