"""Machinery every model shares: turning a solver's point into a certified :class:`Result`."""

from __future__ import annotations

import math

import numpy as np

from ..certificate import OptimalityCertificate
from ..errors import CertificationError, InfeasibleError, SolverError, TimeLimitError
from ..instance import Instance
from ..mechanism import EPS_RTOL, Mechanism, certify, clean
from ..solvers.result import Result


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
    raise SolverError(f"{what}: solver ended with status {res.status!r} "
                      f"({res.stats.get('highs_status') or res.stats.get('termination', '')})",
                      result=res)


def certified_result(res: Result, raw_matrix, instance: Instance, epsilon: float, *,
                     name: str, gamma: float | None = None, rtol: float = EPS_RTOL) -> Result:
    """Clean ``raw_matrix``, certify it under (ε, γ)-Geo-Ind, and fill ``res`` in.

    The objective reported is the expected loss of the *cleaned* matrix under the instance's prior
    and loss, so the gap to the solver's dual bound is honest. Raises
    :class:`~lpmech.errors.CertificationError` if the realised ε exceeds ε·(1 + rtol).
    """
    raise_for_status(res, name)
    gamma = instance.gamma if gamma is None else gamma
    z = clean(raw_matrix, instance.metric, epsilon, gamma)
    cert = certify(z, instance.metric, epsilon, gamma, rtol=rtol)
    if not cert.satisfied:
        raise CertificationError(
            f"{name}: returned matrix has realised epsilon {cert.realized_epsilon:.9g} > target "
            f"{epsilon:g}·(1+{rtol:g}); the solve is not trustworthy", result=res)
    mech = Mechanism(z, name=name, certificate=cert)
    objective = mech.expected_loss(instance.prior, instance.loss)
    bound = None if res.optimality is None else res.optimality.bound
    res.mechanism, res.certificate = mech, cert
    res.optimality = OptimalityCertificate.from_values(objective, bound)
    res.stats.setdefault("model", name)
    res.stats["epsilon"] = float(epsilon)
    res.stats["gamma"] = float(gamma) if math.isfinite(gamma) else "inf"
    res.stats["K"] = instance.K
    return res


def certified_mechanism(matrix, instance: Instance, epsilon: float, *, name: str,
                        notion: str = "geo-ind") -> Mechanism:
    """A closed-form mechanism with its privacy certificate (for baselines and closed forms)."""
    z = np.asarray(matrix, float)
    z = z / z.sum(axis=1, keepdims=True)
    cert = certify(z, instance.metric, epsilon, instance.gamma, notion=notion)
    return Mechanism(z, name=name, certificate=cert)
