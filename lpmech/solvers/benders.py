"""A generic Benders driver for block-angular LPs (Qiu et al., LR-Geo §4.4, App. C, eqs. (80)–(86)).

The problem is ::

    min  α·y + Σ_m c_m·x_m
    s.t. row_lo_m ≤ A_m x_m + G_m y ≤ row_hi_m      (block m = 1..M; y links the blocks)
         col_lo_m ≤ x_m ≤ col_hi_m,  y_lo ≤ y ≤ y_hi,  master_lo ≤ master_A y ≤ master_hi.

The master program (80)–(82) is ``min α·y + Σ_m w_m`` over y and one w_m ≥ ``w_lower_m`` per block
(multi-cut: one value surrogate per block; ``w_lower`` is a valid lower bound on block m's cost,
0 when c_m ≥ 0 and x_m ≥ 0 — without it the first master is unbounded, spec §9 item 15). Each
iteration solves every block's subproblem (84) at the master's ȳ on a ``concurrent.futures.Executor``
and adds optimality cuts ``w_m ≥ g_m(λ; y)``, g the Lagrangian bound of the block LP with the
returned row multipliers λ (valid for any λ; affine in y because y only shifts the row sides).

**Recourse** (how an infeasible ȳ is handled), ``recourse=``:

* ``"elastic"`` (default) — complete recourse: every block row gets an elastic slack priced at a
  penalty U per unit, so every subproblem is feasible at every y and only optimality cuts are
  generated (no Farkas cuts). The elastic problem is a *relaxation* of the original one, so its
  cuts and the master's value are valid lower bounds whatever U is; a point counts for the upper
  bound only when all slacks are zero (then its elastic value is its true value). U starts at
  ``penalty``·max(1, max|c_m|) and is multiplied by 10 whenever the elastic problem is solved to the
  tolerance at a point that still needs slack (U below the exact-penalty threshold, the norm of
  the optimal multipliers); cuts made with a smaller U stay valid.
* ``"farkas"`` — the paper's Case 1: a feasibility cut from the *normalised Farkas LP* (phase 1:
  min Σ s⁺ + s⁻, multipliers in [−1, 1]). Kept for comparison: where the CLR-Geo ties bind, each
  cut removes one direction of an infeasible ȳ and the master value stalls (issue 13).

Each block's simplex basis is handed back with its answer and sent with the next task for the same
block (the row sides are all that change between iterations, so the old basis is dual feasible and
the re-solve is a short dual simplex), which keeps the tasks stateless: serial, process-pool and
Dask executors return the same cuts and the same iteration count.

**Lazy rows** (``Block.lazy``): rows a block may leave out until its solution violates them; they
enter in rounds into one persistent HiGHS model (dual simplex from the current basis) and the rows
in the model travel with the basis. The multipliers of the rows left out are 0, so the cut is the
same Lagrangian bound, tight at ȳ. On CLR-Geo (Rome, ε = 10) a block LP of 10⁴ Geo-Ind rows
ends with ~600 in the model, 4–8× faster.

**Partial Benders** (``retain``, ``retain_after``): blocks kept whole in the master (Crainic,
Frangioni & Gendron 2021) are never separated; after ``retain_after`` block passes without a
certified gap every block is retained, i.e. the whole LP is solved (its Lagrangian bound certifies).
Measured on CLR-Geo where the ties bind: retaining 2, 3 or 4 of 5 blocks leaves 149, 115, 112
iterations (129 with none) — the cuts of a single block need ~100 passes — so retention is all or
nothing there, for LPs small enough to solve whole. When the blocks declare lazy rows, the whole
LP is solved by row generation over them (:func:`solve_whole_lazy`), falling back to the whole LP
at once if that fails. Measured on Rome, 50 users, ε = 3, r_exp = 1.5: seeding it with the lazy
rows the blocks held at the first ȳ (= 0) made it slower (299 s, 1.0·10⁵ rows in the model) than
starting from the non-lazy rows (139 s, 5.8·10⁴ rows), so it starts bare.

The lower bound LB is the master's optimum (non-decreasing: cuts only add rows); the upper bound UB
is the best α·ȳ + Σ_m v_m(ȳ) over the separation points where every block was feasible
(Prop. 4.3). Status ``optimal`` only when UB − LB ≤ ``abs_tol`` or ≤ ``rel_tol``·|UB| (a certified
gap); reaching ``max_iter`` first is status ``iteration_limit``; ``time_limit`` seconds, status
``time_limit``; the best feasible point so far is kept in both.
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

from .. import stop
from ..certificate import OptimalityCertificate
from ..errors import InfeasibleError, InputError, SolverError
from .highs import highs_lp, quiet_highs, run_highs, solve_lp
from .result import STOPS, Result, check_time_limit

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

    Structure a client may declare (elastic recourse only; both default to ``None``):
    ``lazy`` — boolean mask of rows that may stay out of the subproblem until its solution violates
    them (added in rounds; most rows of a Geo-Ind block are slack or 0 ≤ 0 at the optimum); the
    multipliers of the rows left out are 0, so the cut is the same Lagrangian bound.
    ``elastic`` — boolean mask of the rows that get elastic slack (``None``: all). Rows without
    slack must admit a solution at every y of the master's box when the elastic rows have slack;
    where they do not, the block falls back to slack on every row. Measured on CLR-Geo: slack on
    every row is the better choice there (it bounds every multiplier by U; without it the Geo-Ind
    rows' multipliers reach e^{εγ}-scale and the cuts stall at ε = 10).
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
    lazy: np.ndarray | None = None
    elastic: np.ndarray | None = None
    cache: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        self.A, self.G = sp.csr_matrix(self.A, dtype=float), sp.csr_matrix(self.G, dtype=float)
        m, n = self.A.shape
        for name, arr, size in (("c", self.c, n), ("row_lo", self.row_lo, m), ("row_hi", self.row_hi, m),
                                ("col_lo", self.col_lo, n), ("col_hi", self.col_hi, n)):
            if np.shape(arr) != (size,):
                raise InputError(f"block {self.name!r}: {name} has shape {np.shape(arr)}, expected ({size},)")
        if self.G.shape[0] != m:
            raise InputError(f"block {self.name!r}: G has {self.G.shape[0]} rows, A has {m}")
        for name in ("lazy", "elastic"):
            mask = getattr(self, name)
            if mask is not None:
                mask = np.asarray(mask, bool)
                if mask.shape != (m,):
                    raise InputError(f"block {self.name!r}: {name} has shape {mask.shape}, expected ({m},)")
                setattr(self, name, mask)


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


_STATUS_OBJ = np.array([highspy.HighsBasisStatus(k) for k in range(6)], dtype=object)


def _basis_to_arrays(basis):
    if basis is None or not basis.valid:
        return None
    return (np.array([s.value for s in basis.col_status], np.int8),
            np.array([s.value for s in basis.row_status], np.int8))


def _basis_from_arrays(arrays, n_col: int, n_row: int):
    if arrays is None or arrays[0].size != n_col or arrays[1].size != n_row:
        return None
    b = highspy.HighsBasis()
    b.col_status = list(_STATUS_OBJ[arrays[0]])
    b.row_status = list(_STATUS_OBJ[arrays[1]])
    b.valid = True
    return b


def _elastic_lp(block: Block) -> dict:
    """The block with elastic slacks, cached on the block (built once, travels with it).

    Slack rows: the block's ``elastic`` rows (+s on a finite lower side, −s on a finite upper side;
    an equality row gets both). ``A1`` = [A | S] over all rows (CSR; the cut uses all of it); the
    slack column of a lazy row stays empty until its row enters. ``core``: the rows always in the
    LP, ``lazy``: the rows added when violated."""
    lp = block.cache.get("elastic")
    if lp is None:
        m = block.A.shape[0]
        lazy = np.zeros(m, bool) if block.lazy is None else np.asarray(block.lazy, bool)
        el = np.ones(m, bool) if block.elastic is None else np.asarray(block.elastic, bool)
        up = np.flatnonzero(el & np.isfinite(block.row_lo))
        dn = np.flatnonzero(el & np.isfinite(block.row_hi))
        S = sp.csr_matrix((np.r_[np.ones(up.size), -np.ones(dn.size)],
                           (np.r_[up, dn], np.arange(up.size + dn.size))), shape=(m, up.size + dn.size))
        A1 = sp.hstack([block.A, S]).tocsr()
        A1.eliminate_zeros()
        A1.sort_indices()
        k = up.size + dn.size
        lp = {"A1": A1, "k": k, "core": np.flatnonzero(~lazy), "lazy": np.flatnonzero(lazy),
              "slacked": np.union1d(up, dn),
              "col_lo": np.concatenate([block.col_lo, np.zeros(k)]),
              "col_hi": np.concatenate([block.col_hi, np.full(k, np.inf)])}
        block.cache["elastic"] = lp
    return lp


#: a lazy row enters the subproblem when the solution violates it by more than this (the HiGHS
#: primal feasibility tolerance of the block solves)
LAZY_TOL = 1e-9
#: the whole LP of the endgame, stopped short (time limit, Ctrl-C), offers its point as incumbent
#: only when HiGHS reports it primal feasible to this (HiGHS' default feasibility tolerance)
WHOLE_FEAS_TOL = 1e-7


def _run_lazy(c, lp, lo, hi, options, state):
    """Solve ``min c·x s.t. lo ≤ A1 x ≤ hi`` over the core rows plus the lazy rows the solution
    violates, added in rounds to one persistent HiGHS model (the dual simplex goes on from its basis).

    ``state``, from an earlier answer for the same block: (the lazy rows in the model, in order;
    column and row basis statuses), the warm start. Returns (status, x, λ over all rows (0 on the
    rows left out), new state, simplex iterations, rounds)."""
    from .highs import DEFAULT_OPTIONS, add_rows

    A1 = lp["A1"]
    m, n = A1.shape
    active = np.zeros(0, np.int64) if state is None else np.asarray(state[0], np.int64)
    order = np.concatenate([lp["core"], active])
    L = highs_lp(c, A1[order], lo[order], hi[order], lp["col_lo"], lp["col_hi"])
    h = quiet_highs()
    for key, v in {**DEFAULT_OPTIONS, **(options or {})}.items():
        h.setOptionValue(key, v)
    h.passModel(L)
    warm = None if state is None else _basis_from_arrays(state[1:], n, order.size)
    if warm is not None:
        h.setBasis(warm)
    in_model = np.zeros(m, bool)
    in_model[order] = True
    lazy = lp["lazy"]
    A_lazy = A1[lazy] if lazy.size else None
    iters = rounds = 0
    while True:
        run_highs(h)
        rounds += 1
        iters += int(h.getInfo().simplex_iteration_count)
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return h.modelStatusToString(h.getModelStatus()), None, None, None, iters, rounds
        x = np.array(h.getSolution().col_value)
        if A_lazy is None:
            break
        act = A_lazy @ x
        viol = np.maximum(act - hi[lazy], lo[lazy] - act)
        new = lazy[(viol > LAZY_TOL) & ~in_model[lazy]]
        if new.size == 0:
            break
        in_model[new] = True
        order = np.concatenate([order, new])
        add_rows(h, A1[new], lo[new], hi[new])
    sol = h.getSolution()
    if not sol.dual_valid:
        return "no duals", None, None, None, iters, rounds
    lam = np.zeros(m)
    lam[order] = np.array(sol.row_dual)
    basis = _basis_to_arrays(h.getBasis())
    new_state = None if basis is None else (order[lp["core"].size:].copy(), *basis)
    return "optimal", x, lam, new_state, iters, rounds


def _solve_elastic(block: Block, y: np.ndarray, penalty: float, basis=None) -> dict:
    """Subproblem (84) with complete recourse: min c·x + U·Σ s over the elastic rows (lazy rows
    added when violated). When the LP with slack on the ``elastic`` rows only is infeasible (those
    rows do not give complete recourse at this y), every row gets a slack and the solve repeats."""
    t0 = time.perf_counter()
    shift = block.G @ y
    lo, hi = block.row_lo - shift, block.row_hi - shift
    n = block.A.shape[1]
    lp = _elastic_lp(block)
    c1 = np.concatenate([block.c, np.full(lp["k"], float(penalty))])
    status, x1, lam, state, iters, rounds = _run_lazy(c1, lp, lo, hi, block.options, basis)
    if status != "optimal" and basis is not None:  # a stale basis in numerical trouble: cold
        status, x1, lam, state, iters, rounds = _run_lazy(c1, lp, lo, hi, block.options, None)
    if status != "optimal" and (block.elastic is not None or block.lazy is not None):
        full = dataclasses.replace(block, elastic=None, lazy=None, cache={})
        out = _solve_elastic(full, y, penalty, None)
        out["basis"] = None
        return out
    if status != "optimal":
        return {"kind": "error", "status": "elastic " + status}
    slacked = lp["slacked"]  # the rows with slack: their multipliers lie in [−U, U] (round-off aside)
    lam[slacked] = np.clip(lam[slacked], -penalty, penalty)
    const, coef = affine_cut(c1, lp["A1"], block.G, block.row_lo, block.row_hi, lp["col_lo"], lp["col_hi"],
                             lam)
    x = x1[:n]
    slack = float(np.abs(x1[n:]).max(initial=0.0))
    return {"kind": "optimality", "value": float(c1 @ x1), "cost": float(block.c @ x), "slack": slack,
            "x": x, "const": const, "coef": coef, "basis": state, "simplex_iterations": iters,
            "lazy_rounds": rounds, "time_s": time.perf_counter() - t0}


def solve_block(block: Block, y: np.ndarray, penalty: float | None = None, basis=None) -> dict:
    """Subproblem (84) of ``block`` at ``y``: its value and a cut.

    ``penalty`` U: the elastic (complete-recourse) subproblem, always an optimality cut; its
    ``value`` is the elastic value, ``slack`` the largest slack (0: ``value`` is the block's value).
    ``None``: the block as given, with a feasibility cut from the normalised Farkas LP when it is
    infeasible. ``basis``: the arrays of an earlier answer's ``basis`` for the same block and mode
    (a warm start). Module-level so any Executor (process pool, Dask) can run it.
    """
    if penalty is not None:
        return _solve_elastic(block, y, penalty, basis)
    shift = block.G @ y
    lo, hi = block.row_lo - shift, block.row_hi - shift
    t0 = time.perf_counter()
    m, n = block.A.shape
    eye = sp.identity(m, format="csr")
    A1 = sp.hstack([block.A, eye, -eye]).tocsc()
    col_lo1 = np.concatenate([block.col_lo, np.zeros(2 * m)])
    col_hi1 = np.concatenate([block.col_hi, np.full(2 * m, np.inf)])
    opt = block.options
    res = solve_lp(block.c, block.A, lo, hi, block.col_lo, block.col_hi, options=opt,
                   warm_start=_basis_from_arrays(basis, n, m))
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
        return {"kind": "optimality", "value": float(block.c @ res.x), "x": res.x, "slack": 0.0,
                "const": const, "coef": coef, "basis": _basis_to_arrays(res.stats.get("basis")),
                "time_s": time.perf_counter() - t0}
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
            "basis": None, "time_s": time.perf_counter() - t0}


# ---------------------------------------------------------------------------------------- master


class _Master:
    """The master LP (80)–(82) in a persistent HiGHS object; cuts are appended with addRows.

    ``retain``: indices of blocks kept whole in the master (partial Benders decomposition, Crainic,
    Frangioni & Gendron 2021): their columns x_m and rows A_m x_m + G_m y join the master, w_m
    equals their cost, and they are never separated."""

    def __init__(self, problem: BendersProblem, retain=()):
        ny, M = problem.n_y, len(problem.blocks)
        self.ny, self.M = ny, M
        w_lo = np.array([b.w_lower for b in problem.blocks], float)
        A0 = sp.hstack([problem.master_A, sp.csr_matrix((problem.master_A.shape[0], M))])
        lp = highs_lp(np.concatenate([problem.alpha, np.ones(M)]), A0, problem.master_lo,
                      problem.master_hi, np.concatenate([problem.y_lo, w_lo]),
                      np.concatenate([problem.y_hi, np.full(M, np.inf)]))
        self.h = quiet_highs()
        for k, v in (("primal_feasibility_tolerance", 1e-9), ("dual_feasibility_tolerance", 1e-9)):
            self.h.setOptionValue(k, v)
        self.h.passModel(lp)
        self.n_cuts = 0
        self.blocks = problem.blocks
        self.x_slices: dict = {}
        self.x_retained: dict = {}
        self.n_col = ny + M
        for m, coef, const in problem.initial_cuts:
            self.add_cut(np.asarray(coef, float), int(m), float(const))
        self.retain(retain)

    def retain(self, ms) -> None:
        """Keep blocks ``ms`` whole in the master: columns x_m (cost 0), rows G_m y + A_m x_m and
        w_m − c_m·x_m = 0 (so w_m is the block's cost and its earlier cuts stay valid)."""
        inf = highspy.kHighsInf
        for m in sorted(int(m) for m in ms):
            if m in self.x_slices:
                continue
            b = self.blocks[m]
            n = b.A.shape[1]
            self.h.addCols(n, np.zeros(n), np.nan_to_num(b.col_lo, neginf=-inf),
                           np.nan_to_num(b.col_hi, posinf=inf), 0, np.array([], np.int32),
                           np.array([], np.int32), np.array([], float))
            rows = sp.vstack([
                sp.hstack([b.G, sp.csr_matrix((b.A.shape[0], self.n_col - self.ny)), b.A]),
                sp.hstack([sp.csr_matrix((1, self.ny + m)), sp.csr_matrix(([1.0], ([0], [0])), shape=(1, 1)),
                           sp.csr_matrix((1, self.n_col - self.ny - m - 1)),
                           sp.csr_matrix(-np.asarray(b.c, float)[None, :])])]).tocsr()
            rows.eliminate_zeros()
            lo = np.r_[np.nan_to_num(b.row_lo, neginf=-inf), 0.0]
            hi = np.r_[np.nan_to_num(b.row_hi, posinf=inf), 0.0]
            self.h.addRows(rows.shape[0], lo, hi, rows.nnz, rows.indptr[:-1].astype(np.int32),
                           rows.indices.astype(np.int32), rows.data)
            self.x_slices[m] = slice(self.n_col, self.n_col + n)
            self.n_col += n

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
        run_highs(self.h)
        status = self.h.getModelStatus()
        if status not in (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kInfeasible):
            # numerical trouble (steep cuts from a large elastic penalty): a fresh start, then IPM
            self.h.clearSolver()
            run_highs(self.h)
            status = self.h.getModelStatus()
            if status not in (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kInfeasible):
                self.h.clearSolver()
                self.h.setOptionValue("solver", "ipm")
                run_highs(self.h)
                self.h.setOptionValue("solver", "simplex")
                status = self.h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            return self.h.modelStatusToString(status), None, None, None
        x = np.array(self.h.getSolution().col_value)
        self.x_retained = {m: x[sl] for m, sl in self.x_slices.items()}
        return ("optimal", float(self.h.getInfo().objective_function_value), x[:self.ny],
                x[self.ny:self.ny + self.M])


class _Halt(Exception):
    """The Benders master was interrupted by a stop request (:mod:`lpmech.stop`)."""


# ------------------------------------------------------------------------------ whole LP, lazy rows

#: HiGHS options of the whole LP with lazy rows. Measured on Rome, 50 users, ε = 3, r_exp = 1.5
#: (2.5·10⁵ rows, 12 rounds of added rows, loaded 2-core machine): with HiGHS' default dual
#: steepest edge the late rounds each spent ~50 s on a few hundred iterations (the edge weights are
#: recomputed for the grown basis); Devex pricing: 139 s in all instead of 335 s. The presolve
#: gains nothing on a warm-started re-solve and is off like in the blocks (ill-conditioned rows).
WHOLE_LAZY_OPTIONS = {"presolve": "off", "simplex_dual_edge_weight_strategy": 1}


#: what :func:`solve_whole_lazy` tries, in order, when a warm re-solve ends in numerical trouble
#: (HiGHS status other than optimal / infeasible / time limit): (1) from the same basis with dual
#: steepest edge and Markowitz threshold 0.5 (then kept for the later rounds), (2) a cold start
#: of the current model, (3) the interior point method with crossover (a basis for the next round).
#: Measured on Rome, ε = 3, r_exp = 1.5 (issue 13, loaded 2-core machine): with Devex the warm
#: re-solve after the 4th round of added rows ends in a HiGHS error at 100 users (primal
#: infeasibilities of 1e9 after "Increasing Markowitz threshold"); with dual steepest edge and
#: threshold 0.5 the same round ends optimal.
RECOVERY = (("steepest edge", {"simplex_dual_edge_weight_strategy": 2, "factor_pivot_threshold": 0.5}),
            ("cold start", None), ("ipm", {"solver": "ipm", "run_crossover": "on"}))


def _recover_whole(h, recoveries: list, settled, t0: float, time_limit, iters: list) -> object:
    """Re-solve the model in ``h`` after numerical trouble by the steps of :data:`RECOVERY` (each
    one appended to ``recoveries``; the steepest-edge step only once, its options stay; their
    simplex and IPM iterations added to ``iters[0]``); returns the final HiGHS model status."""
    ms = h.getModelStatus()
    for name, opts in RECOVERY:
        if name == "steepest edge" and name in recoveries:
            continue
        if time_limit is not None and time.perf_counter() - t0 > time_limit:  # (HiGHS' own limit
            return highspy.HighsModelStatus.kTimeLimit  # counts its run time over all runs)
        log.info("whole LP with lazy rows: HiGHS ended %r; retrying (%s)", h.modelStatusToString(ms), name)
        recoveries.append(name)
        if opts is None:
            h.clearSolver()
        else:
            for k, v in opts.items():
                h.setOptionValue(k, v)
        run_highs(h)
        ms = h.getModelStatus()
        info = h.getInfo()
        iters[0] += int(info.simplex_iteration_count) + int(info.ipm_iteration_count)
        if name == "ipm":
            h.setOptionValue("solver", "simplex")
        if ms in settled:
            break
    return ms


def solve_whole_lazy(problem: BendersProblem, *, states=None, time_limit: float | None = None,
                     options: dict | None = None) -> Result:
    """The whole LP (:meth:`BendersProblem.as_lp`) by row generation over the blocks' ``lazy`` rows.

    The master rows and every block's non-lazy rows are in the model from the start, plus the
    lazy rows of ``states`` (the blocks' answers' ``basis`` states: the lazy rows their last
    subproblems held); a lazy row enters when the solution violates it by more than
    :data:`LAZY_TOL`, in rounds into one persistent HiGHS model (dual simplex from the current
    basis). The model is a relaxation of the whole LP, so the Lagrangian bound of its duals (0 on
    the rows left out) is a certified lower bound of the whole LP; at the end no row is violated
    beyond the tolerances, so the solution is feasible like any LP solution. A re-solve that ends in
    numerical trouble is retried in the same model (:data:`RECOVERY`). Returns a :class:`Result`
    (``x``, ``bound``; ``stats``: ``rounds``, ``rows_in_model``, ``recoveries``, and ``trace``, per
    round: rows in the model, HiGHS status, simplex iterations, recoveries, seconds, value, rows
    then violated).
    """
    from ..certificate import lagrangian_bound
    from .highs import DEFAULT_OPTIONS, add_rows, new_highs

    t0 = time.perf_counter()
    c, A, lo, hi, clo, chi = problem.as_lp()
    A = sp.csr_matrix(A)
    n_master = problem.master_A.shape[0]
    lazy = np.zeros(A.shape[0], bool)
    seed = np.zeros(A.shape[0], bool)
    off = n_master
    for m, b in enumerate(problem.blocks):
        if b.lazy is not None:
            lazy[off:off + b.A.shape[0]] = b.lazy
            st = None if states is None else states[m]
            if st is not None and len(st) == 3 and len(st[0]):  # (lazy rows held, basis): elastic
                seed[off + np.asarray(st[0], np.int64)] = True
        off += b.A.shape[0]
    seed &= lazy
    order = np.flatnonzero(~lazy | seed)
    lz = np.flatnonzero(lazy)
    h = new_highs("simplex", time_limit=time_limit, options={**DEFAULT_OPTIONS, **WHOLE_LAZY_OPTIONS,
                                                             **(options or {})})
    h.passModel(highs_lp(c, A[order], lo[order], hi[order], clo, chi))
    in_model = np.zeros(A.shape[0], bool)
    in_model[order] = True
    A_lazy = A[lz]
    rounds = iters = 0
    status = "error"
    x = None
    recoveries: list[str] = []
    settled = (highspy.HighsModelStatus.kOptimal, highspy.HighsModelStatus.kInfeasible,
               highspy.HighsModelStatus.kTimeLimit)
    trace: list[dict] = []
    while True:
        t_round = time.perf_counter()
        run_highs(h)
        rounds += 1
        ms = h.getModelStatus()
        if stop.requested():  # Ctrl-C or the command line's deadline: no recovery, no point
            status = stop.requested()
            break
        n_rec = len(recoveries)
        it_round = [int(h.getInfo().simplex_iteration_count)]
        if ms not in settled:  # numerical trouble in the warm re-solve: recover, in this model
            ms = _recover_whole(h, recoveries, settled, t0, time_limit, it_round)
        it_round = it_round[0]  # (over the failed run and its recoveries, like the round's time)
        iters += it_round
        trace.append({"round": rounds, "rows": int(order.size), "status": h.modelStatusToString(ms),
                      "simplex_iterations": it_round, "recoveries": recoveries[n_rec:],
                      "time_s": time.perf_counter() - t_round})
        if ms != highspy.HighsModelStatus.kOptimal:
            status = {highspy.HighsModelStatus.kInfeasible: "infeasible",
                      highspy.HighsModelStatus.kTimeLimit: "time_limit"}.get(ms, "error")
            break
        x = np.array(h.getSolution().col_value)
        act = A_lazy @ x
        viol = np.maximum(act - hi[lz], lo[lz] - act)
        new = lz[(viol > LAZY_TOL) & ~in_model[lz]]
        trace[-1].update(value=float(c @ x), violated=int(new.size))
        log.debug("whole LP with lazy rows, round %d: value %.10g, %d rows, %d violated, %.1fs", rounds,
                  float(c @ x), order.size, new.size, time.perf_counter() - t0)
        if new.size == 0:
            status = "optimal"
            break
        in_model[new] = True
        order = np.concatenate([order, new])
        add_rows(h, A[new], lo[new], hi[new])
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            status = "time_limit"
            break
    stats = {"solver": "highs", "method": "simplex, lazy rows", "rows": int(A.shape[0]),
             "rows_in_model": int(order.size), "rounds": rounds, "simplex_iterations": iters,
             "recoveries": recoveries, "trace": trace,
             "highs_status": h.modelStatusToString(ms), "time_s": time.perf_counter() - t0}
    res = Result(status=status, stats=stats)
    if status == "optimal":
        sol = h.getSolution()
        res.x = x
        bound = None
        if sol.dual_valid:
            lam = np.zeros(A.shape[0])
            lam[order] = np.array(sol.row_dual)
            bound = lagrangian_bound(c, A, lo, hi, clo, chi, lam)
        res.optimality = OptimalityCertificate.from_values(float(c @ x), bound)
    log.info("whole LP with lazy rows: %s in %.2fs, %d rounds, %d of %d rows", status, stats["time_s"],
             rounds, order.size, A.shape[0])
    return res


# ---------------------------------------------------------------------------------------- driver


def map_tasks(executor, fn, tasks) -> list:
    """``[fn(*t) for t in tasks]`` on ``executor`` (an Executor, or ``"serial"``), in order."""
    if executor == "serial":
        return [fn(*t) for t in tasks]
    futures = [executor.submit(fn, *t) for t in tasks]
    return [f.result() for f in futures]


def map_blocks(executor, fn, blocks, *args) -> list:
    """``[fn(b, *args) for b in blocks]`` on ``executor`` (an Executor, or ``"serial"``)."""
    return map_tasks(executor, fn, [(b, *args) for b in blocks])


def solve_block_alone(block: Block) -> float | None:
    """The block's own optimum with y = 0 and G dropped (its rows as given): a value or None.

    A block with ``lazy`` rows is solved with them added when violated and elastic slack priced
    at 1e4·max(1, max|c|); its value is then the Lagrangian bound of that solve (a certified lower
    bound) when no slack is left, else the plain LP decides."""
    if block.lazy is not None:
        U = 1e4 * max(1.0, float(np.abs(block.c).max(initial=0.0)))
        out = _solve_elastic(block, np.zeros(block.G.shape[1]), U)
        if out["kind"] == "optimality" and out["slack"] <= 1e-9:
            return min(out["const"], out["value"])
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


RECOURSE = ("elastic", "farkas")
#: above this elastic penalty factor the driver falls back to Farkas cuts (to prove infeasibility)
MAX_PENALTY = 1e4


def solve_benders(problem: BendersProblem, *, executor=None, abs_tol: float = 0.01,
                  rel_tol: float = 1e-6, max_iter: int = 100, time_limit: float | None = None,
                  opt_tol: float = 1e-9, stabilise: float = 0.5, recourse: str = "elastic",
                  penalty: float = 10.0, slack_tol: float = 1e-9, y_start=None, retain=None,
                  retain_after: int | None = None, verbose: bool = False, name: str = "Benders") -> Result:
    """Run Benders' decomposition on ``problem``; return a :class:`Result` with the trace.

    Args:
        executor: a ``concurrent.futures.Executor`` (e.g. a Dask ``Client.get_executor()``);
            ``None`` (default) runs a local ``ProcessPoolExecutor`` for the call; ``"serial"``
            solves the blocks in this process.
        abs_tol, rel_tol: stop when UB − LB ≤ abs_tol or ≤ rel_tol·|UB| (the paper: 0.01 km abs).
        max_iter, time_limit: iteration cap (the authors' code: 100) and wall-clock seconds.
        opt_tol: an optimality cut is added when w̄_m < v_m − opt_tol·(1 + |v_m|).
        stabilise: in-out stabilisation (Ben-Ameur & Neto 2007): cuts are first separated at
            (1 − s)·ȳ + s·ŷ (ŷ: the best point so far — of the elastic problem with
            ``recourse="elastic"``), and at ȳ only if those cuts do not cut ȳ off; 0 = plain Kelley.
        recourse: ``"elastic"`` (complete recourse, default) or ``"farkas"`` (feasibility cuts);
            see the module docstring.
        penalty: initial elastic penalty per unit slack, times max(1, max|c_m|) of each block.
        slack_tol: largest row slack of a point for it to count as feasible (elastic recourse; the
            rows then hold within the LP tolerance, like any LP solution).
        y_start: a first separation point and stabilisation centre (e.g. from a relaxation).
        retain: indices of blocks kept whole in the master (partial Benders decomposition): the
            master then sees their real cost and rows, only the other blocks are separated, and
            the upper bound is taken at the master's ȳ (no in-out point, no ``y_start``). All
            blocks retained: the master is the monolithic LP and the first iteration certifies.
        retain_after: after this many block passes without a certified gap, every block is retained
            (the next master is the whole LP plus the cuts so far, and certifies). ``None``: never.
            For problems whose monolithic LP is cheap and whose cuts converge slowly.
        verbose: log a line per iteration (LB, UB, gap) via :class:`lpmech.progress.Progress`.

    ``Result.x`` = [y, x_1, …, x_M] of the best feasible point; ``optimality`` has UB as objective
    and LB as bound; ``stats`` holds ``lower_bound``, ``upper_bound``, ``iterations``, ``trace``
    (per iteration: LB, UB, gap, cuts, penalty, seconds), ``block_values``, ``max_iter``.
    """
    from ..progress import Progress

    if int(max_iter) < 1:
        raise InputError(f"max_iter must be at least 1, got {max_iter}")
    if not (abs_tol >= 0 and rel_tol >= 0):
        raise InputError("abs_tol and rel_tol must be non-negative")
    if recourse not in RECOURSE:
        raise InputError(f"recourse must be one of {RECOURSE}, got {recourse!r}")
    if not (penalty > 0 and math.isfinite(penalty)):
        raise InputError(f"penalty must be a positive number, got {penalty!r}")
    if not 0 <= stabilise < 1:
        raise InputError(f"stabilise must lie in [0, 1), got {stabilise!r}")
    time_limit = check_time_limit(time_limit)
    executor, owned = make_executor(executor, len(problem.blocks))
    elastic = recourse == "elastic"
    scale = np.array([max(1.0, float(np.abs(b.c).max(initial=0.0))) for b in problem.blocks])
    factor = float(penalty)
    t0 = time.perf_counter()
    M = len(problem.blocks)
    retain = sorted({int(m) for m in (retain if retain is not None else ())})
    if retain and not (0 <= retain[0] and retain[-1] < M):
        raise InputError(f"retain holds block indices 0..{M - 1}, got {retain}")
    master = _Master(problem, retain)
    sep = [m for m in range(M) if m not in set(retain)]
    if elastic:  # build the elastic matrices once, here: they travel with the blocks to any executor
        for b in problem.blocks:
            _elastic_lp(b)
    bases: list = [None] * M
    lb, ub, pen_best = -math.inf, math.inf, math.inf
    best, center = None, None
    trace: list[dict] = []
    status = "iteration_limit"
    n_raise = 0
    whole_stats = None  # the retention endgame's whole LP with lazy rows (solve_whole_lazy)

    def closed(hi, lo):
        return math.isfinite(hi) and (hi - lo <= abs_tol or hi - lo <= rel_tol * abs(hi))

    prog = Progress(name, verbose=verbose, unit="iteration", logger=log)
    try:
        def solve_master(it):
            mstatus, mobj, ybar, wbar = master.solve()
            if mstatus != "optimal" and stop.requested():
                raise _Halt
            if mstatus != "optimal":
                if mstatus == "Infeasible":
                    res = Result(status="infeasible", stats={"iterations": it, "trace": trace})
                    raise InfeasibleError("Benders master is infeasible: no y admits feasible "
                                          "subproblems (the whole LP is infeasible)", result=res)
                raise SolverError(f"Benders master ended with status {mstatus!r}")
            return mobj, ybar, wbar

        for it in range(1, int(max_iter) + 1):
            if stop.requested():
                status = stop.requested()
                break
            try:
                mobj, ybar, wbar = solve_master(it)
            except _Halt:
                status = stop.requested() or "interrupted"
                break
            lb = max(lb, mobj)
            if not closed(ub, lb) and retain_after is not None and it > retain_after and sep:
                # the cuts converge slowly: every block joins the master, which is then the whole
                # LP (the cuts so far are implied by it and left out: measured, HiGHS solves the LP
                # without them faster); its certified bound and optimum close the gap
                prog.note("retaining all %d blocks in the master after %d block passes", M, it - 1)
                left = None if time_limit is None else max(1e-3, time_limit - (time.perf_counter() - t0))
                whole = None
                if any(b.lazy is not None for b in problem.blocks):
                    whole = solve_whole_lazy(problem, time_limit=left)
                    whole_stats = {k: whole.stats.get(k) for k in ("rounds", "rows", "rows_in_model",
                                                                   "recoveries", "trace", "time_s")}
                    if whole.status not in ("optimal", "infeasible", *STOPS):
                        prog.note("the whole LP with lazy rows ended %r: the whole LP at once", whole.status)
                        whole = None
                if whole is None:
                    whole = solve_lp(*problem.as_lp(), time_limit=left)
                if whole.status == "infeasible":
                    res = Result(status="infeasible", stats={"iterations": it, "trace": trace})
                    raise InfeasibleError("the whole LP is infeasible", result=res)
                if whole.status in STOPS and (whole.x is None or whole.stats.get(
                        "max_primal_infeasibility", math.inf) > WHOLE_FEAS_TOL):
                    status = whole.status  # no feasible point yet: the cuts' incumbent stands
                    break
                if whole.status not in ("optimal", *STOPS) or whole.x is None:
                    raise SolverError(f"Benders: the whole LP ended with status {whole.status!r}")
                retain, sep = list(range(M)), []
                if whole.bound is not None:
                    lb = max(lb, float(whole.bound))
                y_w, xs_w = problem.split(whole.x)
                vals = [float(b.c @ x) for b, x in zip(problem.blocks, xs_w)]
                value = float(problem.alpha @ y_w) + sum(vals)
                if value < ub:
                    ub, best = value, (y_w, xs_w, vals)
                trace.append({"iteration": it, "lower_bound": lb, "upper_bound": ub, "gap": ub - lb,
                              "feasibility_cuts": 0, "optimality_cuts": 0, "retained": M,
                              "penalty": factor if elastic else None,
                              "recourse": "elastic" if elastic else "farkas",
                              "time_s": time.perf_counter() - t0})
                prog.update(lower=lb, upper=ub, gap=ub - lb, cuts=0)
                status = "optimal" if closed(ub, lb) else whole.status
                if status == "optimal" or whole.status in STOPS:
                    break
                raise SolverError(f"Benders: the whole LP's bound {lb!r} does not meet its value {ub!r}")
            if closed(ub, lb):  # the new lower bound meets the incumbent: no block pass needed
                trace.append({"iteration": it, "lower_bound": lb, "upper_bound": ub, "gap": ub - lb,
                              "feasibility_cuts": 0, "optimality_cuts": 0,
                              "penalty": factor if elastic else None,
                              "recourse": "elastic" if elastic else "farkas",
                              "time_s": time.perf_counter() - t0})
                prog.update(lower=lb, upper=ub, gap=ub - lb, cuts=0)
                status = "optimal"
                break
            U = factor * scale if elastic else [None] * M
            if retain:
                points = [ybar]
            elif it == 1 and y_start is not None:
                points = [np.clip(np.asarray(y_start, float), problem.y_lo, problem.y_hi), ybar]
            elif center is None or stabilise <= 0:
                points = [ybar]
                if not elastic and best is None:  # no incumbent: also try the bounds' corner nearest 0
                    points.append(np.clip(np.zeros(problem.n_y), problem.y_lo, problem.y_hi))
            else:
                points = [(1 - stabilise) * ybar + stabilise * center, ybar]
            n_feas = n_opt = 0
            pen_at_bar = None
            for y_eval in points:
                outs = map_tasks(executor, solve_block,
                                 [(problem.blocks[m], y_eval, U[m], bases[m]) for m in sep])
                if stop.requested():  # a block solve may have been cut short: no cut from this pass
                    break
                kept = sum(float(problem.blocks[m].c @ master.x_retained[m]) for m in retain)
                feasible, total, pen, cut_off = True, float(problem.alpha @ y_eval) + kept, \
                    float(problem.alpha @ y_eval) + kept, False
                for m, out in zip(sep, outs):
                    if out["kind"] == "error":
                        raise SolverError(f"Benders block {m}: subproblem ended with {out['status']!r}")
                    if out.get("basis") is not None:
                        bases[m] = out["basis"]
                    at_bar = out["const"] + float(out["coef"] @ ybar)
                    if out["kind"] == "feasibility":
                        feasible = False
                        master.add_cut(out["coef"], None, out["const"])
                        n_feas += 1
                        cut_off |= at_bar > 1e-9
                        continue
                    pen += out["value"]
                    total += out.get("cost", out["value"])
                    feasible &= out["slack"] <= slack_tol
                    if wbar[m] < at_bar - opt_tol * (1.0 + abs(at_bar)) or \
                            wbar[m] < out["value"] - opt_tol * (1.0 + abs(out["value"])):
                        master.add_cut(out["coef"], m, out["const"])
                        n_opt += 1
                        cut_off |= wbar[m] < at_bar - opt_tol * (1.0 + abs(at_bar))
                if y_eval is ybar:
                    pen_at_bar = pen if n_feas == 0 else None
                if n_feas == 0 and pen < pen_best:
                    pen_best, center = pen, y_eval.copy()
                if feasible and total < ub:
                    ub = total
                    by_block = dict(zip(sep, outs))
                    xs = [master.x_retained[m] if m in master.x_retained else by_block[m]["x"]
                          for m in range(M)]
                    vals = [float(problem.blocks[m].c @ xs[m]) if m in master.x_retained
                            else by_block[m]["value"] for m in range(M)]
                    best = (y_eval.copy(), xs, vals)
                if cut_off and len(points) == 2 and y_eval is not ybar and center is not None \
                        and not (it == 1 and y_start is not None):
                    break
            if stop.requested():
                status = stop.requested()
                break
            gap = ub - lb
            trace.append({"iteration": it, "lower_bound": lb, "upper_bound": ub, "gap": gap,
                          "feasibility_cuts": n_feas, "optimality_cuts": n_opt,
                          "penalty": factor if elastic else None,
                          "recourse": "elastic" if elastic else "farkas",
                          "time_s": time.perf_counter() - t0})
            prog.update(lower=lb, upper=ub, gap=gap, cuts=n_feas + n_opt)
            if closed(ub, lb):
                status = "optimal"
                break
            if elastic and (closed(pen_best, lb) or (pen_at_bar is not None and n_opt == 0)):
                # the elastic problem is solved but its minimiser still uses slack: U is below the
                # exact-penalty threshold; raise it (cuts made with a smaller U stay valid)
                factor *= 10.0
                n_raise += 1
                pen_best, center = math.inf, None
                if factor > MAX_PENALTY:  # no finite penalty removes the slack: likely infeasible;
                    elastic = False  # Farkas cuts prove it (the master becomes infeasible)
                    prog.note("elastic penalty above %g: switching to feasibility cuts", MAX_PENALTY)
                else:
                    prog.note("elastic penalty raised to %g (slack at the elastic optimum)", factor)
            if stop.requested() or (time_limit is not None and time.perf_counter() - t0 > time_limit):
                status = stop.requested() or "time_limit"
                break
    finally:
        prog.close()
        if owned:
            executor.shutdown()
    elapsed = time.perf_counter() - t0
    stats = {"solver": "benders", "recourse": recourse, "iterations": len(trace), "lower_bound": lb,
             "upper_bound": ub, "cuts": master.n_cuts, "trace": trace, "time_s": elapsed,
             "executor": "serial" if executor == "serial" else type(executor).__name__,
             "abs_tol": abs_tol, "rel_tol": rel_tol, "max_iter": int(max_iter),
             "penalty_final": factor if elastic else None, "penalty_raises": n_raise,
             "retained_blocks": len(retain)}
    if whole_stats is not None:
        stats["whole_lp"] = whole_stats
    if time_limit is not None:
        stats["time_limit"] = time_limit
    if best is None:
        return Result(status=status, stats=stats)
    y, xs, values = best
    stats["block_values"] = values
    res = Result(status=status, stats=stats, x=np.concatenate([y, *xs]))
    res.optimality = OptimalityCertificate.from_values(ub, lb, source="benders")
    return res


__all__ = ["RECOURSE", "BendersProblem", "Block", "affine_cut", "make_executor", "map_blocks", "map_tasks",
           "solve_benders", "solve_block", "solve_block_alone", "solve_monolithic", "solve_whole_lazy"]
