"""OMG: the full geo-obfuscation LP over K locations (Qiu et al., LR-Geo §2.3, eqs. (1)–(7))::

    min_Z  Σ_i p_i Σ_k L[i,k] z[i,k]                                     (4), (6)
    s.t.   e^{−ε d_ij} z[i,k] − z[j,k] ≤ 0   ∀ (i, j): i ≠ j, d_ij ≤ γ,  ∀ k   (1), well-scaled form
           Σ_k z[i,k] = 1                    ∀ i                          (2)
           0 ≤ z[i,k] ≤ 1                    (z ≥ 0 is implicit in the paper; z ≤ 1 is implied)

The Geo-Ind row (1), z_ik ≤ e^{ε d} z_jk, is divided by e^{ε d} so every coefficient lies in (0, 1]
(DESIGN, Numerics). A row whose factor e^{−ε d} underflows double precision (ε·d > 745) is not
representable and is left out; the certificate of the returned matrix still checks it.

Two builders give the same constraint set: :func:`build_pyomo`, a declarative model a user can
extend before :func:`solve_model`, and :func:`build_lp`, the vectorised sparse arrays behind the
fast path. :func:`solve` runs either and returns a certified :class:`~lpmech.solvers.result.Result`.
The rows are ordered pair-major: row p·K + k is pair p = (i_p, j_p) and output k; variable z[i,k] is
column i·K + k.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time

import numpy as np
import scipy.sparse as sp

from ...design.geoind import factor_matrix, geo_ind_pairs, implied_pairs
from ...errors import InputError, NotOptimalError
from ...instance import Instance
from ...resources import require_omg_memory
from ...solvers.highs import solve_lp
from ...solvers.result import Result
from ..common import certified_result, check_model_inputs, reserve_certification, verbose_entry

log = logging.getLogger(__name__)


def _check_max_loss(max_loss) -> None:
    if max_loss is not None and not math.isfinite(max_loss):
        raise InputError(f"max_loss must be a finite number, got {max_loss!r}")


@dataclasses.dataclass(frozen=True)
class LPData:
    """An LP in bulk arrays: min c·x s.t. row_lo ≤ A x ≤ row_hi, col_lo ≤ x ≤ col_hi."""

    c: np.ndarray
    A: sp.csc_matrix
    row_lo: np.ndarray
    row_hi: np.ndarray
    col_lo: np.ndarray
    col_hi: np.ndarray
    n_geo_ind: int

    def solve(self, **kwargs) -> Result:
        return solve_lp(self.c, self.A, self.row_lo, self.row_hi, self.col_lo, self.col_hi, **kwargs)


def build_lp(instance: Instance, epsilon: float, *, max_loss: float | None = None,
             reduce: bool = True) -> LPData:
    """The OMG LP (1)–(7) as sparse arrays (the fast path). ``max_loss`` adds one row
    Σ p_i L_ik z_ik ≤ max_loss (a utility requirement); ``reduce`` drops implied rows."""
    K = instance.K
    i, j, f = geo_ind_pairs(instance, epsilon, reduce=reduce)
    _check_max_loss(max_loss)
    P = i.size
    k = np.arange(K)
    rows = np.repeat(np.arange(P * K), 2)
    cols = np.column_stack([(i[:, None] * K + k).ravel(), (j[:, None] * K + k).ravel()]).ravel()
    vals = np.column_stack([np.repeat(f, K), -np.ones(P * K)]).ravel()
    unit_rows = P * K + np.repeat(np.arange(K), K)
    c = (instance.prior[:, None] * instance.loss).ravel()
    parts_r, parts_c, parts_v = [rows, unit_rows], [cols, np.arange(K * K)], [vals, np.ones(K * K)]
    n_rows = P * K + K
    lo = [np.full(P * K, -np.inf), np.ones(K)]
    hi = [np.zeros(P * K), np.ones(K)]
    if max_loss is not None:
        parts_r.append(np.full(K * K, n_rows))
        parts_c.append(np.arange(K * K))
        parts_v.append(c)
        n_rows += 1
        lo.append([-np.inf])
        hi.append([float(max_loss)])
    A = sp.csc_matrix((np.concatenate(parts_v), (np.concatenate(parts_r), np.concatenate(parts_c))),
                      shape=(n_rows, K * K))
    return LPData(c=c, A=A, row_lo=np.concatenate(lo), row_hi=np.concatenate(hi),
                  col_lo=np.zeros(K * K), col_hi=np.ones(K * K), n_geo_ind=P * K)


def build_pyomo(instance: Instance, epsilon: float, *, max_loss: float | None = None,
                reduce: bool = True):
    """The OMG LP (1)–(7) as a declarative Pyomo model.

    Components: ``V`` (locations), ``P`` (ordered neighbour pairs), ``factor[i, j]`` = e^{−ε d_ij},
    ``z[i, k]`` in [0, 1], ``geo_ind[i, j, k]`` (1), ``unit[i]`` (2) and the objective ``cost`` (4).
    ``reduce`` drops implied rows (:func:`implied_pairs`). Add your own constraints to the returned
    model, then call :func:`solve_model`.
    """
    import pyomo.environ as pyo  # imported on use: Pyomo takes ~1 s to import

    i, j, f = geo_ind_pairs(instance, epsilon, reduce=reduce)
    _check_max_loss(max_loss)
    p, L = instance.prior, instance.loss
    m = pyo.ConcreteModel(name="OMG")
    m.V = pyo.RangeSet(0, instance.K - 1)
    m.P = pyo.Set(initialize=list(zip(i.tolist(), j.tolist())), dimen=2, ordered=True)
    m.factor = pyo.Param(m.P, initialize=dict(zip(zip(i.tolist(), j.tolist()), f.tolist())))
    m.z = pyo.Var(m.V, m.V, bounds=(0.0, 1.0))
    m.geo_ind = pyo.Constraint(
        m.P, m.V, rule=lambda m, a, b, k: m.factor[a, b] * m.z[a, k] - m.z[b, k] <= 0)
    m.unit = pyo.Constraint(m.V, rule=lambda m, a: sum(m.z[a, k] for k in m.V) == 1)
    m.cost = pyo.Objective(
        expr=sum(float(p[a] * L[a, k]) * m.z[a, k] for a in m.V for k in m.V if p[a] * L[a, k]),
        sense=pyo.minimize)
    if max_loss is not None:
        m.max_loss = pyo.Constraint(expr=m.cost.expr <= float(max_loss))
    m._lpmech = {"instance": instance, "epsilon": float(epsilon)}
    return m


def solve_model(model, *, solver: str = "appsi_highs", time_limit: float | None = None,
                tee: bool = False, name: str = "OMG") -> Result:
    """Solve a (possibly user-extended) model from :func:`build_pyomo` into a certified Result."""
    info = getattr(model, "_lpmech", None)
    if info is None:
        raise InputError("solve_model() needs a model made by lpmech.models.omg.build_pyomo")
    instance, eps = info["instance"], info["epsilon"]
    from ...solvers.pyomo import solve_pyomo

    res = solve_pyomo(model, solver=solver, time_limit=time_limit, tee=tee)
    res.stats["path"] = "pyomo"
    raw = None
    if res.status == "optimal":
        K = instance.K
        raw = np.array([[model.z[a, k].value or 0.0 for k in range(K)] for a in range(K)])
    return certified_result(res, raw, instance, eps, name=name)


#: solve methods; "auto" picks "cutting-plane" up to AUTO_SMALL_K locations, else "decomposition"
#: (measured by benchmarks/omg_scaling.py: at K = 25 cutting planes 0.2 s, the full LP 0.5 s, the
#: decomposition 0.65 s; at K = 49 the decomposition 1.9 s, cutting planes 4.6 s, the full LP 13 s)
METHODS = ("auto", "full", "cutting-plane", "decomposition", "spanner")
AUTO_SMALL_K = 25


def choose_method(instance: Instance, method: str = "auto", path: str = "fast") -> str:
    """The solve method ``method="auto"`` stands for (measured: ``benchmarks/omg_scaling.py``)."""
    if method not in METHODS:
        raise InputError(f"unknown OMG method {method!r}: use one of {', '.join(METHODS)}")
    if method != "auto":
        if path == "pyomo" and method != "full":
            raise InputError(f"path='pyomo' builds the full model; method {method!r} needs the "
                             "fast path")
        return method
    if path == "pyomo":
        return "full"
    return "cutting-plane" if instance.K <= AUTO_SMALL_K else "decomposition"


@verbose_entry
def solve(instance: Instance, epsilon: float, *, method: str = "auto", path: str = "fast",
          algorithm: str = "simplex", time_limit: float | None = None,
          max_loss: float | None = None, delta: float = 1.1, reduce: bool = True,
          merge: bool = True, verbose: bool = False) -> Result:
    """Optimal (ε, γ)-Geo-Ind mechanism for ``instance`` (Qiu et al., PETS 2025, (6)–(7)), certified.

    Minimises the expected loss Σ_i p_i Σ_k L[i,k] z[i,k] (4) over row-stochastic Z subject to the
    Geo-Ind rows (1), written e^{−ε d_ij} z[i,k] − z[j,k] ≤ 0 for every pair with d_ij ≤ γ.

    Parameters
    ----------
    instance : Instance
        Locations, metric d, prior p, loss L and γ.
    epsilon : float
        Privacy budget ε (per unit of the metric).
    method : {"auto", "full", "cutting-plane", "decomposition", "spanner"}
        ``"full"`` writes every row; ``"cutting-plane"`` adds rows lazily (exact);
        ``"decomposition"`` is Dantzig–Wolfe by output column with lazy rows (exact);
        ``"spanner"`` keeps the rows of a δ-spanner with ε/δ (approximate, certified ε-Geo-Ind);
        ``"auto"`` picks by :func:`choose_method` (``"full"`` with ``max_loss``), and
        ``stats["method"]`` says what ran. See :mod:`lpmech.models.omg.omg_large`.
    path : {"fast", "pyomo"}
        Vectorised arrays straight to HiGHS, or the declarative Pyomo model (full method only).
    algorithm : {"simplex", "ipm", "choose"}
        HiGHS algorithm of the full and cutting-plane methods.
    time_limit : float, optional
        Seconds for the solver.
    max_loss : float, optional
        Utility requirement, expected loss ≤ ``max_loss`` (full method only).
    delta : float
        Spanner dilation (method ``"spanner"``).
    reduce : bool
        Leave out implied rows (:func:`implied_pairs`, O(K³) work); the optimum does not change.
        The decomposition generates its rows lazily and skips it.
    merge : bool
        Merge locations closer than double precision can tell apart
        (d ≤ :data:`~lpmech.quotient.QUOTIENT_RTOL`·max d) into one location of the quotient
        instance, solve that and expand the mechanism (:mod:`lpmech.quotient`);
        ``stats["quotient_merged"]`` says how many locations were merged away.
    verbose : bool
        Show the solver's log (and the rounds of the large-K methods).

    Returns
    -------
    Result
        The mechanism is certified against *every* Geo-Ind pair (realised ε ≤ ε·(1 + 1e-6));
        the bound is a Lagrangian bound valid for the exact OMG optimum; ``status`` is
        ``"optimal"``, or ``"feasible"`` for the spanner.

    Raises
    ------
    InputError
        Bad input (ε ≤ 0, an ε·d that over- or underflows, an unknown method).
    InfeasibleError
        ``max_loss`` below the optimum.
    TimeLimitError, IterationLimitError
        Stopped before a certified optimum (``exc.result`` holds the best certified mechanism).
    CertificationError
        The cleaned matrix misses its privacy certificate.

    Notes
    -----
    Geo-Ind forces the rows of two points at d = 0 to be equal and the rows of two points at a
    tiny d to be equal up to e^{ε d}. With ``merge`` the points closer than double precision can
    resolve are solved as one location; the other near-equal rows are kept sound by
    :func:`implied_pairs` (only strictly shorter legs) and by the cleaning step
    (:func:`lpmech.mechanism.clean`: one common row per near-duplicate group before
    renormalising). Whatever was merged, the mechanism returned is certified on the *original*
    points, and its objective is the expected loss on the original instance.

    Examples
    --------
    >>> import numpy as np
    >>> from lpmech import instance as li
    >>> from lpmech.models import omg
    >>> inst = li.grid(5, 5).with_prior(np.random.default_rng(0).dirichlet(np.ones(25)))
    >>> res = omg.solve(inst, 1.0)
    >>> print(res.status, res.stats["method"], f"{res.objective:.6f}", res.gap < 1e-6)
    optimal cutting-plane 1.011788 True
    """
    eps = check_model_inputs(instance, epsilon, max_loss=max_loss)
    t0 = time.perf_counter()
    if merge:
        from ...quotient import quotient

        q = quotient(instance)
        if q is not None:
            return _solve_quotient(q, eps, t0, method=method, path=path, algorithm=algorithm,
                                   time_limit=time_limit, max_loss=max_loss, delta=delta,
                                   reduce=reduce, verbose=verbose)
    if method == "auto" and max_loss is not None:
        method = "full"  # the utility row is written into the full model only
    chosen = choose_method(instance, method, path)
    require_omg_memory(instance.K, chosen)
    reserve_certification(instance.K)
    if max_loss is not None and chosen != "full":
        raise InputError("max_loss needs method='full'")
    if chosen == "full" and path == "pyomo":
        model = build_pyomo(instance, eps, max_loss=max_loss, reduce=reduce)
        t_build = time.perf_counter() - t0
        res = solve_model(model, time_limit=time_limit, tee=verbose)
    elif path != "fast":
        raise InputError(f"unknown OMG path {path!r}: use 'fast' or 'pyomo'")
    elif chosen == "full":
        lp = build_lp(instance, eps, max_loss=max_loss, reduce=reduce)
        t_build = time.perf_counter() - t0
        res = lp.solve(method=algorithm, time_limit=time_limit, verbose=verbose)
        res.stats.update(path="fast", geo_ind_rows=lp.n_geo_ind, algorithm=algorithm)
    else:
        from . import omg_large

        t_build = time.perf_counter() - t0
        if chosen == "cutting-plane":
            F = factor_matrix(instance, eps, reduce=reduce)
            t_build = time.perf_counter() - t0
            res = omg_large.solve_cutting_plane(instance, eps, F=F, algorithm=algorithm,
                                                time_limit=time_limit, verbose=verbose)
        elif chosen == "decomposition":  # its rows are lazy: no row reduction up front (O(K³))
            res = omg_large.solve_decomposition(instance, eps, time_limit=time_limit,
                                                verbose=verbose)
        else:
            res = omg_large.solve_spanner(instance, eps, delta=delta, time_limit=time_limit,
                                          verbose=verbose)
        res.stats["path"] = "fast"
    if path == "fast":
        raw = None if res.x is None else res.x.reshape(instance.K, instance.K)
        res = certified_result(res, raw, instance, eps, name="OMG")
    res.stats.update(method=chosen, requested_method=method, reduce=reduce, quotient_merged=0)
    res.stats["model_build_s"] = t_build
    res.stats["time_s"] = time.perf_counter() - t0
    log.info("OMG K=%d eps=%g method %s%s: objective %.9g, bound %s, gap %s, realised eps %.9g",
             instance.K, eps, chosen, " (auto)" if method == "auto" else "", res.objective,
             res.bound, res.gap, res.certificate.realized_epsilon)
    return res


def _solve_quotient(q, eps: float, t0: float, **kwargs) -> Result:
    """Solve the quotient instance, expand its mechanism and certify it on the original points."""
    try:
        inner = solve(q.instance, eps, merge=False, **kwargs)
    except NotOptimalError as exc:  # a stop: its incumbent, expanded and certified on the original
        inner = exc.result
        if inner is None or inner.mechanism is None:
            raise
        raw = q.expand(inner.mechanism.matrix)
        res = Result(status=inner.status, stats=dict(inner.stats), x=raw.ravel(),
                     optimality=inner.optimality)
        certified_result(res, raw, q.original, eps, name="OMG")
    raw = q.expand(inner.mechanism.matrix)
    res = Result(status=inner.status, stats=dict(inner.stats), x=raw.ravel(), duals=inner.duals,
                 optimality=inner.optimality)
    res = certified_result(res, raw, q.original, eps, name="OMG")
    res.stats.update(q.stats())
    res.stats["time_s"] = time.perf_counter() - t0
    log.info("OMG: %d of %d locations merged into near-coincident groups (diameter %.3g); "
             "certified on the original points: realised eps %.9g", q.merged, q.original.K,
             q.diameter, res.certificate.realized_epsilon)
    return res


__all__ = ["AUTO_SMALL_K", "METHODS", "LPData", "build_lp", "build_pyomo", "choose_method",
           "factor_matrix", "geo_ind_pairs", "implied_pairs", "solve", "solve_model"]
