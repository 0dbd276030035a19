"""OMG at scale: exact solves that never write all K³ Geo-Ind rows, and the δ-spanner approximation.

The OMG LP (Qiu et al., LR-Geo (6)–(7)) couples the entries of one *output column* only: column k of Z
must lie in the cone C = {v ≥ 0 : F_ij v_i ≤ v_j for every row (i, j)}, F_ij = e^{−ε d_ij}, and the only
constraints across columns are the K unit rows Σ_k z_ik = 1. Two exact paths use this:

* :func:`solve_cutting_plane` — the whole LP with lazy rows (:class:`~lpmech.solvers.cutting_planes.
  LazyLP`): start from the rows between near neighbours, add the most violated row of every (j, k)
  found by a vectorised max-product oracle, warm-restart dual simplex, repeat.
* :func:`solve_decomposition` — Dantzig–Wolfe by output column. The master LP has only the K unit
  rows and one column per generated vector (k, v), v ∈ C; pricing output k is
  min (c_k − μ)·v over v ∈ C ∩ [0, 1]^K, a K-variable LP solved with lazy rows and warm-restarted
  across rounds. Whatever the multipliers μ, the Lagrangian

      L(μ) = Σ_i μ_i + Σ_k min_{v ∈ C ∩ [0,1]^K} (c_k − μ)·v

  is a lower bound on the optimum (z ≤ 1 is implied by the unit rows), and each pricing LP's own
  Lagrangian bound bounds its min from below, so the lower bound reported every round is valid
  whatever the solver tolerances. Starting columns: the all-ones vector, the exponential mechanism's
  columns and the "tents" v_j = e^{−P(s, j)} (P: shortest paths of the row graph), all in C.

:func:`solve_spanner` is the approximate path of Bordenabe et al. (CCS 2014): rows only on the edges
of a greedy δ-spanner, with ε/δ, which implies ε-Geo-Ind on all pairs; it reports its certified
realised ε and a valid lower bound on the *exact* optimum, so its gap is the price of the
approximation.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time

import numpy as np
import scipy.sparse as sp
from scipy import special

from ...certificate import OptimalityCertificate
from ...design import geoind
from ...design.decomposition import PricingLP, decompose, lagrangian
from ...design.geoind import GeoInd, column_rows, factor_matrix, most_violated, near_pairs, tents
from ...design.notion import SEPARATION_TOL
from ...errors import InputError, LpmechError
from ...instance import Instance
from ...mechanism import check_epsilon
from ...progress import Progress
from ...solvers.cutting_planes import LazyLP
from ...solvers.result import GAP_TOL, Result
from .. import baselines

log = logging.getLogger(__name__)

# SEPARATION_TOL: a row counts as violated when F_ij z_i − z_j exceeds it (z in [0, 1]). It must
# exceed HiGHS' primal feasibility tolerance (1e-9), or a row already in the LP could be "found"
# again; the certificate of the returned matrix checks every row exactly and repairs what is below it


# ------------------------------------------------------------------------------ rows and oracle
# (the Geo-Ind primitives live in lpmech.design.geoind; re-exported here)

_column_rows = column_rows


def _costs(instance: Instance) -> np.ndarray:
    return instance.prior[:, None] * instance.loss  # c[i, k]


# ------------------------------------------------------------------------------ cutting planes


def solve_cutting_plane(instance: Instance, epsilon: float, *, F: np.ndarray | None = None,
                        algorithm: str = "simplex", n_near: int = 8,
                        time_limit: float | None = None, verbose: bool = False) -> Result:
    """The whole OMG LP with lazy Geo-Ind rows (uncertified :class:`Result`; see module doc).

    ``F`` (default :func:`~lpmech.models.omg.factor_matrix`) gives the rows that must hold.
    The bound is the Lagrangian bound of the last relaxed LP, valid for the full LP.
    """
    eps = check_epsilon(epsilon)
    F = factor_matrix(instance, eps) if F is None else F
    K = instance.K
    n = K * K
    unit = sp.csr_matrix((np.ones(n), (np.repeat(np.arange(K), K), np.arange(n))), shape=(K, n))
    pi, pj = near_pairs(F, n_near)
    kk = np.tile(np.arange(K), pi.size)
    ii, jj = np.repeat(pi, K), np.repeat(pj, K)

    present = np.zeros((K, K, K), dtype=bool)  # rows (i, j, k) in the LP
    present[ii, jj, kk] = True

    def separate(x):
        i, j, k, _ = most_violated(F, x.reshape(K, K), present=present)
        if i.size == 0:
            return None
        present[i, j, k] = True
        rows = _column_rows(F, i, j, K, k)
        return rows, np.full(i.size, -np.inf), np.zeros(i.size)

    lazy = LazyLP(_costs(instance).ravel(), np.zeros(n), np.ones(n), separate,
                  A=sp.vstack([unit, _column_rows(F, ii, jj, K, kk)]),
                  row_lo=np.concatenate([np.ones(K), np.full(ii.size, -np.inf)]),
                  row_hi=np.concatenate([np.ones(K), np.zeros(ii.size)]),
                  method=algorithm, verbose=verbose)
    t0 = time.perf_counter()
    out = lazy.solve(time_limit=time_limit)
    stats = {"solver": "highs", "method": "cutting-plane", "algorithm": algorithm,
             "rounds": out.rounds, "rows": out.rows, "start_rows": int(ii.size + K),
             "all_rows": int(np.count_nonzero(F)) * K, "cols": n, "trace": out.trace,
             "time_s": time.perf_counter() - t0}
    res = Result(status=out.status, stats=stats, x=out.x, duals=out.duals)
    if out.status == "optimal":
        res.optimality = OptimalityCertificate.from_values(out.objective, out.bound)
    return res


# ------------------------------------------------------------------------------ decomposition


#: absolute gap floor of the OMG decomposition (loss units; at most 2e-8 × Σ_i max_k p_i L_ik): an
#: optimum near 0 (large ε) ends where LP tolerances can resolve it, within the certificate's
#: absolute tolerance on unit losses (:data:`lpmech.solvers.result.GAP_ABS_TOL`·scale ≥ 1e-9)
ABS_TOL = 8e-10
#: the decomposition's relative gap: the package's certified optimum (``GAP_TOL`` = 1e-6) less a
#: margin for the cleaning, which moves the objective by about the master's 1e-9 feasibility
TOL = 0.9 * GAP_TOL


def _starting_columns(instance: Instance, eps: float, F: np.ndarray, T: np.ndarray, *,
                      trusted: bool = False) -> list[tuple[int, np.ndarray]]:
    """All-ones, the tents and the exponential mechanism's columns that satisfy the rows of F
    (``trusted``: F has the rows of a metric, which the exponential mechanism satisfies (a proof:
    z_ik/z_jk ≤ e^{ε d_ij} by the triangle inequality), so neither its O(K³) certificate in
    :func:`~lpmech.models.baselines.exponential` nor a check against F is run)."""
    K = instance.K
    cols = [(k, np.ones(K)) for k in range(K)]
    cols += [(k, T[:, k].copy()) for k in range(K)]
    if trusted:  # the exponential mechanism without its O(K³) certificate (proved for a metric)
        logz = -0.5 * eps * np.asarray(instance.metric, float)
        logz -= special.logsumexp(logz, axis=1, keepdims=True)
        Z = np.exp(logz) if logz.min() > -700 else None
    else:
        try:
            Z = baselines.exponential(instance, eps).matrix
        except LpmechError:
            Z = None
    if Z is not None:
        bad = set() if trusted else set(most_violated(F, Z)[2].tolist())
        cols += [(k, Z[:, k].copy()) for k in range(K) if k not in bad]
    return cols


def solve_decomposition(instance: Instance, epsilon: float, *, F: np.ndarray | None = None,
                        bound_F: np.ndarray | None = None, tol: float = TOL,
                        stabilise: float | str = "auto", purge_after: int = 5,
                        workers: int | None = None,
                        executor=None, master_algorithm: str = "auto",
                        master_options: dict | None = None, max_rounds: int = 5000, n_near: int = 0,
                        time_limit: float | None = None, verbose: bool = False,
                        coarse: bool = True, reduce: bool = False, dual_start=None,
                        cover: bool | str = "auto") -> Result:
    """OMG by Dantzig–Wolfe decomposition over output columns (uncertified :class:`Result`).

    A thin client of :func:`lpmech.design.decomposition.decompose` with the notion
    :class:`~lpmech.design.geoind.GeoInd` of ``F`` and the OMG starting columns (all-ones, tents,
    exponential mechanism).

    Args:
        instance, epsilon: the OMG instance.
        F: factor matrix of the rows that must hold (default: every Geo-Ind row, or with
            ``reduce`` the rows left by :func:`~lpmech.models.omg.implied_pairs`, O(K³) work up
            front; the pricing rows are lazy, so the default computes nothing cubic).
        bound_F: factor matrix of a *relaxation* of the exact problem, used for the final lower
            bound (default ``F``; the spanner path passes the true-ε rows on spanner edges so its
            bound is a bound on the exact optimum).
        tol: stop when (upper − lower) ≤ tol·|upper| (or under the absolute floor
            min(2e-8·Σ_i max_k p_i L_ik, :data:`ABS_TOL`)); the default :data:`TOL` (9e-7) keeps
            the certified gap under the package's 1e-6 after the cleaning.
        purge_after: every this many rounds, delete master columns not basic for as many rounds
            (0: keep every column).
        stabilise: Wentges smoothing weight α in [0, 1) (0 turns smoothing off), or ``"auto"``
            (default): self-adjusting α (:func:`~lpmech.design.decomposition.decompose`). Measured
            alone on 2 cores: 10×10 grid, ε = 0.3, 208 rounds in 44 s against 319 rounds in 82 s
            with α = 0.3; K = 400, ε = 1: 38 rounds in 133 s against 41 in 128 s.
        max_rounds: round cap (status ``"iteration_limit"``); time_limit: seconds (``"time_limit"``).
        n_near: each pricing LP starts with the rows to each location's ``n_near`` nearest
            neighbours and the rows from its own output.
        workers, executor: pricing backend (see :func:`~lpmech.design.decomposition.make_pricer`;
            a ``distributed.Client`` runs the pricing LPs on Dask actors).
        verbose: a progress line per round.
        dual_start: row multipliers to price at before the first round (e.g. the ``duals`` of
            a solve of a nearby instance; see :func:`~lpmech.design.decomposition.decompose`);
            by default, where :func:`coarse_duals_first` says so, the coarse start's lifted duals.
        coarse: from :data:`COARSE_MIN_K` locations up, start from a coarser instance
            (:func:`coarse_start`): its lifted optimum joins the starting columns (and with
            :func:`coarse_duals_first` its lifted duals are the first pricing point).
        cover: the master's unit rows as Σ ≥ 1 until near the end, so that its multipliers
            are ≥ 0 (:func:`~lpmech.design.decomposition.decompose`); ``"auto"`` (default):
            where :func:`covering_rows` (K = 400 at ε = 0.5: 214.6 s, 42 rounds, against
            338.1 s, 48 rounds; at ε = 1, 78.3 s against 72.8 s).
    """
    eps = check_epsilon(epsilon)
    t0 = time.perf_counter()
    with Progress(f"OMG starting columns K={instance.K}", verbose=verbose, logger=log) as prog:
        lazy = F is None and not reduce
        F = factor_matrix(instance, eps, reduce=reduce) if F is None else F
        prog.note("building the starting columns")
        if lazy and instance.is_metric and not math.isfinite(instance.gamma):
            # every pair has a row and d is a metric: the shortest paths are d itself, and the
            # tree of output k is its star (a row of every pricing LP from the start)
            T, pred = np.exp(-eps * instance.metric), None
        else:
            T, pred = tents(F, predecessors=True)
        cols = _starting_columns(instance, eps, F, T, trusted=lazy and instance.is_metric)
        if coarse:
            more, lifted = coarse_start(instance, eps, prog=prog, workers=workers,
                                        time_limit=None if time_limit is None else 0.5 * time_limit)
            cols += more
            if dual_start is None and coarse_duals_first(instance, eps):
                dual_start = lifted
    notion = GeoInd(F, n_near=n_near, closure=T.T.copy(), trees=pred)
    C = _costs(instance)
    # stall_gap=1: the tolerance is already the certificate's less a margin (a stall rule wider
    # than it would stop with a gap the certificate does not call optimal)
    res = decompose(notion, C, columns=cols, tol=tol, executor=executor, stall_gap=1.0,
                    abs_tol=min(2e-8 * float(np.abs(C).max(axis=1).sum()), ABS_TOL),
                    workers=workers, max_rounds=max_rounds, time_limit=time_limit, verbose=verbose,
                    stabilise=stabilise, purge_after=purge_after, check_columns=False,
                    master_algorithm=master_algorithm, master_options=master_options,
                    name=f"OMG decomposition K={instance.K}", dual_start=dual_start,
                    cover=covering_rows(instance, eps) if cover == "auto" else cover)
    if bound_F is not None and res.status == "optimal" and res.duals is not None:
        lower = _relaxed_lower_bound(bound_F, _costs(instance), res.duals[:instance.K], n_near)
        res.optimality = OptimalityCertificate.from_values(res.optimality.objective, lower)
    res.stats.update(all_rows=int(np.count_nonzero(F)) * instance.K,
                     setup_s=res.stats["setup_s"] + (time.perf_counter() - t0 - res.stats["time_s"]),
                     time_s=time.perf_counter() - t0)
    return res


def _relaxed_lower_bound(F: np.ndarray, C: np.ndarray, mu: np.ndarray, n_near: int) -> float:
    """L(μ) with the cone of the rows in ``F`` (lazy rows): a valid lower bound."""
    notion = GeoInd(F, n_near=n_near)
    ones = np.ones(F.shape[0])
    total = 0.0
    for k in range(F.shape[0]):
        total += float(lagrangian(PricingLP(notion, k).price(C[:, k] - mu)[2], ones))
    return float(mu.sum()) + total


# ------------------------------------------------------------------------------ coarse to fine

#: from this many locations up, the decomposition starts from the lifted optimum of a coarser
#: instance (:func:`coarse_columns`), recursively
COARSE_MIN_K = 150
#: relative gap of the coarse solves (their columns are only hints: the fine solve certifies)
COARSE_TOL = 1e-4
#: with True, the fine solve prices first at the coarse duals lifted by prior mass
#: (:func:`coarse_start`, ``dual_start``): the restricted master's own first duals can be far off
#: (K = 400, ε = 0.5: a first bound of −2,193 against an optimum of 3.18; 48 rounds, 143 s against
#: 59, 180 s; K = 225: ε = 0.3 90 rounds, 113 s against 165, 205 s; ε = 0.7 34 s against 37 s).
#: ``"auto"``: only where ε times the spacing of the locations is below 1 (:func:`coarse_duals_first`):
#: at ε = 1 on a unit grid the time is the same at K ≤ 1,024 and longer at K = 1,600 (a gap of
#: 1.2e-6 after 1,800 s against optimal in 1,441 s, more pricing rows early)
COARSE_DUAL_START: bool | str = "auto"


def coarse_duals_first(instance: Instance, eps: float) -> bool:
    """Whether the fine solve prices first at the coarse duals (:data:`COARSE_DUAL_START`): with
    ``"auto"``, where :func:`tents_overlap`."""
    if COARSE_DUAL_START != "auto":
        return bool(COARSE_DUAL_START)
    return tents_overlap(instance, eps)


def covering_rows(instance: Instance, eps: float) -> bool:
    """Whether the decomposition's master starts with the unit rows as Σ ≥ 1: where
    :func:`tents_overlap`, unless two locations nearly coincide
    (:func:`~lpmech.design.geoind.nearly_coincide`)."""
    return tents_overlap(instance, eps) and not geoind.nearly_coincide(instance.metric, eps)


def tents_overlap(instance: Instance, eps: float) -> bool:
    """:func:`lpmech.design.geoind.tents_overlap` on the instance's metric."""
    return geoind.tents_overlap(instance.metric, eps)


def coarse_points(instance: Instance, m: int | None = None) -> np.ndarray:
    """About a quarter of the locations, spread out: every other cell in both directions on a grid
    (from the coordinates), else greedy farthest-point sampling on the metric (k-centre)."""
    K = instance.K
    if instance.kind == "grid" and instance.coords is not None and instance.cell:
        ix = np.rint(instance.coords / instance.cell).astype(np.int64)
        ix -= ix.min(axis=0)
        return np.nonzero((ix % 2 == 0).all(axis=1))[0]
    m = max(2, (K + 3) // 4) if m is None else int(m)
    d = instance.metric
    first = int(np.argmax(d.sum(axis=1)))
    S = [first]
    near = d[first].copy()
    for _ in range(m - 1):
        s = int(np.argmax(near))
        if near[s] <= 0:
            break
        S.append(s)
        np.minimum(near, d[s], out=near)
    return np.sort(np.asarray(S, np.int64))


def coarse_instance(instance: Instance, S: np.ndarray) -> tuple[Instance, np.ndarray]:
    """The instance restricted to the locations ``S`` (a sub-metric is a metric), every location's
    prior moved to its nearest point of ``S`` and the loss of a coarse row the prior-weighted mean
    of the loss rows it gathers; and each location's group (index into ``S``)."""
    d, p, L = instance.metric, instance.prior, instance.loss
    label = np.argmin(d[:, S], axis=1)
    label[S] = np.arange(S.size)
    pc = np.bincount(label, weights=p, minlength=S.size)
    Lc = np.zeros((S.size, S.size))
    np.add.at(Lc, label, p[:, None] * L[:, S])
    empty = pc <= 0
    Lc[~empty] /= pc[~empty, None]
    Lc[empty] = L[S[empty]][:, S]
    dc = d[np.ix_(S, S)].copy()
    dc.setflags(write=False)
    coords = None if instance.coords is None else instance.coords[S]
    shape = None
    if instance.kind == "grid" and instance.shape is not None:
        shape = ((instance.shape[0] + 1) // 2, (instance.shape[1] + 1) // 2)
    cell = None if instance.cell is None else 2 * instance.cell
    coarse = dataclasses.replace(instance, metric=dc, prior=pc / pc.sum(), loss=Lc, coords=coords,
                                 shape=shape, cell=cell, labels=None)
    if shape is not None and S.size != shape[0] * shape[1]:
        coarse = dataclasses.replace(coarse, kind="points", shape=None)
    return coarse, label


def lift_columns(metric: np.ndarray, S: np.ndarray, U: np.ndarray, eps: float) -> np.ndarray:
    """The largest ε-Lipschitz extension in log space of the columns ``U`` (given on ``S``) to all
    locations: V_i = min(1, min_t U_t e^{ε d(S_t, i)}). Each lifted column satisfies every Geo-Ind
    row of the metric (v_i ≤ U_t e^{ε d_ti} ≤ U_t e^{ε d_tj} e^{ε d_ij} for the t attaining v_j),
    whatever ``U`` is."""
    with np.errstate(divide="ignore"):
        logU = np.log(np.clip(U, 0.0, 1.0))  # (|S|, n)
    D = eps * metric[S]  # (|S|, K)
    out = np.empty((metric.shape[0], U.shape[1]))
    for c in range(U.shape[1]):
        out[:, c] = np.min(logU[:, c, None] + D, axis=0)
    return np.exp(np.minimum(out, 0.0))


def coarse_columns(instance: Instance, eps: float, *, tol: float = COARSE_TOL,
                   min_k: int | None = None, prog: Progress | None = None,
                   workers: int | None = None,
                   time_limit: float | None = None) -> list[tuple[int, np.ndarray]]:
    """Starting columns from a coarser instance (the columns of :func:`coarse_start`)."""
    return coarse_start(instance, eps, tol=tol, min_k=min_k, prog=prog, workers=workers,
                        time_limit=time_limit)[0]


def coarse_start(instance: Instance, eps: float, *, tol: float = COARSE_TOL,
                 min_k: int | None = None, prog: Progress | None = None,
                 workers: int | None = None,
                 time_limit: float | None = None) -> tuple[list[tuple[int, np.ndarray]], np.ndarray | None]:
    """A start from a coarser instance: solve :func:`coarse_instance` on :func:`coarse_points`
    (recursively coarse-to-fine itself); its columns: every used column of its optimum lifted
    (:func:`lift_columns`) and offered to the fine outputs of its group, all in the Geo-Ind cone;
    its duals: the coarse row multipliers lifted by prior mass (:func:`lift_duals`), or None.
    Both are only a start: the fine solve proves its own optimum."""
    if instance.K < (COARSE_MIN_K if min_k is None else min_k):
        return [], None
    S = coarse_points(instance)
    if not (1 < S.size < instance.K):
        return [], None
    coarse, label = coarse_instance(instance, S)
    if prog is not None:
        prog.note("solving a coarse instance with K=%d for starting columns", coarse.K)
    try:  # only a start: a coarse solve that fails or runs out of time costs the columns only
        res = solve_decomposition(coarse, eps, tol=tol, coarse=True, workers=workers,
                                  time_limit=time_limit)
    except LpmechError as exc:
        if prog is not None:
            prog.note("coarse instance not used (%s)", exc)
        return [], None
    if res.x is None:
        return [], None
    Zc = res.x.reshape(coarse.K, coarse.K)
    used = np.nonzero(Zc.max(axis=0) > 1e-9)[0]
    V = lift_columns(instance.metric, S, Zc[:, used], eps)
    cols = []
    for c, s in enumerate(used):
        for k in np.nonzero(label == s)[0]:
            cols.append((int(k), V[:, c]))
    duals = None
    if res.status == "optimal" and res.duals is not None:
        duals = lift_duals(instance.prior, label, np.asarray(res.duals, float)[:coarse.K])
    return cols, duals


def lift_duals(prior: np.ndarray, label: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """Unit-row multipliers of the fine instance from those of the coarse one: each coarse row's
    multiplier shared among the locations of its group by prior mass, μ_i = μ_c p_i / p_c (a
    location of a group without mass gets μ_c / |group|)."""
    prior = np.asarray(prior, float)
    pc = np.bincount(label, weights=prior, minlength=mu.size)
    size = np.bincount(label, minlength=mu.size)
    share = np.where(pc[label] > 0, prior / np.where(pc[label] > 0, pc[label], 1.0),
                     1.0 / size[label])
    return mu[label] * share


# ------------------------------------------------------------------------------ spanner


def greedy_spanner(instance: Instance, delta: float) -> np.ndarray:
    """Symmetric edge mask of the greedy δ-spanner of the neighbour pairs (d ≤ γ).

    Pairs are scanned by increasing distance; (a, b) becomes an edge when the spanner's current
    path between them is longer than δ·d_ab. Every neighbour pair then has a spanner path of
    length ≤ δ·d (Althöfer et al.; used for Geo-Ind by Bordenabe et al., CCS 2014).
    """
    if not (isinstance(delta, int | float) and math.isfinite(delta) and delta >= 1):
        raise InputError(f"spanner dilation delta must be a number >= 1, got {delta!r}")
    d = instance.metric
    K = instance.K
    a, b = np.nonzero(np.triu(instance.neighbours(), 1))
    order = np.argsort(d[a, b], kind="stable")
    S = np.full((K, K), np.inf)
    np.fill_diagonal(S, 0.0)
    edges = np.zeros((K, K), dtype=bool)
    for p in order:
        u, v = a[p], b[p]
        duv = d[u, v]
        if S[u, v] <= delta * duv:
            continue
        edges[u, v] = edges[v, u] = True
        via = np.minimum(S[:, u, None] + duv + S[None, v, :], S[:, v, None] + duv + S[None, u, :])
        np.minimum(S, via, out=S)
    return edges


def solve_spanner(instance: Instance, epsilon: float, *, delta: float = 1.1, tol: float = 1e-8,
                  time_limit: float | None = None, verbose: bool = False) -> Result:
    """Approximate OMG: rows e^{−(ε/δ) d_ij} z_ik ≤ z_jk on the edges of a δ-spanner only.

    Any feasible matrix is ε-Geo-Ind on all neighbour pairs (chain the spanner path of length
    ≤ δ·d). The bound is L(μ) of the spanner master's multipliers priced over the *exact* cone
    (lazy rows), a valid lower bound on the exact OMG optimum, so the gap measures the price of the
    approximation. Uncertified :class:`Result`.
    """
    eps = check_epsilon(epsilon)
    t0 = time.perf_counter()
    edges = greedy_spanner(instance, delta)
    d = instance.metric
    F = np.where(edges, np.exp(-(eps / delta) * d), 0.0)
    bound_F = factor_matrix(instance, eps, reduce=False)  # the exact cone; its rows are lazy
    t_span = time.perf_counter() - t0
    res = solve_decomposition(instance, eps, F=F, bound_F=bound_F, tol=tol,
                              time_limit=time_limit, verbose=verbose)
    res.stats.update(method="spanner", delta=float(delta), spanner_edges=int(edges.sum() // 2),
                     spanner_s=t_span, time_s=time.perf_counter() - t0)
    return res


__all__ = ["SEPARATION_TOL", "greedy_spanner", "most_violated", "near_pairs", "solve_cutting_plane",
           "solve_decomposition", "solve_spanner", "tents"]
