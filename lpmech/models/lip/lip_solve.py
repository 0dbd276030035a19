"""The certified optimal LIP channel: :func:`solve` dispatches to the optimisers of
:mod:`.lip_optimize` (or the papers' closed forms of :mod:`.lip_closed_forms` in ``paper`` mode),
cleans and certifies the channel with the rows and certifiers of :mod:`.lip`, and returns a
:class:`~lpmech.solvers.result.Result`; :func:`lh_lip` builds local hashing on top of it.

It sits above the other LIP modules (they never import it), so the family has no import circle.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np

from ... import stop
from ...certificate import OptimalityCertificate
from ...errors import CertificationError, InfeasibleError, InputError, SolverError
from ...mechanism import check_epsilon_scale
from ...solvers.result import GAP_ABS_TOL, Result, check_time_limit, gap_status
from .lip import (
    MAX_EPS,
    MIN_EPS,
    VERTEX_MAX_D,
    _certify_matrix,
    _scenarios,
    di_interior,
    family_rows,
)
from .lip_closed_forms import hash_matrix, rr_lip_paper
from .lip_estimation import column_utility, second_moment, value_matrix
from .lip_optimize import (
    build_pyomo,
    solve_linear,
    solve_local,
    solve_pyomo_scip,
    solve_vertex,
)

__all__ = ["lh_lip", "solve"]

log = logging.getLogger(__name__)


@stop.scoped
def solve(prior=None, epsilon: float = 1.0, *, values=None, task: str = "sum", V=None, priors=None,
          T=None, notion: str = "lip", method: str = "auto", mode: str = "verified",
          objective: str = "mse", f: int | None = None, rng: np.random.Generator | None = None,
          starts: int = 8, time_limit: float | None = None, pufferfish_T=None,
          gap_tol: float = 1e-6) -> Result:
    """The certified optimal channel for per-user MMSE (or MAE/Hamming) under LIP/LDP/Pufferfish.

    Minimises the per-user MSE of the MMSE estimator of the task's values (the worst scenario's,
    minimax, for a set of priors: [004] eq. (16)) over the channels Q (d × f, row-stochastic) whose
    every output column satisfies the notion's linear rows (:func:`~.lip.family_rows`).

    Parameters
    ----------
    prior : array_like, optional
        The user's prior P over d values (fixed-prior LIP).
    epsilon : float
        The privacy budget ε > 0 (at most 12, at least 1e-9: the rows carry e^{−ε}).
    values, task, V
        The aggregation task (:func:`~.lip_estimation.value_matrix`): ``task`` ``"sum"``
        (default; ``values`` default 0..d−1), ``"hist"`` or ``"survey"``, or the d × r value
        matrix ``V`` itself.
    priors : sequence of array_like, optional
        A finite set of priors instead of ``prior`` (BP-LIP; minimax MSE, [004] eq. (16)).
    T : array_like or sequence, optional
        Pr(X | G) for a latent secret G (one per prior of the set).
    notion : {"lip", "ldp", "pufferfish", "di"}
        ``"lip"`` (default), ``"ldp"``, ``"pufferfish"`` or ``"di"`` (ε-differential
        identifiability, [004] Def. 4, one prior: :func:`di_rows`).
    method : {"auto", "vertex", "exact", "local", "scip"}
        ``"vertex"`` (exact global, d ≤ ~8), ``"exact"`` (column generation with exact pricing,
        certified gap; ε-LIP with G = X, one prior, sum/survey/histogram), ``"local"`` (multi-start
        SLP; status ``feasible``: no bound), ``"scip"`` (the Pyomo model by SCIP), or ``"auto"``
        (vertex for d ≤ 8, else exact where it applies, else local).
    mode : {"verified", "paper"}
        ``"verified"`` (default) or ``"paper"``: the papers' closed form with its feasibility
        report (:func:`.lip_closed_forms.paper_solution`).
    objective : {"mse", "mae", "hamming"}
        ``"mse"`` (MMSE estimator), ``"mae"`` or ``"hamming"`` (LPs).
    f : int, optional
        Number of outputs of the local and SCIP models.
    rng : numpy.random.Generator, optional
        Generator for the local solve's random starts (required by ``method="local"``).
    starts : int
        Random starts per round of the local solve.
    time_limit : float, optional
        Seconds for the solve.
    pufferfish_T : sequence of array_like, optional
        The Pufferfish secrets' Pr(X | G) (default: the scenarios' T).
    gap_tol : float
        The relative gap at which ``method="exact"`` stops (certified ``optimal``).

    Returns
    -------
    Result
        ``objective`` is the certified (worst-case) per-user MSE (or expected loss), ``bound`` a
        certified lower bound (``None`` for a local solve), and ``stats`` has ``mode, method, mse,
        utility, paper_feasible, realized_epsilon``. Two statuses are an explicit choice and are
        returned: ``closed_form`` (``mode="paper"``) and ``feasible`` from ``method="local"``.

    Raises
    ------
    InputError
        ε out of range, an unknown mode, method, notion or objective, ``method="exact"`` outside
        its family, or ``method="local"`` without ``rng``.
    InfeasibleError
        No channel exists (e.g. ε-DI below log(max P / min P)).
    CertificationError
        A verified-mode matrix fails its ε·(1 + 1e-6) certificate.
    TimeLimitError, IterationLimitError, NotOptimalError
        Like every model, the error of :func:`~lpmech.models.common.raise_for_status` (result
        attached as ``exc.result``) when a solve stops without a certified optimum (also
        ``method="auto"`` falling back to the local solve).

    References
    ----------
    [001] B. Jiang, M. Li, R. Tandon, "Context-aware Data Aggregation with Localized Information
    Privacy" (extension of IEEE CNS 2018).

    [004] B. Jiang, M. Li, R. Tandon, "Local Information Privacy and Its Application to
    Privacy-Preserving Data Aggregation", IEEE TDSC.

    Examples
    --------
    >>> from lpmech.models import lip
    >>> res = lip.solve([0.5, 0.3, 0.2], 1.0)
    >>> print(res.status, res.stats["method"], f"{res.objective:.4f}", f"{res.bound:.4f}")
    optimal vertex 0.3867 0.3867
    >>> print(f"{lip.solve([0.5, 0.3, 0.2], 1.0, notion='ldp').objective:.4f}")
    0.5054
    >>> res = lip.solve([0.5, 0.3, 0.2], 1.0, mode="paper")
    >>> print(res.status, res.stats["paper_feasible"])
    closed_form False
    """

    t0 = time.perf_counter()
    # the rows carry e^{−ε}: it must stay well above the solvers' tolerances (ε ≤ 12) and differ
    # from 1 in double precision (ε ≥ 1e−9); outside that range say so as an input problem
    eps = check_epsilon_scale(epsilon, [1.0], min_eps_d=MIN_EPS, max_eps_d=MAX_EPS, scope="LIP",
                              why_large="so the channel's entries span e^(2 epsilon), beyond what "
                              "the solvers' tolerances resolve",
                              why_small="so e^(-epsilon) does not differ from 1 in double precision")
    time_limit = check_time_limit(time_limit)
    scen = _scenarios(prior, priors, T)
    d = scen[0].prior.size
    if V is None:
        V = value_matrix(task, d, values)
    V = np.asarray(V, float).reshape(d, -1)
    if mode == "paper":
        from .lip_closed_forms import paper_solution
        return paper_solution(scen, eps, V, t0=t0)
    if mode != "verified":
        raise InputError(f"unknown mode {mode!r}: use 'verified' or 'paper'")
    rows = family_rows(notion, scen, eps, pufferfish_T=pufferfish_T)
    if notion == "di":  # the prior is a mixture of the posteriors, so it must obey DI's ratio itself
        Ps = scen[0].prior[scen[0].prior > 0]
        need = math.log(Ps.max() / Ps.min())
        if need > eps * (1 + 1e-12):
            raise InfeasibleError(f"no channel is {eps:g}-DI for this prior: the prior is a mixture of "
                                  f"the posteriors, so DI needs epsilon >= log(max P / min P) = "
                                  f"{need:.6g}")
    status = "optimal"
    explicit_local = method == "local"
    stats = {"mode": mode, "notion": notion, "d": d, "epsilon": eps, "scenarios": len(scen)}
    Vc = V  # the values the solvers and the reported MSE use (centred below where that is exact)
    if objective in ("mae", "hamming"):
        if objective == "hamming":
            L = 1.0 - np.eye(d)
        else:
            a = V[:, 0]
            L = np.abs(a[:, None] - a[None, :])
        Q, obj, bound = solve_linear(scen, L, rows, time_limit=time_limit)
        method = "lp"
    elif objective == "mse":
        from .lip_optimize import ExactPricing, LPRank1Pricing, solve_colgen
        # The exact solvers work in units of the loss scale. A one-column task (sum, survey) with
        # one prior is centred, V − E[V] (the MSE of every channel is the same), and every task is
        # divided by the square root of the constant channel's MSE: the LPs' absolute tolerances
        # (HiGHS' dual tolerance is 1e-10 at least) then sit at the scale of the MSE, not of
        # E[V²] (prior (1e-9, 0.999997, 2.5e-6): MSE 2.5e-6 against E[V²] ≈ 1 left a relative gap
        # of 4e-5; prior (2e-11, 1, 0): the vertex method's bound was 0)
        if V.shape[1] == 1 and len(scen) == 1:
            Vc = V - scen[0].prior @ V
        loss_scale = _loss_scale(scen, Vc)
        unit = math.sqrt(loss_scale) if math.isfinite(loss_scale) and loss_scale > 0 else 1.0
        Vs = Vc / unit
        pricing = ExactPricing.make(scen, Vs, notion, eps)
        if pricing is None and (method == "exact" or (method == "auto" and d > VERTEX_MAX_D)):
            pricing = LPRank1Pricing.make(scen, Vs, rows)
        auto = method == "auto"
        if auto:
            method = "vertex" if d <= VERTEX_MAX_D else ("exact" if pricing is not None else "local")
        bound_u = None
        if method == "exact":
            if pricing is None:
                raise InputError("method='exact' (column generation with exact pricing) covers one prior "
                                 "with a sum/survey task under any notion (latent LIP, CIP, DI, LDP, "
                                 "Pufferfish) and eps-LIP with G = X for a histogram; use "
                                 "method='local' or 'vertex' for this family")
            from .lip_closed_forms import warm_starts
            # stop at 0.9·gap_tol: the cleaned, certified matrix may lose a little of the master's
            # MSE; the absolute floor is half the one the result is judged by (the loss scale is 1)
            try:
                Q, mse_lb, info = solve_colgen(scen, Vs, rows, pricing, time_limit=time_limit,
                                               gap_tol=0.9 * gap_tol, abs_tol=0.5 * GAP_ABS_TOL,
                                               warm_starts=warm_starts(scen, eps, notion))
            except SolverError as exc:  # an LP pricing ill-posed by the prior (LDP, entries ~1e-18)
                if not auto:
                    raise
                log.warning("LIP exact column generation failed (%s); auto falls back to the local "
                            "solve", exc)
                stats["exact_error"] = str(exc)[:200]
                method = "local"
            else:
                stats.update(info)
                stats["master_mse"] *= unit ** 2
                bound_u = -mse_lb * unit ** 2
                if info["stop"] != "optimal":
                    status = info["stop"]
        elif method == "vertex":
            Q, bound_u = solve_vertex(scen, Vs, rows, time_limit=time_limit,
                                      interior=di_interior(scen[0].prior) if notion == "di" else None)
            bound_u *= unit ** 2
        if method == "local":
            from .lip_closed_forms import warm_starts
            if rng is None and explicit_local:
                raise InputError("method='local' needs rng=numpy.random.default_rng(seed)")
            if rng is None:  # auto fell back to it: reproducible starts (the error carries Q)
                rng = np.random.default_rng(0)
            Q, _, info = solve_local(scen, V, rows, rng, starts=starts, f=f, time_limit=time_limit,
                                     warm_starts=warm_starts(scen, eps, notion))
            stats.update(info)
            # a local optimum: certified private, optimality not proved; or the reason of a stop
            status = info["stop"] or "feasible"
        elif method == "scip":
            Q, _, bound_u, info = solve_pyomo_scip(build_pyomo(scen, V, rows, f=f),
                                                   time_limit=time_limit)
            stats.update(info)
            if info["scip_status"] != "optimal":  # a certified feasible point, optimality unproven
                status = "time_limit"
        elif method not in ("exact", "vertex"):
            raise InputError(f"unknown method {method!r}: use auto, vertex, exact, local or scip")
        bound = None if bound_u is None else -bound_u
        obj = None
    else:
        raise InputError(f"unknown objective {objective!r}: use mse, mae or hamming")
    mech = _certify_matrix(Q, scen, eps, notion, rows, f"{notion}-optimal", pufferfish_T)
    cert = mech.certificate
    if not cert.satisfied:
        raise CertificationError(
            f"the {method} solve returned a matrix with realised epsilon {cert.realized_epsilon:.9g} "
            f"above the target {eps:g}; please report it", result=Result("error", mech, cert))
    Qc = mech.matrix
    mses = [second_moment(s.prior, Vc) - float(column_utility(Qc, s.prior, Vc).sum()) for s in scen]
    # the loss scale of the absolute gap floor: the prior variance (MSE of a constant channel), or max L
    scale = loss_scale if objective == "mse" else float(np.max(L))
    if objective == "mse":
        obj = max(mses)
        if bound is not None:
            bound = min(bound, obj)  # a bound above the primal can only be round-off
            if status in ("time_limit", "iteration_limit", "feasible") and method == "exact" and \
                    gap_status(OptimalityCertificate.from_values(obj, bound), gap_tol,
                               scale=scale) == "optimal":
                status = "optimal"  # stopped short, but the certified gap meets the target
    stats.update(method=method, objective_kind=objective, mse=max(mses), mse_per_scenario=mses,
                 utility=float(np.mean([column_utility(Qc, s.prior, V).sum() for s in scen])),
                 realized_epsilon=cert.realized_epsilon, paper_feasible=None,
                 f=int((Qc.sum(axis=0) > 0).sum()), time_s=time.perf_counter() - t0)
    res = Result(status, mech, cert, OptimalityCertificate.from_values(
        obj, bound, source="ray-LP dual" if method == "vertex" else method), stats)
    if status == "optimal":  # optimal only at a certified gap (the rule of every model)
        res.status = gap_status(res.optimality, scale=scale)
    if res.status == "feasible" and explicit_local:
        return res  # the user asked for a local optimum: certified private, no bound
    from ..common import raise_for_status
    raise_for_status(res, f"LIP design ({method})")
    return res


def _loss_scale(scen, V) -> float:
    """The MSE of a constant channel (the prior's variance of the task, worst scenario): the scale
    of the absolute gap floor (:func:`~lpmech.solvers.result.gap_status`)."""
    d = scen[0].prior.size
    return max(second_moment(sc.prior, V) - float(column_utility(np.ones((d, 1)), sc.prior, V).sum())
               for sc in scen)


def lh_lip(prior, h, epsilon: float, V, *, paper: bool = False, rng=None):
    """LH-LIP for one hash h ([004] §4.3.1): ``(Q_X, mse)`` with Q_X = H Q' the channel from X.

    Parameters
    ----------
    prior : array_like
        The user's prior P over d values.
    h : array_like of int
        The hash: bucket of each of the d values.
    epsilon : float
        The privacy budget ε > 0.
    V : array_like
        The d × r value matrix of the task (:func:`~.lip_estimation.value_matrix`).
    paper : bool
        ``paper=True``: Q' is [004] Prop. 3 (RR-LIP on the hashed prior P̂ = Hᵀ P), LIP only if
        min P̂ ≥ 1/(1+E). Otherwise the verified optimum on the hashed domain: the objective
        depends on Q' only through P̂ and the bucket means of V, so it is the same design problem
        with prior P̂ and values V̄ (empty buckets are never output), solved by :func:`.lip.solve`
        (exact vertex method up to 8 buckets; above, the local solve, which needs ``rng``).
    rng : numpy.random.Generator, optional
        Generator of the local solve (more than 8 buckets).

    Returns
    -------
    Q_X : numpy.ndarray
        The d × (used buckets) channel from X.
    mse : float
        Its per-user MSE of the MMSE estimator.

    Raises
    ------
    InputError
        Bad prior, hash or ε (from :func:`solve`).

    References
    ----------
    [004] B. Jiang, M. Li, R. Tandon, "Local Information Privacy and Its Application to
    Privacy-Preserving Data Aggregation", IEEE TDSC, §4.3.1 and Prop. 3.

    Examples
    --------
    >>> import numpy as np
    >>> from lpmech.models import lip
    >>> Q, mse = lip.lh_lip([0.4, 0.3, 0.2, 0.1], [0, 1, 0, 1], 1.0, np.arange(4.0))
    >>> print(Q.shape, f"{mse:.4f}", np.round(Q.sum(axis=1), 6))
    (4, 2) 0.9334 [1. 1. 1. 1.]
    """
    P = np.asarray(prior, float)
    V = np.asarray(V, float).reshape(P.size, -1)
    H = hash_matrix(h)
    Ph = H.T @ P
    used = Ph > 0
    Hu, Phu = H[:, used], Ph[used] / Ph[used].sum()
    if paper:
        Qh = rr_lip_paper(Phu, epsilon)
    else:
        Vbar = (Hu.T @ (P[:, None] * V)) / Phu[:, None]
        Qh = solve(Phu, epsilon, V=Vbar, rng=rng).mechanism.matrix
    Q = Hu @ Qh
    return Q, second_moment(P, V) - float(column_utility(Q, P, V).sum())
