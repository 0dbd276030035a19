"""Dantzig–Wolfe decomposition by output column over any :class:`~lpmech.design.notion.Notion`.

The problem (Z is K×n, the notion's cone C_k for column k, C the K×n cost matrix)::

    min Σ_ik C_ik z_ik   s.t.  Σ_k z_ik = 1 (i < K),   lo_r ≤ Σ_ik A_r[i,k] z_ik ≤ hi_r (extra rows),
                               z_·k ∈ C_k ∩ [0, 1]^K  (z ≤ 1 is implied by the unit rows)

The master LP has the unit rows and the extra rows and one column per generated pair (k, v),
v ∈ C_k ∩ [0, 1]^K. With row multipliers y = (μ, y_r) of valid sign, pricing output k is the LP

    min_v  w_k·v,   w_k = C_·k − μ − Σ_r y_r A_r[·, k],   v ∈ C_k ∩ [0, 1]^K (zeros(k) fixed to 0),

solved with the notion's rows added lazily (:meth:`Notion.initial_rows`, :meth:`Notion.separator`,
to the LP's own tolerance :data:`PRICING_SEPARATION_TOL`) and kept warm across rounds; a notion
with ``repair(Z)`` (the smallest raise into its cone) has each priced column repaired, so the
master mixes columns exactly in the cone. Whatever y, the Lagrangian

    L(y) = Σ_i μ_i + Σ_r (y_r lo_r if y_r > 0 else y_r hi_r) + Σ_k min_v w_k·v

is a lower bound on the optimum, and each pricing LP's own Lagrangian bound Σ_i min(0, ρ_i)·ub_i
(ρ = w − Aᵀy_rows its reduced costs) bounds its min from below, so the bound reported is valid
whatever the solver tolerances. The reduced costs of the last solve, shifted by the change of w,
still bound the next min: an output whose bound cannot go below the threshold is not priced.

Termination (each with a certificate): the gap upper − lower is under ``tol``·|upper| or under
the absolute floor ``abs_tol``; or, at the master's own duals, no output has a column of reduced
cost below −floor/n that is not already in the master (columns are deduplicated, so a column the
master already holds is never "found" again); or the best bound is within ``STALL_GAP`` × the
floor and has stopped moving (the certified gap is then at most 10·tol; ``stats["stop"]`` says
which rule ended the solve). A round cap gives ``iteration_limit``;
a user time limit ``time_limit``. Stabilisation: Wentges smoothing towards the multipliers of the
best bound, by a fixed weight or self-adjusting (Pessoa et al. 2018: less smoothing when the
subgradient at the smoothed point points towards the master's duals, more otherwise); a smoothed
round that finds no improving column prices at the master's duals next.

Covering rows (``cover=True``): with costs ≥ 0 and no extra rows, phase 2 may start with the unit
rows as Σ_k z_ik ≥ 1, whose multipliers μ are ≥ 0, a dual-optimal inequality where the optimal
multipliers are ≥ 0 (on Geo-Ind, every instance checked: ``tests/test_decomposition.py``); it keeps
the early multipliers from the far negative values a master with few columns has (10×10 at ε = 0.5:
a first bound of −4.5 against −1,353; 36 rounds against 56). A stop stands only where the optimum
covers every row once (:data:`COVER_TOL`); there, or once the gap is under :data:`COVER_GAP`, the
rows become Σ = 1 and the rounds go on. The incumbent a stop hands over is the last master
optimum that is a mechanism (phase 2's first solve has Σ = 1), and past half a time limit the rows
are Σ = 1 again, so that it improves.

The master LP is HiGHS' simplex (warm across rounds), or from :data:`DENSE_MASTER_MIN_K` unit
rows up (``master_algorithm="auto"``) :class:`DenseIPMMaster`: a cone whose columns are dense makes
the simplex basis dense, and an interior point on the master's dual with dense BLAS is then faster.

Feasibility: the master starts with artificial columns; when the starting columns do not make it
feasible (extra rows, or zeros(k) that rule out the starting columns), a phase 1 minimises the
artificials with the same pricing, and proves infeasibility by a positive Lagrangian bound.

Pricing backends (one interface: ``price(outputs, W, deadline)``, ``n_rows()``, ``asleep()``,
``close()``): in this process, a stateful pool of forked worker processes, or stateful Dask actors
when ``executor`` is a ``distributed.Client`` (each output always priced by the same worker, warm).
In this process and in the forked workers, an LP priced while its process holds more than its
share of :data:`PRICING_MEMORY_SHARE` is put to sleep (its HiGHS model freed, its rows and basis
kept): large K runs slower instead of running out of memory.
"""

from __future__ import annotations

import logging
import math
import os
import signal
import time

import numpy as np
import scipy.sparse as sp

from .. import resources, stop
from ..errors import InputError, SolverError
from ..progress import Progress
from ..solvers.highs import model_status, new_highs, run_highs, set_time_left
from ..solvers.result import STOPS, Result, check_time_limit
from .notion import Notion, aux_upper, check_extra_rows, extend, start_rows

log = logging.getLogger(__name__)

#: from this many outputs up, pricing runs in worker processes by default
PARALLEL_MIN_K = 100
#: HiGHS options of the pricing LPs (objective scaled to max |w| = 1): tight dual feasibility makes
#: their Lagrangian bounds tight when the optimum is small against the largest cost
#: (dual simplex: measured faster than primal or HiGHS' choice on OMG pricing)
PRICING_OPTIONS = {"dual_feasibility_tolerance": 1e-10, "primal_feasibility_tolerance": 1e-9,
                   "presolve": "off", "simplex_strategy": 1}
#: a pricing LP's oracle adds the rows its point violates by more than this (the LP's feasibility
#: tolerance, v in [0, 1]): each violation left lowers the LP's bound below the cone's minimum.
#: Geo-Ind at K = 400: the bounds summed 1.1e-6 below the repaired columns' values with the
#: notions' 1e-8 (the whole gap left at the end, K = 1,600 stalled above 1e-6 on it), 3e-8 with 1e-10
PRICING_SEPARATION_TOL = 1e-10
#: the share of the memory available when pricing starts that the pricing processes' LPs may take
#: together; past its part, a process frees each LP's HiGHS model once priced
#: (:meth:`PricingLP.sleep`): the solve then runs slower, not out of memory
PRICING_MEMORY_SHARE = 0.7


# ------------------------------------------------------------------------------ pricing


class PricingLP:
    """The pricing LP of one output k: min w·v over v ∈ C_k ∩ [0, ub] with lazy rows A v ≤ 0.

    One HiGHS model kept warm across rounds (dual simplex restarts from the last basis after a
    change of objective or added rows); rows come from the notion's :meth:`~Notion.separator`
    and are kept as COO triplets so that ρ = w − Aᵀy is one ``bincount``. Where memory is short,
    :meth:`sleep` frees the model and keeps its basis: the next :meth:`price` rebuilds it from
    the kept rows and restarts from that basis.
    """

    MAX_ROUNDS = 10_000

    def __init__(self, notion: Notion, k: int):
        K = self.K = notion.K
        B = notion.aux_map()  # auxiliary variables t = B v (the rows act on u = [v; t])
        self.B = None if B is None else sp.csr_matrix(B)
        N = self.N = K + notion.n_aux
        start = start_rows(notion, k)
        self.ub = np.concatenate([np.ones(K), aux_upper(notion)])
        zeros = notion.zeros(k)
        if zeros is not None:
            self.ub[np.asarray(zeros, dtype=np.int64)] = 0.0
        self.oracle = notion.separator(k, start, PRICING_SEPARATION_TOL)
        self.repair = getattr(notion, "repair", None)
        self.zero_mask = self.ub[:K] == 0
        self.idx = np.arange(N, dtype=np.int32)
        self.r_row = np.zeros(0, np.int32)  # 32-bit: K and the rows of one LP stay below 2³¹
        self.r_col = np.zeros(0, np.int32)
        self.r_val = np.zeros(0)
        self.n_rows = 0
        self.cold_retries = 0
        self.kept_runs = 0  # solves answered by the last basis without a run (_still_optimal)
        self._basis = None
        self._init_model()
        self._add(start)

    def _init_model(self) -> None:
        """The HiGHS model before any row: N = K + a variables in [0, ub]."""
        self.h = new_highs("simplex", options=PRICING_OPTIONS)
        self.h.addVars(self.N, np.zeros(self.N), self.ub)

    def _add(self, A) -> None:
        """Add the rows A v ≤ 0 to the model and to the kept copy of A (for the bound)."""
        A = sp.csr_matrix(A, dtype=float)
        m = A.shape[0]
        if m == 0:
            return
        self._insert(A)
        counts = np.diff(A.indptr)
        self.r_row = np.concatenate([self.r_row, (self.n_rows + np.repeat(np.arange(m), counts))
                                     .astype(np.int32)])
        self.r_col = np.concatenate([self.r_col, A.indices.astype(np.int32)])
        self.r_val = np.concatenate([self.r_val, A.data])
        self.n_rows += m

    @property
    def asleep(self) -> bool:
        return self.h is None

    def row_matrix(self) -> sp.csr_matrix:
        """The rows A v ≤ 0 this LP holds (its starting rows and those its oracle added)."""
        return sp.csr_matrix((self.r_val, (self.r_row, self.r_col)), shape=(self.n_rows, self.N))

    def sleep(self) -> None:
        """Free the HiGHS model (K = 1,024, 9,000 rows: ~10 MB), keeping its basis (~10 kB); the
        rows stay in the kept copy. Measured on replayed pricing rounds at K = 1,024: the restart
        from a rebuilt model takes ~25 % more simplex iterations (the edge weights are lost)."""
        if self.h is not None:
            self._basis = self.h.getBasis()
            self.h = None
            self._forget()

    def _forget(self) -> None:
        """Drop what :meth:`_still_optimal` keeps of the last solve."""

    def _wake(self) -> None:
        self._init_model()
        if self.n_rows:
            self._insert(self.row_matrix())
        if self._basis is not None and self._basis.valid:
            self.h.setBasis(self._basis)
        self._basis = None

    def _insert(self, A: sp.csr_matrix) -> None:
        import highspy

        m = A.shape[0]
        self.h.addRows(m, np.full(m, -highspy.kHighsInf), np.zeros(m), A.nnz,
                       A.indptr[:-1].astype(np.int32), A.indices.astype(np.int32), A.data)

    def _run(self) -> str:
        # short runs: a stop is checked between LPs (_price_all), not by a callback in each
        run_highs(self.h, interruptible=False)
        status = model_status(self.h)
        if status == "error":  # HiGHS occasionally ends a warm restart "unknown": retry cold
            self.h.clearSolver()
            run_highs(self.h, interruptible=False)
            status = model_status(self.h)
        return status

    def _set_costs(self, w: np.ndarray) -> None:
        self.h.changeColsCost(self.N, self.idx, w)

    def _solve_round(self, rnd: int) -> str:
        return self._run()

    def _point(self, sol) -> np.ndarray:
        return np.asarray(sol.col_value)

    def _multipliers(self, sol) -> np.ndarray:
        """Multipliers y ≤ 0 of the rows A v ≤ 0 (any y ≤ 0 gives a valid bound)."""
        return np.minimum(np.asarray(sol.row_dual), 0.0)

    def price(self, w: np.ndarray):
        """``(v, value, rho)``: the optimum v, w·v, and reduced costs ρ = w − Aᵀy (y ≤ 0).

        The LP is solved with w scaled to max |w| = 1 (solver tolerances are absolute) and the
        results scaled back; rows come from the notion's oracle until v violates none. With
        auxiliary variables t = B v (cost 0), ρ is that of v with t substituted, ρ_v + Bᵀρ_t: the
        bound Σ min(0, ρ_i)·ub_i over v alone is valid (t = B v holds in the exact problem).
        """
        scale = float(np.abs(w).max())
        if scale == 0.0:
            return np.zeros_like(w), 0.0, np.zeros_like(w)
        if self.h is None:
            self._wake()
        wu = np.concatenate([w / scale, np.zeros(self.N - self.K)])
        self._set_costs(wu)
        ub = self.ub[:self.K]
        for attempt in range(2):
            x, sol = self._solve()
            y = self._multipliers(sol)
            aty = np.bincount(self.r_col, weights=self.r_val * y[self.r_row], minlength=self.N)
            rho = wu - aty
            if self.B is not None:
                rho = rho[:self.K] + self.B.T @ rho[self.K:]
            # a warm restart can end with duals that are feasible only to the tolerance of a basis
            # found for other costs: when its bound is loose against its own value, solve cold once
            loose = float(w @ x[:self.K]) / scale - float(lagrangian(rho, ub))
            if attempt or loose <= COLD_RETRY_GAP * max(1.0, self.K * 1e-2):
                break
            self._forget()
            self.h.clearSolver()
            self.cold_retries += 1
        v = x[:self.K]
        if self.repair is not None and v.any():  # solver noise off: a column exactly in the cone
            fixed = np.asarray(self.repair(v[:, None]), float).reshape(-1)
            if not fixed[self.zero_mask].any():
                v = np.clip(fixed, 0.0, 1.0)
        return v, float(w @ v), scale * rho

    def _still_optimal(self):
        """(point, solution) of the last solve when it is still optimal for the new costs, without
        a run; None when a run is needed (here: always)."""
        return None

    def _solve(self):
        """Solve with rows from the oracle until the point violates none: (point, solution)."""
        kept = self._still_optimal()
        if kept is not None:
            return kept
        for rnd in range(1, self.MAX_ROUNDS + 1):
            status = self._solve_round(rnd)
            if status in ("time_limit", "interrupted"):
                raise _Stopped(status)
            if status != "optimal":
                raise SolverError(f"pricing LP ended with status {status!r} after {rnd} rounds of "
                                  "row generation")
            sol = self.h.getSolution()
            x = np.clip(self._point(sol), 0.0, self.ub)
            cut = self.oracle(x)
            if cut is None or cut.shape[0] == 0:
                return x, sol
            self._add(cut)
        raise SolverError(f"pricing LP: no end of row generation in {self.MAX_ROUNDS} rounds")


class DualPricingLP(PricingLP):
    """The same pricing LP, solved as its dual (K rows whatever the number of lazy rows):

        max −Σ_i ub_i s_i   s.t.   s_i + (Aᵀy)_i ≥ −w_i,   y ≥ 0,  s ≥ 0,

    whose row multipliers are v. A row of A generated for the primal is a column (y_r) here, so the
    basis stays K×K while rows accumulate (the primal form's basis grows with them), a new row keeps
    the basis primal feasible (primal simplex next), and a new w only moves the right-hand side
    (dual simplex next). ρ = w + Aᵀy is read from the column values: the same Lagrangian bound.
    """

    def __init__(self, notion: Notion, k: int):
        self._last = None
        self._lower = None
        super().__init__(notion, k)
        if TENT_BASIS:
            self._tent_basis(k)

    def _tent_basis(self, k: int) -> None:
        """Start from the basis of the tent of k when the starting rows hold its star.

        The star rows F_kj v_k − v_j ≤ 0 and the bound v_k ≤ 1 are tight at the tent v = F_k·
        (v_k = 1), which satisfies every starting row: their multipliers (and s_j of any j outside
        the star) make a K×K basis, dual feasible for the dual simplex of the first solve, in place
        of the slack basis (measured: see :data:`TENT_BASIS`). Any starting rows give a
        nonsingular basis (triangular), so HiGHS stays exact for any notion."""
        import highspy

        K = self.K
        if k >= K or self.ub[k] == 0 or self.n_rows == 0 or self.N > K:  # no input k, v_k = 0,
            return  # or auxiliary variables (their definition rows are no star)
        # star row of j: two entries, a positive one at k and −1 at j (the first such row)
        two = np.bincount(self.r_row, minlength=self.n_rows) == 2
        at_k = np.zeros(self.n_rows, dtype=bool)
        at_k[self.r_row[(self.r_col == k) & (self.r_val > 0)]] = True
        hit = (self.r_col != k) & (self.r_val == -1.0) & two[self.r_row] & at_k[self.r_row]
        star = np.full(K, -1)
        star[self.r_col[hit][::-1]] = self.r_row[hit][::-1]
        basic, lower = highspy.HighsBasisStatus.kBasic, highspy.HighsBasisStatus.kLower
        col = [lower] * (K + self.n_rows)
        col[k] = basic
        for j in range(K):
            if j != k:
                if star[j] >= 0:
                    col[K + star[j]] = basic
                else:
                    col[j] = basic
        basis = self.h.getBasis()
        basis.col_status = col
        basis.row_status = [lower] * K
        basis.valid = True
        self.h.setBasis(basis)

    def _init_model(self) -> None:
        """The dual model before any row: N rows ≥ 0 and the N columns of the box multipliers."""
        import highspy

        N, inf = self.N, highspy.kHighsInf
        self.h = new_highs("simplex", options=DUAL_PRICING_OPTIONS)
        self.h.addRows(N, np.zeros(N), np.full(N, inf), 0, np.zeros(N, np.int32),
                       np.zeros(0, np.int32), np.zeros(0))
        self.h.addCols(N, self.ub.copy(), np.zeros(N), np.full(N, inf), N,
                       np.arange(N, dtype=np.int32), self.idx, np.ones(N))

    def _insert(self, A: sp.csr_matrix) -> None:
        import highspy  # a row of the primal is a column y_r ≥ 0 of the dual

        m = A.shape[0]
        self.h.addCols(m, np.zeros(m), np.zeros(m), np.full(m, highspy.kHighsInf), A.nnz,
                       A.indptr[:-1].astype(np.int32), A.indices.astype(np.int32), A.data)

    def _set_costs(self, w: np.ndarray) -> None:
        import highspy

        self._lower = -w
        self.h.changeRowsBounds(self.N, self.idx, self._lower, np.full(self.N, highspy.kHighsInf))

    def _forget(self) -> None:
        self._last = None

    def _still_optimal(self):
        """A new w only moves the right-hand side: the last optimal basis stays dual feasible, and
        optimal when its basic solution B⁻¹b is still feasible (to the LP's tolerance). Then the
        point (the rows' duals) is the last one, which the oracle passed, and the column values
        are B⁻¹b: no HiGHS run (whose fixed cost, ~0.6 ms at K = 400, is most of a late round).
        HiGHS' basis matrix holds −e_i for a basic row i (its activity is minus that entry)."""
        last, self._last = self._last, None
        if last is None:
            return None
        import highspy

        status, basic = self.h.getBasicVariables()
        if status != highspy.HighsStatus.kOk:
            return None
        at_row = basic < 0
        rows = -basic[at_row] - 1
        rhs = self._lower.copy()
        rhs[rows] = 0.0
        status, xb = self.h.getBasisSolve(rhs)
        tol = DUAL_PRICING_OPTIONS["primal_feasibility_tolerance"]
        if (status != highspy.HighsStatus.kOk or (xb[~at_row] < -tol).any()
                or (-xb[at_row] < self._lower[rows] - tol).any()):
            return None
        values = np.zeros(self.N + self.n_rows)
        values[basic[~at_row]] = xb[~at_row]
        self.kept_runs += 1
        self._last = last
        return last[0], _Solution(values, last[1].row_dual)

    def _solve_round(self, rnd: int) -> str:
        # a new right-hand side keeps the basis dual feasible (dual simplex); new columns (rows of
        # the primal) keep it primal feasible (primal simplex)
        self.h.setOptionValue("simplex_strategy", 1 if rnd == 1 else 4)
        return self._run()

    def _solve(self):
        x, sol = super()._solve()
        if self._last is None:  # solved by a run: keep its point and its duals
            self._last = (x, _Solution(None, np.asarray(sol.row_dual)))
        return x, sol

    def _point(self, sol) -> np.ndarray:
        return np.asarray(sol.row_dual)

    def _multipliers(self, sol) -> np.ndarray:
        return -np.maximum(np.asarray(sol.col_value)[self.N:], 0.0)


class _Solution:
    """The two arrays of a HiGHS solution that a pricing LP reads."""

    __slots__ = ("col_value", "row_dual")

    def __init__(self, col_value, row_dual):
        self.col_value, self.row_dual = col_value, row_dual


#: start each dual pricing LP from the basis of its output's tent (:meth:`DualPricingLP._tent_basis`)
#: (K = 1,024: the first pricing of 12 outputs 3.1 s against 3.5 s; K = 400: 1.58 s against 1.68 s
#: for 30 outputs; the first HiGHS run alone 131–204 simplex iterations against 478–604)
TENT_BASIS = True
#: the pricing LP class (:class:`DualPricingLP`: measured faster on OMG, its basis stays K×K)
PRICING_LP = DualPricingLP
#: a pricing LP whose Lagrangian bound is looser than this (per unit of max |w|, ×max(1, K/100))
#: against its own value is solved again from scratch once (:meth:`PricingLP.price`)
COLD_RETRY_GAP = 1e-8
DUAL_PRICING_OPTIONS = {"dual_feasibility_tolerance": 1e-10, "primal_feasibility_tolerance": 1e-10,
                        "presolve": "off"}


def lagrangian(rho: np.ndarray, ub: np.ndarray) -> np.ndarray:
    """Σ_i min(0, ρ_i)·ub_i (per column): the Lagrangian bound of a pricing LP with rows A v ≤ 0
    and variables in [0, ub], valid for any row multipliers y ≤ 0."""
    with np.errstate(invalid="ignore"):  # −inf (never priced) · 0 (a forced zero) counts as 0
        return np.where(ub > 0, np.minimum(rho, 0.0) * ub, 0.0).sum(axis=0)


def _build(notion, outputs) -> dict[int, PricingLP]:
    return {int(k): PRICING_LP(notion, int(k)) for k in outputs}


def memory_limit(workers: int) -> int | None:
    """The resident memory a pricing process may reach: what it holds now plus its share of
    :data:`PRICING_MEMORY_SHARE` of the memory available (None where either is unknown)."""
    now, free = resources.resident_bytes(), resources.available_bytes()
    if now is None or free is None:
        return None
    return now + int(PRICING_MEMORY_SHARE * free / max(1, workers))


def _price_all(lps: dict, outputs, W: np.ndarray, deadline: float | None, halt=None,
               limit: int | None = None) -> list | None:
    """Price ``outputs`` (columns of ``W``): [(k, v, value, rho)], or None past the deadline or
    once a stop is requested (in a worker process: the parent sets ``halt``). An LP priced while
    the process holds more than ``limit`` bytes is put to sleep (:meth:`PricingLP.sleep`)."""
    out, slept = [], False
    for col, k in enumerate(outputs):
        if (stop.requested() or (halt is not None and halt.is_set())
                or (deadline is not None and time.perf_counter() > deadline)):
            return None
        lp = lps[int(k)]
        out.append((int(k), *lp.price(W[:, col])))
        if limit is not None and (resources.resident_bytes() or 0) > limit:
            lp.sleep()
            slept = True
    if slept:  # the freed models' pages back to the system: the next round counts what is used
        resources.release_free_memory()
    return out


def _asleep(lps: dict) -> int:
    return sum(lp.asleep for lp in lps.values())


def _rows_of(lps: dict, outputs) -> list[sp.csr_matrix]:
    """The rows each output's pricing LP holds (:meth:`PricingLP.row_matrix`), in order."""
    return [lps[int(k)].row_matrix() for k in outputs]


def _by_owner(owner: np.ndarray, outputs, ask) -> list:
    """``ask(w, ks)`` for each worker w owning some of ``outputs`` (a list per output, in the
    order of ``ks``), gathered back into the order of ``outputs``."""
    outputs = [int(k) for k in outputs]
    got = {}
    for w in range(int(owner.max()) + 1 if owner.size else 0):
        ks = [k for k in outputs if owner[k] == w]
        if ks:
            got.update(zip(ks, ask(w, ks), strict=True))
    return [got[k] for k in outputs]


class LocalPricer:
    """The pricing LPs of all outputs in this process."""

    workers = 1
    backend = "local"

    def __init__(self, notion: Notion, n: int):
        self.lps = _build(notion, range(n))
        self.limit = memory_limit(1)

    def price(self, outputs, W, deadline):
        outputs = np.asarray(outputs, dtype=np.int64)
        return _price_all(self.lps, outputs.tolist(), W[:, outputs], deadline, limit=self.limit)

    def n_rows(self) -> int:
        return sum(lp.n_rows for lp in self.lps.values())

    def rows_of(self, outputs) -> list[sp.csr_matrix]:
        """The rows each output's pricing LP holds (:meth:`PricingLP.row_matrix`)."""
        return _rows_of(self.lps, outputs)

    def asleep(self) -> int:
        return _asleep(self.lps)

    def close(self) -> None:
        pass


def _worker(conn, notion, outputs, halt, workers) -> None:  # pragma: no cover - child process
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    try:
        lps = _build(notion, outputs)
        limit = memory_limit(workers)
        conn.send("ready")
        while (msg := conn.recv()) is not None:
            if msg == "rows":
                conn.send((sum(lp.n_rows for lp in lps.values()), _asleep(lps)))
                continue
            if msg[0] == "rows_of":
                conn.send(_rows_of(lps, msg[1]))
                continue
            ks, W, deadline = msg
            try:
                conn.send(_price_all(lps, ks, W, deadline, halt, limit))
            except Exception as exc:  # report, do not hang the parent
                conn.send(exc)
    except (EOFError, OSError, KeyboardInterrupt):
        pass


WORKER_DIED = ("a pricing worker process died (killed for lack of memory? fewer workers, or a "
               "smaller instance, need less)")


class ProcessPricer:
    """The pricing LPs split over forked worker processes, each keeping its LPs warm.

    A stateful pool (not a ``concurrent.futures`` executor): an output always goes to the same
    worker, whose LP restarts from its own basis and rows. Workers ignore SIGINT; the parent
    stops them in :meth:`close` (also on Ctrl-C), so an interrupt prints no worker traceback. A stop
    request (:mod:`lpmech.stop`) while they price reaches them through a shared event: they end
    the round at once, as past the deadline.
    """

    backend = "process"

    def __init__(self, notion: Notion, n: int, workers: int):
        import multiprocessing as mp

        ctx = mp.get_context("fork")
        self.workers = workers
        self.owner = np.arange(n) % workers
        self.conns, self.procs = [], []
        self.halt = ctx.Event()
        try:
            for w in range(workers):
                parent, child = ctx.Pipe()
                proc = ctx.Process(target=_worker, daemon=True,
                                   args=(child, notion, np.nonzero(self.owner == w)[0].tolist(),
                                         self.halt, workers))
                proc.start()
                child.close()
                self.conns.append(parent)
                self.procs.append(proc)
            for conn in self.conns:
                while not conn.poll(0.05):
                    if stop.requested():
                        raise _Stopped(stop.requested())
                if conn.recv() != "ready":
                    raise SolverError("a pricing worker failed to start")
        except BaseException:
            self.close()
            raise

    def price(self, outputs, W, deadline):
        outputs = np.asarray(outputs, dtype=np.int64)
        parts = [outputs[self.owner[outputs] == w] for w in range(self.workers)]
        for conn, ks in zip(self.conns, parts):
            try:
                conn.send((ks.tolist(), W[:, ks], deadline))  # perf_counter: one clock for all
            except (BrokenPipeError, ConnectionResetError):  # not the user's stdout: a worker
                raise SolverError(WORKER_DIED) from None
        out, err, late = [], None, False
        for conn in self.conns:
            while not conn.poll(0.05):
                if stop.requested():
                    self.halt.set()
            try:
                got = conn.recv()
            except (EOFError, ConnectionResetError):
                raise SolverError(WORKER_DIED) from None
            if isinstance(got, Exception):
                err = got
            elif got is None:  # the worker passed the deadline
                late = True
            else:
                out.extend(got)
        if err is not None:
            raise err
        return None if late else out

    def _counts(self) -> np.ndarray:
        for conn in self.conns:
            conn.send("rows")
        return np.sum([conn.recv() for conn in self.conns], axis=0)

    def n_rows(self) -> int:
        return int(self._counts()[0])

    def rows_of(self, outputs) -> list[sp.csr_matrix]:
        """The rows each output's pricing LP holds, from the workers that own them."""
        def ask(w, ks):
            try:
                self.conns[w].send(("rows_of", ks))
                return self.conns[w].recv()
            except (BrokenPipeError, ConnectionResetError, EOFError):
                raise SolverError(WORKER_DIED) from None

        return _by_owner(self.owner, outputs, ask)

    def asleep(self) -> int:
        return int(self._counts()[1])

    def close(self) -> None:
        for conn in self.conns:
            try:
                conn.send(None)
            except OSError:
                pass
        for proc in self.procs:
            proc.join(timeout=0 if stop.requested() else 2)  # stopped: no wait for a busy worker
            if proc.is_alive():
                proc.kill()
                proc.join()
        for conn in self.conns:
            conn.close()
        self.conns, self.procs = [], []


class PricingActor:
    """A Dask actor holding the warm pricing LPs of some outputs (``client.submit(..., actor=True)``)."""

    def __init__(self, notion: Notion, outputs):
        self.lps = _build(notion, outputs)

    def price(self, ks, W):
        return _price_all(self.lps, ks, W, None)

    def n_rows(self) -> int:
        return sum(lp.n_rows for lp in self.lps.values())

    def rows_of(self, ks) -> list[sp.csr_matrix]:
        return _rows_of(self.lps, ks)


class DaskPricer:
    """The pricing LPs on stateful Dask actors, one per worker (round-robin outputs)."""

    backend = "dask"

    def __init__(self, client, notion: Notion, n: int, workers: int | None):
        addrs = list(client.scheduler_info()["workers"])
        if not addrs:
            raise InputError("the Dask client has no workers")
        self.workers = min(workers or len(addrs), n)
        self.owner = np.arange(n) % self.workers
        futs = [client.submit(PricingActor, notion, np.nonzero(self.owner == w)[0].tolist(),
                              actor=True, workers=[addrs[w % len(addrs)]], pure=False)
                for w in range(self.workers)]
        self.futures = futs
        self.actors = [f.result() for f in futs]

    def price(self, outputs, W, deadline):
        outputs = np.asarray(outputs, dtype=np.int64)
        parts = [outputs[self.owner[outputs] == w] for w in range(self.workers)]
        calls = [a.price(ks.tolist(), W[:, ks]) for a, ks in zip(self.actors, parts) if ks.size]
        out = []
        for c in calls:
            out.extend(c.result())
        return out

    def n_rows(self) -> int:
        return sum(c.result() for c in [a.n_rows() for a in self.actors])

    def rows_of(self, outputs) -> list[sp.csr_matrix]:
        """The rows each output's pricing LP holds, from the actors that own them."""
        return _by_owner(self.owner, outputs, lambda w, ks: self.actors[w].rows_of(ks).result())

    def asleep(self) -> int:  # the actors' machines are not ours to budget: their LPs stay awake
        return 0

    def close(self) -> None:
        for f in self.futures:
            f.release()
        self.actors, self.futures = [], []


def _is_dask_client(executor) -> bool:
    return type(executor).__module__.split(".")[0] == "distributed" and hasattr(executor, "submit")


def make_pricer(notion: Notion, n: int, *, executor=None, workers: int | None = None):
    """The pricing backend: a ``distributed.Client`` gives Dask actors; ``"process"`` (or
    ``workers`` > 1) forked workers; ``"local"`` (or one worker) this process."""
    if executor is not None and _is_dask_client(executor):
        return DaskPricer(executor, notion, n, workers)
    if executor not in (None, "local", "process"):
        raise InputError(f"executor must be None, 'local', 'process' or a distributed.Client, "
                         f"got {executor!r}")
    if workers is None:
        workers = (min(2, os.cpu_count() or 1) if n >= PARALLEL_MIN_K else 1) \
            if executor != "process" else min(2, os.cpu_count() or 1)
    if executor == "local":
        workers = 1
    workers = max(1, min(int(workers), n))
    return ProcessPricer(notion, n, workers) if workers > 1 else LocalPricer(notion, n)


# ------------------------------------------------------------------------------ master

#: sifting (:class:`Master`): a pool column re-enters the LP when its reduced cost is below
#: −SIFT_TOL (the master's dual feasibility tolerance), at most max(SIFT_MIN, K/2) per re-solve
SIFT_TOL, SIFT_MIN = 1e-10, 50
#: (measured and not kept: sifting once before each solve at the last duals, one HiGHS run per
#: round, took 40 rounds against 36 at K = 400 and 137 against 124 on 10×10 at ε = 0.3)
#: the pool keeps at most this many columns per master row (the oldest leave first)
POOL_MAX_COLUMNS = 20
#: HiGHS options of the master: primal simplex (added columns keep the basis primal feasible),
#: without scaling (measured on OMG K = 400, ε = 1: 10 002 simplex iterations and 42 s in the
#: master against 13 295 and 58 s with HiGHS' scaling; dual simplex: 25 944 and 113 s)
MASTER_OPTIONS = {"simplex_strategy": 4, "dual_feasibility_tolerance": 1e-10,
                  "simplex_scale_strategy": 0}


class _LazyPricer:
    """The pricer, built at its first pricing round: the first master solves need none, so a run
    stopped while the pricing LPs are built (minutes at K = 1,024) still has their incumbent."""

    def __init__(self, make):
        self.make, self.inner = make, None

    def price(self, outputs, W, deadline):
        if self.inner is None:
            self.inner = self.make()
        return self.inner.price(outputs, W, deadline)

    def n_rows(self) -> int:
        return 0 if self.inner is None else self.inner.n_rows()

    def asleep(self) -> int:
        return 0 if self.inner is None else self.inner.asleep()

    def close(self) -> None:
        if self.inner is not None:
            self.inner.close()


class _Stopped(Exception):
    """A master or pricing LP reached the user's time limit or was interrupted (status: args[0])."""


class Master:
    """The restricted master LP: unit rows, extra rows, artificials, one column per (k, v).

    Primal simplex by default: added columns keep its basis primal feasible. With ``sift`` (the
    default), :meth:`purge` moves columns out of the HiGHS model into a dense pool instead of
    deleting them, and :meth:`run` *sifts*: it prices the pool at the LP's duals (one matrix
    product) and moves back every pool column of negative reduced cost until none is left, so the
    optimum is the master's over every column ever generated while the LP that HiGHS pivots on
    keeps only the recently useful ones (its pricing of dense columns is the master's main cost).
    """

    def __init__(self, C: np.ndarray, extra, algorithm: str = "simplex", options: dict | None = None,
                 sift: bool = True):
        import highspy

        self.C = C
        K, n = C.shape
        self.K, self.n = K, n
        self.A = [np.asarray(a, float) for a, _, _ in extra]
        self.lo = np.concatenate([np.ones(K), [float(lo) for _, lo, _ in extra]])
        self.hi = np.concatenate([np.ones(K), [float(hi) for _, _, hi in extra]])
        m = K + len(extra)
        self.m = m
        opts = MASTER_OPTIONS if options is None else options
        self.h = new_highs(algorithm, options=opts)
        inf = highspy.kHighsInf
        self.h.addRows(m, np.clip(self.lo, -inf, inf), np.clip(self.hi, -inf, inf), 0,
                       np.zeros(m, np.int32), np.zeros(0, np.int32), np.zeros(0))
        # artificials: +e_r for every row with lo > -inf, −e_r for extra rows with hi < inf
        self.art_sign = []
        for r in range(m):
            for s in (1.0, -1.0):
                if (s > 0 and self.lo[r] > -math.inf) or (s < 0 and r >= K and self.hi[r] < math.inf):
                    self.h.addCol(1.0, 0.0, inf, 1, np.array([r], np.int32), np.array([s]))
                    self.art_sign.append((r, s))
        self.n_art = len(self.art_sign)
        self.ks: list[int] = []
        self.vs: list[np.ndarray] = []
        self.keys: list[bytes] = []
        self.costs: list[float] = []
        self.known: set[bytes] = set()
        self.last_basic: list[int] = []
        self.phase = 1
        self.run_s = 0.0
        self.runs = 0
        self.sift = sift
        # the pool: columns purged from the LP, kept (dense) for sifting; column j of pool_M is
        # its master rows, pool_cost its cost, pool_cols its (k, v, key)
        self.pool_M = np.zeros((m, 0))
        self.pool_cost = np.zeros(0)
        self.pool_cols: list[tuple[int, np.ndarray, bytes]] = []
        self.pool_keys: set[bytes] = set()
        self.sifted = 0
        self.solve_log: list = []
        self.deadline: float | None = None  # perf_counter time of the user's time limit
        self.incumbent: np.ndarray | None = None  # Z of the last phase-2 solve (a mechanism)
        self.now = 0  # the round (set by the rounds' driver): birth of columns back from the pool
        self.use_cover = False  # phase 2 starts with the unit rows as Σ ≥ 1 (:meth:`cover`)
        self.covering = False

    @staticmethod
    def key(k: int, v: np.ndarray) -> bytes:
        return int(k).to_bytes(4, "little") + np.ascontiguousarray(v, float).tobytes()

    def has(self, k: int, v: np.ndarray) -> bool:
        return self.key(k, v) in self.known

    def add(self, k: int, v: np.ndarray, born: int = 0) -> bool:
        """Add column (k, v) unless the master holds it already; True when added."""
        key = self.key(k, v)
        if key in self.pool_keys:  # found again: back from the pool into the LP
            self._unpool(np.array([next(j for j, c in enumerate(self.pool_cols) if c[2] == key)]),
                         born)
            return True
        if key in self.known:
            return False
        self._insert(k, v, key, born)
        return True

    def _entries(self, k: int, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """The LP column of (k, v): row indices, values (unit rows, then extra rows) and cost."""
        idx = np.nonzero(v > 0)[0].astype(np.int32)
        vals = v[idx]
        if self.A:
            extra = np.array([a[:, k] @ v for a in self.A])
            nz = np.nonzero(extra)[0]
            idx = np.concatenate([idx, (self.K + nz).astype(np.int32)])
            vals = np.concatenate([vals, extra[nz]])
        return idx, vals, float(self.C[:, k] @ v)

    def _insert(self, k: int, v: np.ndarray, key: bytes, born: int) -> None:
        idx, vals, cost = self._entries(k, v)
        self.h.addCol(cost if self.phase == 2 else 0.0, 0.0, math.inf, idx.size, idx, vals)
        self.ks.append(int(k))
        self.vs.append(v)
        self.keys.append(key)
        self.costs.append(cost)
        self.known.add(key)
        self.last_basic.append(born)

    def _pool(self, cols) -> None:
        """Put columns [(k, v, key)] (already out of the LP) into the pool."""
        if not cols:
            return
        M = np.zeros((self.m, len(cols)))
        cost = np.zeros(len(cols))
        for j, (k, v, _) in enumerate(cols):
            idx, vals, cost[j] = self._entries(k, v)
            M[idx, j] = vals
        self.pool_M = np.hstack([self.pool_M, M])
        self.pool_cost = np.concatenate([self.pool_cost, cost])
        self.pool_cols.extend(cols)
        self.pool_keys.update(c[2] for c in cols)
        if len(self.pool_cols) > POOL_MAX_COLUMNS * self.K:  # the oldest leave for good
            drop = len(self.pool_cols) - POOL_MAX_COLUMNS * self.K
            for _, _, key in self.pool_cols[:drop]:
                self.pool_keys.discard(key)
                self.known.discard(key)
            self.pool_M = self.pool_M[:, drop:].copy()
            self.pool_cost = self.pool_cost[drop:]
            self.pool_cols = self.pool_cols[drop:]

    def _unpool(self, take: np.ndarray, born: int) -> None:
        """Move pool columns ``take`` (indices) back into the LP."""
        keep = np.ones(len(self.pool_cols), dtype=bool)
        keep[take] = False
        for j in take:
            k, v, key = self.pool_cols[j]
            self.pool_keys.discard(key)
            self._insert(k, v, key, born)
        self.pool_M = self.pool_M[:, keep]
        self.pool_cost = self.pool_cost[keep]
        self.pool_cols = [c for c, kept in zip(self.pool_cols, keep) if kept]
        self.sifted += int(take.size)

    def start_phase_2(self) -> None:
        """Fix the artificials at 0 and give the columns their costs."""
        na = self.n_art
        self.h.changeColsBounds(na, np.arange(na, dtype=np.int32), np.zeros(na), np.zeros(na))
        self.h.changeColsCost(na, np.arange(na, dtype=np.int32), np.zeros(na))
        nc = len(self.costs)
        if nc:
            self.h.changeColsCost(nc, np.arange(na, na + nc, dtype=np.int32), np.array(self.costs))
        self.phase = 2

    def cover(self, on: bool) -> None:
        """The unit rows as Σ ≥ 1 (``on``: their multipliers ≥ 0, a dual-optimal inequality where
        the costs are ≥ 0) or as Σ = 1."""
        import highspy

        K = self.K
        self.covering = bool(on)
        self.hi[:K] = math.inf if on else 1.0
        self.h.changeRowsBounds(K, np.arange(K, dtype=np.int32), np.ones(K),
                                np.full(K, highspy.kHighsInf if on else 1.0))

    def excess(self) -> float:
        """The largest amount by which the last solve covers a unit row more than once."""
        return float(np.max(np.asarray(self.h.getSolution().row_value)[:self.K], initial=1.0)) - 1.0

    def rescale(self, f: float) -> None:
        """Divide every cost by ``f`` (the optimum near 0 against the largest cost: solver
        tolerances are absolute)."""
        self.C = self.C / f
        self.costs = [c / f for c in self.costs]
        self.pool_cost = self.pool_cost / f
        nc, na = len(self.costs), self.n_art
        if self.phase == 2 and nc:
            self.h.changeColsCost(nc, np.arange(na, na + nc, dtype=np.int32), np.array(self.costs))

    def run(self) -> tuple[np.ndarray, float]:
        """Solve (sifting the pool in); return the row duals y (sign-valid) and the objective."""
        ts = time.perf_counter()
        y = self._solve()
        while self._sift(y):
            y = self._solve()
        self.run_s += time.perf_counter() - ts
        self.runs += 1
        return self.valid(y), self.value()

    def sift_tol(self) -> float:
        """Reduced cost below −this brings a pool column back (the LP solver's dual tolerance)."""
        return SIFT_TOL

    def _sift(self, y: np.ndarray) -> bool:
        """Move the pool columns of reduced cost below −:meth:`sift_tol` at raw duals y into the LP."""
        if not self.pool_cols:
            return False
        cost = self.pool_cost if self.phase == 2 else np.zeros_like(self.pool_cost)
        rc = cost - self.pool_M.T @ y
        neg = np.nonzero(rc < -self.sift_tol())[0]
        if neg.size == 0:
            return False
        take = neg[np.argsort(rc[neg])[:max(SIFT_MIN, self.K // 2)]]
        self._unpool(np.sort(take), self.now)
        return True

    def _solve(self) -> np.ndarray:
        """One HiGHS solve of the LP as it stands: its raw row duals."""
        _t = time.perf_counter()
        if self.deadline is not None:
            set_time_left(self.h, self.deadline - _t)
        run_highs(self.h)
        self.solve_log.append((self.now, self.h.getNumCol() - self.n_art,
                               self.h.getInfo().simplex_iteration_count, time.perf_counter() - _t))
        status = model_status(self.h)
        if status == "error":  # HiGHS occasionally ends a warm restart "unknown": retry cold
            self.h.clearSolver()
            run_highs(self.h)
            status = model_status(self.h)
        if status == "error":  # then with dual simplex from scratch, keeping the options after
            strategy = self.h.getOptionValue("simplex_strategy")
            strategy = strategy[1] if isinstance(strategy, tuple) else strategy
            self.h.setOptionValue("simplex_strategy", 1)
            self.h.clearSolver()
            run_highs(self.h)
            status = model_status(self.h)
            self.h.setOptionValue("simplex_strategy", strategy)
        if status == "error":  # last: interior point with crossover (a basis again after it)
            self.h.setOptionValue("solver", "ipm")
            self.h.clearSolver()
            run_highs(self.h)
            status = model_status(self.h)
            self.h.setOptionValue("solver", "simplex")
        if status in ("time_limit", "interrupted"):
            raise _Stopped(status)
        if status != "optimal":
            raise SolverError(f"decomposition master LP ended with status {status!r}")
        self._keep_incumbent()
        return np.array(self.h.getSolution().row_dual)

    def _keep_incumbent(self) -> None:
        """After a phase-2 solve, its matrix is the incumbent a stop hands over if it is a
        mechanism (with the unit rows as Σ ≥ 1 it may cover a row twice: then the last one stays)."""
        if self.phase == 2 and (not self.covering or self.excess() <= COVER_TOL):
            self.incumbent = self.matrix()

    def valid(self, y: np.ndarray) -> np.ndarray:
        """Multipliers of valid sign: ≥ 0 on rows with no finite upper side, ≤ 0 with no lower."""
        y = np.where(np.isinf(self.hi) & (y < 0), 0.0, y)
        y = np.where(np.isinf(self.lo) & (y > 0), 0.0, y)
        if self.phase == 1:  # the artificials' reduced costs 1 ∓ y must stay ≥ 0
            y = np.clip(y, -1.0, 1.0)
        return y

    def rhs_term(self, y: np.ndarray) -> float:
        """Σ_r (y_r lo_r if y_r > 0 else y_r hi_r)."""
        pos, neg = y > 0, y < 0
        return math.fsum(y[pos] * self.lo[pos]) + math.fsum(y[neg] * self.hi[neg])

    def pricing_costs(self, y: np.ndarray) -> np.ndarray:
        """W = C·[phase 2] − μ − Σ_r y_r A_r (K×n)."""
        W = (self.C.copy() if self.phase == 2 else np.zeros_like(self.C)) - y[:self.K, None]
        for a, yr in zip(self.A, y[self.K:]):
            if yr:
                W -= yr * a
        return W

    def value(self) -> float:
        """The objective of the last solve."""
        return float(self.h.getInfo().objective_function_value)

    def weights(self) -> np.ndarray:
        """The weights λ of the LP's columns (artificials excluded) in the last solve."""
        return np.array(self.h.getSolution().col_value)[self.n_art:]

    def basic(self) -> np.ndarray:
        """Which of the LP's columns (artificials excluded) are basic in the last solve."""
        import highspy

        status = self.h.getBasis().col_status[self.n_art:]
        return np.array([s == highspy.HighsBasisStatus.kBasic for s in status], dtype=bool)

    def feasible_start(self) -> bool:
        """Whether phase 1 can be skipped without a solve (never for the simplex master: its
        phase-1 basis is the warm start of phase 2)."""
        return False

    def artificial_sum(self) -> float:
        return float(np.sum(self.h.getSolution().col_value[:self.n_art]))

    def purge(self, rnd: int, age: int) -> None:
        """Take the columns not basic for ``age`` rounds out of the LP (call before :meth:`run`: the
        basis stays valid): into the pool with ``sift``, else deleted (generated again if it
        prices out)."""
        basic = self.basic()
        last = np.asarray(self.last_basic)
        if basic.size != last.size:
            return
        last[basic] = rnd
        keep = last >= rnd - age
        if not keep.all():
            drop = (self.n_art + np.nonzero(~keep)[0]).astype(np.int32)
            self.h.deleteCols(drop.size, drop)
            gone = [(k, v, key) for k, v, key, kept in zip(self.ks, self.vs, self.keys, keep)
                    if not kept]
            if self.sift:
                self._pool(gone)
            else:
                for _, _, key in gone:
                    self.known.discard(key)
            self.ks = [k for k, kept in zip(self.ks, keep) if kept]
            self.vs = [v for v, kept in zip(self.vs, keep) if kept]
            self.keys = [k for k, kept in zip(self.keys, keep) if kept]
            self.costs = [c for c, kept in zip(self.costs, keep) if kept]
        self.last_basic = last[keep].tolist()
        self._kept(keep)

    def _kept(self, keep: np.ndarray) -> None:
        """A purge kept the LP columns ``keep`` (a hook for per-column solution data)."""

    def matrix(self) -> np.ndarray:
        """Z = Σ λ_r v_r e_{k_r}ᵀ from the last solve (K×n)."""
        lam = self.weights()
        Z = np.zeros((self.K, self.n))
        for k, v, weight in zip(self.ks, self.vs, lam):
            if weight > 0:
                Z[:, k] += weight * v
        return Z


class DenseIPMMaster(Master):
    """The same master, its phase-2 solves by CVXOPT's interior point on the dual with dense BLAS.

    Every column of a cone like Geo-Ind's is positive in every entry, so the master is dense and so
    is its K×K simplex basis: HiGHS' sparse LU then costs O(K²)+ per iteration (about 20 ms at
    K = 1,024, one to two thousand iterations a round). The dual of the phase-2 master,
    max Σ_i y_i over Vᵀ y ≤ c (V the K×n matrix of the LP's columns, c their costs), solved from
    scratch by CVXOPT's interior point (:func:`lpmech.solvers.dense_lp.solve`, its products by
    numpy's BLAS) costs about 20–30 iterations of one n×K×K product and one K×K Cholesky factor
    (BLAS-3). Its multipliers z ≥ 0 are the column weights λ (V λ = 1 to the
    solver's feasibility tolerance, :data:`IPM_TOL`); y are the duals (central on the optimal
    face, not a vertex's). Phase 1 and masters with extra rows stay with HiGHS' simplex.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.lam: np.ndarray | None = None
        self._excess = 0.0  # of the last interior-point solve (:meth:`excess`)
        self.y: np.ndarray | None = None
        self.objective = math.nan
        self.ipm_iterations = 0
        self.fresh = 0  # columns added or purged since the last solve

    def _insert(self, k: int, v: np.ndarray, key: bytes, born: int) -> None:
        super()._insert(k, v, key, born)
        self.fresh += 1

    def _dense(self) -> bool:
        return self.phase == 2 and self.m == self.K

    def feasible_start(self) -> bool:
        """No extra rows and a column of ones (weight 1 meets every unit row): no artificial is
        needed, and phase 2's interior point starts from no basis, so phase 1 is skipped (its
        simplex solve took 15 s at K = 1,024)."""
        return self.m == self.K and any(float(v.min()) == 1.0 for v in self.vs)

    def _solve(self) -> np.ndarray:
        fresh, self.fresh = self.fresh, 0
        if not self._dense() or not self.vs:
            self.lam = None
            return super()._solve()
        if fresh == 0 and self.lam is not None and self.y is not None:
            return self.y  # the LP has not changed since the last solve (phase 2's first round)
        from ..solvers import dense_lp

        _t = time.perf_counter()
        V = np.column_stack(self.vs)
        c = np.asarray(self.costs, float)
        n = V.shape[1]
        Vs, cs = V, c
        if self.covering:  # surplus columns −e_i: the multipliers y ≥ 0
            Vs, cs = np.hstack([V, -np.eye(self.K)]), np.concatenate([c, np.zeros(self.K)])
        sol = None
        try:
            for kkt in IPM_KKT:  # CVXOPT stalls near 1e-6 on some masters; the other factorisation
                sol = dense_lp.solve(Vs, cs, tol=IPM_TOL, kkt=kkt, stop=self._past_deadline)
                self.ipm_iterations += int(sol["iterations"])
                if sol["status"] == "optimal":
                    break
        except KeyboardInterrupt:  # Ctrl-C in a Python thread: the same stop request as HiGHS'
            stop.request("interrupted")
            raise _Stopped("interrupted") from None
        except dense_lp.Stopped:  # a stop request or the deadline, within an iteration
            raise _Stopped(stop.requested() or "time_limit") from None
        except (ValueError, ArithmeticError) as exc:  # a singular KKT system
            log.debug("dense IPM master failed (%s): simplex", exc)
            sol = None
        self.solve_log.append((self.now, V.shape[1], 0 if sol is None else int(sol["iterations"]),
                               time.perf_counter() - _t))
        lam = None
        if sol is not None and sol["status"] == "optimal":
            lam = np.maximum(np.asarray(sol["z"]).ravel()[:n], 0.0)
        elif sol is not None and sol["x"] is not None and not self.covering:
            # stalled: weights from its duals' support
            lam = self._support_weights(V, c, np.asarray(sol["x"]).ravel())
        if lam is None:  # HiGHS' simplex from its last basis (minutes at K = 1,024: the last resort)
            log.debug("dense IPM master not optimal: simplex")
            self.lam = None
            return super()._solve()
        self.lam = lam
        self.y = np.asarray(sol["x"]).ravel()
        self.objective = float(c @ self.lam)
        self._excess = float((V @ lam).max()) - 1.0
        self._keep_incumbent()
        return self.y

    def cover(self, on: bool) -> None:
        super().cover(on)
        self.fresh += 1  # another LP: solve again

    def excess(self) -> float:
        return super().excess() if self.lam is None else self._excess

    def _past_deadline(self) -> bool:
        """Whether a stop is requested or the user's time limit has passed (checked once per
        interior-point iteration: a solve takes up to a minute at K = 1,600)."""
        return bool(stop.requested()) or (self.deadline is not None
                                          and time.perf_counter() > self.deadline)

    def _support_weights(self, V: np.ndarray, c: np.ndarray, y: np.ndarray) -> np.ndarray | None:
        """Column weights λ ≥ 0 with V λ = 1 (to 1e-9) on the columns tight at the duals y
        (reduced cost under 1e-7·max(1, max c)), by non-negative least squares, or None: what an
        interior point that stalled near a residual of 1e-6 leaves is still a vertex's support."""
        from scipy.optimize import nnls

        rc = c - V.T @ y
        tight = np.nonzero(rc <= 1e-7 * max(1.0, float(np.abs(c).max())))[0]
        if tight.size == 0:
            return None
        try:
            w, resid = nnls(V[:, tight], np.ones(self.K), maxiter=50 * tight.size)
        except RuntimeError:  # no convergence within maxiter
            return None
        if resid > 1e-9 * math.sqrt(self.K):
            return None
        lam = np.zeros(V.shape[1])
        lam[tight] = w
        return lam

    def value(self) -> float:
        return self.objective if self.lam is not None else super().value()

    def rescale(self, f: float) -> None:
        super().rescale(f)
        self.fresh += 1  # new costs: solve again

    def _kept(self, keep: np.ndarray) -> None:
        self.fresh += int((~keep).sum())  # a changed LP: solve again
        if self.lam is not None:
            self.lam = self.lam[keep[:self.lam.size]]

    def sift_tol(self) -> float:
        # the interior point's duals are feasible to IPM_TOL (relative): a column back from the
        # pool at −1e-10 would come back for round-off and cost a whole solve
        if self.lam is None:
            return super().sift_tol()
        return 10 * IPM_TOL * max(1.0, float(np.abs(self.costs).max(initial=0.0)))

    def weights(self) -> np.ndarray:
        return self.lam if self.lam is not None else super().weights()

    def basic(self) -> np.ndarray:
        if self.lam is None:
            return super().basic()
        out = np.zeros(len(self.vs), dtype=bool)  # columns added since the solve: not basic
        n = min(out.size, self.lam.size)
        out[:n] = self.lam[:n] > IPM_ACTIVE * max(float(self.lam.max(initial=0.0)), 1e-300)
        return out


#: feasibility, absolute and relative tolerance of :class:`DenseIPMMaster`'s solves
IPM_TOL = 1e-9
#: KKT solvers tried in turn (:func:`lpmech.solvers.dense_lp.solve`): the normal equations by
#: numpy's BLAS (K = 1,024, 8,126 columns: 6.7–6.9 s against 9.5–10.4 s for CVXOPT's ``"chol"``,
#: whose iterates it takes, so "chol" is no fallback), then CVXOPT's ``"chol2"`` (the first
#: finished masters where "chol2" stalled; a stall of one is not always a stall of the other)
IPM_KKT = ("numpy", "chol2")
#: a column whose IPM weight is above this × the largest counts as "basic" for purging
IPM_ACTIVE = 1e-7
#: ``master_algorithm="auto"``: the dense interior-point master from this many unit rows up
DENSE_MASTER_MIN_K = 300


# ------------------------------------------------------------------------------ the rounds

#: a phase-2 optimum with the unit rows as Σ ≥ 1 is a mechanism when no row is covered more
#: than 1 + this (the dense master's feasibility tolerance)
COVER_TOL = 1e-9
#: ... and the rows become Σ = 1 once the gap is under this
COVER_GAP = 1e-4
#: ``stabilise="auto"``: the starting smoothing weight and its cap (:meth:`_State._adjust_alpha`)
AUTO_ALPHA0, AUTO_ALPHA_MAX = 0.5, 0.9
#: also add columns that price out at the smoothed point only (not at the master's duals)
ACCEPT_SMOOTHED = True
#: stop (certified, gap ≤ STALL_GAP × the floor) when the best bound moved less than 0.1 × the
#: floor in STALL_ROUNDS rounds: pricing LPs solved to finite tolerances can cap the bound there
STALL_GAP, STALL_ROUNDS = 10.0, 4


def _master_algorithm(name: str, K: int, dense: bool) -> str:
    """The master's solver: ``"auto"`` is ``"dense-ipm"`` for a notion with dense columns from
    :data:`DENSE_MASTER_MIN_K` unit rows up, else HiGHS' ``"simplex"``; any other name is passed
    to HiGHS."""
    if name == "auto":
        return "dense-ipm" if dense and K >= DENSE_MASTER_MIN_K else "simplex"
    if not isinstance(name, str) or name not in ("dense-ipm", "simplex", "ipm", "choose", "pdlp"):
        raise InputError(f"master_algorithm must be 'auto', 'dense-ipm', 'simplex', 'ipm', 'choose' "
                         f"or 'pdlp', got {name!r}")
    return name


def _check_inputs(notion, C, extra_rows, columns):
    if not isinstance(notion, Notion):
        raise InputError(f"decompose() needs a lpmech.design.Notion, got {type(notion).__name__}")
    C = np.asarray(C, float)
    if C.ndim != 2 or C.shape[0] != notion.K or not np.isfinite(C).all():
        raise InputError(f"cost matrix must be finite with K = {notion.K} rows, got shape {C.shape}")
    extra = check_extra_rows(extra_rows, C.shape)
    cols = []
    for k, v in columns:
        v = np.asarray(v, float)
        if not (0 <= int(k) < C.shape[1]) or v.shape != (notion.K,):
            raise InputError(f"starting column ({k!r}, v) must have 0 ≤ k < {C.shape[1]} and "
                             f"{notion.K} entries")
        cols.append((int(k), v))
    return C, extra, cols


def _admissible(notion: Notion, cols, tol: float = 1e-9):
    """The starting columns that lie in their cone (within ``tol``) and respect zeros(k)."""
    if not cols:
        return []
    V = np.column_stack([v for _, v in cols])
    bad = np.zeros(len(cols), dtype=bool)
    bad |= (V < -tol).any(axis=0) | (V > 1 + tol).any(axis=0)
    for c, rows in enumerate(notion.separate(extend(notion, np.clip(V, 0, 1)), tol)):
        bad[c] |= rows.shape[0] > 0
    for c, (k, v) in enumerate(cols):
        z = notion.zeros(k)
        if z is not None and np.any(v[np.asarray(z, dtype=np.int64)] != 0):
            bad[c] = True
    return [(k, np.clip(v, 0, 1)) for (k, v), b in zip(cols, bad) if not b]


def decompose(notion: Notion, C, *, extra_rows=(), columns=(), tol: float = 1e-7,
              abs_tol: float | None = None, executor=None, workers: int | None = None,
              max_rounds: int = 5000, time_limit: float | None = None, verbose: bool = False,
              stabilise: float | str = "auto", purge_after: int = 5, check_columns: bool = True,
              master_algorithm: str = "auto", master_options: dict | None = None,
              name: str = "decomposition", stall_gap: float = STALL_GAP,
              dual_start=None, cover: bool = False) -> Result:
    """Minimise Σ C_ik z_ik over mechanisms whose columns lie in the notion's cones (module doc).

    Args:
        notion: the rows of every output column (:class:`~lpmech.design.notion.Notion`).
        C: K×n cost matrix (n outputs; C_ik = p_i L_ik for an expected loss).
        extra_rows: master rows ``(A_r, lo, hi)``: lo ≤ Σ_ik A_r[i,k] z_ik ≤ hi (A_r K×n,
            ``None``/±inf for a missing side).
        columns: starting columns ``(k, v)`` (default: v = all ones for every k). Columns outside
            their cone are dropped (unless ``check_columns=False``: the caller vouches for them).
        tol, abs_tol: stop when upper − lower ≤ max(tol·|upper|, abs_tol); ``abs_tol`` defaults
            to 0.1·tol·Σ_i max_k |C_ik|: a floor for optima near 0, against the loss scale; the
            pricing LPs' absolute dual tolerance limits the relative gap when the optimum is tiny
            against the largest cost (large ε).
        executor: ``None``/``"local"``/``"process"`` or a ``distributed.Client`` (Dask actors).
        workers: pricing workers (default: 2 processes on ≥ 2 cores from n ≥ 100 outputs).
        max_rounds: round cap (status ``iteration_limit``); time_limit: seconds (``time_limit``).
        stabilise: Wentges smoothing weight in [0, 1) (0: off), or ``"auto"`` (default):
            self-adjusting from 0.5 by the subgradient's direction each smoothed round
            (``stats["alphas"]``; at small ε, where columns are flat, it needs a third fewer rounds).
        purge_after: every this many rounds take the master columns not basic for as many out of
            its LP into the pool that sifting prices (:class:`Master`; 0: never).
        dual_start: multipliers (unit rows, then extra rows, in the units of ``C``; e.g. the
            ``duals`` of a solve of a nearby instance) to price at once before the first round:
            its columns start the master, L(dual_start) the bound and the smoothing centre.
        master_algorithm: ``"auto"`` (default: :class:`DenseIPMMaster` for a notion with
            ``dense_columns`` from :data:`DENSE_MASTER_MIN_K` unit rows up, else HiGHS'
            simplex), ``"dense-ipm"``, or a
            HiGHS solver (``"simplex"``, ``"ipm"``, ...); ``master_options`` are HiGHS options.
        cover: phase 2 with the unit rows as Σ_k z_ik ≥ 1 (multipliers ≥ 0), then Σ = 1 near
            the end (module doc; ``stats["covered_until"]``). Needs every cost ≥ 0 (a row
            covered twice then costs no less) and no extra rows. Off by default here; OMG turns
            it on where neighbouring tents overlap, the design engine by
            :func:`~lpmech.design.engine.covering_rows`.
        verbose: a progress line per round (:class:`lpmech.progress.Progress`).

    Returns an *uncertified* :class:`Result`: ``x`` the K×n matrix of the last master solve,
    raveled; ``optimality`` (upper = master objective, bound = best Lagrangian bound) when the
    status is ``optimal``; ``duals`` the master's row multipliers; ``stats`` rounds, times (the
    master's share), columns, pricing rows, trace, the pool and its sifted columns,
    ``solve_log`` (round, LP columns, simplex or interior-point iterations, seconds of each
    master solve), ``master`` the master's solver. Status
    ``infeasible`` comes with a proof (a positive phase-1 Lagrangian bound).
    """
    what = name if "K=" in name else f"{name} K={getattr(notion, 'K', '?')}"
    prog = Progress(what, verbose=verbose, unit="round", logger=log)
    try:
        return _decompose(notion, C, extra_rows, columns, tol, abs_tol, executor, workers,
                          max_rounds, time_limit, stabilise, purge_after, check_columns,
                          master_algorithm, master_options, prog, float(stall_gap), dual_start,
                          cover)
    finally:
        prog.close()


def _decompose(notion, C, extra_rows, columns, tol, abs_tol, executor, workers, max_rounds,
               time_limit, stabilise, purge_after, check_columns, master_algorithm, master_options,
               prog, stall_gap=STALL_GAP, dual_start=None, cover=False) -> Result:
    t0 = time.perf_counter()
    time_limit = check_time_limit(time_limit)
    C, extra, cols = _check_inputs(notion, C, extra_rows, columns)
    if not isinstance(cover, bool | np.bool_):
        raise InputError(f"cover must be True or False, got {cover!r}")
    auto = isinstance(stabilise, str) and stabilise == "auto"
    if not auto and not (isinstance(stabilise, int | float) and 0 <= stabilise < 1):
        raise InputError(f"stabilise must be 'auto' or lie in [0, 1), got {stabilise!r}")
    stabilise = AUTO_ALPHA0 if auto else float(stabilise)
    if int(max_rounds) < 1:
        raise InputError(f"max_rounds must be at least 1, got {max_rounds!r}")
    K, n = C.shape
    # internal scaling: costs with max |C| = 1 (solver tolerances are absolute)
    cscale = float(np.abs(C).max()) or 1.0
    Cs = C / cscale
    worst = float(np.abs(Cs).max(axis=1).sum())
    abs_floor = (0.1 * tol * worst) if abs_tol is None else float(abs_tol) / cscale
    if not cols:
        cols = [(k, np.ones(K)) for k in range(n)]
    if check_columns:
        cols = _admissible(notion, cols)
    master_algorithm = _master_algorithm(master_algorithm, K, notion.dense_columns)
    if master_algorithm == "dense-ipm":
        master = DenseIPMMaster(Cs, extra, "simplex", master_options)
    else:
        master = Master(Cs, extra, master_algorithm, master_options)
    if cover and (float(C.min()) < 0 or extra):
        raise InputError("cover=True needs costs ≥ 0 (a row covered twice could then gain) and no "
                         "extra rows (the ones columns that keep Σ = 1 feasible may miss them)")
    master.use_cover = bool(cover)
    for k, v in cols:
        master.add(k, v)
    prog.note("master with %d starting columns; starting the pricing LPs", len(master.ks))
    pricer = _LazyPricer(lambda: make_pricer(notion, n, executor=executor, workers=workers))
    t_setup = time.perf_counter() - t0
    HI = np.ones((K, n))
    for k in range(n):
        z = notion.zeros(k)
        if z is not None:
            HI[np.asarray(z, dtype=np.int64), k] = 0.0
    st = _State(master, pricer, HI, tol, abs_floor, stabilise, purge_after, int(max_rounds),
                None if time_limit is None else t0 + time_limit, prog)
    st.stall_gap = stall_gap
    st.auto = auto
    if time_limit is not None:
        st.half = 0.5 * time_limit
    master.deadline = st.deadline
    try:
        try:
            status = _rounds(st, master, K, dual_start, cscale)
        except _Stopped as stopped:
            status = stopped.args[0]
        pricing_rows, asleep = pricer.n_rows(), pricer.asleep()
    finally:
        pricer.close()
    cscale = st.cscale
    elapsed = time.perf_counter() - t0
    stats = {"solver": "highs", "method": "decomposition", "master": master_algorithm,
             "ipm_iterations": getattr(master, "ipm_iterations", 0), "rounds": len(st.trace),
             "phase1_rounds": st.phase1_rounds, "columns": len(master.ks),
             "pool": len(master.pool_cols), "sifted": master.sifted, "solve_log": master.solve_log,
             "pricing_rows": int(pricing_rows), "pricing_asleep": int(asleep),
             "workers": getattr(pricer.inner, "workers", 0),
             "backend": getattr(pricer.inner, "backend", None),
             "setup_s": t_setup, "master_s": master.run_s, "pricing_s": st.pricing_s,
             "master_share": master.run_s / elapsed if elapsed > 0 else 0.0, "priced": st.n_priced,
             "max_rounds": int(max_rounds), "trace": st.trace, "time_s": elapsed,
             "alphas": st.alphas, "covered_until": st.uncovered_at}
    res = Result(status=status, stats=stats, x=master.matrix().ravel(),
                 duals=None if st.y is None else st.y * cscale)
    if status == "optimal":
        from ..certificate import OptimalityCertificate

        res.optimality = OptimalityCertificate.from_values(st.upper * cscale, st.best_lower * cscale)
        res.stats["stop"] = st.stop
    elif status in STOPS and master.incumbent is not None:
        # the last phase-2 master's mechanism and the best Lagrangian bound: the caller certifies
        from ..certificate import OptimalityCertificate

        res.x = master.incumbent.ravel()
        lower = st.best_lower * cscale if math.isfinite(st.best_lower) else None
        res.optimality = OptimalityCertificate.from_values(math.fsum((C * master.incumbent).ravel()),
                                                           lower)
    elif status == "infeasible":
        res.stats["phase1_bound"] = st.best_lower
    return res


def _rounds(st, master, K, dual_start, cscale) -> str:
    """Phase 1 (when the starting columns leave artificials) and phase 2; the final cost scale is
    left in ``st.cscale``."""
    st.cscale = cscale
    _, upper0 = (None, 0.0) if master.feasible_start() else master.run()
    status = "optimal"
    if upper0 > 1e-9 * max(1.0, K):
        status = st.run(phase=1)
    if status == "optimal":
        master.start_phase_2()
        _, upper = master.run()  # (Σ = 1: a mechanism, the incumbent a stop hands over)
        if 0 < upper < 0.1:  # the optimum is small against the largest cost: rescale
            f = max(upper, 1e-6)
            master.rescale(f)
            st.cscale *= f
            st.abs_floor /= f  # the same absolute floor in the rescaled costs' units
        if master.use_cover:
            master.cover(True)
        st.reset()
        if dual_start is not None:
            st.prog.note("pricing at the starting duals")
            st.price_at(np.asarray(dual_start, float) / st.cscale)
            st.prog.note("bound at the starting duals %.6g", st.best_lower * st.cscale)
        status = st.run(phase=2)
    return status


class _State:
    """The column-generation rounds of one solve (phase 1 and phase 2 share the pricing state)."""

    def __init__(self, master, pricer, HI, tol, abs_floor, stabilise, purge_after, max_rounds,
                 deadline, prog):
        self.master, self.pricer, self.HI = master, pricer, HI
        self.tol, self.abs_floor, self.stabilise = tol, abs_floor, stabilise
        self.purge_after, self.max_rounds, self.deadline, self.prog = (purge_after, max_rounds,
                                                                       deadline, prog)
        self.trace: list[dict] = []
        self.cscale = 1.0  # costs = cscale × the master's costs (set by _rounds)
        self.phase1_rounds = 0
        self.pricing_s = 0.0
        self.n_priced = 0
        self.stop = ""
        self.y = None
        self.stall_gap = STALL_GAP
        self.auto = False
        self.alphas: list[float] = []
        self.uncovered_at = 0  # the round after which the unit rows became Σ = 1 (0: never)
        self.half = math.inf  # half the time limit (s): Σ ≥ 1 stops there
        self.reset()

    def reset(self) -> None:
        K, n = self.HI.shape
        self.RHO = np.full((K, n), -np.inf)  # reduced costs of each pricing LP's last solve
        self.W_last = np.zeros((K, n))
        self.best_lower, self.upper, self.center = -math.inf, math.inf, None
        self.lowers: list[float] = []

    def _adjust_alpha(self, priced, y_m: np.ndarray) -> None:
        """Self-adjusting Wentges smoothing (Pessoa, Sadykov, Uchoa & Vanderbeck 2018): if the
        subgradient g = 1 − Σ_k v_k of L at the smoothed point (unit rows; v_k the priced minimisers
        of negative value) points towards the master's duals, trust them more (α − 0.1), else
        smooth harder (α + 0.1·(1 − α))."""
        K = self.HI.shape[0]
        g = np.ones(K)
        for _, v, value, _ in priced:
            if value < 0:
                g -= v
        if float(g @ (y_m[:K] - self.center[:K])) > 0:
            self.stabilise = max(0.0, self.stabilise - 0.1)
        else:
            self.stabilise = min(AUTO_ALPHA_MAX, self.stabilise + 0.1 * (1 - self.stabilise))
        self.alphas.append(self.stabilise)

    def _price(self, todo, W: np.ndarray, bounds: np.ndarray) -> list | None:
        """Price outputs ``todo`` at costs W; keep each one's reduced costs and put its Lagrangian
        bound into ``bounds``: the priced [(k, v, value, rho)], or None past the deadline."""
        ts = time.perf_counter()
        priced = self.pricer.price(todo, W, self.deadline)
        self.pricing_s += time.perf_counter() - ts
        for k, _, _, rho in priced or ():
            self.RHO[:, k], self.W_last[:, k] = rho, W[:, k]
            bounds[k] = lagrangian(rho, self.HI[:, k])
        if priced is not None:
            self.n_priced += len(priced)
        return priced

    def price_at(self, y: np.ndarray) -> None:
        """A pricing round at given multipliers y (phase 2, before the rounds): its columns join
        the master and L(y) becomes the first bound and smoothing centre."""
        m = self.master
        y = m.valid(np.asarray(y, float))
        W = m.pricing_costs(y)
        bounds = np.zeros(W.shape[1])
        priced = self._price(np.arange(W.shape[1]), W, bounds)
        if priced is None:
            return
        for k, v, value, _ in priced:
            if value < 0:
                m.add(k, v, 0)
        self.best_lower = m.rhs_term(y) + math.fsum(np.minimum(bounds, 0.0))
        self.center = y

    def run(self, phase: int) -> str:
        m = self.master
        smooth_next = True
        while True:
            rnd = len(self.trace) + 1
            m.now = rnd
            if rnd > self.max_rounds:
                return "iteration_limit"
            if stop.requested():
                return stop.requested()
            if self.purge_after and rnd % self.purge_after == 0:
                m.purge(rnd, self.purge_after)
            y_m, upper = m.run()
            self.upper = upper
            if phase == 1 and upper <= 1e-9:
                self.phase1_rounds = len(self.trace)
                return "optimal"
            W_m = m.pricing_costs(y_m)
            smoothed = smooth_next and self.center is not None and (self.stabilise > 0 or self.auto)
            if smoothed:
                y = self.stabilise * self.center + (1 - self.stabilise) * y_m
                W = m.pricing_costs(y)
            else:
                y, W = y_m, W_m
            self.y = y_m
            floor = max(self.tol * abs(upper), self.abs_floor) if phase == 2 else 1e-10
            thr = floor / W.shape[1]  # all n outputs below it: within the gap floor
            bounds = lagrangian(self.RHO + (W - self.W_last), self.HI)
            todo = np.nonzero(bounds < -thr)[0]
            priced = self._price(todo, W, bounds)
            added = improving = 0
            for k, v, value, _ in priced or ():
                rc = W_m[:, k] @ v  # its reduced cost at the master's duals
                if (rc < -thr or (ACCEPT_SMOOTHED and value < -thr)) and m.add(k, v, rnd):
                    added += 1
                    improving += rc < -thr
            if smoothed and self.auto and priced is not None:
                self._adjust_alpha(priced, y_m)
            lower = -math.inf
            if priced is not None:  # a complete pricing round: L(y) is a valid bound
                lower = m.rhs_term(y) + math.fsum(np.minimum(bounds, 0.0))
                if lower > self.best_lower:
                    self.best_lower, self.center = lower, y
            gap_abs = upper - self.best_lower
            gap = gap_abs / max(abs(upper), 1e-12)
            elapsed = self.prog.elapsed
            cs = self.cscale if phase == 2 else 1.0  # phase 2 in the caller's cost units
            self.trace.append({"round": rnd, "phase": phase, "upper": upper * cs, "lower": lower * cs,
                               "gap": gap, "added": added, "priced": 0 if priced is None else len(priced),
                               "smoothed": smoothed, "covering": m.covering, "columns": len(m.ks),
                               "master_s": m.run_s, "time_s": elapsed})
            self.prog.update(phase=phase, lower=self.best_lower * cs, upper=upper * cs, gap=gap,
                             priced=len(todo), added=added)
            if priced is None or (self.deadline is not None and time.perf_counter() > self.deadline):
                return stop.requested() or "time_limit"
            if phase == 1 and self.best_lower > 1e-9:
                return "infeasible"  # the phase-1 bound proves every mechanism violates some row
            late = self.deadline is not None and time.perf_counter() > self.deadline - self.half
            if phase == 2 and (gap <= COVER_GAP or late) and self._uncover(stop=False):
                continue  # the equality form's master next (past half a time limit: its
                # incumbent improves for the stop)
            if phase == 2 and gap_abs <= floor:
                if self._uncover():
                    continue
                self.stop = "gap"
                return "optimal"
            self.lowers.append(self.best_lower)
            if (phase == 2 and gap_abs <= self.stall_gap * floor and len(self.lowers) > STALL_ROUNDS
                    and self.best_lower - self.lowers[-1 - STALL_ROUNDS] <= 0.1 * floor):
                # the bound has stopped moving within STALL_GAP × the floor: the pricing LPs'
                # tolerances limit it there, and more rounds only chase round-off
                if self._uncover():
                    continue
                self.stop = f"bound stalled within {self.stall_gap:g}x the tolerance"
                return "optimal"
            if improving == 0 and not smoothed:  # no improving column at the master's duals: proved
                if phase == 1:  # artificials remain and nothing prices out
                    if upper <= 1e-7:
                        self.phase1_rounds = len(self.trace)
                        return "optimal"
                    return "infeasible" if self.best_lower > 0 else "error"
                if self._uncover():
                    continue
                self.stop = "no improving column"
                return "optimal"
            smooth_next = improving > 0  # a smoothed round that found nothing: price at the duals next

    def _uncover(self, stop: bool = True) -> bool:
        """With the unit rows as Σ ≥ 1, at a phase-2 stop (``stop``), once the gap is under
        :data:`COVER_GAP` or past half a time limit: the rows become Σ = 1 and the rounds go on
        (True), unless at a stop the optimum covers no row more than once (by :data:`COVER_TOL`):
        then it is a mechanism and the stop stands. Every output's column of ones (for outputs with
        no forced zeros) joins the master, which keeps the equality form feasible. The bound stays
        valid: L(y) bounds the equality form for every multiplier y."""
        m = self.master
        if not m.covering or (stop and m.excess() <= COVER_TOL):
            return False
        m.cover(False)
        rnd = len(self.trace)
        for k in np.nonzero(self.HI.min(axis=0) == 1)[0]:  # (the default starting columns)
            m.add(int(k), np.ones(m.K), rnd)
        # every column counts as basic now: the last basis was Σ ≥ 1's, and a purge by it could
        # leave the equality form without a feasible point
        m.last_basic = [rnd] * len(m.last_basic)
        self.uncovered_at = rnd
        return True


__all__ = ["DaskPricer", "DenseIPMMaster", "LocalPricer", "Master", "PricingActor", "PricingLP",
           "ProcessPricer", "decompose", "lagrangian", "make_pricer"]
