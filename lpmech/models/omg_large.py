"""OMG at scale: exact solves that never write all K³ Geo-Ind rows, and the δ-spanner approximation.

The OMG LP (seed 002 (6)–(7)) couples the entries of one *output column* only: column k of Z must lie
in the cone C = {v ≥ 0 : F_ij v_i ≤ v_j for every row (i, j)}, F_ij = e^{−ε d_ij}, and the only
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

import logging
import math
import os
import time

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from ..certificate import OptimalityCertificate
from ..errors import InputError, LpmechError, SolverError
from ..instance import Instance
from ..mechanism import check_epsilon
from ..solvers.cutting_planes import LazyLP
from ..solvers.highs import _STATUS, new_highs
from ..solvers.result import Result, check_time_limit
from . import baselines
from .omg import factor_matrix

log = logging.getLogger(__name__)

#: a row counts as violated when F_ij z_i − z_j exceeds this (z in [0, 1]). It must exceed HiGHS'
#: primal feasibility tolerance (1e-9), or a row already in the LP could be "found" again; the
#: certificate of the returned matrix checks every row exactly and repairs what is below it
SEPARATION_TOL = 1e-8
#: from this many locations up, the decomposition prices in worker processes by default
PARALLEL_MIN_K = 100


# ------------------------------------------------------------------------------ rows and oracle


def _column_rows(F: np.ndarray, i: np.ndarray, j: np.ndarray, n_vars: int, k=None):
    """Rows F_ij x[i] − x[j] ≤ 0 over one column's ``n_vars`` variables, or, with outputs ``k``,
    rows F_ij z[i, k] − z[j, k] ≤ 0 over the K² variables z[i, k] = x[i·K + k] (n_vars = K)."""
    n = i.size
    ci, cj = (i, j) if k is None else (i * n_vars + k, j * n_vars + k)
    cols = np.column_stack([ci, cj]).ravel()
    vals = np.column_stack([F[i, j], -np.ones(n)]).ravel()
    width = n_vars if k is None else n_vars * n_vars
    return sp.csr_matrix((vals, (np.repeat(np.arange(n), 2), cols)), shape=(n, width))


def most_violated(F: np.ndarray, Z: np.ndarray, tol: float = SEPARATION_TOL, present=None):
    """For every entry (j, k): the row i maximising F_ij Z_ik − Z_jk, if it exceeds ``tol``.

    ``present`` (bool, shape (K, K, n), True for rows (i, j, k) already in the LP) leaves those
    rows out: the solver enforces them to its own tolerance, and finding them again would loop.
    Returns ``(i, j, k, violation)`` arrays of the violated entries (a vectorised oracle over all
    K² pairs of each column, chunked to bound memory).
    """
    Z = Z.reshape(F.shape[0], -1)
    K, n = Z.shape
    best = np.empty((K, n))
    arg = np.empty((K, n), dtype=np.int64)
    step = max(1, 4_000_000 // (K * n))
    for start in range(0, K, step):
        cols = slice(start, min(K, start + step))
        T = F[:, cols, None] * Z[:, None, :]  # T[i, j, k] = F_ij Z_ik
        if present is not None:
            T[present[:, cols]] = -np.inf
        arg[cols] = T.argmax(axis=0)
        best[cols] = np.take_along_axis(T, arg[cols][None], axis=0)[0]
    viol = best - Z
    j, k = np.nonzero(viol > tol)
    return arg[j, k], j, k, viol[j, k]


def near_pairs(F: np.ndarray, n_near: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """The rows (i, j) to start with: each i with its ``n_near`` largest factors F_ij (both ways)."""
    K = F.shape[0]
    n_near = min(n_near, K - 1)
    if n_near <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    j = np.argpartition(-F, n_near - 1, axis=1)[:, :n_near]
    i = np.repeat(np.arange(K), n_near)
    j = j.ravel()
    keep = F[i, j] > 0
    mask = np.zeros((K, K), dtype=bool)
    mask[i[keep], j[keep]] = True
    mask |= mask.T
    mask &= F > 0
    return np.nonzero(mask)


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
        res.optimality = OptimalityCertificate.from_values(out.objective, lazy.bound(out.duals))
    return res


# ------------------------------------------------------------------------------ decomposition


class _Pricing:
    """The pricing LP of one output: min w·v over v ∈ [0, 1]^K with lazy rows F_ij v_i ≤ v_j."""

    def __init__(self, F: np.ndarray, start_rows: sp.csr_matrix, verbose: bool):
        K = F.shape[0]

        start = start_rows.tocoo()
        pos, neg = start.data > 0, start.data < 0
        i0, j0 = np.empty(start.shape[0], np.int64), np.empty(start.shape[0], np.int64)
        i0[start.row[pos]], j0[start.row[neg]] = start.col[pos], start.col[neg]
        present = np.zeros((K, K), dtype=bool)  # rows (i, j) in the LP
        present[i0, j0] = True

        def separate(v):
            i, j, _, _ = most_violated(F, v[:, None], present=present[:, :, None])
            if j.size == 0:
                return None
            present[i, j] = True
            return _column_rows(F, i, j, K), np.full(j.size, -np.inf), np.zeros(j.size)

        self.lp = LazyLP(np.zeros(K), np.zeros(K), np.ones(K), separate, A=start_rows,
                         row_lo=np.full(start_rows.shape[0], -np.inf),
                         row_hi=np.zeros(start_rows.shape[0]), verbose=verbose)

    def price(self, w: np.ndarray):
        """``(v, value, rho)``: the pricing optimum v, its value w·v, and the reduced costs
        ρ = w − Aᵀy of the LP's row multipliers y ≤ 0 (see :func:`_lagrangian`)."""
        self.lp.set_cost(w)
        out = self.lp.solve()
        if out.status != "optimal":
            raise SolverError(f"OMG pricing LP ended with status {out.status!r} after "
                              f"{out.rounds} rounds of row generation")
        A = self.lp.matrix()[0]
        y = np.minimum(out.duals, 0.0)  # rows F v_i − v_j ≤ 0: multipliers ≤ 0 are valid
        return np.clip(out.x, 0.0, 1.0), out.objective, w - A.T @ y


def _lagrangian(rho: np.ndarray) -> np.ndarray:
    """Σ_i min(0, ρ_i) (per column of ρ): the Lagrangian bound of a pricing LP whose rows have
    right-hand side 0 and whose variables lie in [0, 1]. Valid for any multipliers y ≤ 0, so the
    reduced costs ρ of one solve, shifted by a change of the objective, bound the next one."""
    return np.minimum(rho, 0.0).sum(axis=0)


def _pricing_lps(F: np.ndarray, outputs, n_near: int) -> dict[int, _Pricing]:
    """One pricing LP per output, each starting with the near rows and its own star rows."""
    K = F.shape[0]
    pi, pj = near_pairs(F, n_near)
    base = _column_rows(F, pi, pj, K)
    lps = {}
    for k in outputs:
        star = np.nonzero(F[k] > 0)[0]
        rows = sp.vstack([base, _column_rows(F, np.full(star.size, k), star, K)], format="csr")
        lps[int(k)] = _Pricing(F, rows, verbose=False)
    return lps


def _price_all(lps: dict, outputs, W: np.ndarray, deadline: float | None) -> list | None:
    """Price ``outputs`` (columns of ``W``): [(k, v, value, rho)], or None past the deadline."""
    out = []
    for col, k in enumerate(outputs):
        if deadline is not None and time.perf_counter() > deadline:
            return None
        out.append((k, *lps[k].price(W[:, col])))
    return out


class _LocalPricer:
    """The pricing LPs of all outputs in this process."""

    def __init__(self, F, n_near):
        self.lps = _pricing_lps(F, range(F.shape[0]), n_near)

    def price(self, outputs, W, deadline):
        return _price_all(self.lps, list(outputs), W[:, outputs], deadline)

    def n_rows(self) -> int:
        return sum(lp.lp.n_rows for lp in self.lps.values())

    def close(self) -> None:
        pass


def _worker(conn, F, outputs, n_near) -> None:  # pragma: no cover - runs in a child process
    lps = _pricing_lps(F, outputs, n_near)
    while (msg := conn.recv()) is not None:
        if msg == "rows":
            conn.send(sum(lp.lp.n_rows for lp in lps.values()))
            continue
        ks, W = msg
        try:
            conn.send(_price_all(lps, ks, W, None))
        except Exception as exc:  # report, do not hang the parent
            conn.send(exc)


class _ProcessPricer:
    """The pricing LPs split over worker processes, each keeping its LPs warm across rounds.

    A stateful pool (not a ``concurrent.futures`` executor): what makes pricing cheap is that
    each LP restarts from its own basis and rows, so an output always goes to the same worker.
    """

    def __init__(self, F, n_near, workers):
        import multiprocessing as mp

        ctx = mp.get_context("fork")
        K = F.shape[0]
        self.owner = np.arange(K) % workers
        self.conns, self.procs = [], []
        for w in range(workers):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(child, F, np.nonzero(self.owner == w)[0], n_near),
                               daemon=True)
            proc.start()
            self.conns.append(parent)
            self.procs.append(proc)

    def price(self, outputs, W, deadline):
        outputs = np.asarray(outputs)
        parts = [outputs[self.owner[outputs] == w] for w in range(len(self.conns))]
        for conn, ks in zip(self.conns, parts):
            conn.send((ks.tolist(), W[:, ks]))
        out = []
        for conn in self.conns:
            got = conn.recv()
            if isinstance(got, Exception):
                raise got
            out.extend(got)
        return out

    def n_rows(self) -> int:
        for conn in self.conns:
            conn.send("rows")
        return sum(conn.recv() for conn in self.conns)

    def close(self) -> None:
        for conn, proc in zip(self.conns, self.procs):
            try:
                conn.send(None)
            except OSError:
                pass
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()


def tents(F: np.ndarray) -> np.ndarray:
    """Columns T[:, s] = e^{−P(s, ·)}, P the shortest paths of arcs i→j of length −log F_ij: in C."""
    i, j = np.nonzero(F)
    w = np.maximum(-np.log(F[i, j]), 1e-300)  # csgraph reads a stored 0 as an edge only if sparse
    P = shortest_path(sp.csr_matrix((w, (i, j)), shape=F.shape), directed=True)
    return np.exp(-P).T


def _starting_columns(instance: Instance, eps: float, F: np.ndarray,
                      T: np.ndarray) -> list[tuple[int, np.ndarray]]:
    K = instance.K
    cols = [(k, np.ones(K)) for k in range(K)]
    cols += [(k, T[:, k].copy()) for k in range(K)]
    try:
        Z = baselines.exponential(instance, eps).matrix
    except LpmechError:
        Z = None
    if Z is not None:
        bad = set(most_violated(F, Z)[2].tolist())
        cols += [(k, Z[:, k].copy()) for k in range(K) if k not in bad]
    return cols


class _Master:
    """The restricted master LP: the K unit rows, one column per generated (output k, vector v).

    Primal simplex by default: added columns keep its basis primal feasible.
    """

    def __init__(self, C: np.ndarray, algorithm: str, options: dict | None):
        K = C.shape[0]
        self.C = C
        self.h = new_highs(algorithm, options={"simplex_strategy": 4} if options is None else options)
        self.h.addRows(K, np.ones(K), np.ones(K), 0, np.zeros(K, np.int32), np.zeros(0, np.int32),
                       np.zeros(0))
        self.ks: list[int] = []
        self.vs: list[np.ndarray] = []
        self.last_basic: list[int] = []  # the last round in which each column was basic
        self.run_s = 0.0

    def add(self, k: int, v: np.ndarray, born: int = 0) -> None:
        idx = np.nonzero(v > 0)[0].astype(np.int32)
        self.h.addCol(float(self.C[:, k] @ v), 0.0, math.inf, idx.size, idx, v[idx])
        self.ks.append(k)
        self.vs.append(v)
        self.last_basic.append(born)

    def run(self) -> tuple[np.ndarray, float]:
        """Solve; return the unit rows' duals μ and the objective (an upper bound)."""
        ts = time.perf_counter()
        self.h.run()
        self.run_s += time.perf_counter() - ts
        status = _STATUS.get(self.h.getModelStatus(), "error")
        if status != "optimal":
            raise SolverError(f"OMG master LP ended with status {status!r}")
        return np.array(self.h.getSolution().row_dual), float(self.h.getInfo().objective_function_value)

    def purge(self, rnd: int, age: int) -> None:
        """Delete the columns not basic for ``age`` rounds (call before :meth:`run`: the basis stays
        valid, and a deleted column is generated again if it prices out)."""
        import highspy

        basic = np.array([s == highspy.HighsBasisStatus.kBasic for s in self.h.getBasis().col_status])
        last = np.asarray(self.last_basic)
        last[basic] = rnd
        keep = last >= rnd - age
        if not keep.all():
            drop = np.nonzero(~keep)[0].astype(np.int32)
            self.h.deleteCols(drop.size, drop)
            self.ks = [k for k, kept in zip(self.ks, keep) if kept]
            self.vs = [v for v, kept in zip(self.vs, keep) if kept]
        self.last_basic = last[keep].tolist()

    def matrix(self) -> np.ndarray:
        """Z = Σ λ_r v_r e_{k_r}ᵀ from the last solve."""
        lam = np.array(self.h.getSolution().col_value)
        K = self.C.shape[0]
        Z = np.zeros((K, K))
        for k, v, weight in zip(self.ks, self.vs, lam):
            if weight > 0:
                Z[:, k] += weight * v
        return Z


def solve_decomposition(instance: Instance, epsilon: float, *, F: np.ndarray | None = None,
                        bound_F: np.ndarray | None = None, tol: float = 1e-7,
                        stabilise: float = 0.5, purge_after: int = 5, workers: int | None = None,
                        master_algorithm: str = "simplex", master_options: dict | None = None,
                        max_rounds: int = 5000, n_near: int = 0, time_limit: float | None = None,
                        verbose: bool = False) -> Result:
    """OMG by Dantzig–Wolfe decomposition over output columns (uncertified :class:`Result`).

    Args:
        instance, epsilon: the OMG instance.
        F: factor matrix of the rows that must hold (default: all non-implied Geo-Ind rows).
        bound_F: factor matrix of a *relaxation* of the exact problem, used for the final lower
            bound (default ``F``; the spanner path passes the true-ε rows on spanner edges so its
            bound is a bound on the exact optimum).
        tol: stop when (upper − lower) ≤ tol·|upper|.
        purge_after: every this many rounds, delete master columns not basic for as many rounds
            (0: keep every column).
        stabilise: Wentges smoothing weight α in [0, 1): price at α·(multipliers of the best
            bound) + (1 − α)·(master duals); 0 turns smoothing off.
        max_rounds, time_limit: limits (status ``"time_limit"`` when reached).
        n_near: each pricing LP starts with the rows to each location's ``n_near`` nearest
            neighbours and the rows from its own output.
        workers: processes for the pricing LPs (default: 2 when K ≥ PARALLEL_MIN_K and the
            machine has 2 cores, else 1 — in this process).
        verbose: log every round at INFO.
    """
    eps = check_epsilon(epsilon)
    time_limit = check_time_limit(time_limit)
    t0 = time.perf_counter()
    F = factor_matrix(instance, eps) if F is None else F
    K = instance.K
    C = _costs(instance)
    master = _Master(C, master_algorithm, master_options)
    for k, v in _starting_columns(instance, eps, F, tents(F)):
        master.add(k, v)
    if workers is None:
        workers = min(2, os.cpu_count() or 1) if K >= PARALLEL_MIN_K else 1
    pricer = _ProcessPricer(F, n_near, workers) if workers > 1 else _LocalPricer(F, n_near)
    t_setup = time.perf_counter() - t0
    try:
        status, trace, mu, lower, upper = _rounds(master, pricer, C, tol, stabilise, purge_after,
                                                  max_rounds, time_limit, verbose, t0)
        pricing_rows = pricer.n_rows()
    finally:
        pricer.close()
    if bound_F is not None:
        lower = _relaxed_lower_bound(bound_F, C, mu, n_near)
    stats = {"solver": "highs", "method": "decomposition", "rounds": len(trace),
             "columns": len(master.ks), "pricing_rows": int(pricing_rows), "workers": workers,
             "all_rows": int(np.count_nonzero(F)) * K, "setup_s": t_setup,
             "master_s": master.run_s, "trace": trace, "time_s": time.perf_counter() - t0}
    res = Result(status=status, stats=stats, x=master.matrix().ravel(), duals=mu)
    if status == "optimal":
        res.optimality = OptimalityCertificate.from_values(upper, lower)
    return res


def _rounds(master: _Master, pricer, C, tol, stabilise, purge_after, max_rounds, time_limit,
            verbose, t0):
    """Column generation rounds: ``(status, trace, μ, best lower bound, upper bound)``."""
    K = C.shape[0]
    trace: list[dict] = []
    best_lower, upper, mu, lower = -math.inf, math.inf, np.zeros(K), -math.inf
    RHO = np.full((K, K), -np.inf)  # reduced costs of each pricing LP's last solve (none yet)
    W_last = np.zeros((K, K))
    center = None  # the multipliers of the best lower bound so far (stabilisation centre)
    for rnd in range(1, max_rounds + 1):
        if purge_after and rnd % purge_after == 0:
            master.purge(rnd, purge_after)
        mu_master, upper = master.run()
        # Wentges smoothing: price at a point between the centre and the master's duals
        smoothed = center is not None and stabilise > 0
        mu = stabilise * center + (1 - stabilise) * mu_master if smoothed else mu_master
        W = C - mu[:, None]  # pricing objectives, one column per output
        # bound of every pricing LP from its last multipliers, shifted to the new objective: an
        # output whose bound cannot go below the threshold has no improving column (no solve)
        bounds = _lagrangian(RHO + (W - W_last))
        threshold = -tol * max(abs(upper), 1e-12) / K
        added = 0
        todo = np.nonzero(bounds < threshold)[0]
        priced = pricer.price(todo, W, None if time_limit is None else t0 + time_limit)
        for k, v, value, rho in priced or ():
            RHO[:, k], W_last[:, k] = rho, W[:, k]
            bounds[k] = _lagrangian(rho)
            if value < threshold:
                master.add(k, v, rnd)
                added += 1
        if priced is not None:  # a complete pricing round: L(μ) is a valid bound
            lower = float(mu.sum() + math.fsum(np.minimum(bounds, 0.0)))
            if lower > best_lower:
                best_lower, center = lower, mu
        gap = (upper - best_lower) / max(abs(upper), 1e-12)
        elapsed = time.perf_counter() - t0
        trace.append({"round": rnd, "upper": upper, "lower": lower, "gap": gap, "added": added,
                      "priced": 0 if priced is None else len(priced), "columns": len(master.ks),
                      "time_s": elapsed})
        (log.info if verbose else log.debug)(
            "OMG decomposition round %d: upper %.10g lower %.10g gap %.2e (%d priced, +%d columns, "
            "%.1fs)", rnd, upper, best_lower, gap, trace[-1]["priced"], added, elapsed)
        if time_limit is not None and elapsed > time_limit:
            return "time_limit", trace, mu, best_lower, upper
        if gap <= tol or (added == 0 and not smoothed):
            return "optimal", trace, mu, best_lower, upper
        if added == 0:  # mispricing at the smoothed point: price at the master's duals next
            center = None
    return "time_limit", trace, mu, best_lower, upper


def _relaxed_lower_bound(F: np.ndarray, C: np.ndarray, mu: np.ndarray, n_near: int) -> float:
    """L(μ) with C replaced by the cone of the rows in ``F`` (lazy rows): a valid lower bound."""
    lps = _pricing_lps(F, range(F.shape[0]), n_near)
    return float(mu.sum()) + sum(float(_lagrangian(lp.price(C[:, k] - mu)[2])) for k, lp in lps.items())


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
    bound_F = factor_matrix(instance, eps)
    t_span = time.perf_counter() - t0
    res = solve_decomposition(instance, eps, F=F, bound_F=bound_F, tol=tol,
                              time_limit=time_limit, verbose=verbose)
    res.stats.update(method="spanner", delta=float(delta), spanner_edges=int(edges.sum() // 2),
                     spanner_s=t_span, time_s=time.perf_counter() - t0)
    return res


__all__ = ["SEPARATION_TOL", "greedy_spanner", "most_violated", "near_pairs", "solve_cutting_plane",
           "solve_decomposition", "solve_spanner", "tents"]
