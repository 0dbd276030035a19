"""Lazy constraint generation: solve an LP whose rows are too many to write down.

:class:`LazyLP` keeps one HiGHS model with the rows found so far (or, with
``method="clarabel"``, passes them to Clarabel cold each round). :meth:`LazyLP.solve` alternates a
(warm-restarted) solve with a *separation oracle* ``separate(x) -> (A_new, lo_new, hi_new) | None``
that returns some rows the point ``x`` violates, until the oracle finds none. Dual simplex restarts
from the previous basis after rows are added (the old basis stays dual feasible), so each round
costs a few pivots.

Every relaxed LP is a relaxation of the full one, so the Lagrangian bound of its duals
(:func:`lpmech.certificate.lagrangian_bound`) is a valid lower bound for the full LP at every round;
when the oracle finds nothing, ``x`` is feasible for the full LP up to the oracle's tolerance and the
gap closes (a bound that still lags is tightened once, :func:`~lpmech.solvers.highs.needs_polish`).
The caller certifies the final point against *all* rows (the oracle's tolerance is not
trusted).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from ..certificate import lagrangian_bound
from ..errors import InputError
from . import race
from .clarabel_lp import TOL as CLARABEL_TOL
from .clarabel_lp import solve_lp
from .highs import add_rows, model_status, needs_polish, new_highs, run_highs, set_time_left, tighten
from .result import check_time_limit

log = logging.getLogger(__name__)

Separation = Callable[[np.ndarray], "tuple[sp.spmatrix, np.ndarray, np.ndarray] | None"]


@dataclasses.dataclass
class LazyOutcome:
    """What :meth:`LazyLP.solve` found: status, point, relaxed objective, duals, trace, and (when
    optimal) the Lagrangian bound of the duals, valid for the full LP."""

    status: str
    x: np.ndarray | None
    objective: float | None
    duals: np.ndarray | None
    rounds: int
    rows: int
    trace: list[dict]
    bound: float | None = None
    #: stopped by ``few`` (:meth:`LazyLP.solve`): the point may still violate a few rows
    partial: bool = False


class LazyLP:
    """``min c·x  s.t.  (rows so far), col_lo ≤ x ≤ col_hi``, rows added by a separation oracle.

    Args:
        c, col_lo, col_hi: objective and variable bounds (finite bounds keep every bound finite).
        separate: the oracle; it must return only rows valid for the full LP.
        A, row_lo, row_hi: optional rows to start with (scipy-sparse).
        method: HiGHS algorithm (``"simplex"`` restarts warm; ``"ipm"`` re-solves cold), or
            ``"clarabel"``: Clarabel's interior point (:mod:`lpmech.solvers.clarabel_lp`), cold each
            round, its point and multipliers interior (no vertex); or ``"race"``: the racers of
            :mod:`lpmech.solvers.race` (PIQP in a child process stopped at the deadline, HiGHS'
            interior point as the fallback; the trace's ``solver`` says which answered).
        options, verbose: passed to HiGHS (not to Clarabel).
        final_crossover: for ``"ipm"`` without crossover: once the oracle finds no row, solve the
            same LP once more with crossover for its multipliers (exact to the simplex tolerances: an
            interior point's are feasible only to ~1e-8 each, and a Lagrangian bound summed over
            many of them lags), and its vertex when the oracle passes that too. Otherwise the point
            stays the interior one, which the oracle passed: re-solving until a vertex passes costs
            a crossover per round (measured: 33 rounds against 8).
    """

    def __init__(self, c, col_lo, col_hi, separate: Separation, *, A=None, row_lo=None,
                 row_hi=None, method: str = "simplex", options: dict | None = None,
                 verbose: bool = False, final_crossover: bool = False):
        self.c = np.asarray(c, float)
        n = self.c.size
        self.col_lo = np.asarray(col_lo, float)
        self.col_hi = np.asarray(col_hi, float)
        if self.col_lo.shape != (n,) or self.col_hi.shape != (n,):
            raise InputError("LazyLP: c, col_lo and col_hi must have the same length")
        self.separate = separate
        self.cold = method in ("clarabel", "race")  # a cold interior point each round, no HiGHS model
        self.race = method == "race"
        self.final_crossover = bool(final_crossover) and not self.cold
        self.h = None
        self.solver = method  # the solver of the last round (the race's winner)
        if not self.cold:
            self.h = new_highs(method, options=options, verbose=verbose)
            self.h.addVars(n, _finite(self.col_lo), _finite(self.col_hi))
            self.h.changeColsCost(n, np.arange(n, dtype=np.int32), self.c)
        self._blocks: list[sp.csr_matrix] = []
        self._lo: list[np.ndarray] = []
        self._hi: list[np.ndarray] = []
        self._stacked = None
        if A is not None:
            self.add_rows(A, row_lo, row_hi)

    @property
    def n_rows(self) -> int:
        return int(sum(b.shape[0] for b in self._blocks))

    def add_rows(self, A, lo, hi) -> None:
        """Add rows ``lo ≤ A x ≤ hi`` to the model."""
        A = sp.csr_matrix(A, dtype=float)
        if A.shape[1] != self.c.size:
            raise InputError(f"LazyLP: rows have {A.shape[1]} columns, the LP has {self.c.size}")
        lo = np.broadcast_to(np.asarray(lo, float), (A.shape[0],)).copy()
        hi = np.broadcast_to(np.asarray(hi, float), (A.shape[0],)).copy()
        if self.h is not None:
            add_rows(self.h, A, lo, hi)
        self._blocks.append(A)
        self._lo.append(lo)
        self._hi.append(hi)
        self._stacked = None

    def set_cost(self, c) -> None:
        """Change the objective (the model and its basis are kept: a warm restart)."""
        self.c = np.asarray(c, float)
        if self.h is not None:
            self.h.changeColsCost(self.c.size, np.arange(self.c.size, dtype=np.int32), self.c)

    def matrix(self) -> tuple[sp.csr_matrix, np.ndarray, np.ndarray]:
        """All rows so far: ``(A, row_lo, row_hi)``."""
        if self._stacked is None:
            if not self._blocks:
                self._stacked = sp.csr_matrix((0, self.c.size)), np.zeros(0), np.zeros(0)
            else:
                self._stacked = (sp.vstack(self._blocks, format="csr"), np.concatenate(self._lo),
                                 np.concatenate(self._hi))
        return self._stacked

    def bound(self, duals) -> float:
        """Lagrangian bound of ``duals`` on the rows so far: valid for the full LP."""
        A, lo, hi = self.matrix()
        return lagrangian_bound(self.c, A, lo, hi, self.col_lo, self.col_hi, duals)

    def solve(self, *, time_limit: float | None = None, max_rounds: int = 10_000,
              few: int = 0) -> LazyOutcome:
        """Solve, separate, add rows, repeat until the oracle finds no violated row.

        ``few``: stop as soon as a round finds fewer than this many rows (but some): the outcome
        is ``partial``, its point violates those rows (their tail can take a re-solve per row:
        6 re-solves of 13–22 s for one row each on a 271-point core of LE's support generation),
        and its bound (the Lagrangian of the rows present) is still valid for the full LP. The
        rows are added, so a caller that needs the exact point solves again from them."""
        time_limit = check_time_limit(time_limit)
        t0 = time.perf_counter()
        trace: list[dict] = []
        polished = False
        crossed = not self.final_crossover
        for rnd in range(1, max_rounds + 1):
            left = None
            if time_limit is not None:
                left = time_limit - (time.perf_counter() - t0)
                if left <= 0:
                    return self._outcome("time_limit", None, rnd - 1, trace)
            ts = time.perf_counter()
            status, x, duals = self._run(left, polished)
            solve_s = time.perf_counter() - ts
            if status != "optimal":
                return self._outcome(status, None, rnd, trace)
            ts = time.perf_counter()
            cut = self.separate(x)
            sep_s = time.perf_counter() - ts
            added = 0 if cut is None else cut[0].shape[0]
            trace.append({"round": rnd, "rows": self.n_rows, "added": added,
                          "objective": float(self.c @ x), "solve_s": solve_s, "separate_s": sep_s,
                          "solver": self.solver})
            if 0 < added < few:
                out = self._outcome("optimal", x, rnd, trace, duals, self.bound(duals))
                out.partial = True
                self.add_rows(*cut)  # (after the bound: the duals are those of the rows before)
                return out
            if added == 0:
                if not crossed:
                    crossed = True
                    x, duals = self._vertex(x, duals)
                bound = self.bound(duals)
                if not polished and needs_polish(float(self.c @ x), bound):
                    polished = True  # once: solve again, tighter, from scratch (and separate again)
                    if self.h is not None:
                        tighten(self.h)
                    crossed = not self.final_crossover
                    continue
                return self._outcome("optimal", x, rnd, trace, duals, bound)
            self.add_rows(*cut)
        return self._outcome("time_limit", None, max_rounds, trace)

    def _cold(self, A, lo, hi, left, tol):
        """One cold interior-point solve (Clarabel, or the race of
        :data:`lpmech.solvers.race.SOLVERS`): ``(status, x, duals)``."""
        lp = (self.c, A, lo, hi, self.col_lo, self.col_hi)
        if not self.race:
            return solve_lp(*lp, time_limit=left, tol=tol)
        status, x, y, self.solver = race.solve_lp(*lp, time_limit=left, tol=tol)
        return status, x, y

    def _run(self, left: float | None, tight: bool):
        """One solve of the rows so far: ``(status, x, duals)``."""
        if self.cold:
            A, lo, hi = self.matrix()
            got = self._cold(A, lo, hi, left, CLARABEL_TOL * (1e-2 if tight else 1.0))
            if tight and got[0] != "optimal":  # the tighter tolerance out of reach: as before
                got = self._cold(A, lo, hi, left, CLARABEL_TOL)
            return got
        if left is not None:
            set_time_left(self.h, left)
        run_highs(self.h)
        status = model_status(self.h)
        if status == "error":  # HiGHS occasionally ends a warm restart "unknown": retry, cold
            run_highs(self.h)
            status = model_status(self.h)
            if status == "error":
                self.h.clearSolver()
                run_highs(self.h)
                status = model_status(self.h)
        if status != "optimal":
            return status, None, None
        sol = self.h.getSolution()
        return status, np.array(sol.col_value), np.array(sol.row_dual)

    def _vertex(self, x: np.ndarray, duals: np.ndarray):
        """The current LP solved again with crossover: its multipliers, and its vertex if the
        oracle passes it (else the rows it violates join the LP, still a relaxation, and ``x``
        stays); ``(x, duals)`` unchanged if that run does not end optimal. The model goes back
        to no crossover."""
        self.h.setOptionValue("run_crossover", "on")
        self.h.clearSolver()
        run_highs(self.h)
        if model_status(self.h) == "optimal":
            sol = self.h.getSolution()
            duals = np.array(sol.row_dual)
            vertex = np.array(sol.col_value)
            cut = self.separate(vertex)
            if cut is None or cut[0].shape[0] == 0:
                x = vertex
            else:  # the new rows get multiplier 0 (valid for any row)
                self.add_rows(*cut)
                duals = np.concatenate([duals, np.zeros(cut[0].shape[0])])
        self.h.setOptionValue("run_crossover", "off")
        return x, duals

    def _outcome(self, status, x, rounds, trace, duals=None, bound=None) -> LazyOutcome:
        obj = None if x is None else float(self.c @ x)
        return LazyOutcome(status, x, obj, duals, rounds, self.n_rows, trace, bound)


def _finite(a: np.ndarray) -> np.ndarray:
    import highspy

    return np.clip(a, -highspy.kHighsInf, highspy.kHighsInf)


__all__ = ["LazyLP", "LazyOutcome"]
