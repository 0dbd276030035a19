"""A generic Benders driver for block-angular LPs (seed 002 §4.4, App. C, eqs. (80)–(86)).

The problem is ::

    min  α·y + Σ_m c_m·x_m
    s.t. row_lo_m ≤ A_m x_m + G_m y ≤ row_hi_m      (block m = 1..M; y links the blocks)
         col_lo_m ≤ x_m ≤ col_hi_m,  y_lo ≤ y ≤ y_hi,  master_lo ≤ master_A y ≤ master_hi.

The master program (80)–(82) is ``min α·y + Σ_m w_m`` over y and one w_m ≥ ``w_lower_m`` per block
(a valid lower bound on block m's cost; 0 when c_m ≥ 0 and x_m ≥ 0 — without it the first master
is unbounded, spec §9 item 15). Each iteration solves every block's subproblem (84) at the master's
ȳ on a ``concurrent.futures.Executor`` and adds, per block:

* **optimality cut** ``w_m ≥ g_m(λ; y)`` when the block is feasible and w̄_m under-estimates its
  value; g is the Lagrangian bound of the block LP with the returned row multipliers λ (valid for
  any λ, so the cut is valid whatever the solver's sign conventions, and affine in y because y
  only shifts the row sides by −G_m y);
* **feasibility cut** ``g_m^0(λ; y) ≤ 0`` when the block is infeasible, from the *normalised
  Farkas LP* (phase 1: min Σ s⁺ + s⁻ with elastic rows, whose multipliers lie in [−1, 1]; its
  Lagrangian bound is positive at ȳ and must be ≤ 0 at any feasible y). This is the spec's
  corrected Case 1 without relying on the sign of a solver's dual ray.

The lower bound LB is the master's optimum (non-decreasing: cuts only add rows); the upper bound UB
is the best α·ȳ + Σ_m v_m(ȳ) over iterations where every block was feasible (Prop. 4.3). The loop
stops when UB − LB ≤ ``abs_tol`` or ≤ ``rel_tol``·|UB| (status ``optimal``), at ``max_iter``
iterations or ``time_limit`` seconds (status ``time_limit``, best point so far kept).
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import logging
import math
import os
import time

import highspy
import numpy as np
import scipy.sparse as sp

from ..certificate import OptimalityCertificate
from ..errors import InfeasibleError, InputError, SolverError
from .highs import solve_lp
from .result import Result, check_time_limit

log = logging.getLogger(__name__)


@dataclasses.dataclass
class Block:
    """One subproblem: ``min c·x  s.t. row_lo ≤ A x + G y ≤ row_hi, col_lo ≤ x ≤ col_hi``.

    ``w_lower`` is a valid lower bound on the block's value (0 for c ≥ 0, x ≥ 0). ``dual_bound``
    U (times max(1, max|c|)): when the solver's multipliers exceed U, the optimality cut comes from
    the elastic subproblem min c·x + U Σ(s⁺ + s⁻) instead, whose multipliers lie in [−U, U].
    Degenerate subproblems have unbounded optimal dual faces; a solver's vertex there can carry
    multipliers of 1e17 and give numerically useless cuts. When the elastic optimum has no slack
    its multipliers are optimal for the block, so the cut is still tight; otherwise the plain
    duals are kept. ``None``: always the plain duals. ``options``: HiGHS options of its solves.
    """

    c: np.ndarray
    A: sp.csr_matrix
    G: sp.csr_matrix
    row_lo: np.ndarray
    row_hi: np.ndarray
    col_lo: np.ndarray
    col_hi: np.ndarray
    w_lower: float = 0.0
    name: str = ""
    dual_bound: float | None = 1e4
    options: dict | None = None

    def __post_init__(self):
        self.A, self.G = sp.csr_matrix(self.A, dtype=float), sp.csr_matrix(self.G, dtype=float)
        m, n = self.A.shape
        for name, arr, size in (("c", self.c, n), ("row_lo", self.row_lo, m), ("row_hi", self.row_hi, m),
                                ("col_lo", self.col_lo, n), ("col_hi", self.col_hi, n)):
            if np.shape(arr) != (size,):
                raise InputError(f"block {self.name!r}: {name} has shape {np.shape(arr)}, expected ({size},)")
        if self.G.shape[0] != m:
            raise InputError(f"block {self.name!r}: G has {self.G.shape[0]} rows, A has {m}")


@dataclasses.dataclass
class BendersProblem:
    """The linking cost α, y's bounds, the blocks, optional valid master rows on y alone and
    optional valid initial cuts ``(m, coef, const)``: w_m ≥ const + coef·y."""

    alpha: np.ndarray
    blocks: list[Block]
    y_lo: np.ndarray | None = None
    y_hi: np.ndarray | None = None
    master_A: sp.csr_matrix | None = None
    master_lo: np.ndarray | None = None
    master_hi: np.ndarray | None = None
    initial_cuts: list = dataclasses.field(default_factory=list)

    def __post_init__(self):
        self.alpha = np.asarray(self.alpha, float)
        ny = self.alpha.size
        self.y_lo = np.zeros(ny) if self.y_lo is None else np.asarray(self.y_lo, float)
        self.y_hi = np.full(ny, np.inf) if self.y_hi is None else np.asarray(self.y_hi, float)
        if not self.blocks:
            raise InputError("a Benders problem needs at least one block")
        for b in self.blocks:
            if b.G.shape[1] != ny:
                raise InputError(f"block {b.name!r}: G has {b.G.shape[1]} columns, y has {ny}")
        if self.master_A is None:
            self.master_A = sp.csr_matrix((0, ny))
            self.master_lo = self.master_hi = np.zeros(0)
        unbounded = (self.alpha < 0) & np.isinf(self.y_hi) | (self.alpha > 0) & np.isinf(self.y_lo)
        if unbounded.any():
            raise InputError("the master program is unbounded: give finite y bounds where alpha pushes y")

    @property
    def n_y(self) -> int:
        return self.alpha.size

    def as_lp(self):
        """The monolithic LP (the reference): columns [y | x_1 | … | x_M], rows [master; blocks]."""
        A_rows = [sp.hstack([self.master_A] + [sp.csr_matrix((self.master_A.shape[0], b.A.shape[1]))
                                               for b in self.blocks])]
        for m, b in enumerate(self.blocks):
            parts = [b.G] + [b.A if j == m else sp.csr_matrix((b.A.shape[0], o.A.shape[1]))
                             for j, o in enumerate(self.blocks)]
            A_rows.append(sp.hstack(parts))
        A = sp.vstack(A_rows).tocsc()
        c = np.concatenate([self.alpha] + [b.c for b in self.blocks])
        lo = np.concatenate([self.master_lo] + [b.row_lo for b in self.blocks])
        hi = np.concatenate([self.master_hi] + [b.row_hi for b in self.blocks])
        clo = np.concatenate([self.y_lo] + [b.col_lo for b in self.blocks])
        chi = np.concatenate([self.y_hi] + [b.col_hi for b in self.blocks])
        return c, A, lo, hi, clo, chi

    def split(self, x: np.ndarray):
        """Split a monolithic solution vector into (y, [x_1, …, x_M])."""
        sizes = np.cumsum([self.n_y] + [b.A.shape[1] for b in self.blocks])
        parts = np.split(np.asarray(x), sizes[:-1])
        return parts[0], parts[1:]


def solve_monolithic(problem: BendersProblem, **kwargs) -> Result:
    """Solve the whole LP at once with HiGHS (:func:`~lpmech.solvers.highs.solve_lp`)."""
    return solve_lp(*problem.as_lp(), **kwargs)


# ------------------------------------------------------------------------------------------ cuts


def affine_cut(c, A, G, row_lo, row_hi, col_lo, col_hi, lam):
    """(const, coef) with ``v(y) ≥ const + coef·y`` for v(y) = min{c·x : row_lo ≤ Ax + Gy ≤ row_hi,
    col_lo ≤ x ≤ col_hi}, from any row multipliers ``lam`` (weak duality; positive on lower sides)."""
    lam = np.asarray(lam, float).copy()
    fin_lo, fin_hi = np.isfinite(row_lo), np.isfinite(row_hi)
    lam[(lam > 0) & ~fin_lo] = 0.0
    lam[(lam < 0) & ~fin_hi] = 0.0
    const = float(np.where(lam > 0, lam * np.where(fin_lo, row_lo, 0.0), 0.0).sum()
                  + np.where(lam < 0, lam * np.where(fin_hi, row_hi, 0.0), 0.0).sum())
    coef = -(G.T @ lam)
    rho = np.asarray(c, float) - A.T @ lam
    rho[np.abs(rho) <= 1e-12 * (1.0 + np.abs(c))] = 0.0
    with np.errstate(invalid="ignore"):
        col = np.where(rho > 0, rho * col_lo, np.where(rho < 0, rho * col_hi, 0.0))
    return const + float(np.nan_to_num(col, nan=0.0, neginf=-np.inf).sum()), np.asarray(coef, float)


def solve_block(block: Block, y: np.ndarray) -> dict:
    """Subproblem (84) of ``block`` at ``y``: its value and an optimality or feasibility cut.

    Module-level so any Executor (process pool, Dask) can run it.
    """
    shift = block.G @ y
    lo, hi = block.row_lo - shift, block.row_hi - shift
    t0 = time.perf_counter()
    m, n = block.A.shape
    eye = sp.identity(m, format="csr")
    A1 = sp.hstack([block.A, eye, -eye]).tocsc()
    col_lo1 = np.concatenate([block.col_lo, np.zeros(2 * m)])
    col_hi1 = np.concatenate([block.col_hi, np.full(2 * m, np.inf)])
    opt = block.options
    res = solve_lp(block.c, block.A, lo, hi, block.col_lo, block.col_hi, options=opt)
    if res.status not in ("optimal", "infeasible"):  # numerical trouble: retry with IPM
        res = solve_lp(block.c, block.A, lo, hi, block.col_lo, block.col_hi, method="ipm", options=opt)
    lam = res.duals
    if res.status == "optimal" and block.dual_bound is not None and m:
        U = block.dual_bound * max(1.0, float(np.abs(block.c).max(initial=0.0)))
        if lam is None or np.abs(lam).max() > U:  # degenerate vertex: re-solve with bounded duals
            r = solve_lp(np.concatenate([block.c, np.full(2 * m, U)]), A1, lo, hi, col_lo1, col_hi1,
                         options=opt)
            if r.status == "optimal" and r.duals is not None and r.x[n:].max(initial=0.0) <= 1e-9:
                lam = np.clip(r.duals, -U, U)
    if res.status == "optimal":
        const, coef = affine_cut(block.c, block.A, block.G, block.row_lo, block.row_hi,
                                 block.col_lo, block.col_hi, lam)
        return {"kind": "optimality", "value": float(block.c @ res.x), "x": res.x,
                "const": const, "coef": coef, "time_s": time.perf_counter() - t0}
    if res.status != "infeasible":
        return {"kind": "error", "status": res.stats.get("highs_status", res.status)}
    # normalised Farkas LP: elastic rows A x + s⁺ − s⁻, cost Σ s; multipliers in [−1, 1]
    r1 = solve_lp(np.concatenate([np.zeros(n), np.ones(2 * m)]), A1, lo, hi, col_lo1, col_hi1, options=opt)
    if r1.status != "optimal" or r1.duals is None:
        return {"kind": "error", "status": "phase-1 " + r1.stats.get("highs_status", r1.status)}
    lam = np.clip(r1.duals, -1.0, 1.0)
    const, coef = affine_cut(np.zeros(n), block.A, block.G, block.row_lo, block.row_hi,
                             block.col_lo, block.col_hi, lam)
    return {"kind": "feasibility", "value": float(r1.objective), "const": const, "coef": coef,
            "time_s": time.perf_counter() - t0}


# ---------------------------------------------------------------------------------------- master


class _Master:
    """The master LP (80)–(82) in a persistent HiGHS object; cuts are appended with addRows."""

    def __init__(self, problem: BendersProblem):
        ny, M = problem.n_y, len(problem.blocks)
        self.ny, self.M = ny, M
        lp = highspy.HighsLp()
        lp.num_col_ = ny + M
        lp.col_cost_ = np.concatenate([problem.alpha, np.ones(M)])
        inf = highspy.kHighsInf
        w_lo = np.array([b.w_lower for b in problem.blocks], float)
        lp.col_lower_ = np.nan_to_num(np.concatenate([problem.y_lo, w_lo]), neginf=-inf)
        lp.col_upper_ = np.nan_to_num(np.concatenate([problem.y_hi, np.full(M, np.inf)]), posinf=inf)
        A0 = sp.hstack([problem.master_A, sp.csr_matrix((problem.master_A.shape[0], M))]).tocsc()
        lp.num_row_ = A0.shape[0]
        lp.row_lower_ = np.nan_to_num(np.asarray(problem.master_lo, float), neginf=-inf)
        lp.row_upper_ = np.nan_to_num(np.asarray(problem.master_hi, float), posinf=inf)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = ny + M, A0.shape[0]
        lp.a_matrix_.start_ = A0.indptr.astype(np.int32)
        lp.a_matrix_.index_ = A0.indices.astype(np.int32)
        lp.a_matrix_.value_ = A0.data
        self.h = highspy.Highs()
        self.h.setOptionValue("output_flag", False)
        for k, v in (("primal_feasibility_tolerance", 1e-9), ("dual_feasibility_tolerance", 1e-9)):
            self.h.setOptionValue(k, v)
        self.h.passModel(lp)
        self.n_cuts = 0
        for m, coef, const in problem.initial_cuts:
            self.add_cut(np.asarray(coef, float), int(m), float(const))

    def add_cut(self, coef_y: np.ndarray, m: int | None, const: float) -> None:
        """Add ``coef_y·y − w_m ≤ −const`` (optimality, m given) or ``coef_y·y ≤ −const``."""
        idx = np.flatnonzero(np.abs(coef_y) > 1e-14)
        vals = coef_y[idx]
        if m is not None:
            idx, vals = np.append(idx, self.ny + m), np.append(vals, -1.0)
        self.h.addRows(1, np.array([-highspy.kHighsInf]), np.array([-const]), idx.size,
                       np.array([0], np.int32), idx.astype(np.int32), vals.astype(float))
        self.n_cuts += 1

    def solve(self):
        self.h.run()
        status = self.h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            return self.h.modelStatusToString(status), None, None, None
        x = np.array(self.h.getSolution().col_value)
        return "optimal", float(self.h.getInfo().objective_function_value), x[:self.ny], x[self.ny:]


# ---------------------------------------------------------------------------------------- driver


def _map(executor, blocks, y):
    return map_blocks(executor, solve_block, blocks, y)


def map_blocks(executor, fn, blocks, *args) -> list:
    """``[fn(b, *args) for b in blocks]`` on ``executor`` (an Executor, or ``"serial"``)."""
    if executor == "serial":
        return [fn(b, *args) for b in blocks]
    futures = [executor.submit(fn, b, *args) for b in blocks]
    return [f.result() for f in futures]


def solve_block_alone(block: Block) -> float | None:
    """The block's own optimum with y = 0 and G dropped (its rows as given): a value or None."""
    res = solve_lp(block.c, block.A, block.row_lo, block.row_hi, block.col_lo, block.col_hi,
                   options=block.options)
    if res.status != "optimal":
        return None
    return res.bound if res.bound is not None else res.objective


def make_executor(executor, n_tasks: int):
    """(executor, owned): ``None`` -> a new local ProcessPoolExecutor (owned: shut it down)."""
    if executor is None:
        return cf.ProcessPoolExecutor(max_workers=max(1, min(n_tasks, os.cpu_count() or 1))), True
    if executor != "serial" and not hasattr(executor, "submit"):
        raise InputError("executor must be a concurrent.futures.Executor, None or 'serial'")
    return executor, False


def solve_benders(problem: BendersProblem, *, executor=None, abs_tol: float = 0.01,
                  rel_tol: float = 1e-6, max_iter: int = 100, time_limit: float | None = None,
                  opt_tol: float = 1e-9, stabilise: float = 0.5) -> Result:
    """Run Benders' decomposition on ``problem``; return a :class:`Result` with the trace.

    Args:
        executor: a ``concurrent.futures.Executor`` (e.g. a Dask ``Client.get_executor()``);
            ``None`` (default) runs a local ``ProcessPoolExecutor`` for the call; ``"serial"``
            solves the blocks in this process.
        abs_tol, rel_tol: stop when UB − LB ≤ abs_tol or ≤ rel_tol·|UB| (the paper: 0.01 km abs).
        max_iter, time_limit: iteration cap (the authors' code: 100) and wall-clock seconds.
        opt_tol: an optimality cut is added when w̄_m < v_m − opt_tol·(1 + |v_m|).
        stabilise: in-out stabilisation (Ben-Ameur & Neto 2007): cuts are first separated at
            (1 − s)·ȳ + s·y_best (y_best: the best feasible point so far), and at ȳ only if those
            cuts do not cut ȳ off; 0 = plain Kelley/Benders. Every cut is valid either way.

    ``Result.x`` = [y, x_1, …, x_M] of the best feasible point; ``optimality`` has UB as objective
    and LB as bound; ``stats`` holds ``lower_bound``, ``upper_bound``, ``iterations``, ``trace``
    (per iteration: LB, UB, feasibility and optimality cuts, seconds), ``block_values``.
    """
    if int(max_iter) < 1:
        raise InputError(f"max_iter must be at least 1, got {max_iter}")
    if not (abs_tol >= 0 and rel_tol >= 0):
        raise InputError("abs_tol and rel_tol must be non-negative")
    time_limit = check_time_limit(time_limit)
    executor, owned = make_executor(executor, len(problem.blocks))
    t0 = time.perf_counter()
    master = _Master(problem)
    lb, ub = -math.inf, math.inf
    best = None
    trace: list[dict] = []
    status = "time_limit"
    try:
        for it in range(1, int(max_iter) + 1):
            mstatus, mobj, ybar, wbar = master.solve()
            if mstatus != "optimal":
                if mstatus == "Infeasible":
                    res = Result(status="infeasible", stats={"iterations": it, "trace": trace})
                    raise InfeasibleError("Benders master is infeasible: no y admits feasible "
                                          "subproblems (the whole LP is infeasible)", result=res)
                raise SolverError(f"Benders master ended with status {mstatus!r}")
            lb = max(lb, mobj)
            seeding = best is None
            if seeding:  # no incumbent yet: ȳ and the bounds' corner nearest 0 (a cheap incumbent)
                points = [ybar, np.clip(np.zeros(problem.n_y), problem.y_lo, problem.y_hi)]
            elif stabilise <= 0:
                points = [ybar]
            else:
                points = [(1 - stabilise) * ybar + stabilise * best[0], ybar]
            n_feas = n_opt = 0
            for y_eval in points:
                outs = _map(executor, problem.blocks, y_eval)
                feasible, total, cut_off = True, float(problem.alpha @ y_eval), False
                for m, out in enumerate(outs):
                    if out["kind"] == "error":
                        raise SolverError(f"Benders block {m}: subproblem ended with {out['status']!r}")
                    at_bar = out["const"] + float(out["coef"] @ ybar)
                    if out["kind"] == "feasibility":
                        feasible = False
                        master.add_cut(out["coef"], None, out["const"])
                        n_feas += 1
                        cut_off |= at_bar > 1e-9
                        continue
                    total += out["value"]
                    if wbar[m] < at_bar - opt_tol * (1.0 + abs(at_bar)) or \
                            wbar[m] < out["value"] - opt_tol * (1.0 + abs(out["value"])):
                        master.add_cut(out["coef"], m, out["const"])
                        n_opt += 1
                        cut_off |= wbar[m] < at_bar - opt_tol * (1.0 + abs(at_bar))
                if feasible and total < ub:
                    ub = total
                    best = (y_eval.copy(), [o["x"] for o in outs], [o["value"] for o in outs])
                if cut_off and not seeding:
                    break
                if seeding and feasible and (ub - lb <= abs_tol or ub - lb <= rel_tol * abs(ub)):
                    break  # ȳ already closes the gap: no need for the seed point
            feasible = n_feas == 0
            gap = ub - lb
            trace.append({"iteration": it, "lower_bound": lb, "upper_bound": ub, "gap": gap,
                          "feasibility_cuts": n_feas, "optimality_cuts": n_opt,
                          "time_s": time.perf_counter() - t0})
            log.info("Benders iteration %d: LB %.9g  UB %.9g  gap %.3g  (%d feasibility, %d "
                     "optimality cuts)", it, lb, ub, gap, n_feas, n_opt)
            if math.isfinite(ub) and (gap <= abs_tol or gap <= rel_tol * abs(ub)
                                      or (feasible and n_feas + n_opt == 0)):
                status = "optimal"
                break
            if time_limit is not None and time.perf_counter() - t0 > time_limit:
                break
    finally:
        if owned:
            executor.shutdown()
    elapsed = time.perf_counter() - t0
    stats = {"solver": "benders", "iterations": len(trace), "lower_bound": lb, "upper_bound": ub,
             "cuts": master.n_cuts, "trace": trace, "time_s": elapsed,
             "executor": "serial" if executor == "serial" else type(executor).__name__,
             "abs_tol": abs_tol, "rel_tol": rel_tol, "max_iter": int(max_iter)}
    if best is None:
        return Result(status=status, stats=stats)
    y, xs, values = best
    stats["block_values"] = values
    res = Result(status=status, stats=stats, x=np.concatenate([y, *xs]))
    res.optimality = OptimalityCertificate.from_values(ub, lb, source="benders")
    return res


__all__ = ["BendersProblem", "Block", "affine_cut", "make_executor", "map_blocks", "solve_benders",
           "solve_block", "solve_block_alone", "solve_monolithic"]
