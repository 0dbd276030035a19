"""Solvers of the LIP MMSE design problem (Jiang, Li & Tandon's LIP papers; spec §4.7, §6).

Maximise the worst-case utility min_θ (Σ_k φ_θ(q_k) − E_θ‖V‖²) (= −max MSE of the MMSE estimator)
over channels Q whose output columns lie in the privacy cone K = {c ≥ 0 : A c ≤ 0} of
:func:`lpmech.models.lip.family_rows`. φ_θ (:func:`~.lip_estimation.column_utility`) is convex and
positively homogeneous, so splitting a column never lowers the utility, and

    max Σ_k φ(c_k)  s.t. c_k ∈ K, Σ_k c_k = 1   =   max Σ_j w_j φ(r_j)  s.t. Σ_j w_j r_j = 1, w ≥ 0

over the extreme rays r_j of K: an LP whose basic optimum uses at most d rays (so f = d outputs
suffice, [001] Thm 4) and whose dual is a certified bound. With several scenarios (bounded prior,
[004] eq. (16)) an epigraph variable t ≤ Σ_j w_j φ_θ(r_j) − E_θ‖V‖² makes it the minimax MSE.

* :func:`solve_vertex`: the exact vertex method (rays by Qhull; global, certified; d ≤ ~8).
* :func:`solve_local`: column generation on the same LP with a multi-start successive-LP pricing
  seeded from random HiGHS vertices and closed forms (large d; certified feasible, no bound).
* :func:`build_pyomo` + :func:`solve_pyomo_scip`: the declarative model, solved globally by SCIP's
  spatial branch and bound (a cross-check; much slower than the vertex method).
* :func:`solve_linear`: linear utilities (MAE [001] eq. (23), Hamming [004] eq. (42)) as LPs.
"""

from __future__ import annotations

import heapq
import logging
import math
import time

import numpy as np
import scipy.sparse as sp
from scipy.linalg import null_space
from scipy.optimize import linear_sum_assignment
from scipy.spatial import HalfspaceIntersection

from ... import stop as halt
from ...errors import InputError, SolverError, TimeLimitError
from ...solvers.highs import highs_lp, quiet_highs, run_highs, solve_lp
from ...solvers.result import Result, check_time_limit
from ..common import raise_for_status
from .lip import Scenario
from .lip_estimation import column_utility, second_moment

log = logging.getLogger(__name__)

__all__ = ["ExactPricing", "LPRank1Pricing", "build_pyomo", "cone_rays", "lip_section_box", "price_rank1",
           "price_rank1_lp", "price_separable", "solve_colgen", "solve_linear", "solve_local",
           "solve_pyomo_scip", "solve_vertex"]


# ------------------------------------------------------------------------ exact vertex method


def cone_rays(A, d: int, *, tol: float = 1e-9, interior=None) -> np.ndarray:
    """Extreme rays of K = {c ≥ 0 : A c ≤ 0}, normalised to Σ c = 1 (rows of the result).

    They are the vertices of the polytope S = K ∩ {Σ c = 1}, enumerated by Qhull's halfspace
    intersection in the (d−1)-dimensional affine hull; the uniform vector is a strictly interior
    point for every family of this module (each row is e^{−ε} u·c − w·c with u, w distributions).
    Each vertex is then re-solved exactly from its active constraints.
    """
    A = np.asarray(A, float).reshape(-1, d)
    H = np.vstack([A, -np.eye(d)])  # H c ≤ 0
    if d == 1:
        return np.ones((1, 1))
    c0 = np.full(d, 1.0 / d) if interior is None else np.asarray(interior, float) / np.sum(interior)
    N = null_space(np.ones((1, d)))  # d × (d−1), orthonormal
    G, h = H @ N, H @ c0
    if (h >= 0).any():
        raise InputError("the interior column (default uniform) is not strictly feasible: the family "
                         "is degenerate (epsilon = 0?)")
    norm = np.linalg.norm(G, axis=1)
    keep = norm > 1e-14
    G, h = G[keep] / norm[keep, None], h[keep] / norm[keep]
    if d == 2:
        g = G[:, 0]
        hi = np.min(-h[g > 0] / g[g > 0])
        lo = np.max(-h[g < 0] / g[g < 0])
        Z = np.array([[lo], [hi]])
    else:
        hs = HalfspaceIntersection(np.hstack([G, h[:, None]]), np.zeros(d - 1))
        Z = hs.intersections
    C = c0 + Z @ N.T
    # polish: re-solve each vertex from its active rows (plus Σ c = 1)
    Hn = H / np.linalg.norm(H, axis=1, keepdims=True)
    out = []
    for c in C:
        act = np.abs(Hn @ c) <= 1e-7
        M = np.vstack([Hn[act], np.ones((1, d))])
        rhs = np.zeros(M.shape[0])
        rhs[-1] = 1.0
        sol, *_ = np.linalg.lstsq(M, rhs, rcond=None)
        if np.linalg.matrix_rank(M, tol=1e-10) == d and np.abs(M @ sol - rhs).max() < 1e-9:
            c = sol
        c = np.clip(c, 0.0, None)
        out.append(c / c.sum())
    # duplicates by a relative key: rounding the rays themselves (to 1e-11) moved their small entries
    # by up to 1e-2 relative, and a ray's ratios are its privacy (realised ε 8.00001 for ε = 8)
    arr = np.array(out)
    key = np.where(arr > 0, np.round(np.log(np.where(arr > 0, arr, 1.0)), 8), -1e9)
    R = arr[np.sort(np.unique(key, axis=0, return_index=True)[1])]
    viol = (A @ R.T).max(initial=0.0) if A.size else 0.0
    if viol > tol:
        raise SolverError(f"vertex enumeration returned a point violating a row by {viol:g}")
    return R


def _ray_lp(R, scenarios, V):
    """The ray LP as bulk arrays: variables w (one per ray) and t (worst-case utility)."""
    n, d = R.shape
    phis = np.array([column_utility(R.T, s.prior, V) for s in scenarios])  # S × n
    m2 = np.array([second_moment(s.prior, V) for s in scenarios])
    S = len(scenarios)
    # rows 0..d−1: Σ_j w_j r_j = 1; rows d..d+S−1: t − Σ_j w_j φ_θ(r_j) ≤ −E_θ‖V‖²
    A = sp.vstack([sp.hstack([sp.csr_matrix(R.T), sp.csr_matrix((d, 1))]),
                   sp.hstack([sp.csr_matrix(-phis), sp.csr_matrix(np.ones((S, 1)))])]).tocsc()
    row_lo = np.r_[np.ones(d), np.full(S, -np.inf)]
    row_hi = np.r_[np.ones(d), -m2]
    col_lo = np.r_[np.zeros(n), -m2.max()]
    col_hi = np.r_[1.0 / R.max(axis=1), 0.0]
    c = np.r_[np.zeros(n), -1.0]  # min −t
    return c, A, row_lo, row_hi, col_lo, col_hi


def _order_columns(Q: np.ndarray) -> np.ndarray:
    """Put the columns in the order that maximises the trace (labels Y like X, the MAE tie-break of
    [001] Prop. 3), padding to d columns with never-used outputs when fewer are used."""
    d, f = Q.shape
    if f < d:
        Q = np.hstack([Q, np.zeros((d, d - f))])
    rows, cols = linear_sum_assignment(-Q)
    rest = [k for k in range(Q.shape[1]) if k not in set(cols)]
    order = list(cols[np.argsort(rows)]) + rest
    return Q[:, order]


class _Halt(Exception):
    """An LP of the column generation was interrupted by a stop request (:mod:`lpmech.stop`)."""


def solve_vertex(scenarios, V, A, *, time_limit: float | None = None,
                 interior=None) -> tuple[np.ndarray, float]:
    """Exact global optimum by the ray LP (module docstring): ``(Q, bound)`` with ``bound`` a
    certified upper bound on the worst-case utility min_θ (Σ_k φ_θ(q_k) − E_θ‖V‖²) = −max MSE."""
    d = scenarios[0].prior.size
    R = cone_rays(A, d, interior=interior)
    res = solve_lp(*_ray_lp(R, scenarios, V), time_limit=time_limit)
    raise_for_status(res, "LIP ray LP")
    w = res.x[:-1]
    used = w > 1e-12
    Q = (R[used] * w[used, None]).T
    bound = -res.optimality.bound
    log.info("vertex method: %d rays, %d used, bound %.12g", R.shape[0], used.sum(), bound)
    return _order_columns(Q), bound


# ------------------------------------------------------------------ local multi-start (SLP)


def _channel_lp(A, d: int, f: int, S: int):
    """Bulk constraints on x = (vec Q row-major, t): A q_k ≤ 0 ∀k, rows sum to 1; t free in [−∞, 0]."""
    r = A.shape[0]
    priv = sp.kron(sp.csr_matrix(A), sp.identity(f))  # row i·f+k, col m·f+k
    rows = sp.kron(sp.identity(d), np.ones((1, f)))
    M = sp.vstack([sp.hstack([priv, sp.csr_matrix((r * f, 1))]),
                   sp.hstack([rows, sp.csr_matrix((d, 1))])]).tocsr()
    lo = np.r_[np.full(r * f, -np.inf), np.ones(d)]
    hi = np.r_[np.zeros(r * f), np.ones(d)]
    return M, lo, hi


def _utility_and_grad(Q, s: Scenario, V):
    """F_θ(Q) = Σ_k φ_θ(q_k) − E_θ‖V‖² and its gradient (0 on unused columns: a subgradient)."""
    P = s.prior
    lam = P @ Q
    S = V.T @ (P[:, None] * Q)  # r × f
    num = (S ** 2).sum(axis=0)
    pos = lam > 1e-300
    inv = np.where(pos, 1.0 / np.where(pos, lam, 1.0), 0.0)
    F = float((num * inv).sum()) - second_moment(P, V)
    grad = 2 * P[:, None] * (V @ S) * inv - np.outer(P, num * inv ** 2)
    return F, grad


def _section_lp(A):
    """The LP of the cone section {r ∈ [0, 1]^d : A r ≤ 0, Σ r = 1} with zero costs (the pricing
    loops change only the costs)."""
    m, d = A.shape
    return highs_lp(np.zeros(d), np.vstack([A, np.ones((1, d))]), np.r_[np.full(m, -np.inf), 1.0],
                    np.r_[np.zeros(m), 1.0], np.zeros(d), np.ones(d))


class _ColumnPolytope:
    """The normalised cone section S = {r ≥ 0, Σ r = 1, A r ≤ 0} as a HiGHS model built once;
    :meth:`argmax` changes only the costs (the pricing loop solves many tiny LPs)."""

    def __init__(self, A, d: int):
        import highspy

        self.d = d
        lp = _section_lp(A)
        self.h = quiet_highs()
        self.h.setOptionValue("primal_feasibility_tolerance", 1e-10)
        self.h.setOptionValue("simplex_strategy", 4)  # primal simplex: a cost change keeps feasibility
        self.h.passModel(lp)
        self.idx = np.arange(d, dtype=np.int32)
        self.ok = highspy.HighsModelStatus.kOptimal

    def argmax(self, g) -> np.ndarray | None:
        """The vertex of S maximising g·r (``None`` if HiGHS fails; :class:`_Halt` on a stop)."""
        self.h.changeColsCost(self.d, self.idx, -np.asarray(g, float))
        run_highs(self.h)
        if self.h.getModelStatus() != self.ok:
            if halt.requested():
                raise _Halt
            return None
        r = np.clip(np.array(self.h.getSolution().col_value), 0, None)
        return r / r.sum()


class _RayMaster:
    """The ray LP (:func:`_ray_lp`) kept in one HiGHS model: columns are added as rays are found and
    each re-solve starts from the previous basis.

    ``scaled`` (one scenario): the same LP in posterior form, rows Σ_j ω_j π_j = P on the support of
    P with π_j = P∘r_j/λ_j and ω_j = λ_j w_j (row x multiplied by P_x), so that inputs of tiny prior
    (a binomial tail) give well-scaled rows and duals; rays of zero mass are not needed (the inputs
    of zero prior are free). :meth:`solve` returns the weights and duals of the unscaled LP."""

    def __init__(self, scenarios, V, d: int, *, scaled: bool = False, dual_tol: float = 1e-9):
        import highspy

        self.scen, self.V, self.d, self.S = scenarios, V, d, len(scenarios)
        self.m2 = np.array([second_moment(s.prior, V) for s in scenarios])
        self.inf = highspy.kHighsInf
        self.h = quiet_highs()
        self.h.setOptionValue("output_flag", False)
        self.dual_tol = dual_tol
        for k, v in {"primal_feasibility_tolerance": 1e-9, "dual_feasibility_tolerance": dual_tol}.items():
            self.h.setOptionValue(k, v)
        self.scaled = scaled and self.S == 1
        P = scenarios[0].prior
        # scaled: rows of the inputs of positive prior (inputs of zero prior are free: any column)
        self.supp = np.nonzero(P > 0)[0] if self.scaled else np.arange(d)
        if self.scaled:
            self.h.setOptionValue("small_matrix_value", 1e-15)
        self.pos = np.full(d, -1)
        self.pos[self.supp] = np.arange(self.supp.size)
        n = self.supp.size
        rhs = P[self.supp] if self.scaled else np.ones(d)
        lo = np.r_[rhs, np.full(self.S, -self.inf)]
        hi = np.r_[rhs, -self.m2]
        self.n = n
        self.h.addRows(n + self.S, lo, hi, 0, np.array([], np.int32), np.array([], np.int32),
                       np.array([], float))
        rows = np.arange(n, n + self.S, dtype=np.int32)
        # t ≤ 0 holds through its rows; no bound on it (an active bound at MSE = 0 would take the duals)
        self.h.addCol(-1.0, -float(self.m2.max()), self.inf, self.S, rows, np.ones(self.S))  # t
        self.rays: list[np.ndarray] = []
        self.lam: list[float] = []
        self.ok = highspy.HighsModelStatus.kOptimal

    def set_dual_tol(self, tol: float) -> None:
        if tol != self.dual_tol:
            self.dual_tol = tol
            self.h.setOptionValue("dual_feasibility_tolerance", tol)

    def add(self, rays) -> None:
        P = self.scen[0].prior
        for r in rays:
            phi = np.array([float(column_utility(r[:, None], s.prior, self.V)[0]) for s in self.scen])
            if self.scaled:
                lam = float(P @ r)
                if lam <= 0:
                    continue  # a ray on free inputs only
                pi = P * r / lam
                nz = np.nonzero((pi > 0) & (self.pos >= 0))[0]
                idx = np.r_[self.pos[nz], self.n + np.arange(self.S)].astype(np.int32)
                val = np.r_[pi[nz], -phi / lam]
                self.h.addCol(0.0, 0.0, 1.0, idx.size, idx, val)
            else:
                lam = 1.0
                nz = np.nonzero(r > 0)[0]
                idx = np.r_[nz, self.d + np.arange(self.S)].astype(np.int32)
                val = np.r_[r[nz], -phi]
                self.h.addCol(0.0, 0.0, float(1.0 / r.max()), idx.size, idx, val)
            self.rays.append(r)
            self.lam.append(lam)

    def solve(self):
        run_highs(self.h)
        if self.h.getModelStatus() != self.ok:  # numerical trouble: once more from scratch
            self.h.clearSolver()
            run_highs(self.h)
        if self.h.getModelStatus() != self.ok:  # then by interior point (with crossover)
            self.h.clearSolver()
            self.h.setOptionValue("solver", "ipm")
            run_highs(self.h)
            self.h.setOptionValue("solver", "choose")
        if self.h.getModelStatus() != self.ok and halt.requested():
            raise _Halt
        if self.h.getModelStatus() != self.ok:
            raise SolverError("the LIP column-generation master did not solve to optimality "
                              f"({self.h.getModelStatus()}, {len(self.rays)} columns)")
        sol = self.h.getSolution()
        x, y = np.array(sol.col_value), np.array(sol.row_dual)
        w = x[1:] / np.array(self.lam) if self.scaled else x[1:]
        yc = np.zeros(self.d)
        if self.scaled:
            # a row of tiny prior may carry a huge, arbitrary dual (it is degenerate): any duals give
            # a valid bound, so cap them at 1e3·max‖V_x‖² (far above any meaningful value)
            cap = 1e12 * max(1.0, float((self.V ** 2).sum(axis=1).max()))
            yc[self.supp] = np.clip(y[:self.n], -cap, cap) * self.scen[0].prior[self.supp]
        else:
            yc[self.supp] = y[:self.n]
        return w, float(x[0]), yc, np.maximum(0.0, -y[self.n:])


def _price(r, y, mu, scenarios, V):
    """Reduced-cost gain r·y + Σ_θ μ_θ φ_θ(r) of ray r, and its gradient (convex in r)."""
    val, grad = float(r @ y), np.array(y, float)
    for m, s in zip(mu, scenarios, strict=True):
        if m > 0:
            F, g = _utility_and_grad(r[:, None], s, V)
            val += m * (F + second_moment(s.prior, V))
            grad = grad + m * g[:, 0]
    return val, grad


def solve_local(scenarios, V, A, rng: np.random.Generator, *, starts: int = 4, f: int | None = None,
                warm_starts=(), max_rounds: int = 500, time_limit: float | None = None):
    """Column generation on the ray LP with a multi-start local pricing: ``(Q, utility, info)``.

    The master is the ray LP of :func:`solve_vertex` over the rays found so far (HiGHS; always
    feasible, the ``warm_starts``' columns are rays). Pricing maximises the reduced-cost gain
    r·y + Σ_θ μ_θ φ_θ(r), a convex function, over the cone section S by successive LP ascent
    (linearise, move to the best LP vertex, repeat while it improves: a first-order stationary
    vertex), started from the master's basic rays and ``starts`` random LP vertices (random costs,
    HiGHS) per round. It stops when no start finds an improving ray: the result is optimal over
    every ray the local pricing can reach (exact when the pricing is; no bound is claimed).
    ``f`` is accepted for interface symmetry; the result uses at most d + |θ| − 1 outputs.
    """
    if not isinstance(rng, np.random.Generator):
        raise InputError("solve_local needs an explicit numpy.random.Generator")
    t0 = time.perf_counter()
    d = scenarios[0].prior.size
    poly = _ColumnPolytope(np.asarray(A, float), d)
    rays = []
    for W in warm_starts:
        W = np.asarray(W, float)
        if W.shape[0] == d:
            rays += [c / c.sum() for c in W.T if c.sum() > 1e-12]
    rounds = lps = 0
    stop, last = None, None  # a stop's reason; the rays and weights of the last master solved
    try:
        for _ in range(starts):
            r = poly.argmax(rng.standard_normal(d))
            if r is not None:
                rays.append(r)
        if not rays:
            raise SolverError("the local LIP solve found no feasible ray")
        master = _RayMaster(scenarios, V, d)
        master.add(np.unique(np.round(np.array(rays), 12), axis=0))
        while True:
            rounds += 1
            w, best_val, y, mu = master.solve()
            last = (len(master.rays), w, best_val)
            if halt.requested() or (time_limit is not None and time.perf_counter() - t0 > time_limit):
                stop = halt.requested() or "time_limit"
                break
            if rounds >= max_rounds:
                stop = "iteration_limit"
                break
            tol = 1e-10 * max(1.0, abs(best_val))
            basic = np.nonzero(w > 1e-12)[0]
            seeds = [master.rays[j] for j in rng.choice(basic, size=min(basic.size, 2 * starts),
                                                         replace=False)]
            seeds += [r for r in (poly.argmax(rng.standard_normal(d)) for _ in range(starts))
                      if r is not None]
            new = []
            for r in seeds:
                val, grad = _price(r, y, mu, scenarios, V)
                for _ in range(100):
                    rn = poly.argmax(grad)
                    lps += 1
                    if rn is None:
                        break
                    vn, gn = _price(rn, y, mu, scenarios, V)
                    if vn <= val + 1e-12:
                        break
                    r, val, grad = rn, vn, gn
                if val > tol:
                    new.append(r)
            if not new:
                break
            master.add(np.unique(np.round(np.array(new), 12), axis=0))
    except _Halt:  # a stop during a HiGHS run: the last master's channel stands
        stop = halt.requested() or "interrupted"
    if last is None:  # stopped before the first master solve: nothing to hand over
        raise_for_status(Result(status=stop, stats={"rounds": rounds}), "LIP local solve")
    n_rays, w, best_val = last
    R = np.array(master.rays[:n_rays])
    used = w > 1e-12
    Q = (R[used] * w[used, None]).T
    info = {"rounds": rounds, "rays": int(R.shape[0]), "pricing_lps": lps, "starts": starts,
            "stop": stop}
    log.info("local solve: %d rounds, %d rays, %d pricing LPs, utility %.12g", rounds, R.shape[0],
             lps, best_val)
    return _order_columns(Q), float(best_val), info


# --------------------------------------------- exact pricing and certified column generation


def lip_section_box(scenarios, notion: str, epsilon: float):
    """The section of the ε-LIP cone (G = X, one prior) at λ = P·c = 1: the box
    e^{−ε} ≤ c_x ≤ e^{ε} on the support of P (spec §2.6, linearised eq. (26)), with the inputs of
    zero prior free (c_x ≥ 0, no row). Returns ``(support mask, lo, hi)`` or ``None`` when the family
    has no such structure (latent secret, prior set, LDP, Pufferfish)."""
    if notion != "lip" or len(scenarios) != 1 or scenarios[0].T is not None:
        return None
    P = scenarios[0].prior
    return P > 0, float(np.exp(-epsilon)), float(np.exp(epsilon))


def price_rank1(P, w, y, lo: float, hi: float, *, top: int = 16):
    """Exact max of (w·c)² + y·c over B = {lo ≤ c ≤ hi, P·c = 1} (P > 0): ``(gains, points)``, the
    ``top`` best candidates, best first.

    For s = w·c, g(s) = max{y·c : c ∈ B, w·c = s} is concave piecewise linear, so s² + g(s) is convex
    on each piece and its maximum lies at a breakpoint: a vertex of the upper chain of the 2-D
    projection c ↦ (w·c, y·c) of B. Each such vertex maximises (y + θw)·c over B for some θ, and a
    linear function is maximised over a box ∩ {P·c = 1} greedily (raise coordinates in decreasing
    order of z_x/P_x = y_x/P_x + θ·w_x/P_x); the order changes only where two of these lines in θ
    cross, so one θ per interval between crossings (and one beyond each end) gives every vertex:
    O(d²) greedy solutions, vectorised.
    """
    P, w, y = (np.asarray(v, float) for v in (P, w, y))
    d = P.size
    rho, a = y / P, w / P
    i, j = np.triu_indices(d, 1)
    da = a[i] - a[j]
    nz = np.abs(da) > 0
    th = np.unique(-(rho[i][nz] - rho[j][nz]) / da[nz])
    if th.size:
        span = 1.0 + np.abs(th).max()
        thetas = np.r_[th[0] - span, (th[:-1] + th[1:]) / 2, th[-1] + span]
    else:
        thetas = np.zeros(1)
    C = _greedy_box(P, rho[None, :] + thetas[:, None] * a[None, :], np.full(d, lo), np.full(d, hi))
    s = C @ w
    gain = s * s + C @ y
    k = np.argsort(-gain)[:top]
    return gain[k], C[k]


def _greedy_box(P, ratio, lo, hi):
    """For each row of ``ratio``: the maximiser of Σ ratio_x·P_x·c_x over {lo ≤ c ≤ hi, P·c = 1}
    (fill the P-mass above lo in decreasing ratio order)."""
    ratio = np.atleast_2d(ratio)
    order = np.argsort(-ratio, axis=1, kind="stable")
    cap = (P * (hi - lo))[order]
    before = np.cumsum(cap, axis=1) - cap
    up = np.clip(1.0 - P @ lo - before, 0.0, cap)
    C = np.broadcast_to(lo, ratio.shape).copy()
    np.put_along_axis(C, order, np.take_along_axis(C, order, axis=1) + up / P[order], axis=1)
    return C


def _relax_batch(P, alpha, y, LO, HI):
    """The secant relaxation of :func:`price_separable` at a batch of nodes (rows of ``LO``, ``HI``):
    ``(upper bounds, greedy points, their values, branching coordinates (−1: none))``."""
    slope = alpha * (LO + HI) + y
    order = np.argsort(-slope / P, axis=1, kind="stable")
    cap = np.take_along_axis(P * (HI - LO), order, axis=1)
    free = 1.0 - LO @ P
    up = np.clip(free[:, None] - (np.cumsum(cap, axis=1) - cap), 0.0, cap)
    C = LO.copy()
    np.put_along_axis(C, order, np.take_along_axis(LO, order, axis=1) + up / P[order], axis=1)
    base = (alpha * LO * LO + y * LO).sum(axis=1)
    ub = base + (slope * (C - LO)).sum(axis=1)
    val = (alpha * C * C + y * C).sum(axis=1)
    score = alpha * (C - LO) * (HI - C)
    score[~((C > LO) & (C < HI))] = -1.0
    j = np.argmax(score, axis=1)
    j[score[np.arange(j.size), j] < 0] = -1
    return ub, C, val, j


def price_separable(P, alpha, y, lo: float, hi: float, *, tol: float = 0.0, rel: float = 0.0,
                    max_nodes: int = 100_000, pool: list | None = None, stop_above: float = math.inf,
                    max_batch: int = 64, enough: float = -math.inf):
    """Exact max of Σ_x α_x c_x² + y_x c_x (α ≥ 0) over B = {lo ≤ c ≤ hi, P·c = 1} by spatial branch
    and bound: ``(upper bound, best point, its value, nodes)``.

    A node is a sub-box; its relaxation replaces each convex term by its secant on the node's
    interval (an over-estimate, exact at both ends), a linear function maximised greedily. At most one
    coordinate is strictly inside its interval, so the node's gap is α_j (c_j − lo_j)(hi_j − c_j), and
    the node is split there.
    A node is pruned when its bound is within ``tol + rel·max(best, 0)`` of the best point (``rel > 0``:
    an early stop while the best gain is large; the returned upper bound still covers every pruned node,
    so it is valid whatever ``rel`` and ``max_nodes``). ``pool``: a list that receives ``(value,
    point)`` for node points of value above ``tol`` (the 16 best of each batch at least; more columns
    per pricing call). ``stop_above``: stop as soon as a point's value exceeds it (the caller has no use
    for a bound above it); the returned upper bound is still valid. ``max_batch``: nodes expanded per
    step (their children are relaxed together as arrays; 1: one node at a time, the reference).
    ``enough``: the caller only needs to know whether the max is ≤ ``enough`` (column generation: the δ
    that certifies the gap), so a node whose bound is ≤ it is pruned as well; the returned upper bound
    is valid (≤ ``enough`` when no point above it exists and the search ends).
    """
    P, alpha, y = (np.asarray(v, float) for v in (P, alpha, y))

    def value(c):
        return float((alpha * c * c + y * c).sum())

    if np.ptp(P) == 0 and np.ptp(alpha) == 0:  # identical items (histogram, uniform prior): by
        # exchange, some optimum puts the k largest y at hi, the next one free, the rest at lo
        d = P.size
        order = np.argsort(-y, kind="stable")
        k = np.arange(d)
        free = (1.0 - P[0] * (k * hi + (d - k - 1) * lo)) / P[0]
        ok = (free >= lo - 1e-12) & (free <= hi + 1e-12)
        C = np.full((int(ok.sum()), d), lo)
        for row, kk, cf in zip(C, k[ok], free[ok], strict=True):
            row[order[:kk]] = hi
            row[order[kk]] = min(max(cf, lo), hi)
        vals = [value(c) for c in C]
        b = int(np.argmax(vals))
        if pool is not None:
            pool += [(v, c) for v, c in zip(vals, C, strict=True) if v > tol]
        return vals[b], C[b], vals[b], 0

    def cut():
        return max(best + tol + rel * max(best, 0.0), enough)

    # best-first, a batch of the most promising nodes at a time, each batch's children relaxed
    # together as arrays (numpy per batch, not Python per node); the batch grows from 16 to max_batch
    # (larger batches expand nodes that a later incumbent would have pruned: 64 was the best trade-off
    # on the Gowalla d = 86 pricing problems)
    lo0, hi0 = np.full((1, P.size), lo), np.full((1, P.size), hi)
    ub, C, val, J = _relax_batch(P, alpha, y, lo0, hi0)
    best_c, best = C[0], float(val[0])
    if pool is not None and best > tol:
        pool.append((best, C[0]))
    heap = [(-float(ub[0]), 0, lo0[0], hi0[0], C[0], int(J[0]))]
    count = nodes = 0
    pruned = -math.inf  # the largest bound of a node dropped by the relative rule
    batch = min(16, max_batch)
    while heap and -heap[0][0] > cut() and nodes < max_nodes and best <= stop_above:
        take = []
        while heap and len(take) < min(batch, max_nodes - nodes) and -heap[0][0] > cut():
            node = heapq.heappop(heap)
            nodes += 1
            if node[5] >= 0:
                take.append(node)
        batch = min(2 * batch, max_batch)
        if not take:
            continue
        k = len(take)
        LO = np.array([t[2] for t in take] * 2)
        HI = np.array([t[3] for t in take] * 2)
        jj = np.array([t[5] for t in take])
        cj = np.array([t[4][t[5]] for t in take])
        rows = np.arange(k)
        HI[rows, jj] = cj  # left children: c_j ≤ the parent's c_j
        LO[k + rows, jj] = cj  # right children: c_j ≥ it
        ub, C, val, J = _relax_batch(P, alpha, y, LO, HI)
        b = int(np.argmax(val))
        if val[b] > best:
            best, best_c = float(val[b]), C[b]
        if pool is not None:
            top = np.argsort(-val)[:16]  # the best of the batch (callers keep the best few)
            pool += [(float(val[i]), C[i]) for i in top if val[i] > tol]
        c0 = cut()
        keep = ub > c0
        if (~keep).any():
            pruned = max(pruned, float(ub[~keep].max()))
        for i in np.nonzero(keep)[0]:
            count += 1
            heapq.heappush(heap, (-float(ub[i]), count, LO[i], HI[i], C[i], int(J[i])))
    # nodes pushed before the best improved may now lie below the cut: they count as pruned
    upper = max(best, pruned, -heap[0][0]) if heap else max(best, pruned)
    return upper, best_c, best, nodes


def counts_denominator(P, *, max_den: int = 400_000):
    """N such that P = counts / N with integer counts (an empirical prior), or ``None`` (none up to
    ``max_den``). Tries N = k / min P for min counts k = 1..100."""
    P = np.asarray(P, float)
    pmin = float(P.min())
    if pmin <= 0:
        return None
    for k in range(1, 101):
        N = round(k / pmin)
        if N > max_den:
            return None
        c = P * N
        if np.abs(c - np.round(c)).max() <= 1e-8 and int(np.round(c).sum()) == N:
            return N
    return None


def price_separable_counts(counts, alpha, y, lo: float, hi: float):
    """Exact max of Σ_x α_x c_x² + y_x c_x over B = {lo ≤ c ≤ hi, P·c = 1} for P = counts / N with
    integer counts, by dynamic programming: ``(max, point)``.

    The max of a convex function over B is at a vertex: every coordinate at lo or hi but at most one
    (j). With H the coordinates at hi, Σ_{x∈H} P_x (hi − lo) = u·S for the integer S = Σ_{x∈H} n_x
    and u = (hi − lo)/N, so c_j = lo + (1 − lo − u·S)/P_j (P sums to 1). For each j a max-plus
    knapsack over the other counts gives the best Σ_{x∈H} (f_x(hi) − f_x(lo)) for every S; the best
    vertex is the max over j and S of that plus f_j(c_j) − f_j(lo) + Σ_x f_x(lo). O(d²N) time, exact
    up to round-off; no relaxation, so no branch-and-bound plateau (the duals of a converged master
    make many vertices near-optimal, where the secant bound of :func:`price_separable` stalls).
    """
    n = np.round(np.asarray(counts, float)).astype(np.int64)
    alpha, y = np.asarray(alpha, float), np.asarray(y, float)
    N, d = int(n.sum()), n.size
    P = n / N
    u, W = (hi - lo) / N, 1.0 - lo
    f_lo, f_hi = alpha * lo * lo + y * lo, alpha * hi * hi + y * hi
    v = f_hi - f_lo
    S = np.arange(N + 1)

    def knapsack(j, keep=False):
        G = np.full(N + 1, -np.inf)
        G[0] = 0.0
        took = []
        for x in range(d):
            if x == j or n[x] == 0:
                continue
            c = int(n[x])
            cand = G[:-c] + v[x]
            better = cand > G[c:]
            G = G.copy()
            G[c:] = np.where(better, cand, G[c:])
            if keep:
                took.append((x, c, np.r_[np.zeros(c, bool), better]))
        return G, took

    best, arg = -math.inf, None
    for j in range(d):
        G, _ = knapsack(j)
        cj = lo + (W - S * u) / P[j]
        ok = np.isfinite(G) & (cj >= lo - 1e-12) & (cj <= hi + 1e-12)
        if not ok.any():
            continue
        cjo = np.clip(cj[ok], lo, hi)
        val = G[ok] + alpha[j] * cjo * cjo + y[j] * cjo - f_lo[j]
        i = int(np.argmax(val))
        if val[i] > best:
            best, arg = float(val[i]), (j, int(S[ok][i]), float(cjo[i]))
    j, s, cj = arg
    _, took = knapsack(j, keep=True)
    c = np.full(d, lo)
    c[j] = cj
    for x, cx, better in reversed(took):  # backtrack the knapsack
        if s >= cx and better[s]:
            c[x] = hi
            s -= cx
    return best + float(f_lo.sum()), c


class ExactPricing:
    """The exact pricing oracle of the LIP ray LP for ε-LIP with G = X and one prior: max over the
    cone of the reduced-cost gain r·y + μ φ(r), normalised to λ = P·r = 1 (so φ(r) = ‖Vᵀ(P∘r)‖²).

    Exact for a rank-one value matrix (summation, weighted sum, survey: :func:`price_rank1`) and for
    value matrices with orthogonal rows (histogram: :func:`price_separable`). :meth:`make` returns
    ``None`` for any other family or task. Its gains are per unit of mass (λ = 1), as are the reduced
    costs of the posterior-form master (``scaled_master``), so the master's dual tolerance and the
    column threshold are on the scale of the gap they must close."""

    scaled_master = True

    def __init__(self, P, V, lo, hi, kind):
        self.supp = P > 0
        self.P, self.V, self.lo, self.hi, self.kind = P[self.supp], V[self.supp], lo, hi, kind
        self.nodes = 0
        # separable branch and bound: stop once the best gain is within 20 % of the bound (the bound
        # stays valid, it only loosens while gains are large) and return up to 8 improving points
        self.rel, self.top, self.cheap_nodes = 0.2, 8, 300
        # an empirical prior (counts / N): the exact knapsack DP when the branch and bound stalls
        self.den = counts_denominator(self.P) if kind == "separable" else None

    @classmethod
    def make(cls, scenarios, V, notion: str, epsilon: float) -> ExactPricing | None:
        box = lip_section_box(scenarios, notion, epsilon)
        if box is None:
            return None
        _, lo, hi = box
        P = scenarios[0].prior
        V = np.asarray(V, float).reshape(P.size, -1)
        Vs = V[P > 0]
        if V.shape[1] == 1:
            return cls(P, V, lo, hi, "rank1")
        G = Vs @ Vs.T
        if np.abs(G - np.diag(np.diag(G))).max(initial=0.0) <= 1e-12 * max(1.0, np.abs(G).max()):
            return cls(P, V, lo, hi, "separable")
        return None

    def initial_rays(self) -> list[np.ndarray]:
        """Good first columns: for a rank-one task the "windows" that put the upper bound on a run
        of consecutive values (in value order, from each start, both directions; the optimum is
        made mostly of such columns), else none."""
        if self.kind != "rank1":
            return []
        d = self.P.size
        pos = np.empty(d)
        pos[np.argsort(self.V[:, 0], kind="stable")] = np.arange(d)
        start = np.arange(d)[:, None]
        up = np.where(pos >= start, pos - start, d + start - pos)
        down = np.where(pos <= start, start - pos, d + pos - start)
        C = _greedy_box(self.P, -np.vstack([up, down]), np.full(d, self.lo), np.full(d, self.hi))
        rays = np.zeros((C.shape[0], self.supp.size))
        rays[:, self.supp] = C
        return [r / r.sum() for r in rays]

    def __call__(self, y, mu: float, tol: float, bound_tol: float | None = None, cheap: bool = False,
                 useless: float = math.inf, enough: float = -math.inf):
        """``(δ, rays)``: δ an upper bound on max gain over the section (exact up to ``bound_tol``,
        default ``0.1·tol``), and the improving points found (gain > ``tol``), as full-length rays
        normalised to Σ = 1. ``cheap``: cap the branch and bound at ``cheap_nodes`` nodes (δ stays a
        valid, looser bound; column generation uses it between exact rounds). ``useless``: a δ above it
        is of no use to the caller, so the search may stop once a point's gain exceeds it. ``enough``:
        a δ at or below it is all the caller needs (it certifies the gap): the branch and bound prunes
        below it (:func:`price_separable`)."""
        ys = np.asarray(y, float)[self.supp]
        if self.kind == "rank1":
            w = math.sqrt(max(mu, 0.0)) * self.V[:, 0] * self.P
            gains, pts = price_rank1(self.P, w, ys, self.lo, self.hi)
            delta = float(gains[0])
            pts = pts[gains > tol]
        else:
            alpha = max(mu, 0.0) * self.P ** 2 * (self.V ** 2).sum(axis=1)
            pool: list = []
            delta, _, _, nodes = price_separable(self.P, alpha, ys, self.lo, self.hi,
                                                    tol=0.1 * tol if bound_tol is None else bound_tol,
                                                    rel=self.rel, pool=pool, stop_above=useless,
                                                    max_nodes=self.cheap_nodes if cheap else 100_000,
                                                    enough=enough)
            self.nodes += nodes
            pool.sort(key=lambda t: -t[0])
            pts = [c for v, c in pool if v > tol][:self.top]
            pts = np.array(pts) if pts else np.zeros((0, self.P.size))
        rays = np.zeros((pts.shape[0], self.supp.size))
        rays[:, self.supp] = pts
        return delta, [r / r.sum() for r in rays]


    def certify(self, y, mu: float = 1.0):
        """``(δ, rays)`` by :func:`price_separable_counts` (exact, no node cap) for a histogram with
        an empirical prior, else ``None``: column generation calls it when the branch and bound
        leaves the gap open without finding a column. δ carries a round-off margin."""
        if self.den is None:
            return None
        ys = np.asarray(y, float)[self.supp]
        alpha = max(mu, 0.0) * self.P ** 2 * (self.V ** 2).sum(axis=1)
        best, c = price_separable_counts(self.P * self.den, alpha, ys, self.lo, self.hi)
        scale = float(np.abs(alpha * self.hi ** 2).sum() + np.abs(ys * self.hi).sum())
        r = np.zeros(self.supp.size)
        r[self.supp] = c
        return best + 1e-12 * scale, [r / r.sum()]


class _SectionLP:
    """The section {c ≥ 0 : A c ≤ 0, P·c = 1} of a privacy cone (support of P only) as one HiGHS
    model in the variables π = P∘c (the posterior: Σ π = 1, rows A/P, well scaled however small P
    gets); :meth:`argmax` changes the costs and re-solves from the previous basis."""

    def __init__(self, A, P):
        import highspy

        d = P.size
        self.P = P
        An = A / P[None, :]
        An = An / np.maximum(np.abs(An).max(axis=1, keepdims=True), 1e-300)
        lp = _section_lp(An)
        self.h = quiet_highs()
        for k in ("primal_feasibility_tolerance", "dual_feasibility_tolerance"):
            self.h.setOptionValue(k, 1e-10)
        self.h.passModel(lp)
        self.d, self.idx = d, np.arange(d, dtype=np.int32)
        self.ok = highspy.HighsModelStatus.kOptimal
        self.calls = 0

    def argmax(self, g) -> np.ndarray:
        """The c of the section maximising g·c (a vertex)."""
        cost = -np.asarray(g, float) / self.P
        cost = cost / max(np.abs(cost).max(), 1e-300)  # the argmax is scale-free; HiGHS is not
        self.h.changeColsCost(self.d, self.idx, cost)
        run_highs(self.h)
        self.calls += 1
        if self.h.getModelStatus() != self.ok:  # numerical trouble: once more from scratch
            self.h.clearSolver()
            run_highs(self.h)
        if self.h.getModelStatus() != self.ok and halt.requested():
            raise _Halt
        if self.h.getModelStatus() != self.ok:
            raise SolverError(f"the LIP pricing LP over the cone section did not solve "
                              f"({self.h.getModelStatus()})")
        pi = np.clip(np.array(self.h.getSolution().col_value), 0.0, None)
        return pi / pi.sum() / self.P


def price_rank1_lp(section: _SectionLP, w, y, *, tol: float = 0.0, max_lps: int = 10_000):
    """Exact max of y·c + (w·c)² over a polytope section (an LP oracle) by a branch and bound on
    the upper chain of its 2-D projection c ↦ (m, g) = (w·c, y·c): ``(upper bound, points, gains)``.

    For fixed m the best g is a concave function ĝ(m) (the upper chain), and m² + ĝ(m) is convex on
    each edge, so the maximum is at a chain vertex. Every LP answer v(θ) = max (y + θw)·c is a global
    upper line g ≤ v(θ) − θ m. An interval [a, b] between two known points is bounded by the max of
    m² + min(its lines) (at an end or where the lines cross); the interval is refined by the LP along
    its chord (a point above the chord splits it, none closes it) until every open bound is within
    ``tol`` of the best point. The returned bound is valid when ``max_lps`` stops the search.
    """
    w, y = np.asarray(w, float), np.asarray(y, float)

    def point(c):
        m, g = float(w @ c), float(y @ c)
        return m, g, m * m + g

    pts = [section.argmax(-w), section.argmax(y), section.argmax(w)]
    vals = [point(c) for c in pts]
    best = max(v[2] for v in vals)
    # lines: (v, θ) with g ≤ v − θ m; the θ = 0 answer is the line g ≤ g0
    line0 = (vals[1][1], 0.0)
    lps = 3

    def bound(ma, mb, lines):
        cand = [ma, mb]
        if len(lines) == 2:
            (va, ta), (vb, tb) = lines
            if ta != tb:
                ms = (vb - va) / (tb - ta)
                if ma < ms < mb:
                    cand.append(ms)
        return max(m * m + min(v - t * m for v, t in lines) for m in cand)

    heap = []
    count = 0
    for (ia, ib, lines) in ((0, 1, [line0]), (1, 2, [line0])):
        ma, mb = vals[ia][0], vals[ib][0]
        if mb - ma > 1e-12 * max(1.0, abs(ma), abs(mb)):
            heapq.heappush(heap, (-bound(ma, mb, lines), count, ia, ib, lines))
            count += 1
    closed = -math.inf  # bound of intervals closed by an LP answer on their chord (plus LP slack)
    while heap and -heap[0][0] > best + tol and lps < max_lps:
        _, _, ia, ib, lines = heapq.heappop(heap)
        (ma, ga, sa), (mb, gb, sb) = vals[ia], vals[ib]
        theta = -(gb - ga) / (mb - ma)
        c = section.argmax(y + theta * w)
        lps += 1
        m, g, gain = point(c)
        v = g + theta * m
        chord = ga + theta * ma
        line = (v, theta)
        if gain > best:
            best = gain
        slack = v - chord
        eps_m = 1e-12 * max(1.0, abs(ma), abs(mb))
        if slack <= 1e-12 * max(1.0, abs(chord)) or m < ma - eps_m or m > mb + eps_m:
            closed = max(closed, sa, sb, max(sa, sb) + max(slack, 0.0))
            continue
        pts.append(c)
        vals.append((m, g, gain))
        k = len(vals) - 1
        if m <= ma + eps_m:  # above an end point that is not on the upper chain: replace it
            kids = [(k, ib, [line, lines[-1]])]
        elif m >= mb - eps_m:
            kids = [(ia, k, [lines[0], line])]
        else:
            kids = [(ia, k, [lines[0], line]), (k, ib, [line, lines[-1]])]
        for (i, j, ls) in kids:
            if vals[j][0] - vals[i][0] <= eps_m:
                closed = max(closed, vals[i][2], vals[j][2])
                continue
            heapq.heappush(heap, (-bound(vals[i][0], vals[j][0], ls), count, i, j, ls))
            count += 1
    upper = max(best, closed, -heap[0][0] if heap else -math.inf)
    upper += 1e-9 * max(1.0, abs(upper))  # the LP answers are optimal to HiGHS' tolerances only
    gains = np.array([v[2] for v in vals])
    return upper, np.array(pts), gains, lps


class LPRank1Pricing:
    """Exact pricing for any single-prior privacy cone given by rows (latent-secret LIP, CIP, DI,
    LDP, Pufferfish) and a rank-one task (sum, weighted sum, survey): :func:`price_rank1_lp` over the
    section {c ≥ 0 : A c ≤ 0, P·c = 1}. Inputs of zero prior must be free (no row touches them)."""

    kind = "rank1-lp"
    scaled_master = True

    def __init__(self, P, V, A):
        self.supp = P > 0
        self.P, self.v = P[self.supp], np.asarray(V, float)[self.supp, 0]
        A = np.asarray(A, float)
        self.A = A[:, self.supp]
        keep = np.abs(self.A).max(axis=1) > 0
        self.section = _SectionLP(self.A[keep], self.P)
        self.nodes = 0

    @classmethod
    def make(cls, scenarios, V, A) -> LPRank1Pricing | None:
        if len(scenarios) != 1:
            return None
        P = scenarios[0].prior
        V = np.asarray(V, float).reshape(P.size, -1)
        if V.shape[1] != 1 or np.abs(np.asarray(A, float)[:, P == 0]).max(initial=0.0) > 0:
            return None
        return cls(P, V, A)

    def initial_rays(self) -> list[np.ndarray]:
        """The feasible unit columns (inputs that can be revealed exactly)."""
        ok = np.nonzero(self.A.max(axis=0, initial=0.0) <= 0)[0]
        rays = np.zeros((ok.size, self.supp.size))
        rays[np.arange(ok.size), np.nonzero(self.supp)[0][ok]] = 1.0
        return list(rays)

    def __call__(self, y, mu: float, tol: float, bound_tol: float | None = None, cheap: bool = False,
                 useless: float = math.inf, enough: float = -math.inf):
        ys = np.asarray(y, float)[self.supp]
        w = math.sqrt(max(mu, 0.0)) * self.v * self.P
        delta, pts, gains, lps = price_rank1_lp(self.section, w, ys,
                                                tol=0.1 * tol if bound_tol is None else bound_tol)
        self.nodes += lps
        order = np.argsort(-gains)
        pts = pts[order][gains[order] > tol][:16]
        rays = np.zeros((pts.shape[0], self.supp.size))
        rays[:, self.supp] = pts
        return delta, [r / r.sum() for r in rays]


def solve_colgen(scenarios, V, A, pricing: ExactPricing, *, warm_starts=(), gap_tol: float = 1e-7,
                 abs_tol: float | None = None, max_rounds: int = 10_000, exact_every: int = 30,
                 time_limit: float | None = None, progress=None,
                 smoothing: float = 0.9):
    """Column generation on the ray LP with the exact pricing oracle: a certified optimum.

    Every round's duals give a valid lower bound on the MSE (Lagrangian / weak duality of the ray LP,
    with δ the oracle's bound on the best reduced-cost gain):

        MSE ≥ E‖V‖² − (δ⁺ − Σ_x y_x + Σ_{x: P_x = 0} y_x⁺) / μ,

    and the loop stops when the master's MSE is within ``gap_tol`` (relative to the MSE; absolute
    ``abs_tol``, default 1e-9·E‖V‖², for an MSE near 0) of the best bound.

    Tolerances. The master is in posterior form when the pricing says so (``scaled_master``: the
    reduced cost of a column is then its gain per unit of mass, the unit of δ), its dual feasibility
    tolerance is at most 1 % of the absolute gap target, and a column enters only if its gain is
    above 10 times that tolerance (a column below the master's tolerance would never enter its basis
    and would come back every round) and is not already in the master. The pricing is told the δ
    that certifies the gap at its duals (``enough``), so that it need not separate the many
    near-optimal columns below it (all the basic columns have gain ≈ 0 near the optimum).
    Returns ``(Q, mse_bound, info)`` with ``info["stop"]`` one of ``"optimal"``, ``"time_limit"``,
    ``"iteration_limit"``, ``"interrupted"`` (a stop request: Q is the last master's channel),
    ``"feasible"`` (the pricing's node cap left the gap open).
    """
    t0 = time.perf_counter()
    P = scenarios[0].prior
    d = P.size
    m2 = second_moment(P, V)
    rays = [np.eye(d)[x] for x in np.nonzero(P == 0)[0]]  # free inputs: rays with λ = 0
    for W in warm_starts:
        W = np.asarray(W, float)
        if W.shape[0] == d:
            rays += [c / c.sum() for c in W.T if c.sum() > 1e-12]
    rays.append(np.full(d, 1.0 / d))  # the uniform column: always in the cone
    rays += pricing.initial_rays()
    if abs_tol is None:
        abs_tol = 1e-9 * max(m2, 1e-300)
    scaled = getattr(pricing, "scaled_master", False)
    master = _RayMaster(scenarios, V, d, scaled=scaled)
    seen: set[bytes] = set()

    def key(r):
        return np.round(r / r.sum(), 12).tobytes()

    def add(new):
        fresh = []
        for r in new:
            k = key(r)
            if k not in seen:
                seen.add(k)
                fresh.append(r)
        master.add(fresh)

    add(np.unique(np.round(np.array(rays), 13), axis=0))
    best_lb, rounds, stop, center, mispriced, repeats = -math.inf, 0, "optimal", None, 0, 0
    certified = 0  # calls of the pricing's exact fallback (``certify``)
    off = P == 0

    def bound_at(y, delta):  # the Lagrangian bound on the MSE at duals (y, μ = 1)
        return m2 - (max(delta, 0.0) - float(y.sum()) + float(np.maximum(y[off], 0).sum()))

    def gain(r, y):  # reduced-cost gain, per unit of mass when the master is scaled
        g = float(r @ y + column_utility(r[:, None], P, V)[0])
        return g / max(float(P @ r), 1e-300) if scaled else g

    def price(yy, cheap, rd):
        """Price at duals yy; update the best bound; the improving columns not yet in the master."""
        nonlocal best_lb, center, repeats
        # the δ that certifies the gap at yy (a little inside, for round-off)
        enough = 0.98 * rd["gap_abs"] - rd["mse"] + m2 + float(yy.sum()) \
            - float(np.maximum(yy[off], 0).sum())
        delta, new = pricing(yy, 1.0, rd["tol"], rd["btol"], cheap, enough=enough)
        lb = bound_at(yy, delta)
        if lb > best_lb:
            best_lb, center = lb, yy
        new = [r for r in new if gain(r, rd["y"]) > rd["add_tol"]]
        fresh = [r for r in new if key(r) not in seen]
        repeats += len(new) - len(fresh)
        return fresh

    last = None  # the rays and weights of the last master solved: the incumbent a stop keeps
    while True:
        rounds += 1
        try:
            w, util, y, _ = master.solve()  # μ = 1: one scenario, t is free
        except _Halt:
            stop = halt.requested() or "interrupted"
            break
        last = (len(master.rays), w)
        mse = -util
        gap_abs = max(gap_tol * abs(mse), abs_tol)
        master.set_dual_tol(float(np.clip(0.01 * gap_abs, 1e-10, 1e-9)))  # for the next solves
        scale = max(abs(mse), abs_tol / gap_tol)
        tol = 1e-3 * gap_tol * scale
        # a column must beat the master's own dual tolerance (scaled master: per unit of mass, the
        # unit of the gains) by a margin, else HiGHS may leave it out and it comes back
        rd = {"y": y, "mse": mse, "gap_abs": gap_abs, "tol": tol,
              "btol": 0.05 * gap_tol * scale,  # the bound may lose 5 % of the gap target
              "add_tol": max(tol, 10 * master.dual_tol) if scaled else tol}
        # Wentges smoothing: price at a point between the best-bound duals and the master's duals;
        # the bound is valid at any duals, a column is kept only if it improves the master
        ys = y if center is None else smoothing * center + (1 - smoothing) * y
        cheap = rounds % exact_every != 0  # a capped pricing between exact ones: columns fast
        try:
            new = price(ys, cheap, rd)
            if not new and ys is not y:  # mispricing: price at the master's own duals
                mispriced += 1
                new = price(y, cheap, rd)
            if not new and cheap and mse - best_lb > gap_abs:  # the capped search found nothing
                new = price(y, False, rd)  # : exactly
            if not new and mse - best_lb > gap_abs and hasattr(pricing, "certify"):
                exact = pricing.certify(y)  # an exact oracle without node cap, where there is one
                if exact is not None:
                    certified += 1
                    delta, cand = exact
                    lb = bound_at(y, delta)
                    if lb > best_lb:
                        best_lb, center = lb, y
                    new = [r for r in cand if gain(r, y) > rd["add_tol"] and key(r) not in seen]
        except _Halt:
            stop = halt.requested() or "interrupted"
            break
        if progress is not None:
            progress.update(round=rounds, mse=mse, bound=best_lb, rays=len(master.rays))
        if mse - best_lb <= gap_abs:
            break
        if not new:  # the pricing found no column but could not close the gap (node cap)
            stop = "feasible"
            break
        if rounds >= max_rounds:
            stop = "iteration_limit"
            break
        if halt.requested() or (time_limit is not None and time.perf_counter() - t0 > time_limit):
            stop = halt.requested() or "time_limit"
            break
        add(new)
    if last is None:  # stopped in the first master solve: nothing certified to hand over
        raise_for_status(Result(status=stop, stats={"rounds": rounds}), "LIP exact column generation")
    n_rays, w = last
    R = np.array(master.rays[:n_rays])
    used = w > 1e-12
    Q = (R[used] * w[used, None]).T
    empty = Q.sum(axis=1) <= 0  # free inputs left out of a scaled master: any column will do
    if empty.any():
        Q[empty, int(np.argmax(P @ Q))] = 1.0
    info = {"rounds": rounds, "rays": int(R.shape[0]), "stop": stop, "pricing": pricing.kind,
            "bb_nodes": pricing.nodes, "master_mse": mse, "mispriced": mispriced,
            "repeated_columns": repeats, "exact_fallback": certified}
    log.info("exact column generation: %d rounds, %d rays, MSE %.12g, bound %.12g (%s)", rounds,
             R.shape[0], mse, best_lb, stop)
    return _order_columns(Q), best_lb, info


# ------------------------------------------------------------ declarative Pyomo model + SCIP


def build_pyomo(scenarios, V, A, *, f: int | None = None):
    """Declarative model of max_Q min_θ Var_θ(X̂) − const (the MMSE design problem, [004] eq.
    (15)–(17); [001] eq. (29)) in epigraph form, quadratic so a global solver can read it:

        max t   s.t.  t ≤ Σ_k u[θ,k] − E_θ‖V‖²,   u[θ,k]·λ_θ[k] ≤ Σ_r s_θ[k,r]²,
                      u[θ,k] ≤ max_m ‖V_m‖²·λ_θ[k],  λ_θ[k] = Σ_m P_θm q[m,k],
                      s_θ[k,r] = Σ_m V[m,r] P_θm q[m,k],
                      Σ_k q[m,k] = 1,   Σ_m A[i,m] q[m,k] ≤ 0 (the privacy rows),  0 ≤ q ≤ 1.

    Users may add constraints before :func:`solve_pyomo_scip`.
    """
    import pyomo.environ as pyo

    d = scenarios[0].prior.size
    f = d if f is None else int(f)
    V = np.asarray(V, float).reshape(d, -1)
    A = np.asarray(A, float)
    m = pyo.ConcreteModel(name="lip_mmse")
    m.M, m.K, m.R = pyo.RangeSet(0, d - 1), pyo.RangeSet(0, f - 1), pyo.RangeSet(0, V.shape[1] - 1)
    m.S, m.I = pyo.RangeSet(0, len(scenarios) - 1), pyo.RangeSet(0, A.shape[0] - 1)
    m2 = [second_moment(s.prior, V) for s in scenarios]
    m.q = pyo.Var(m.M, m.K, bounds=(0, 1))
    m.lam = pyo.Var(m.S, m.K, bounds=(0, 1))
    m.s = pyo.Var(m.S, m.K, m.R)
    m.u = pyo.Var(m.S, m.K, bounds=(0, max(m2)))
    m.t = pyo.Var(bounds=(-max(m2), 0))
    m.rowsum = pyo.Constraint(m.M, rule=lambda b, i: sum(b.q[i, k] for k in b.K) == 1)
    m.privacy = pyo.Constraint(m.I, m.K, rule=lambda b, i, k: sum(
        float(A[i, j]) * b.q[j, k] for j in b.M if A[i, j] != 0) <= 0)
    m.lam_def = pyo.Constraint(m.S, m.K, rule=lambda b, s, k: b.lam[s, k] == sum(
        float(scenarios[s].prior[j]) * b.q[j, k] for j in b.M))
    m.s_def = pyo.Constraint(m.S, m.K, m.R, rule=lambda b, s, k, r: b.s[s, k, r] == sum(
        float(V[j, r] * scenarios[s].prior[j]) * b.q[j, k] for j in b.M if V[j, r] != 0))
    m.epi = pyo.Constraint(m.S, m.K, rule=lambda b, s, k: b.u[s, k] * b.lam[s, k] <= sum(
        b.s[s, k, r] ** 2 for r in b.R))
    vmax2 = float((V ** 2).sum(axis=1).max())  # ‖X̂‖² ≤ max_m ‖V_m‖²: u ≤ vmax²·λ (valid, and it
    m.cap = pyo.Constraint(m.S, m.K, rule=lambda b, s, k: b.u[s, k] <= vmax2 * b.lam[s, k])
    # stops a global solver from inflating u on a column of tiny mass within its tolerance)
    m.worst = pyo.Constraint(m.S, rule=lambda b, s: b.t <= sum(b.u[s, k] for k in b.K) - m2[s])
    m.obj = pyo.Objective(expr=m.t, sense=pyo.maximize)
    return m


def solve_pyomo_scip(model, *, time_limit: float | None = None, gap: float = 1e-7,
                     verbose: bool = False) -> tuple[np.ndarray, float, float, dict]:
    """Solve a :func:`build_pyomo` model (or any Pyomo model with linear/quadratic rows and a linear
    objective) globally with SCIP's spatial branch-and-bound through pyscipopt. Each Pyomo row is
    compiled by Pyomo's standard representation and passed to SCIP as is. Returns
    ``(Q, primal t, SCIP's dual bound on t, stats)``."""
    import pyomo.environ as pyo
    import pyscipopt
    from pyomo.repn import generate_standard_repn

    time_limit = check_time_limit(time_limit)
    scip = pyscipopt.Model()
    scip.hideOutput(not verbose)
    svars = {}
    for v in model.component_data_objects(pyo.Var, active=True):
        lb = -scip.infinity() if v.lb is None else v.lb
        ub = scip.infinity() if v.ub is None else v.ub
        svars[id(v)] = scip.addVar(name=v.name, lb=lb, ub=ub)

    def expr(repn):
        e = pyscipopt.Expr() + float(repn.constant)
        for c, v in zip(repn.linear_coefs, repn.linear_vars, strict=True):
            e = e + float(c) * svars[id(v)]
        for c, (v, w) in zip(repn.quadratic_coefs, repn.quadratic_vars, strict=True):
            e = e + float(c) * svars[id(v)] * svars[id(w)]
        return e

    for con in model.component_data_objects(pyo.Constraint, active=True):
        repn = generate_standard_repn(con.body, quadratic=True)
        if repn.nonlinear_expr is not None:
            raise InputError(f"constraint {con.name} is not quadratic: SCIP via this path needs "
                             "linear or quadratic rows")
        e = expr(repn)
        lo, up = pyo.value(con.lower), pyo.value(con.upper)
        if lo is not None and up is not None and lo == up:
            scip.addCons(e == lo, name=con.name)
        else:
            if lo is not None:
                scip.addCons(e >= lo, name=con.name + "_lo")
            if up is not None:
                scip.addCons(e <= up, name=con.name + "_up")
    (obj,) = list(model.component_data_objects(pyo.Objective, active=True))
    orepn = generate_standard_repn(obj.expr)
    if not orepn.is_linear():
        raise InputError("the objective must be linear (use an epigraph variable)")
    scip.setObjective(expr(orepn), "maximize" if obj.sense == pyo.maximize else "minimize")
    scip.setParam("limits/gap", gap)
    scip.setParam("numerics/feastol", 1e-9)
    if time_limit is not None:
        scip.setParam("limits/time", time_limit)
    t0 = time.perf_counter()
    scip.optimize()
    status = scip.getStatus()
    if scip.getNSols() == 0:
        if status == "timelimit":
            raise TimeLimitError(f"SCIP: time limit {time_limit:g}s reached before a first feasible "
                                 "channel; raise --time-limit or use method vertex/exact")
        raise SolverError(f"SCIP found no solution (status {status})")
    sol = scip.getBestSol()
    d, f = len(model.M), len(model.K)
    Q = np.array([[scip.getSolVal(sol, svars[id(model.q[i, k])]) for k in range(f)]
                  for i in range(d)])
    stats = {"scip_status": status, "scip_nodes": scip.getNNodes(),
             "solve_s": time.perf_counter() - t0}
    return Q, float(scip.getPrimalbound()), float(scip.getDualbound()), stats


# ---------------------------------------------------------------------------- linear objectives


def solve_linear(scenarios, loss, A, *, time_limit: float | None = None):
    """min Σ_m P_m Σ_k L[m,k] q_mk over the privacy polytope (MAE [001] eq. (23); Hamming [004]
    eq. (42) with L = 1 − I): an LP (HiGHS). With several scenarios the worst case is minimised.
    Returns ``(Q, objective, bound)``."""
    d = scenarios[0].prior.size
    L = np.asarray(loss, float)
    f = L.shape[1]
    M, lo, hi = _channel_lp(A, d, f, 1)
    S = len(scenarios)
    n = d * f
    cost = np.array([(s.prior[:, None] * L).ravel() for s in scenarios])
    # min t s.t. cost_θ·q − t ≤ 0
    MM = sp.vstack([M, sp.hstack([sp.csr_matrix(cost), sp.csr_matrix(-np.ones((S, 1)))])]).tocsc()
    res = solve_lp(np.r_[np.zeros(n), 1.0], MM, np.r_[lo, np.full(S, -np.inf)], np.r_[hi, np.zeros(S)],
                   np.r_[np.zeros(n), 0.0], np.r_[np.ones(n), max(L.max(), 0.0)],
                   time_limit=time_limit)
    raise_for_status(res, "LIP linear-utility LP")
    Q = np.clip(res.x[:n], 0, None).reshape(d, f)
    return Q / Q.sum(axis=1, keepdims=True), res.optimality.objective, res.optimality.bound
