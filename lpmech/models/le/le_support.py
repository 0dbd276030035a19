"""LP (8)+(12) at scale by support generation: a small core LP, exact pricing, blocked points, a
greedy extension.

LP (8) with the co-location loss (12) is max Σ_k w_k z_kk over mechanisms whose columns are
d-private (z_ik ≤ e^{ε d_ij} z_jk) and whose rows sum to 1; its cost form 1 − Σ_k w_k z_kk (for
Σ w = 1) is what :func:`lpmech.models.le.solve` reports. On real data its optimum has a sparse dual
(Gowalla 12×12, ε = 1: 17 of the 144 row multipliers are non-zero) and uses few outputs, so this
path solves it on a small set T of points and a set A ⊆ T of outputs:

1. **Core.** LP (8) on the points T, outputs A: columns d-private on T, rows of T summing to 1
   (:func:`lpmech.design.outputs.restricted_lp`, d-privacy rows added lazily). Its objective is
   reached by the full mechanism of step 3, since the gain Σ w_k z_kk only reads entries on T.
2. **Bound.** With λ the core's row multipliers (0 outside T), for every mechanism z,
   Σ_k w_k z_kk = Σ_i λ_i + Σ_k (w_k z_kk − λ·z_·k) ≤ Σ_i λ_i + Σ_k V_k,
   V_k = max {w_k v_k − λ·v : v d-private, 0 ≤ v ≤ 1}. Only T ∪ {k} enter V_k: a log-Lipschitz
   function on a subset of a metric space extends to the whole space (McShane), within [0, 1].
   V_k is computed by an LP on T ∪ {k} whose d-privacy rows are added lazily (:class:`_PricingLP`),
   bounded from its own multipliers (valid whatever rows and the solver's tolerance);
   V_k ≤ V_j + max(0, w_k e^{ε d_jk} − w_j) (as v_k ≤ e^{ε d_jk} v_j) and V_k ≤ w_k + V_0
   skip most of the LPs (also on T: a cell of weight ~0, 40 % of T on Gowalla, has V_k within
   w_k of V_0). An output with V_k > 0 joins A (and T), while this
   core's own bound lags its objective by more than tol; an output the core leaves idle leaves A
   (once: :data:`IDLE_MASS`).
3. **Blocked points.** Every d-private extension of a core column lies between its envelopes,
   the largest value the points of T force (max_s z_s e^{−ε d_sj}) and the smallest they allow
   (min(1, min_s z_s e^{ε d_sj})). A point whose envelopes cannot sum to 1 is blocked: no
   mechanism extends the core there, so the core is a strict relaxation. The worst blocked points,
   spread apart, join T (:func:`blocked_points`). On Gowalla 32×32 at ε = 0.5 a core of 59 points
   blocked 595 of the 965 others; adding points 8 at a time as the greedy extension failed on
   them had not finished after 15 rounds and 600 s; this rule certified the optimum in 12 rounds
   and 283 s.
4. **Extension.** Once no point is blocked, each core column is extended to all points, one point
   at a time, most constrained first: a point's entries are placed at the same fraction of their
   envelopes (narrowed by the points placed before) so that the row sums to 1. A point where they
   cannot meet 1 joins T.

Each core starts from the d-privacy rows found before (kept per output as point pairs), and
rows likely active where T or A just grew: for a point that joins T, the rows that set its
envelopes in each column (:func:`envelope_pairs`); for an output that joins A, the rows active at
its price and those setting its maximiser's envelopes at the new points. On Gowalla 32×32 at
ε = 0.7 this cut the lazy rounds of the early cores from 10–12 to 4–5.

Every core but the last is solved once (:data:`CORE_ONCE`): the rows its point violates join
the next core, and rows far from binding leave it when T grows (:data:`KEEP_RATIO`). When a
core's point leaves nothing blocked, the rows it violates are re-solved locally
(:func:`_repair`: the entries of their points, all others fixed); if that mechanism is within tol
of the bound the loop ends on it, else the same core is solved again to its last row.

The loop ends when the extension succeeds and no output prices out; the result is then a full
mechanism with the core's objective and a Lagrangian bound (the engine certifies the matrix on all
pairs). Only LP (8) at r = 0 has this form: another loss reads entries outside T.
"""

from __future__ import annotations

import logging
import math
import sys
import time

import numpy as np
import scipy.sparse as sp

from ... import stop as halt
from ...certificate import OptimalityCertificate
from ...design.geoind import column_rows, most_violated, row_pairs
from ...design.notion import start_rows
from ...design.notions import DPrivacy
from ...design.outputs import restricted_lp
from ...errors import InputError
from ...mechanism import check_epsilon
from ...progress import Progress
from ...solvers.cutting_planes import LazyLP
from ...solvers.highs import add_rows, model_status, new_highs, run_highs
from ...solvers.result import STOPS, Result, check_time_limit

log = logging.getLogger(__name__)

__all__ = ["blocked_points", "envelope_pairs", "envelopes", "extend_columns", "solve_support"]

#: rows of the d-privacy start of each core column: pairs with each point's nearest neighbours in T
CORE_NEAR = 2
#: rows whose factor e^{−ε d} is under this are left out of the LPs (on a 32×32 grid at ε = 1 the
#: factors reach 1e-19 and stall the interior point): the core is then a relaxation that the
#: clean-up repairs at a relative cost of this order, and a pricing LP without them is a
#: relaxation too, so its value stays an upper bound
FACTOR_FLOOR = 1e-10
#: the core's LP: an interior point (central points need fewer extension fails than vertices:
#: m = 256, 9 rounds in 52 s against 16 in 379 s by dual simplex), PIQP's in a child process,
#: HiGHS' IPX as the fallback (:mod:`lpmech.solvers.race`). Clarabel's, raced before, was 2.3×
#: faster than IPX on a 32×32 core of 80 points × 56 outputs (12.7 s against 29.0 s) but 3.5×
#: slower on one of 229 points × 53 outputs (88.5 s against 25.0 s), when the fill of its factor
#: jumps; PIQP took 3.6–10.5 s on the cores of an ε = 0.7 run where Clarabel took 6.3–84 s and IPX
#: 25–45 s
CORE_LP = "race"
#: the core's LP when the interior multipliers leave the bound lagging (once per solve): HiGHS'
#: interior point with a final crossover, exact to the simplex tolerances
EXACT_CORE_LP = "ipm"
#: HiGHS tolerances of the pricing LPs: a price's bound from the LP's multipliers loses about
#: the dual tolerance per variable, which shows where the cost is small (Gowalla 10×10, ε = 4,
#: cost 0.071: certified gap 9.0e-6 at HiGHS' defaults, 1.2e-6 with these, 8 % slower)
PRICING_OPTIONS = {"dual_feasibility_tolerance": 1e-10, "primal_feasibility_tolerance": 1e-10}
#: a pricing LP starts from the rows between each point and this many nearest (:class:`_PricingLP`)
PRICE_NEAR = 4
#: and gains rows while its maximiser violates one by more than this
PRICE_TOL = 1e-12
#: the pricing LPs' costs are scaled to this largest magnitude: HiGHS' dual tolerance (1e-10, its
#: floor) is absolute, and the multipliers' bound loses about that per variable (148-point core at
#: ε = 0.7: bound − objective up to 4.5e-10 per price unscaled, 3e-14 scaled)
PRICE_SCALE = 1e3
#: an output whose core column carries at most this mass (summed over T) leaves A for the next
#: core, unless it left before: it is priced every round like any output outside A, and joins
#: again if it prices out. On Gowalla 32×32 at ε = 0.7, 23 of a 198-point core's 75 outputs
#: were idle; without them the core took 55 s against 85 s, to the same objective
IDLE_MASS = 1e-6
#: rows per violated entry per lazy round of the core (:func:`_deeper`): a 32×32 core of 124
#: points × 64 outputs took 6 rounds and 33 s with 3 (6: the same), 10 rounds and 52 s with 1
CORE_CUTS = 3
#: without :data:`CORE_ONCE`, a core's lazy rounds stop once one finds fewer rows than this (its
#: tail added them one at a time: 6 solves of 13–22 s for one row each on a 271-point core at
#: ε = 0.7, Gowalla 32×32);
#: such a core still gives valid multipliers and, cleaned, the blocked points, and where nothing
#: is blocked and the extension holds, the same core is solved again to its last row before the
#: loop may end on it
CORE_FEW = 12
#: ... or fewer than this fraction of the core's variables: on Gowalla 32×32 at ε = 1 a late core
#: (270 points × 95 outputs) found ~1,000, 430, 65 and 25 rows in its lazy rounds, each round a
#: cold solve of 25–30 s; with 2 % the core stops after the second (Gowalla 24×24, ε = 1: 15
#: rounds in 65 s against 19 in 130 s, with :data:`SPREAD` = 2)
CORE_FEW_FRAC = 0.02
#: rows per envelope side that a point joining T starts with in each core column
#: (:func:`envelope_pairs`)
SEED_DEPTH = 1
#: a point is blocked when its envelopes miss 1 by more than this (:func:`blocked_points`)
BLOCK_TOL = 1e-12
#: blocked points added in one round lie this many nearest-neighbour spacings apart
SPREAD = 2.0
#: a round adds up to max(``add_per_round``, this fraction of |T|) points and max(``add_outputs``,
#: this fraction of |A|) outputs: on Gowalla 32×32 at ε = 1 every round of the first 12 found
#: 16 blocked points and 8 priced outputs or more (the fixed caps), and the core ends near 470
#: points and 96 outputs, so fixed steps took 25+ rounds of growing cost
POINT_GROWTH = 0.15
OUTPUT_GROWTH = 0.25
#: a core that need not be the last is solved once (one interior-point solve; the rows its point
#: violates join the next core): on Gowalla 32×32 at ε = 1 the first 12 rounds took 160 s against
#: 379 s with lazy rounds to :data:`CORE_FEW_FRAC`, for the same |T| and |A| (125 s with
#: :data:`KEEP_RATIO` too)
CORE_ONCE = True
#: when T grows, a d-privacy row leaves the kept rows (:class:`_Pairs`) if the core's point is
#: this far from binding it (e^{−ε d_ij} z_ik < ratio · z_jk): on a 402-point core of Gowalla 32×32
#: at ε = 1, 2/3 of the 336k rows are, and the LP without them solved in 13.9 s against 48.8 s
#: (1,230 of them violated again, to be found by the next core)
KEEP_RATIO = 0.5


class _PricingLP:
    """max g·v over v ∈ [0, 1]^s with the rows F_ij v_i − v_j ≤ 0 (i ≠ j, F_ij ≥
    :data:`FACTOR_FLOOR`), rows added lazily: the model starts from the pairs ``start`` (s×s
    bool) and, while the maximiser violates a row by more than :data:`PRICE_TOL`, gains each
    point's most violated row on either side. The bound of :meth:`max_value` holds for the rows
    present (a relaxation), so it is valid at every step, and exact once none is violated. On a
    148-point core at ε = 0.7 (Gowalla 32×32) the models hold ~1,000 of the 21,600 rows, and
    pricing took 1.1 s against 14.4 s with all rows, with bounds tighter by up to 1e-10."""

    def __init__(self, F: np.ndarray, start: np.ndarray):
        s = F.shape[0]
        self.F, self.s = F, s
        self.ok = (F >= FACTOR_FLOOR) & ~np.eye(s, dtype=bool)
        self.has = np.zeros((s, s), bool)
        self.pairs = (np.zeros(0, np.int64), np.zeros(0, np.int64))  # (i, j) of each row
        self.h = new_highs("simplex", options=PRICING_OPTIONS)
        self.h.addVars(s, np.zeros(s), np.ones(s))
        self._A = sp.csr_matrix((0, s))
        self.add(start)

    @classmethod
    def near(cls, F: np.ndarray, count: int) -> _PricingLP:
        """A model starting from the rows between each point and its ``count`` nearest."""
        s = F.shape[0]
        start = np.zeros((s, s), bool)
        near = np.argsort(-F, axis=0, kind="stable")[1:count + 1]  # F_ij = e^{−ε d_ij}
        cols = np.broadcast_to(np.arange(s), near.shape)
        start[near, cols] = start[cols, near] = True
        return cls(F, start)

    def add(self, mask: np.ndarray) -> None:
        """Add the rows of the pairs in ``mask`` (s×s bool) not yet in the model."""
        i, j = np.nonzero(mask & self.ok & ~self.has)
        if not i.size:
            return
        R = column_rows(self.F, i, j, self.s)
        add_rows(self.h, R, np.full(i.size, -np.inf), np.zeros(i.size))
        self.has[i, j] = True
        self.pairs = tuple(np.concatenate([a, b]) for a, b in zip(self.pairs, (i, j)))
        self._A = sp.vstack([self._A, R], format="csr")

    def max_value(self, g: np.ndarray):
        """A valid upper bound of max g·v over the polytope, from the LP's multipliers: with
        y ≤ 0 on the rows Av ≤ 0, −g·v ≥ (−g − Aᵀy)·v ≥ Σ min(0, ·) for v ∈ [0, 1]. The costs
        are scaled to :data:`PRICE_SCALE` (HiGHS' dual tolerance is absolute). Returns
        ``(bound, (i, j), v)``: the pairs of the rows with a non-zero multiplier, and the
        maximiser."""
        scale = PRICE_SCALE / max(float(np.abs(g).max()), 1e-300)
        h, c = self.h, -g * scale
        h.changeColsCost(self.s, np.arange(self.s, dtype=np.int32), c)
        while True:
            run_highs(h)
            if model_status(h) != "optimal":
                h.clearSolver()
                run_highs(h)
            v = np.asarray(h.getSolution().col_value)
            viol = self.F * v[:, None] - v[None, :]
            viol[~self.ok | self.has] = -np.inf
            worst_i, worst_j = viol.argmax(axis=0), viol.argmax(axis=1)
            at = np.arange(self.s)
            new = np.zeros_like(self.has)
            hit = viol[worst_i, at] > PRICE_TOL
            new[worst_i[hit], at[hit]] = True
            hit = viol[at, worst_j] > PRICE_TOL
            new[at[hit], worst_j[hit]] = True
            if not new.any():
                break
            self.add(new)
        y = np.minimum(np.asarray(h.getSolution().row_dual), 0.0)
        rc = c - self._A.T @ y
        on = y < 0
        return float(-np.minimum(rc, 0.0).sum()) / scale, (self.pairs[0][on], self.pairs[1][on]), v


def _clean(F: np.ndarray, Z: np.ndarray) -> np.ndarray:
    """Core columns made d-private on T to round-off: clipped, raised to the smallest values the
    ratios allow (z'_jk = max_i F_ij z_ik), rows renormalised (twice)."""
    Z = np.maximum(Z, 0.0)
    for _ in range(2):
        Z = np.column_stack([(F * z[:, None]).max(axis=0) for z in Z.T])
        Z = Z / Z.sum(axis=1, keepdims=True)
    return Z


def envelopes(E: np.ndarray, T: np.ndarray, ZT: np.ndarray):
    """The least and the largest d-private extensions of each column given on the points T:
    ``lo[j, b] = max_s z_sb e^{−ε d_sj}``, ``hi[j, b] = min(1, min_s z_sb e^{ε d_sj})`` (m×|A|;
    ``E[i, j] = e^{−ε d_ij}``). Every extension lies between them, so a point j with
    Σ_b lo[j, b] > 1 or Σ_b hi[j, b] < 1 cannot get a row summing to 1, whatever the others get."""
    m, a = E.shape[0], ZT.shape[1]
    ET = E[T]
    lo, hi = np.empty((m, a)), np.empty((m, a))
    with np.errstate(divide="ignore"):
        for b in range(a):
            lo[:, b] = (ZT[:, b, None] * ET).max(axis=0)
            hi[:, b] = np.minimum(1.0, (ZT[:, b, None] / ET).min(axis=0))
    return lo, hi


def envelope_pairs(E: np.ndarray, P: np.ndarray, v: np.ndarray, J: np.ndarray, depth: int):
    """The rows that likely bind a column ``v`` (given on the points P) at new points J: for
    each j, the ``depth`` points s of P with the largest v_s e^{−ε d_sj} (rows (s, j): they set
    its least extension) and the smallest v_s e^{ε d_sj} (rows (j, s): its largest). Global
    pairs ``(i, j)`` of rows e^{−ε d_ij} z_i ≤ z_j."""
    G = E[np.ix_(P, J)]
    depth = min(depth, P.size)
    with np.errstate(divide="ignore"):
        low, high = v[:, None] * G, v[:, None] / G
    s_lo = np.argpartition(-low, depth - 1, axis=0)[:depth]
    s_hi = np.argpartition(high, depth - 1, axis=0)[:depth]
    jj = np.broadcast_to(J, (depth, J.size))
    return np.concatenate([P[s_lo].ravel(), jj.ravel()]), np.concatenate([jj.ravel(), P[s_hi].ravel()])


def blocked_points(D: np.ndarray, T: np.ndarray, lo: np.ndarray, hi: np.ndarray, count: int,
                   spread: float) -> list[int]:
    """Up to ``count`` points outside T whose envelopes cannot sum to 1 (:func:`envelopes`), the
    worst first, each at least ``spread`` from those picked before: a point added to T changes
    the core's columns around it, so its blocked neighbours often clear by themselves."""
    short = np.maximum(lo.sum(axis=1) - 1.0, 1.0 - hi.sum(axis=1))
    short[T] = 0.0
    picked: list[int] = []
    for j in np.argsort(-short, kind="stable"):
        if short[j] <= BLOCK_TOL or len(picked) >= count:
            break
        if all(D[j, p] >= spread for p in picked):
            picked.append(int(j))
    return picked


def extend_columns(E: np.ndarray, T: np.ndarray, ZT: np.ndarray, max_fail: int = 8,
                   bounds=None):
    """Extend columns given on the points T (rows summing to 1) to all m points, greedily.

    ``E[i, j] = e^{−ε d_ij}`` (m×m, 1 on the diagonal). Each point, the one with the least room
    first, gets z_j = lo + θ (hi − lo) with one θ for the row (so it sums to 1), lo/hi the tightest
    bounds its fixed neighbours impose (``bounds``: :func:`envelopes` of the same columns, if
    already computed). Returns ``(Z, fails)``: the m×|A| columns (rows of failed points left 0)
    and up to ``max_fail`` points whose intervals could not reach 1.
    """
    m, a = E.shape[0], ZT.shape[1]
    lo, hi = envelopes(E, T, ZT) if bounds is None else bounds  # not changed in place
    Z = np.zeros((m, a))
    Z[T] = ZT
    rest = np.setdiff1d(np.arange(m), T)
    fails: list[int] = []
    while rest.size:
        sl, sh = lo[rest].sum(axis=1), hi[rest].sum(axis=1)
        room = np.minimum(1.0 - sl, sh - 1.0)
        q = int(np.argmin(room))
        j = int(rest[q])
        rest = np.delete(rest, q)
        if room[q] < -1e-12:
            fails.append(j)
            if len(fails) >= max_fail:
                break
            continue
        theta = (1.0 - sl[q]) / max(sh[q] - sl[q], 1e-300)
        z = lo[j] + min(max(theta, 0.0), 1.0) * (hi[j] - lo[j])
        Z[j] = z
        lo = np.maximum(lo, z[None, :] * E[j][:, None])
        with np.errstate(divide="ignore"):
            hi = np.minimum(hi, z[None, :] / E[j][:, None])
    return Z, fails


def _extend(E, D, T, Zc, step: int, spread: float):
    """Cleaned core columns ``Zc`` extended to every point: (the m×|A| extension or None, the
    points that block it or fail it, how many of them are blocked). Blocked points
    (:func:`blocked_points`, up to ``step``, ``spread`` apart) come first; only where none is
    does the greedy extension run (:func:`extend_columns`)."""
    bounds = envelopes(E, T, Zc)
    fails = blocked_points(D, T, *bounds, step, spread)
    if fails:
        return None, fails, len(fails)
    Zx, fails = extend_columns(E, T, Zc, step, bounds=bounds)
    return Zx, fails, 0


class _Pairs:
    """The d-privacy rows found so far, per output, as global point pairs (i, j): kept across
    changes of T, so each core LP starts from them."""

    def __init__(self):
        self.by_output: dict[int, set] = {}

    def local(self, k: int, T: np.ndarray, F: np.ndarray, pos: dict) -> sp.csr_matrix:
        got = [(pos[i], pos[j]) for i, j in self.by_output.get(k, ()) if i in pos and j in pos]
        got = [(i, j) for i, j in got if F[i, j] > 0]  # rows the notion keeps (not implied)
        i, j = (np.array(x, np.int64) for x in zip(*got)) if got else (np.zeros(0, np.int64),) * 2
        return column_rows(F, i, j, T.size)

    def drop(self, k: int, i: np.ndarray, j: np.ndarray) -> None:
        """Forget rows (i, j) (global points) of output k."""
        self.by_output.get(int(k), set()).difference_update(zip(i.tolist(), j.tolist()))

    def add(self, k: int, i: np.ndarray, j: np.ndarray) -> None:
        """Rows (i, j) (global points) for output k's next core."""
        self.by_output.setdefault(int(k), set()).update(zip(i.tolist(), j.tolist()))


def _deeper(separate, times: int):
    """A stateful separator asked ``times`` times at each point: up to ``times`` rows per violated
    entry (it never returns a row twice), so fewer cold interior-point rounds."""
    if times <= 1:
        return separate

    def more(v):
        got = [R for R in (separate(v) for _ in range(times)) if R is not None and R.shape[0]]
        return sp.vstack(got, format="csr") if got else None

    return more


def _core(D, eps, w, T, A, pairs: _Pairs, deadline, lp: str = CORE_LP, few: int = 0):
    """LP (8) on the points T with outputs A (gain form): (status, Z on T×A, λ on T, gain,
    partial); ``partial``: stopped by ``few`` (:meth:`~lpmech.solvers.cutting_planes.LazyLP.solve`)
    with a few rows still violated."""
    DT = D[np.ix_(T, T)]
    notion = DPrivacy(DT, eps, n_near=CORE_NEAR, gamma=math.log(1 / FACTOR_FLOOR) / eps)
    pos = {int(p): s for s, p in enumerate(T)}
    S = [pos[int(k)] for k in A]
    scale = float(w[A].max()) or 1.0
    Cs = np.zeros((T.size, T.size))
    Cs[S, S] = -w[A] / scale
    rows, oracles = {}, {}
    for k, s in zip(A, S):
        rows[s] = sp.vstack([start_rows(notion, s), pairs.local(int(k), T, notion.F, pos)],
                            format="csr")
        oracles[s] = _deeper(notion.separator(s, rows[s]), CORE_CUTS)
    out, _ = restricted_lp(Cs, np.ones_like(Cs), [], sorted(S), rows, oracles, deadline,
                           np.zeros(0), lp=lp, few=few)
    if out.status != "optimal":
        return out.status, None, None, None, False, {}
    order = np.argsort(S)  # restricted_lp's variables follow sorted(S)
    Z = np.empty((T.size, len(S)))
    Z[:, order] = out.x[:T.size * len(S)].reshape(T.size, len(S))
    slack = {}  # rows far from binding at Z: left out of the next core if T grows
    for b, (k, s) in enumerate(zip(A, S)):
        i, j = row_pairs(rows[s])
        pairs.add(int(k), T[i], T[j])
        far = notion.F[i, j] * Z[i, b] < KEEP_RATIO * Z[j, b]
        slack[int(k)] = (T[i[far]], T[j[far]])
    lam = -np.asarray(out.duals[:T.size]) * scale
    return "optimal", Z, lam, -float(out.objective) * scale, out.partial, slack


def _repair(E, ET, w, T, A, ZT, pairs: _Pairs, deadline):
    """A partial core's columns (``ZT`` on T×A) made d-private on T: LP (8) over the entries of
    the points of the rows they violate, N, every other point of T fixed, so that its rows with
    N become bounds on N's entries (the envelopes of :func:`envelopes`); rows among N lazily,
    starting from the core's. Returns the columns (``ZT`` itself if no row is violated), or None
    if that LP has no optimum in time. On Gowalla 32×32 at ε = 1 a last partial core (474 points)
    violated 103 entries on 55 points: this LP took 1.2 s and its mechanism was 8.3e-7 (relative)
    off the bound; freeing the points within 3 cells of them too (258 points) gave 2.6e-8 in 92 s,
    and the core solved again to its last row took 149 s. ``ET``: E on T×T.
    """
    F = np.where(ET >= FACTOR_FLOOR, ET, 0.0)
    np.fill_diagonal(F, 0.0)
    i, j, _, _ = most_violated(F, ZT)
    if not i.size:
        return ZT
    N = np.unique(np.concatenate([i, j]))
    fix = np.setdiff1d(np.arange(T.size), N)
    a = A.size
    lo, hi = np.zeros((N.size, a)), np.ones((N.size, a))
    if fix.size:  # (the fixed points' own rows hold to the solver's tolerance: hi ≥ lo enforced)
        lo, hi = (v[T[N]] for v in envelopes(E, T[fix], ZT[fix]))
        hi = np.maximum(hi, lo)
    if (lo.sum(axis=1) > 1 + 1e-9).any() or (hi.sum(axis=1) < 1 - 1e-9).any():
        return None
    FN = F[np.ix_(N, N)]
    c = np.zeros(N.size * a)
    at = {int(p): s for s, p in enumerate(T[N])}
    for b, k in enumerate(A):
        if int(k) in at:
            c[at[int(k)] * a + b] = -w[k] / float(w[A].max())
    present = np.zeros((N.size, N.size, a), bool)

    def rows(ii, jj, bb):  # column_rows over N, lifted to output bb's entries (p·a + bb)
        R = sp.coo_matrix(column_rows(FN, ii, jj, N.size))
        return sp.csr_matrix((R.data, (R.row, R.col * a + bb[R.row])), shape=(ii.size, c.size))

    got = [(at[p], at[q], b) for b, k in enumerate(A) for p, q in pairs.by_output.get(int(k), ())
           if p in at and q in at]
    ii, jj, bb = (np.array(x, np.int64) for x in zip(*got)) if got else (np.zeros(0, np.int64),) * 3
    keep = FN[ii, jj] > 0
    ii, jj, bb = ii[keep], jj[keep], bb[keep]
    present[ii, jj, bb] = True

    def separate(x):
        vi, vj, vb, _ = most_violated(FN, x.reshape(N.size, a), present=present)
        if not vi.size:
            return None
        present[vi, vj, vb] = True
        return rows(vi, vj, vb), np.full(vi.size, -np.inf), np.zeros(vi.size)

    start = sp.vstack([sp.kron(sp.identity(N.size), np.ones((1, a))), rows(ii, jj, bb)], format="csr")
    lp = LazyLP(c, lo.ravel(), hi.ravel(), separate, A=start, method=CORE_LP,
                row_lo=np.concatenate([np.ones(N.size), np.full(ii.size, -np.inf)]),
                row_hi=np.concatenate([np.ones(N.size), np.zeros(ii.size)]))
    left = None if deadline is None else max(1e-3, deadline - time.perf_counter())
    out = lp.solve(time_limit=left)
    if out.status != "optimal":
        return None
    Z = ZT.copy()
    Z[N] = out.x.reshape(N.size, a)
    return Z


def _price(E, w, T, lam, thr):
    """Upper bounds of every output's price V_k (module docstring, step 2), which were solved,
    and, for the solved prices above ``thr``, ``seeds``: output → (its points P, its maximiser
    v on them, the global pairs (i, j) of the rows active there): a core column for that output
    will likely need those rows, and those of v's envelopes at points that join T."""
    m = w.size
    inT = np.zeros(m, bool)
    inT[T] = True
    lp = _PricingLP.near(E[np.ix_(T, T)], PRICE_NEAR)
    V0 = lp.max_value(-lam)[0]
    exact = np.full(m, np.nan)
    seeds = {}

    def seed(k, P, active, v):
        if exact[k] > thr:
            seeds[int(k)] = (P, v, P[active[0]], P[active[1]])

    for s, k in enumerate(T):
        if w[k] <= thr:  # V_0 ≤ V_k ≤ V_0 + w_k: no LP (the empty cells of real data; the same
            continue  # outside T below)
        g = -lam.copy()
        g[s] += w[k]
        exact[k], active, v = lp.max_value(g)
        seed(k, T, active, v)
    with np.errstate(divide="ignore"):
        Einv = 1.0 / E  # e^{ε d} (inf past underflow: no bound from there)
    VT = np.where(np.isnan(exact[T]), w[T] + max(V0, 0.0), exact[T])  # bounds of V_k on T
    bound = np.minimum(w + max(V0, 0.0),
                       (VT[:, None] + np.maximum(0.0, w[None, :] * Einv[T] - w[T, None])).min(axis=0))
    start = np.zeros((T.size + 1, T.size + 1), bool)  # an outside point's model: the rows the
    start[:-1, :-1] = lp.has  # T model found, and all of the point's own
    start[-1, :] = start[:, -1] = True
    for k in np.argsort(-w, kind="stable"):
        if inT[k] or bound[k] <= thr or w[k] <= thr:
            continue
        P = np.append(T, k)
        exact[k], active, v = _PricingLP(E[np.ix_(P, P)], start).max_value(np.append(-lam, w[k]))
        seed(k, P, active, v)
        bound = np.minimum(bound, exact[k] + np.maximum(0.0, w * Einv[k] - w[k]))
    values = np.where(np.isnan(exact), bound, np.minimum(exact, bound))
    return np.maximum(values, 0.0), exact, seeds


def _spacing(D: np.ndarray) -> float:
    """The median distance from a point to its nearest other point (0 if all coincide)."""
    near = np.where(np.eye(D.shape[0], dtype=bool), np.inf, D).min(axis=1)
    near = near[np.isfinite(near) & (near > 0)]
    return float(np.median(near)) if near.size else 0.0


def solve_support(instance, epsilon: float, *, tol: float = 1e-7, start=None,
                  add_per_round: int = 16, add_outputs: int = 8, max_rounds: int = 500,
                  max_points: int | None = None, time_limit: float | None = None,
                  verbose: bool = False) -> Result:
    """LP (8)+(12) for the instance's prior by support generation (module docstring).

    Args:
        instance: points (metric) and weights (the prior) of LP (8).
        tol: stop when the bound is within tol·|cost| of the mechanism.
        start: the first points T (default: the ⌈√m⌉ heaviest cells).
        add_per_round: at most max(this, :data:`POINT_GROWTH`·|T|) points join T per round:
            blocked points (:func:`blocked_points`, at least :data:`SPREAD` nearest-neighbour
            spacings apart), or where none is blocked, the greedy extension's failures.
        add_outputs: at most max(this, :data:`OUTPUT_GROWTH`·|A|) outputs join A per round
            (largest price first), while the core's own bound lags it by more than tol.
        max_rounds: cap (status ``iteration_limit``); time_limit: seconds (``time_limit``).
        max_points: stop (status ``iteration_limit``, ``stats["stop"] = "max_points"``) once T
            would grow past this many points (a cap for a caller with another path for a wide
            dual; :func:`lpmech.models.le.solve` sets none: on Gowalla 12×12 at ε = 4, 128 of
            the 144 points, support generation certifies in 24 s where output generation, which
            it fell back to before, ran past 900 s).

    Returns an uncertified :class:`Result`: ``x`` the m×m matrix (raveled), the cost
    1 − Σ w_k z_kk (Σ w in place of 1) and its Lagrangian bound; ``stats`` has ``rounds``,
    ``points`` (|T|), ``outputs`` (|A|), ``bound`` (the best Lagrangian bound, valid also after
    a stop at a limit), ``vertex_core`` (whether a core was solved again by a vertex because the
    interior multipliers left the bound lagging, :data:`EXACT_CORE_LP`) and a per-round ``trace``
    (``repaired_cost``: the cost of a partial core's repair, :func:`_repair`; the loop ends on it
    when that is within tol of the bound).
    """
    t0 = time.perf_counter()
    time_limit = check_time_limit(time_limit)
    deadline = None if time_limit is None else t0 + time_limit
    D = np.asarray(instance.metric, float)
    w = np.asarray(instance.prior, float)
    m = w.size
    epsilon = check_epsilon(epsilon)
    E = np.exp(-epsilon * D)
    W = float(w.sum())
    if start is None:
        start = np.argsort(-w, kind="stable")[:max(2, math.ceil(math.sqrt(m)))]
    T = np.unique(np.asarray(start, dtype=np.int64))
    if T.size == 0 or T.min() < 0 or T.max() >= m:
        raise InputError(f"start points must be indices in [0, {m})")
    A = T.copy()
    spread = SPREAD * _spacing(D)
    pairs = _Pairs()
    dropped: set[int] = set()  # outputs that left A once (:data:`IDLE_MASS`)
    trace: list[dict] = []
    status, Z, gain, upper, stop = "iteration_limit", None, -math.inf, math.inf, ""
    best = None  # (Z, gain) of the best round whose core extended to every point: the incumbent
    polish = None  # (|T|, |A|) of the core to solve again by a vertex
    exact_next = False  # solve the next core to the last row (:data:`CORE_FEW`)
    prog = Progress(f"LP(8) support generation m={m}", verbose=verbose, unit="round", logger=log)
    try:
        for rnd in range(1, int(max_rounds) + 1):
            if halt.requested():
                status = halt.requested()
                break
            vertex = polish == (T.size, A.size)
            few = (0 if vertex or exact_next else sys.maxsize if CORE_ONCE
                   else max(CORE_FEW, int(CORE_FEW_FRAC * T.size * A.size)))
            status, ZT, lam, gain, partial, slack = _core(
                D, epsilon, w, T, A, pairs, deadline, lp=EXACT_CORE_LP if vertex else CORE_LP, few=few)
            exact_next = False
            if status != "optimal":
                break
            cost = max(W - gain, 1e-12)
            thr = 0.1 * tol * cost / m
            values, exact, seeds = _price(E, w, T, lam, thr)
            own = float(lam.sum() + values.sum())  # this core's bound
            upper = min(upper, own)
            outside = np.ones(m, bool)
            outside[A] = False
            new = [int(k) for k in np.argsort(-values, kind="stable")
                   if values[k] > thr and outside[k]][:max(add_outputs, int(OUTPUT_GROWTH * A.size))]
            if own - gain <= tol * cost:
                new = []  # no output can improve this core by more than tol: none is needed
            ET = E[np.ix_(T, T)]
            Zc = _clean(ET, ZT)
            step = max(add_per_round, int(POINT_GROWTH * T.size))
            Zx, fails, blocked = _extend(E, D, T, Zc, step, spread)
            if not fails and (best is None or gain > best[1]):
                best = (Zx, gain, A)
            gap = (upper - gain) / cost
            trace.append({"round": rnd, "points": int(T.size), "outputs": int(A.size),
                          "cost": W - gain, "bound": W - upper, "gap": gap, "new_outputs": len(new),
                          "blocked": blocked, "extension_fails": len(fails) - blocked,
                          "priced_exactly": int((~np.isnan(exact)).sum()), "partial": partial,
                          "time_s": time.perf_counter() - t0})
            prog.update(points=T.size, outputs=A.size, cost=W - gain, bound=W - upper, gap=gap,
                        blocked=blocked, fails=len(fails) - blocked, new=len(new))
            if partial and not fails and not halt.requested():
                # the extension may end here: the rows the core's point violates re-solved
                # locally, or else the same core again, every row
                Zr = _repair(E, ET, w, T, A, ZT, pairs, deadline)
                if Zr is not None:
                    Zrc = _clean(ET, Zr)
                    gain_r = float(w[A] @ Zrc[np.searchsorted(T, A), np.arange(A.size)])
                    trace[-1]["repaired_cost"] = W - gain_r
                    if upper - gain_r <= tol * cost:
                        Zx, fails, _ = _extend(E, D, T, Zrc, step, spread)
                        if not fails:
                            Z = np.zeros((m, m))
                            Z[:, A] = Zx
                            gain, status = gain_r, "optimal"
                            break
                exact_next = True
                continue
            if (not fails and gap > tol and not vertex and polish is None
                    and values[outside].sum() <= tol * cost):
                # the bound lags by more than the outputs outside A could add: the interior
                # multipliers are not exact enough. Once, the same core again by a vertex.
                polish = (T.size, A.size)
                continue
            if not fails and (not new or gap <= tol):
                Z = np.zeros((m, m))
                Z[:, A] = Zx
                status = "optimal"
                break
            if halt.requested() or (deadline is not None and time.perf_counter() > deadline):
                status = halt.requested() or "time_limit"
                break
            for k, (i, j) in slack.items():  # (T grows: the rows far from binding go)
                pairs.drop(k, i, j)
            # the next core starts from rows likely active: a new point's envelope rows in
            # each column, a new output's rows active at its price
            grown = np.setdiff1d(np.array(new + fails, dtype=np.int64), T)
            for b, k in enumerate(A):
                pairs.add(k, *envelope_pairs(E, T, Zc[:, b], grown, SEED_DEPTH))
            for k in new:
                if k in seeds:
                    Pk, v, i, j = seeds[k]
                    pairs.add(k, i, j)
                    pairs.add(k, *envelope_pairs(E, Pk, v, np.setdiff1d(grown, Pk), SEED_DEPTH))
            T = np.union1d(T, np.array(new + fails, dtype=np.int64))
            idle = A[(Zc.sum(axis=0) <= IDLE_MASS) & ~np.isin(A, list(dropped))]
            dropped.update(idle.tolist())
            trace[-1]["idle_outputs"] = int(idle.size)
            A = np.union1d(np.setdiff1d(A, idle), np.array(new, dtype=np.int64))
            status = "iteration_limit"
            if max_points is not None and T.size > max_points:
                stop = "max_points"
                break
    finally:
        prog.close()
    stats = {"solver": f"{CORE_LP} (core), highs (pricing)", "method": "support",
             "rounds": len(trace), "points": int(T.size),
             "outputs": int(A.size), "trace": trace, "time_s": time.perf_counter() - t0,
             "bound": W - upper if math.isfinite(upper) else None,  # valid at any stop
             "stop": stop, "vertex_core": polish is not None}
    res = Result(status=status, stats=stats, x=None if Z is None else Z.ravel())
    if status == "optimal":
        res.optimality = OptimalityCertificate.from_values(W - gain, W - upper)
    elif status in STOPS and best is not None:  # the incumbent and the best bound: certified later
        Z = np.zeros((m, m))
        Z[:, best[2]] = best[0]
        res.x = Z.ravel()
        res.optimality = OptimalityCertificate.from_values(
            W - best[1], W - upper if math.isfinite(upper) else None)
    return res
