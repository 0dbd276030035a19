"""Centralized information privacy (CIP, [001] §IV-D, Def. 4 eq. (34)) as a design constraint.

A trusted server holds the users' bits D_i ∈ {0, 1} (independent, Pr(D_i = 1) = p_i) and publishes
Y = 𝓜(S) of the sum S = Σ_i D_i (the paper's Fig. 4(c): the mechanism reads S). CIP asks, for every
user i, value j and output y, e^{−ε} ≤ Pr(D_i = j) / Pr(D_i = j | Y = y) ≤ e^ε.

**It is latent-secret LIP on the input S** ([004] eq. (9)) with the secrets G = (i, j) and
T[(i, j), s] = Pr(S = s | D_i = j) = Pr(S_{−i} = s − j): Pr(D_i = j | Y = y)/Pr(D_i = j) =
t_(i,j)·c / P_S·c for the output column c = Q[:, y]. So the notion is linear per output column
(:func:`cip_rows`), its certifier is :func:`lpmech.models.lip.lip_epsilon` with that T
(:func:`cip_epsilon`), and the optimal mechanism is the LIP MMSE design on the input S with values
0..N (:func:`solve`: the vertex method for N ≤ 7, column generation with the exact LP pricing above).

S is Poisson-binomial; with one global prior p (the paper's derivation) it is Binomial(N, p), all users
give the same two rows and CIP is exactly a window on the posterior mean,
L = max(e^{−ε}Np, N − e^ε N(1 − p)) ≤ E[S | Y = y] ≤ U = min(e^ε Np, N − e^{−ε} N(1 − p)).
[001] Prop. 5 prints only one side of each ratio, e^{−ε}Np ≤ Ŝ ≤ N − e^{−ε}(N − Np) (spec §5.11):
``mode="paper"`` solves that printed program for the mean prior and reports whether its mechanism is
really CIP for the users' own priors.

Verified mode beyond N ≈ 30 (where the column generation's master fails on the tails of S, priors
down to 1e-200 at N = 500): :func:`censored_users` (reveal the values whose point posterior is CIP for
every user, pool each tail with part of its boundary atom), improved by :func:`pair_improvement` (the
posterior LP over two-point posteriors CIP for every user), and the lower bound
:func:`cip_lower_bound` (weak duality on a two-user relaxation). N = 500, priors ~ U[0, 1]: certified
by a relative gap ≤ 1e-6 at ε = 0.5..4.5 (the bound within 6e-8 of the mechanism at ε = 0.5).

Verified mode at large N (above ``TILTED_MIN_N`` = 5000, or ``method="tilted"``; [001] Fig. 8's
N = 50000, where the leave-one-out laws are N × N and Pr(S = s) underflows at the pools):
:func:`solve_tilted` reveals s ∈ [k, k'] and pools each tail whole. Every user's posterior at the
few values it needs comes from :func:`tilted_posteriors` (the exponential tilt that centres S there,
under which a_i(s) is invariant, and the DFT of the characteristic function: no N × N array); the
pools' posteriors are bounded by monotonicity and log-concavity, so CIP is proved by interval
checks; the MSE is bounded above (≈ 10^−429 at ε = 0.5, N = 50000) and the bound is 0, certified by
the absolute floor of :func:`gap_status`.
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from ... import stop as halt
from ...certificate import OptimalityCertificate
from ...errors import InputError, SolverError
from ...mechanism import EPS_RTOL, Mechanism, check_epsilon
from ...solvers.result import GAP_ABS_TOL, Result, gap_status, raise_for_status

__all__ = ["censored_users", "censored_window", "cip_correlation", "cip_epsilon", "cip_lower_bound",
           "cip_rows", "mean_window", "pair_improvement", "paper_rows", "solve", "solve_tilted",
           "sum_distribution", "tail_pooling_channel", "tilted_posteriors", "user_windows"]


def _check_p(p) -> np.ndarray:
    p = np.asarray(p, float).ravel()
    if p.size == 0 or not np.isfinite(p).all() or (p < 0).any() or (p > 1).any():
        raise InputError("CIP needs the users' priors Pr(D_i = 1) as numbers in [0, 1]")
    return p


def sum_distribution(p) -> np.ndarray:
    """Pr(S = s), s = 0..N, of S = Σ D_i with independent D_i ~ Bernoulli(p_i) (Poisson-binomial,
    by the exact convolution recursion: all terms non-negative, no cancellation)."""
    p = _check_p(p)
    f = np.zeros(p.size + 1)
    f[0] = 1.0
    for k, q in enumerate(p):
        f[1:k + 2] = f[1:k + 2] * (1 - q) + f[:k + 1] * q
        f[0] *= 1 - q
    return f


def cip_correlation(p) -> tuple[np.ndarray, np.ndarray]:
    """``(P_S, T)``: the prior of S and the rows T[(i, j)] = Pr(S = · | D_i = j) for every user with
    0 < p_i < 1 and j ∈ {0, 1} (users with equal priors give equal rows: kept once). A user with
    p_i ∈ {0, 1} has no secret (Pr(D_i = j | Y) = Pr(D_i = j) for the value of positive mass)."""
    p = _check_p(p)
    N = p.size
    PS = sum_distribution(p)
    qs = np.unique(p[(p > 0) & (p < 1)])
    rows = []
    for q in qs:
        i = int(np.nonzero(p == q)[0][0])
        rest = sum_distribution(np.delete(p, i))  # Pr(S_{−i} = ·), length N
        rows.append(np.r_[rest, 0.0])  # j = 0: S = S_{−i}
        rows.append(np.r_[0.0, rest])  # j = 1: S = S_{−i} + 1
    T = np.array(rows).reshape(-1, N + 1)
    return PS, T


def cip_rows(p, epsilon: float) -> np.ndarray:
    """CIP as homogeneous rows on one output column c = Q[:, y] over the inputs s = 0..N:
    e^{−ε} t·c − P_S·c ≤ 0 and e^{−ε} P_S·c − t·c ≤ 0 for every secret row t of
    :func:`cip_correlation` (the latent-secret LIP rows, :func:`lpmech.models.lip.lip_rows`)."""
    eps = check_epsilon(epsilon)
    PS, T = cip_correlation(p)
    if T.shape[0] == 0:
        return np.zeros((0, PS.size))
    e = math.exp(-eps)
    Pm = np.tile(PS, (T.shape[0], 1))
    return np.vstack([e * T - Pm, e * Pm - T])


def cip_epsilon(Q, p) -> float:
    """Realised CIP ε of a channel Q[s, y] on the sum: max over users i, values j and outputs y of
    |log(Pr(D_i = j | Y = y) / Pr(D_i = j))| (outputs of positive mass)."""
    from .lip import _log_ratio_eps

    PS, T = cip_correlation(p)
    Q = np.asarray(Q, float)
    if Q.shape[0] != PS.size:
        raise InputError(f"the channel must have N + 1 = {PS.size} rows (inputs s = 0..N)")
    if T.shape[0] == 0:
        return 0.0
    return _log_ratio_eps(T @ Q, PS @ Q)


def mean_window(N: int, p: float, epsilon: float, *, printed: bool = False) -> tuple[float, float]:
    """The CIP window [L, U] on E[S | Y = y] for a global prior p (module docstring); ``printed``:
    [001] Prop. 5 as printed (one side of each ratio)."""
    e = math.exp(epsilon)
    if printed:
        return N * p / e, N - (N - N * p) / e
    return max(N * p / e, N - e * N * (1 - p)), min(e * N * p, N - N * (1 - p) / e)


def censored_window(f, L: float, U: float) -> dict:
    """The optimal channel on s = 0..N (pmf ``f``) whose posterior means lie in [L, U], for the MSE of
    E[S | Y]: reveal s in the middle; pool the lower tail with part of its boundary atom k into one
    output of posterior mean exactly L, and the upper tail likewise at U (spec §5.11 [D]).

    Exact, with its certificate (not in the paper): the posterior means G of any channel are a
    mean-preserving contraction of f, so E_G[m²] ≤ E_f[φ] for the convex φ equal to the chord of s²
    through (L, L²) and (k, k²) below k, s² on [k, k'] and the chord through (k', k'²), (U, U²) above
    k'; φ ≥ m² on [L, U], and this channel attains E_f[φ]. Returns ``k, k_up`` (the boundary atoms,
    ``-1`` / N + 1 without a pool), ``lower``/``upper`` (the share of each s in the pools), ``Q``
    (N + 1 rows; outputs: lower pool, revealed values, upper pool; ``None`` above 5e7 entries) and
    ``mse`` (within-pool variances, no cancellation); ``None`` where the pools would meet (a window
    too narrow for the tails)."""
    f = np.asarray(f, float)
    s = np.arange(f.size, dtype=float)
    if not L <= float(f @ s) <= U:
        raise InputError(f"the window [{L:.6g}, {U:.6g}] must contain the mean {float(f @ s):.6g}")

    def pool(f, s, L):  # lower pool of (f, s) at mean L: (k, θ) or (-1, 0) when s = 0 may be revealed
        if s[0] >= L:
            return -1, 0.0
        F, M = np.cumsum(f), np.cumsum(f * s)
        # the first k whose whole lower part [0, k] has mean ≥ L: M_k ≥ L·F_k
        k = int(np.argmax(M - L * F >= 0))
        F0, M0 = (F[k - 1], M[k - 1]) if k > 0 else (0.0, 0.0)
        theta = (L * F0 - M0) / (f[k] * (s[k] - L)) if f[k] > 0 else 0.0
        return k, float(min(max(theta, 0.0), 1.0))

    k, th = pool(f, s, L)
    ku, thu = pool(f[::-1], -s[::-1], -U)
    ku = f.size - 1 - ku if ku >= 0 else f.size
    if k >= 0 and ku < f.size and (ku < k or (ku == k and th + thu > 1)):
        return None
    lo_w = np.zeros(f.size)
    hi_w = np.zeros(f.size)
    if k >= 0:
        lo_w[:k] = 1.0
        lo_w[k] = th
    if ku < f.size:
        hi_w[ku + 1:] = 1.0
        hi_w[ku] = thu
    mid = 1.0 - lo_w - hi_w
    mse = float(f @ (lo_w * (s - L) ** 2)) + float(f @ (hi_w * (s - U) ** 2))
    reveal = np.nonzero(mid > 0)[0]
    Q = None
    if f.size * (reveal.size + 2) <= 5e7:
        cols = [lo_w] if k >= 0 else []
        R = np.zeros((f.size, reveal.size))
        R[reveal, np.arange(reveal.size)] = mid[reveal]
        Q = np.column_stack(cols + [R] + ([hi_w] if ku < f.size else []))
    return {"k": k, "k_up": ku, "lower": lo_w, "upper": hi_w, "Q": Q, "mse": mse}


def user_windows(p, epsilon: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(q, L, U)``: the distinct priors q_i ∈ (0, 1) of the users with a secret and the CIP window
    on their posterior, L_i ≤ Pr(D_i = 1 | Y = y) ≤ U_i with L_i = max(q_i e^{−ε}, 1 − (1 − q_i)e^ε),
    U_i = min(q_i e^ε, 1 − (1 − q_i)e^{−ε}) ([001] eq. (34), both values j of D_i)."""
    p = _check_p(p)
    eps = check_epsilon(epsilon)
    q = np.unique(p[(p > 0) & (p < 1)])
    e = math.exp(eps)
    return q, np.maximum(q / e, 1 - (1 - q) * e), np.minimum(q * e, 1 - (1 - q) / e)


def _joint_ones(p) -> tuple[np.ndarray, np.ndarray]:
    """``(f, J)``: f(s) = Pr(S = s) and J[i, s] = Pr(S = s, D_i = 1) = q_i·Pr(S_{−i} = s − 1) for the
    distinct priors q_i of :func:`user_windows` (exact convolutions, no cancellation). The posterior
    of user i given S = s is a_i(s) = J[i, s]/f(s), increasing in s (the Poisson-binomial pmf of
    S_{−i} is log-concave, so Pr(S_{−i} = s − 1)/Pr(S_{−i} = s) increases)."""
    PS, T = cip_correlation(p)
    q = np.unique(p[(p > 0) & (p < 1)])
    return PS, T[1::2] * q[:, None]


def censored_users(p, epsilon: float, *, f=None, J=None) -> dict | None:
    """The censored-window CIP mechanism for the users' own priors (a heterogeneous
    :func:`censored_window`): reveal every s whose point posterior is CIP for every user, pool the
    lower tail {0..k−1} with the share θ of atom k into one output, the upper tail {k'+1..N} with the
    share θ' of atom k' into another.

    An output of posterior ρ over S is CIP iff E_ρ[a_i] ∈ [L_i, U_i] for every user (D_i and Y are
    independent given S). k is the first s whose whole lower part {0..s} already pools into a CIP
    posterior: Σ_{t≤s} (J[i, t] − L_i f(t)) ≥ 0 for every i, and θ the least share of atom k that
    keeps every user's sum ≥ 0 (each sum is linear in θ). As a_i increases in s, a_i(s) ≥ L_i for
    s ≥ k, the pool's posteriors stay ≤ a_i(k) ≤ U_i, and the revealed values between the pools are
    CIP; likewise upwards. Returns ``k, k_up, theta, theta_up, lower, upper`` (each s's share in the
    pools), ``binding`` (the users, by index into q of :func:`user_windows`, whose constraint fixes θ
    and θ'), ``Q`` (outputs: lower pool, revealed values, upper pool) and ``mse`` (within-pool
    variances: no cancellation at any size); ``None`` where the pools would meet. Not optimal in
    general for distinct priors: :func:`cip_lower_bound` brackets the optimum."""
    if f is None or J is None:
        f, J = _joint_ones(p)
    _, L, U = user_windows(p, epsilon)
    N = f.size - 1
    s = np.arange(N + 1.0)

    def pool(slack):  # slack[i, s] ≥ 0 summed over the pool: (k, θ, binding user) from the left end
        c = np.cumsum(slack, axis=1)
        ok = (c >= 0).all(axis=0)
        if not ok.any():
            return None
        k = int(np.argmax(ok))
        if k == 0:
            return 0, 0.0, -1
        prev = c[:, k - 1]
        need = np.where(prev < 0, -prev / np.where(slack[:, k] > 0, slack[:, k], 1.0), 0.0)
        i = int(np.argmax(need))
        return k, float(min(need[i], 1.0)), i if need[i] > 0 else -1

    # on the support [a, b] of S (users with p_i = 1 or 0 shift or cut it): the pools start there
    sup = np.nonzero(f > 0)[0]
    a, b = int(sup[0]), int(sup[-1])
    lo = pool(J[:, a:b + 1] - L[:, None] * f[None, a:b + 1])
    hi = pool((U[:, None] * f[None, a:b + 1] - J[:, a:b + 1])[:, ::-1])
    if lo is None or hi is None:
        return None
    (k, th, bl), (j, thu, bu) = lo, hi
    k, ku = a + k, b - j
    if ku < k or (ku == k and th + thu > 1):
        return None
    lo_w, hi_w = np.zeros(N + 1), np.zeros(N + 1)
    lo_w[a:k], hi_w[ku + 1:b + 1] = 1.0, 1.0
    if k > a:
        lo_w[k] = th
    if ku < b:
        hi_w[ku] = thu
    mse = 0.0
    for w in (lo_w, hi_w):
        m = w * f
        if m.sum() > 0:
            mse += float(m @ (s - (m @ s) / m.sum()) ** 2)
    mid = 1.0 - lo_w - hi_w
    reveal = np.nonzero(mid > 0)[0]
    R = np.zeros((N + 1, reveal.size))
    R[reveal, np.arange(reveal.size)] = mid[reveal]
    cols = ([lo_w] if lo_w.any() else []) + [R] + ([hi_w] if hi_w.any() else [])
    return {"k": k, "k_up": ku, "theta": th, "theta_up": thu, "lower": lo_w, "upper": hi_w,
            "binding": (bl, bu), "Q": np.column_stack(cols), "mse": mse}


def _transport_duals(f, s, B, lo, hi, D, F, cut: float, extra=()) -> tuple[np.ndarray, np.ndarray]:
    """``(v, u)`` from the LP of one tail D (the relaxed design problem restricted to it): every
    deficient point x (mass f_x) pools with feasible points into two-point posteriors on an active
    side, or into the columns in ``extra`` ((points, α, Var): two- and three-point posteriors found
    by :func:`cip_lower_bound`'s pricing, through other points of D too). Rows per unit mass of each
    point, the tail scaled by its own mass; points below ``cut``·max f_D dropped (priced afterwards)
    and columns with entries > 1e6 (a partner too light to carry its anchor) left out. v ≥ 0: the
    prices of the feasible points' capacity; u: the duals of the kept deficient points (nan
    elsewhere), both per unit mass. Any v and u only seed the bound, which is checked in full."""
    from scipy import sparse
    from scipy.optimize import linprog

    v = np.zeros(f.size)
    u = np.full(f.size, np.nan)
    keep = D[f[D] >= cut * f[D].max()] if D.size else D
    if keep.size == 0 or F.size == 0:
        return v, u
    Fref = float(f[D].sum())
    row = {int(x): i for i, x in enumerate(keep)}
    row.update({int(y): keep.size + i for i, y in enumerate(F)})
    rows, cols, vals, cost = [], [], [], []
    col = 0

    def add(pts, al, var):
        nonlocal col
        x = pts[0]
        coefs = [f[x] / f[o] * a / al[0] for o, a in zip(pts[1:], al[1:], strict=True)]
        if int(x) not in row or not all(int(o) in row for o in pts[1:]) \
                or not all(c <= 1e6 for c in coefs):
            return
        rows.extend(row[int(o)] for o in pts)
        cols.extend([col] * len(pts))
        vals.extend([1.0, *coefs])
        cost.append(f[x] / Fref * var / al[0])
        col += 1

    for x in keep:
        al, var, ok = _pair_columns(x, F, s, B, lo, hi)
        for h, y_i in zip(*np.nonzero(ok), strict=True):
            add((x, F[y_i]), (al[h, y_i], 1 - al[h, y_i]), var[h, y_i])
    for pts, al, var in extra:
        add(pts, al, var)
    if col == 0:
        return v, u
    A = sparse.csr_matrix((vals, (rows, cols)), shape=(keep.size + F.size, col))
    out = linprog(np.array(cost), A_ub=A[keep.size:], b_ub=np.ones(F.size), A_eq=A[:keep.size],
                  b_eq=np.ones(keep.size), bounds=(0, None), method="highs")
    if out.status == 0:
        v[F] = np.maximum(-out.ineqlin.marginals, 0.0) * Fref / f[F]
        u[keep] = out.eqlin.marginals * Fref / f[keep]
    return v, u


def _pair_columns(x, Y, s, B, lo, hi):
    """Two-point posteriors α δ_x + (1 − α) δ_y (y ∈ Y) with one side of one functional B[k]
    active and every functional within its window (inclusive, to 1e-9 relative: a superset of the
    vertices only makes the bound more conservative). Returns (α, variance, ok), one row per side."""
    A, V, OK = [], [], []
    for k in range(B.shape[0]):
        for lvl in (lo[k], hi[k]):
            den = B[k, Y] - B[k, x]
            with np.errstate(divide="ignore", invalid="ignore"):
                a = (B[k, Y] - lvl) / den
            good = np.isfinite(a) & (a > 0) & (a < 1)
            for k2 in range(B.shape[0]):
                m = a * B[k2, x] + (1 - a) * B[k2, Y]
                tol = 1e-9 * max(abs(lo[k2]), abs(hi[k2]), 1.0)
                good &= (m >= lo[k2] - tol) & (m <= hi[k2] + tol)
            a = np.where(good, a, 0.5)
            A.append(a)
            V.append(a * (1 - a) * (s[x] - s[Y]) ** 2)
            OK.append(good)
    return np.array(A), np.array(V), np.array(OK)


def _channel_mse(Q, f) -> float:
    """E[(S − E[S | Y])²] of a channel Q[s, y] on the pmf f, by the joint table (each output's
    within variance: no cancellation)."""
    s = np.arange(f.size, dtype=float)
    joint = f[:, None] * Q
    lam = joint.sum(axis=0)
    ref = s[np.argmax(joint, axis=0)]  # centred on each output's heaviest value: a revealed value's
    m = ref + ((s[:, None] - ref[None, :]) * joint).sum(axis=0) / np.where(lam > 0, lam, 1.0)  # mean is exact
    return float((joint * (s[:, None] - m[None, :]) ** 2).sum())


def pair_improvement(f, J, L, U, cu: dict, margin: float = 1e-6) -> np.ndarray | None:
    """A better CIP channel than the censored construction ``cu`` (its pools stay available): the
    posterior LP over two-point posteriors α δ_x + (1 − α) δ_y that are CIP for every user (x not
    revealable; α at either end of the interval of α that keeps every user's window, the concave
    variance makes the ends enough), the pools and the revealed values. One LP per tail (lower tail
    first, then the upper with what it left), rows per unit mass of each point (each tail scaled by
    its own mass); partner rows keep a ``margin`` for the coefficients HiGHS drops (< 1e-9), the
    channel is rebuilt from the anchors' shares with the exact partner ratios. Returns Q or None (no
    LP solution); the caller certifies it."""
    from scipy import sparse
    from scipy.optimize import linprog

    N = f.size - 1
    s = np.arange(N + 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(f > 0, J / np.where(f > 0, f, 1.0), 0.0)
    tol = 1e-12
    feas = ((a >= L[:, None] - tol) & (a <= U[:, None] + tol)).all(axis=0) & (f > 0)
    k, ku = cu["k"], cu["k_up"]
    Dlo = np.nonzero(~feas & (s < k + 0.5) & (f > 0))[0]
    Dhi = np.nonzero(~feas & (s > ku - 0.5) & (f > 0))[0]
    if (~feas & (f > 0)).sum() != Dlo.size + Dhi.size:
        return None
    used = np.zeros(N + 1)  # share of each point already placed
    cols = []  # (x, y, α, z) two-point columns; pools: ("pool", weights, t)
    for D, pool_w in ((Dlo, cu["lower"]), (Dhi, cu["upper"])):
        if D.size == 0:
            continue
        Fref = float(f[D].sum())
        others = np.nonzero((f > 0) & ~np.isin(np.arange(N + 1), D))[0]
        rows, cc, vals, cost, meta = [], [], [], [], []
        anchor = {int(x): i for i, x in enumerate(D)}
        prow = {int(y): D.size + i for i, y in enumerate(others)}
        col = 0
        for x in D:
            d = a[:, x][:, None] - a[:, others]  # α·d + a(y) ∈ [L, U] per user
            with np.errstate(divide="ignore", invalid="ignore"):
                lo_b = np.where(d > 0, (L[:, None] - a[:, others]) / d,
                                np.where(d < 0, (U[:, None] - a[:, others]) / d, -np.inf))
                hi_b = np.where(d > 0, (U[:, None] - a[:, others]) / d,
                                np.where(d < 0, (L[:, None] - a[:, others]) / d, np.inf))
                inside = ((a[:, others] >= L[:, None]) & (a[:, others] <= U[:, None])) | (d != 0)
            alo = np.maximum(lo_b.max(axis=0), 0.0)
            ahi = np.minimum(hi_b.min(axis=0), 1.0)
            ok = inside.all(axis=0) & (ahi > 0) & (ahi >= alo) & (ahi < 1)
            for yi in np.nonzero(ok)[0]:
                y = int(others[yi])
                for al in {float(ahi[yi]), float(alo[yi])}:
                    if not 0 < al < 1:
                        continue
                    r = f[x] / f[y] * (1 - al) / al
                    if not r <= 1e6:  # a partner far too light to carry x (HiGHS rejects huge entries)
                        continue
                    rows += [anchor[int(x)], prow[y]]
                    cc += [col, col]
                    vals += [1.0, r]
                    cost.append(f[x] / Fref * (1 - al) * (s[x] - s[y]) ** 2)
                    meta.append((int(x), y, al))
                    col += 1
        # the pool as one column of scale t ∈ [0, 1]
        m = pool_w * f
        pool_var = float(m @ (s - (m @ s) / m.sum()) ** 2) if m.sum() > 0 else 0.0
        for pt in np.nonzero(pool_w > 0)[0]:
            if int(pt) in anchor:
                rows.append(anchor[int(pt)])
            elif int(pt) in prow:
                rows.append(prow[int(pt)])
            else:
                continue
            cc.append(col)
            vals.append(float(pool_w[pt]))
        cost.append(pool_var / Fref)
        meta.append(("pool", pool_w))
        col += 1
        nr = D.size + others.size
        A = sparse.csr_matrix((vals, (rows, cc)), shape=(nr, col))
        b_eq = 1.0 - used[D]
        b_ub = np.maximum(1.0 - used[others] - margin, 0.0)
        out = linprog(np.array(cost), A_ub=A[D.size:], b_ub=b_ub, A_eq=A[:D.size], b_eq=b_eq,
                      bounds=[(0, None)] * (col - 1) + [(0, 1)], method="highs")
        if out.status != 0:
            return None
        z = np.maximum(out.x, 0.0)
        for c in np.nonzero(z > 0)[0]:
            mt = meta[c]
            if mt[0] == "pool":
                cols.append(z[c] * mt[1])
                used += z[c] * mt[1]
            else:
                x, y, al = mt
                q = np.zeros(N + 1)
                q[x] = z[c]
                q[y] = z[c] * f[x] / f[y] * (1 - al) / al
                cols.append(q)
                used += q
    rest = 1.0 - used
    if (rest[~feas & (f > 0)] > 1e-6).any() or (rest < -1e-9).any():
        return None
    rest = np.maximum(rest, 0.0)
    rest[~feas] = 0.0
    rest[f == 0] = 1.0  # values S cannot take (users of prior 0 or 1): an output of no mass
    reveal = np.nonzero(rest > 0)[0]
    R = np.zeros((N + 1, reveal.size))
    R[reveal, np.arange(reveal.size)] = rest[reveal]
    Q = np.column_stack([*cols, R]) if cols else R
    Q = Q / Q.sum(axis=1, keepdims=True)
    return Q


def cip_lower_bound(p, epsilon: float, *, users=None, f=None, J=None, cut: float = 1e-30,
                    rounds: int = 12) -> dict:
    """A lower bound on the MSE of every CIP channel on the sum (users' own priors), by weak duality
    on a relaxation that keeps two linear functionals of the posterior.

    Proof. A channel's MSE is Σ_y λ_y Var_{ρ_y}(S) over its outputs' posteriors ρ_y (Σ_y λ_y ρ_y = f),
    and CIP asks E_ρ[a_i] ∈ [L_i, U_i] for every user (:func:`censored_users`). So for weights w ≥ 0
    over the users, E_ρ[w·a] ∈ [w·L, w·U]; with w = the multiplicities, w·a(s) = s − #{p_i = 1}
    (Σ_i a_i(s) = E[S | S = s] = s): the window on the posterior mean. Every CIP posterior lies in
    R = {ρ : E_ρ b_k ∈ [w_k·L, w_k·U], k = 1, 2} for b_k = w_k·a. Var is concave in ρ, so writing
    each ρ_y as a mixture of vertices of R does not raise the MSE; a vertex of R is a point mass δ_s
    inside both windows, a two-point ρ with one side active, or a three-point ρ with one side of each
    functional active. For any g with g·v ≤ Var(v) at every vertex v,
    MSE ≥ Σ_y λ_y Σ_v β_yv Var(v) ≥ Σ_y λ_y g·ρ_y = g·f.

    The g: column generation of the relaxed design LP per tail (:func:`_transport_duals`: each tail
    scaled by its own mass, its deep atoms below ``cut`` left out of the LP): g = −v (capacity prices)
    on the feasible points; on every deficient point x (all of them: so the deep tail is priced too,
    and any LP duals give a valid g) the least of its LP dual and the largest value that keeps every
    two-point vertex with a feasible partner, min_y ((1 − α)(x − y)² + v_y(1 − α)/α); violated two-
    and three-point vertices through deficient points of the tail join the LP (up to ``rounds``
    rounds). Then every vertex the pricing did not cover is checked by enumeration
    (:func:`_deficient_repair`) and g lowered where one is violated (lowering g keeps every other
    vertex). Exact up to floating-point round-off in these checks.

    ``users``: the relaxations tried (the bound is the best): a user index j gives (a_j, the mean
    window); a pair (i, j) gives (a_i, a_j); a pair of weight vectors gives (w_1·a, w_2·a). Default:
    the two users whose constraints fix the :func:`censored_users` pools (the least and the largest
    prior for U[0, 1] priors). Returns ``bound``, ``user`` (the relaxation giving it), ``per_user``
    and ``shift`` (what the final cuts took off the bound)."""
    p = _check_p(p)
    eps = check_epsilon(epsilon)
    if f is None or J is None:
        f, J = _joint_ones(p)
    q, L, U = user_windows(p, eps)
    N = f.size - 1
    s = np.arange(N + 1.0)
    if users is None:
        cu = censored_users(p, eps, f=f, J=J)
        b = sorted({i for i in (cu["binding"] if cu else ()) if i >= 0}) or sorted({0, q.size - 1})
        users = [tuple(b)] if len(b) == 2 else b
    counts = np.array([(p == v).sum() for v in q], float)  # Σ_i a_i = S − #(p_i = 1)
    per_user = {}
    shifts = {}
    cands = []
    for c in users:  # a user j: (e_j, counts); a pair (i, j): (e_i, e_j); else a pair of weights
        if isinstance(c, (int, np.integer)):
            w1 = np.zeros(q.size)
            w1[c] = 1.0
            cands.append((int(c), w1, counts))
        elif len(c) == 2 and all(isinstance(x, (int, np.integer)) for x in c):
            w1, w2 = np.zeros(q.size), np.zeros(q.size)
            w1[c[0]], w2[c[1]] = 1.0, 1.0
            cands.append(((int(c[0]), int(c[1])), w1, w2))
        else:
            cands.append((len(cands), np.asarray(c[0], float), np.asarray(c[1], float)))
    for j, w1, w2 in cands:
        with np.errstate(divide="ignore", invalid="ignore"):
            B = np.where(f > 0, (np.vstack([w1, w2]) @ J) / np.where(f > 0, f, 1.0), 0.0)
        lo, hi = np.array([w1 @ L, w2 @ L]), np.array([w1 @ U, w2 @ U])
        # affinely dependent functionals (a global prior: a_j = s/N): one functional, the
        # intersection of the two windows, and no three-point vertices
        pos = f > 0
        X = np.column_stack([np.ones(pos.sum()), B[0, pos]])
        coef = np.linalg.lstsq(X, B[1, pos], rcond=None)[0]
        single = bool(abs(coef[1]) > 0 and np.abs(X @ coef - B[1, pos]).max()
                      <= 1e-9 * max(np.abs(B[1, pos]).max(), 1e-300))
        if single:
            ends = sorted([(lo[1] - coef[0]) / coef[1], (hi[1] - coef[0]) / coef[1]])
            w = (max(lo[0], ends[0]), min(hi[0], ends[1]))
            B, lo, hi = np.vstack([B[0], B[0]]), np.array([w[0], w[0]]), np.array([w[1], w[1]])
        tol = 1e-12 * max(1.0, float(np.abs(w2).sum()))
        feas = ((B >= lo[:, None] - tol) & (B <= hi[:, None] + tol)).all(axis=0)
        F = np.nonzero(feas & (f > 0))[0]
        Dall = np.nonzero(~feas & (f > 0))[0]
        mid = F.mean() if F.size else N / 2
        tails = [D for D in (Dall[Dall < mid], Dall[Dall > mid]) if D.size]
        extra = [[] for _ in tails]
        for _ in range(rounds):  # LP per tail, price, add violated columns through D (column gen.)
            v = np.zeros(N + 1)
            u = np.full(N + 1, np.nan)
            for D, ex in zip(tails, extra, strict=True):
                vt, ut = _transport_duals(f, s, B, lo, hi, D, F, cut, ex)
                v += vt
                u = np.where(np.isnan(ut), u, ut)
            g = np.zeros(N + 1)
            g[F] = -v[F]
            for x in Dall:  # the most each point may carry against feasible partners
                al, var, ok = _pair_columns(x, F, s, B, lo, hi)
                g[x] = float(np.where(ok, var / al + v[F][None, :] * (1 - al) / al, np.inf).min()) \
                    if ok.any() else 0.0
            g = np.where(np.isnan(u), g, np.minimum(g, u))
            added = 0
            for D, ex in zip(tails, extra, strict=True):
                kept = D[f[D] >= cut * f[D].max()]
                P = np.union1d(F, kept)
                iP, jP = np.triu_indices(P.size, 1)
                for x in kept:
                    tol = 1e-9 * max(abs(g[x]), 1e-300)
                    Y = kept[kept > x]
                    if Y.size:  # two deficient points
                        al, var, ok = _pair_columns(x, Y, s, B, lo, hi)
                        viol = np.where(ok, (al * g[x] + (1 - al) * g[Y][None, :] - var) / al, -np.inf)
                        h, yi = np.unravel_index(int(np.argmax(viol)), viol.shape)
                        if viol[h, yi] > tol:
                            ex.append(((x, Y[yi]), (al[h, yi], 1 - al[h, yi]), var[h, yi]))
                            added += 1
                    if single:
                        continue
                    sel = (P[iP] != x) & (P[jP] != x)
                    best_v, best_c = tol, None
                    for ax, ay, az, y, z, var in _three_point(x, P[iP][sel], P[jP][sel], s, B, lo, hi):
                        viol = (ax * g[x] + ay * g[y] + az * g[z] - var) / np.maximum(ax, 1e-300)
                        i = int(np.argmax(viol))
                        if viol[i] > best_v:
                            best_v, best_c = float(viol[i]), ((x, y[i], z[i]), (ax[i], ay[i], az[i]), var[i])
                    if best_c is not None:
                        ex.append(best_c)
                        added += 1
            if not added:
                break
        if not np.isfinite(g[Dall]).all():
            g[Dall] = np.where(np.isfinite(g[Dall]), g[Dall], 0.0)
        pre = float(f @ g)
        _deficient_repair(g, f, Dall, F, s, B, lo, hi, single)
        shifts[j] = pre - float(f @ g)
        per_user[j] = float(f @ g)
    best = max(per_user, key=per_user.get)
    return {"bound": per_user[best], "user": best, "per_user": per_user, "shift": shifts[best]}


def _three_point(x, yy, zz, s, B, lo, hi):
    """The three-point vertices of R through x and the pairs (yy, zz): one side of each functional
    active, α solving [1 1 1; C1; C2] α = (1, 0, 0) by Cramer's rule; yields (α_x, α_y, α_z, y, z,
    Var) per side pair. A |det| ≤ 1e-10 Σ|cofactors| puts some |α| above 3e9 (no vertex);
    cofactors at the round-off of their products (nearly dependent functionals) are skipped."""
    for a in (lo[0], hi[0]):
        for b in (lo[1], hi[1]):
            C1, C2 = B[0] - a, B[1] - b
            c_x = C1[yy] * C2[zz] - C1[zz] * C2[yy]
            c_y = C1[zz] * C2[x] - C1[x] * C2[zz]
            c_z = C1[x] * C2[yy] - C1[yy] * C2[x]
            det = c_x + c_y + c_z
            csum = np.abs(c_x) + np.abs(c_y) + np.abs(c_z)
            prods = np.abs(C1[yy] * C2[zz]) + np.abs(C1[zz] * C2[yy]) + np.abs(C1[zz] * C2[x]) \
                + np.abs(C1[x] * C2[zz]) + np.abs(C1[x] * C2[yy]) + np.abs(C1[yy] * C2[x])
            with np.errstate(divide="ignore", invalid="ignore"):
                ax, ay, az = c_x / det, c_y / det, c_z / det
            ok = np.isfinite(ax) & (ax >= -1e-12) & (ay >= -1e-12) & (az >= -1e-12) \
                & (np.abs(det) > 1e-10 * csum) & (csum > 1e-12 * prods)
            if ok.any():
                ax, ay, az, y, z = ax[ok], ay[ok], az[ok], yy[ok], zz[ok]
                var = ax * ay * (s[x] - s[y]) ** 2 + ax * az * (s[x] - s[z]) ** 2 \
                    + ay * az * (s[y] - s[z]) ** 2
                yield ax, ay, az, y, z, var


def _deficient_repair(g, f, D, F, s, B, lo, hi, single: bool = False) -> None:
    """Make g·v ≤ Var(v) hold (in place) at the vertices of R that the pricing by feasible partners
    does not cover; lowering g keeps every vertex already satisfied. A three-point vertex has one
    side of each functional active and one deficient point at least (else g·v ≤ 0 ≤ Var). First the
    three-point vertices with one deficient point x cap g_x at (Var − the others' share)/α_x; then
    each violated vertex with two or three deficient points (pairs and triples) is cut on the
    deficient point w where it costs the bound least (f_w·violation/α_w), with g at the start of its
    batch (later cuts only lower g)."""
    n = s.size
    inD = np.zeros(n, bool)
    inD[D] = True
    iF, jF = np.triu_indices(F.size, 1)
    yyF, zzF = F[iF], F[jF]
    yy0, zz0 = np.triu_indices(n, 1)
    m = inD[yy0] | inD[zz0]
    yyD, zzD = yy0[m], zz0[m]
    for x in D:  # pass 1: one deficient point
        if single:
            break
        for ax, ay, az, y, z, var in _three_point(x, yyF, zzF, s, B, lo, hi):
            one = ax > 0
            if one.any():
                cap = (var[one] - ay[one] * g[y[one]] - az[one] * g[z[one]]) / ax[one]
                g[x] = min(g[x], float(cap.min()))
    for x in D:  # pass 2: two or three deficient points
        Y = D[D > x]
        if Y.size:
            al, var, ok = _pair_columns(x, Y, s, B, lo, hi)
            viol = np.where(ok, al * g[x] + (1 - al) * g[Y][None, :] - var, -np.inf)
            h, yi = np.nonzero(viol > 0)
            if h.size:  # cut where it costs least: f_w·violation/α_w
                on_x = f[x] / al[h, yi] <= f[Y[yi]] / (1 - al[h, yi])
                w = np.where(on_x, x, Y[yi])
                aw = np.where(on_x, al[h, yi], 1 - al[h, yi])
                np.minimum.at(g, w, g[w] - viol[h, yi] / aw)
        if single:
            continue
        sel = (yyD != x) & (zzD != x)
        for ax, ay, az, y, z, var in _three_point(x, yyD[sel], zzD[sel], s, B, lo, hi):
            viol = ax * g[x] + ay * g[y] + az * g[z] - var
            bad = viol > 0
            if bad.any():
                ax, ay, az, y, z, viol = ax[bad], ay[bad], az[bad], y[bad], z[bad], viol[bad]
                cand = np.stack([np.full(y.size, x), y, z])
                alph = np.stack([ax, ay, az])
                price = np.where(inD[cand] & (alph > 0), f[cand] / np.maximum(alph, 1e-300), np.inf)
                pick = np.argmin(price, axis=0)
                w = cand[pick, np.arange(y.size)]
                aw = alph[pick, np.arange(y.size)]
                np.minimum.at(g, w, g[w] - viol / np.maximum(aw, 1e-300))


def paper_rows(N: int, p: float, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """``(P_S, rows)`` of [001] Prop. 5 as printed: S ~ Binomial(N, p), L·P_S·c − (s∘P_S)·c ≤ 0 and
    (s∘P_S)·c − U·P_S·c ≤ 0 with the printed window."""
    PS = sum_distribution(np.full(N, p))
    L, U = mean_window(N, p, epsilon, printed=True)
    s = np.arange(N + 1.0)
    return PS, np.vstack([(L - s) * PS, (s - U) * PS])


@halt.scoped
def solve(p, epsilon: float, *, mode: str = "verified", method: str = "auto",
          time_limit: float | None = None, gap_tol: float = 1e-6) -> Result:
    """The certified CIP-optimal mechanism on the sum S for per-user priors ``p`` (MSE of the MMSE
    estimator E[S | Y], [001] eq. (37)).

    ``mode="verified"``: the exact notion for the users' own priors (Poisson-binomial S, every user's
    constraint); ``mode="paper"``: [001] Prop. 5 as printed, for the global prior mean(p)
    (Binomial S, the printed one-sided window); ``stats["paper_feasible"]`` says whether that mechanism
    is CIP for the users' priors, ``stats["mse_true"]`` its MSE on the true S with the paper's estimator.
    Both solve the design problem exactly (``lpmech.models.lip.solve``: vertex method for N ≤ 7, else
    column generation with exact LP pricing) and raise like it on a stop without certified optimum.
    Verified mode with ``method="auto"`` above N = ``TILTED_MIN_N`` (5000), or ``method="tilted"``:
    :func:`solve_tilted` (reveal the middle, pool each tail whole; proved CIP by interval checks on
    the users' posteriors under an exponential tilt; MSE bounded above, bound 0; ``mechanism`` None
    when the dense channel would not fit). Verified mode with ``method="auto"`` above N =
    ``COLGEN_MAX_N`` (30), or ``method="censored"``:
    the censored mechanism and its lower bound (module docstring), ``status`` by the package's rule
    (relative gap ≤ ``gap_tol`` or absolute gap ≤ 1e-8·Var S); ``stats["certified_by"]`` says which
    (with "absolute floor" the optimum is only known to lie in [bound, objective]) and
    ``stats["gap_rel_true"]`` is gap/objective; an open gap raises NotOptimalError with the result.
    Returns a :class:`Result` with ``objective`` the per-database MSE E[(S − Ŝ)²] and the certificate's
    ``notion`` ``"cip"`` (realised ε under the users' priors).
    """
    from . import lip, lip_solve
    from .lip_estimation import mmse_mse

    t0 = time.perf_counter()
    p = _check_p(p)
    eps = check_epsilon(epsilon)
    N = p.size
    if mode == "verified" and (method == "tilted" or (method == "auto" and N > TILTED_MIN_N)):
        return solve_tilted(p, eps, gap_tol=gap_tol)
    if mode == "paper" and N > TILTED_MIN_N:  # its check needs every user's N-long law: O(N³)
        raise InputError(f"CIP paper mode checks the printed mechanism against every user's own "
                         f"prior through the users' leave-one-out laws of S, which need O(N³) work: "
                         f"N = {N} users is above {TILTED_MIN_N}; use mode='verified' (the tilted "
                         "construction), or censored_window(sum_distribution([mean p]*N), "
                         "*mean_window(N, mean p, eps, printed=True)) for the printed program alone")
    values = np.arange(N + 1.0)
    PS_true, T = cip_correlation(p)
    # the MSE does not change with a shift of the values: centre them (E‖V‖² = Var S, not E[S²],
    # so a tiny MSE is not the difference of two large numbers in the ray LP)
    centred = values - float(PS_true @ values)
    if mode == "verified":
        if T.shape[0] == 0:
            raise InputError("no user has a secret (every prior is 0 or 1): S is public")
    if mode == "verified" and (method == "censored" or (method == "auto" and N > COLGEN_MAX_N)):
        Q, opt, stats, solved = _solve_censored(p, eps, PS_true, T, gap_tol)
        res = None
    elif mode == "verified":
        res = lip_solve.solve(PS_true, eps, values=centred, T=T, method=method, time_limit=time_limit,
                        gap_tol=gap_tol)
        Q = res.mechanism.matrix
        stats = dict(res.stats, mse_true=res.objective)
        opt = res.optimality
        solved = res.status
    elif mode == "paper":
        from .lip import Scenario, repair_columns
        from .lip_optimize import LPRank1Pricing, solve_colgen, solve_vertex

        pbar = float(p.mean())
        PS, rows = paper_rows(N, pbar, eps)
        L, U = mean_window(N, pbar, eps, printed=True)
        cw = censored_window(PS, L, U) if method == "auto" else None
        closed = cw is not None and cw["Q"] is not None
        if closed:  # the exact closed form: its value is its bound; within-pool variances, so exact
            # down to the tiniest MSE; the paper's estimator errs only in the pools on the true S
            Q, mse, stop, how = cw["Q"], cw["mse"], "optimal", "censored window"
            mse_lb = mse
            mse_true = float(PS_true @ (cw["lower"] * (values - L) ** 2 + cw["upper"] * (values - U) ** 2))
        else:  # the printed program by the LP machinery (method="vertex"/"exact", or pools that meet)
            scen = [Scenario.make(PS)]
            V = (values - float(PS @ values))[:, None]
            if N + 1 <= lip.VERTEX_MAX_D or method == "vertex":
                Q, bound_u = solve_vertex(scen, V, rows, time_limit=time_limit)
                stop, mse_lb, how = "optimal", -bound_u, "vertex"
            else:
                pricing = LPRank1Pricing.make(scen, V, rows)
                Q, mse_lb, info = solve_colgen(scen, V, rows, pricing, time_limit=time_limit,
                                               gap_tol=0.9 * gap_tol)
                stop, how = info["stop"], "exact"
            Q = repair_columns(Q, rows)
            mse = mmse_mse(Q, PS, V)
            # the paper's estimator (posterior means under Binomial(N, mean p)) on the true S
            lam = PS @ Q
            shat = np.where(lam > 0, (values * PS) @ Q / np.where(lam > 0, lam, 1.0), 0.0)
            mse_true = float(PS_true @ ((values[:, None] - shat[None, :]) ** 2 * Q).sum(axis=1))
        opt = OptimalityCertificate.from_values(
            mse, min(mse_lb, mse), source="closed form, convex order" if closed else "paper program")
        # the printed program is solved exactly or not at all: an LP stop without a certified gap
        # (the binomial tails defeat the column generation's master) raises like every model
        solved = "optimal" if closed else stop if stop != "optimal" else \
            gap_status(opt, scale=float(PS @ V[:, 0] ** 2))
        stats = {"mode": "paper", "method": how, "stop": stop, "global_prior": pbar, "mse": mse,
                 "mse_true": mse_true, "window_printed": (L, U), "window_full": mean_window(N, pbar, eps)}
        res = None
    else:
        raise InputError(f"unknown mode {mode!r}: use 'verified' or 'paper'")
    real = cip_epsilon(Q, p) if T.shape[0] else 0.0
    ok = real <= eps * (1 + EPS_RTOL)
    A = cip_rows(p, eps)
    viol = A @ Q if A.size else np.zeros((0, Q.shape[1]))
    bad = viol > 1e-12
    from ...mechanism import PrivacyCertificate

    cert = PrivacyCertificate(
        notion="cip", realized_epsilon=real, target_epsilon=eps, gamma=math.inf,
        worst_violation=float(viol.max(initial=-np.inf)), violation_ratio=float(bad.mean()) if bad.size
        else 0.0, violation_magnitude=float(viol[bad].mean()) if bad.any() else 0.0,
        n_constraints=int(viol.size), satisfied=ok)
    stats.update(N=N, epsilon=eps, paper_feasible=ok if mode == "paper" else None,
                 realized_epsilon=real, time_s=time.perf_counter() - t0)
    mech = Mechanism(Q, name=f"cip-{mode}", certificate=cert)
    if res is not None:
        return dataclasses.replace(res, mechanism=mech, certificate=cert, stats=stats)
    if mode == "verified":  # the censored construction: certified CIP or a bug, never returned
        if not ok:
            raise SolverError(f"CIP censored construction: realised ε {real:.6g} above the target "
                              f"{eps:g}", result=Result("error", mech, cert, opt, stats))
        out = Result(solved, mech, cert, opt, stats)
        raise_for_status(out, "CIP verified mode (censored construction)")
        return out
    out = Result("closed_form", mech, cert, opt, stats)
    if solved != "optimal":
        raise_for_status(dataclasses.replace(out, status=solved), "CIP paper program")
    return out


#: ``solve(mode="verified", method="auto")`` runs the exact column generation up to this N and the
#: censored construction with its bound above (the colgen master fails on the tails of S beyond ~30)
COLGEN_MAX_N = 30


def _solve_censored(p, eps, PS, T, gap_tol):
    """Verified mode by :func:`censored_users` (upper bound) and :func:`cip_lower_bound` (the bound,
    clipped at the trivial 0); status by the package's rule (:func:`gap_status`, scale Var S). The
    stats say which side of that rule certified it: ``certified_by`` "relative gap" or "absolute
    floor" (gap ≤ 1e-8·Var S: then the optimum is only known to lie in [bound, objective]), and
    ``gap_rel_true`` = gap / objective (the certificate's gap_rel divides by max(objective, 1e-12))."""
    q = np.unique(p[(p > 0) & (p < 1)])
    J = T[1::2] * q[:, None]
    t0 = time.perf_counter()
    cu = censored_users(p, eps, f=PS, J=J)
    if cu is None:
        raise SolverError("CIP censored construction: the two pools meet (window too narrow for "
                          "separate tails); use method='exact' at small N")
    Q, mse, how = cu["Q"], cu["mse"], "censored users"
    _, L, U = user_windows(p, eps)
    Qp = pair_improvement(PS, J, L, U, cu)
    if Qp is not None:
        mse_p = _channel_mse(Qp, PS)
        if mse_p < mse and cip_epsilon(Qp, p) <= eps * (1 + EPS_RTOL):
            Q, mse, how = Qp, mse_p, "censored users + pair LP"
    t1 = time.perf_counter()
    bl, bu = cu["binding"]
    users = [(bl, bu)] if bl >= 0 and bu >= 0 and bl != bu else [i for i in (bl, bu) if i >= 0] or None
    lb = cip_lower_bound(p, eps, f=PS, J=J, users=users)
    t2 = time.perf_counter()
    bound = min(max(lb["bound"], 0.0), mse)
    opt = OptimalityCertificate.from_values(mse, bound, source="two-user relaxation, weak duality")
    s = np.arange(PS.size, dtype=float)
    var_s = float(PS @ (s - PS @ s) ** 2)
    solved = gap_status(opt, gap_tol, scale=var_s)
    gap = mse - bound
    rel = gap / mse if mse > 0 else 0.0
    by = None if solved != "optimal" else "relative gap" if rel <= gap_tol else "absolute floor"
    ju = lb["user"]
    stats = {"mode": "verified", "method": how, "stop": "construction + bound",
             "mse_construction": cu["mse"],
             "mse_true": mse, "bound_raw": lb["bound"],
             "bound_users_priors": tuple(float(q[i]) for i in np.atleast_1d(ju)),
             "binding_priors": (float(q[bl]) if bl >= 0 else None, float(q[bu]) if bu >= 0 else None),
             "k": cu["k"], "k_up": cu["k_up"], "theta": cu["theta"], "theta_up": cu["theta_up"],
             "gap_rel_true": rel, "certified_by": by, "var_s": var_s, "abs_floor": GAP_ABS_TOL * var_s,
             "time_construction_s": t1 - t0, "time_bound_s": t2 - t1}
    return Q, opt, stats, solved


# --------------------------------------------------------------------------------------------
# Large N: the tilted construction (no N × N laws, no underflow)

#: ``solve(mode="verified", method="auto")`` uses :func:`solve_tilted` above this N (the censored
#: construction needs the N × N leave-one-out laws: 20 GB and O(N³) at N = 50000)
TILTED_MIN_N = 5000
_RTOL_DFT = 1e-9  # relative margin for the DFT's round-off (≲ 1e-11 against exact laws, N ≤ 500)


def _logit(x):
    x = np.asarray(x, float)
    return np.log(x) - np.log1p(-x)


def _tilt_theta(r, m: float) -> float:
    """θ with Σ_j p̃_j(θ) = m, p̃_j = expit(logit p_j + θ) (the exponential tilt that centres the
    law of S at m; 0 < m < n)."""
    from scipy.optimize import brentq
    from scipy.special import expit

    lr = _logit(r)
    return float(brentq(lambda t: float(expit(lr + t).sum()) - m, -800.0, 800.0, xtol=1e-12,
                        maxiter=500))


def _dft_laws(r, m: int, users=None, chunk: int = 4096, centre: float | None = None) -> dict:
    """Exact-to-round-off laws at the tilt θ_m that centres S = Σ_j D_j (D_j ~ Bernoulli(r_j)) at m:
    ``f`` = (P̃(S = m − 1), P̃(S = m)); for ``users`` (priors, each one of r): ``g`` = rows
    (P̃(S_{−i} = m − 1), P̃(S_{−i} = m)), the tilted priors ``pt`` and ``pc`` = 1 − pt; ``theta``, ``logZ``
    (log E e^{θS}: log Pr(S = s) = log P̃(S = s) − θs + logZ), ``var`` (tilted Var S).

    By the DFT of the characteristic function φ(t) = Π_j (1 − p̃_j + p̃_j e^{it}) on M (odd) points,
    φ_{−i} = φ/(1 − p̃_i + p̃_i e^{it}) (as a difference of logs, chunked over the users: no N × N
    array). ``centre``: centre the tilt there instead of m (a cross-check: the posteriors do not
    depend on θ). Aliasing (the mass beyond (M − 1)/2 of the centre) is ≤ 2 exp(−2(M − 2)²/n) (Hoeffding,
    any independent bits); frequencies with |φ_{−i}(t)| ≤ exp(−(Var − 1/4)(1 − cos t)) ≤ 1e-40
    (|1 − p + p e^{it}|² = 1 − 2p(1 − p)(1 − cos t)) are left out; both bounds in ``err``."""
    from scipy.special import expit

    r = np.asarray(r, float)
    n = r.size
    theta = _tilt_theta(r, float(m if centre is None else centre))  # any θ is exact; centred: stable
    lr = _logit(r)
    pt, pc = expit(lr + theta), expit(-(lr + theta))  # p̃ and 1 − p̃, each to full relative precision
    v = pt * pc
    var = float(v.sum())
    logZ = float(np.logaddexp(np.log1p(-r), np.log(r) + theta).sum())
    M = int(min(n + 1, math.ceil(8 * math.sqrt(n)) + 2)) | 1
    K = (M - 1) // 2
    k = np.arange(1, K + 1)
    t = 2 * math.pi * k / M
    decay = (var - 0.25) * (1 - np.cos(t))
    trunc = 2.0 * K / M * np.exp(-decay)
    Kp = int(np.argmax(trunc <= 1e-40)) if (trunc <= 1e-40).any() else K
    Kp = max(Kp, 1)
    k, t = k[:Kp], t[:Kp]
    e_it = np.exp(1j * t)
    Lsum = np.zeros(Kp, complex)
    for a in range(0, n, chunk):
        Lsum += np.log(pc[a:a + chunk, None] + pt[a:a + chunk, None] * e_it[None, :]).sum(axis=0)
    ph = np.exp(-2j * math.pi * (np.outer([m - 1, m], k) % M) / M)  # exact phases: (k·m) mod M
    phi = np.exp(Lsum)
    f = (1.0 + 2.0 * (ph * phi[None, :]).real.sum(axis=1)) / M
    out = {"theta": theta, "logZ": logZ, "var": var, "M": M, "K": Kp, "f": f,
           "err": {"alias": 2 * math.exp(-2 * (M - 2) ** 2 / n) if M < n + 1 else 0.0,
                   "trunc": float(trunc[Kp]) if Kp < K else 0.0}}
    if users is not None:
        users = np.asarray(users, float)
        lu = _logit(users) + theta
        ptu, pcu = expit(lu), expit(-lu)
        g = np.empty((users.size, 2))
        for a in range(0, users.size, chunk):
            lh = np.log(pcu[a:a + chunk, None] + ptu[a:a + chunk, None] * e_it[None, :])
            ex = np.exp(Lsum[None, :] - lh)
            g[a:a + chunk] = (1.0 + 2.0 * (ex @ ph.T).real) / M
        out.update(g=g, pt=ptu, pc=pcu)
    return out


def tilted_posteriors(p, s: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(q, a, b)``: the posteriors a_i(s) = Pr(D_i = 1 | S = s) and b_i(s) = Pr(D_i = 0 | S = s)
    of the users with a secret (distinct priors q of :func:`user_windows`), without the law of S:
    a_i(s) = p̃_i P̃(S_{−i} = s − 1)/P̃(S = s), b_i(s) = (1 − p̃_i) P̃(S_{−i} = s)/P̃(S = s) under the
    exponential tilt p̃_j = p_j e^θ/(1 − p_j + p_j e^θ) centring S at s (a_i is invariant under it),
    by :func:`_dft_laws` (b is computed on its own, so 1 − a keeps its relative precision for priors
    near 1). Users of prior 1 shift S; s must lie strictly inside the support."""
    p = _check_p(p)
    q = np.unique(p[(p > 0) & (p < 1)])
    r = p[(p > 0) & (p < 1)]
    m = int(s) - int((p == 1).sum())
    if not 0 < m < r.size:
        raise InputError(f"s = {s} must lie strictly inside the support of S")
    d = _dft_laws(r, m, users=q)
    a = d["pt"] * d["g"][:, 0] / d["f"][1]
    b = d["pc"] * d["g"][:, 1] / d["f"][1]
    return q, a, b


def _lower_pool(r, q, L, U, eps: float, tol_tail: float = 1e-13) -> dict | None:
    """The lower pool {s < k} (reduced S = Σ r-users) of :func:`solve_tilted` and its checks: the
    first atoms k − T..k − 1 carry every user's posterior (a_i increasing in s), the rest (mass τ)
    is bounded by log-concavity. Returns k, T, per-user bounds ``a_lo`` ≤ E[a_i | pool] and
    ``b_hi`` ≥ E[b_i | pool], the log of a bound on the pool's MSE, or None (no room)."""
    n = r.size
    with np.errstate(divide="ignore"):
        th_lo = float(np.max(_logit(L) - _logit(q)))  # p̃_i(θ) ≥ L_i for every user iff θ ≥ th_lo
    from scipy.special import expit

    lr = _logit(r)
    mu = lambda th: float(expit(lr + th).sum())  # noqa: E731
    var0 = float((expit(lr + th_lo) * expit(-(lr + th_lo))).sum())
    delta = 4.0 / max(var0, 1.0) + 1e-4
    for _ in range(12):
        th = th_lo + delta
        if th >= 0:
            return None
        s_lo = math.ceil(mu(th))
        if s_lo < 1:
            delta *= 2
            continue
        d0 = _dft_laws(r, s_lo, users=q)
        rr = d0["f"][0] / d0["f"][1] * math.exp(d0["theta"])  # f(s_lo − 1)/f(s_lo) ≥ every ratio below
        if not 0 < rr < 1:
            return None
        T = max(2, math.ceil(math.log(tol_tail * (1 - rr) / rr) / math.log(rr) * 1.25) + 1)
        while True:
            k = s_lo + T
            if k >= n:
                return None
            dk = _dft_laws(r, k)
            rk = dk["f"][0] / dk["f"][1] * math.exp(dk["theta"])  # f(k − 1)/f(k) ≥ ratios below k
            if not rk < 1:
                return None
            # τ/M ≤ [r/(1 − r)]·(1/r_k − 1)/(r_k^{−T} − 1), M the mass of the T atoms k−T..k−1
            tau_m = rr / (1 - rr) * (1 / rk - 1) / (rk ** -T - 1) * (1 + 1e-6)
            if tau_m <= tol_tail:
                break
            T = int(T * 1.5) + 1
        a = d0["pt"] * d0["g"][:, 0] / d0["f"][1]
        b = d0["pc"] * d0["g"][:, 1] / d0["f"][1]
        a_lo = a * (1 - tau_m) * (1 - _RTOL_DFT)  # E[a | pool] ≥ a(k − T)·M/(M + τ)
        b_hi = b * (1 + _RTOL_DFT) + tau_m  # E[b | pool] ≤ (M b(k − T) + τ)/(M + τ)
        with np.errstate(divide="ignore", invalid="ignore"):  # in tilt units (logit a ≈ logit q + θ)
            short = float(np.max(np.r_[_logit(L) - _logit(a_lo),
                                       _logit(L) - _logit(np.clip(1 - b_hi, 0, 1))]))
        if short <= 0 and (a_lo >= L).all() and (b_hi <= 1 - L).all():
            # MSE of the pool ≤ Σ_{j≥0} f(k − 1 − j) j² ≤ f(k − 1)·r_k(1 + r_k)/(1 − r_k)³
            log_fk = math.log(dk["f"][1]) - dk["theta"] * k + dk["logZ"]
            log_mse = log_fk + math.log(rk) + math.log(rk * (1 + rk)) - 3 * math.log1p(-rk)
            return {"k": k, "T": T, "a_lo": a_lo, "b_hi": b_hi, "log_mse": log_mse, "theta": th,
                    "theta_lo": th_lo, "r": rr, "r_k": rk, "tau_over_m": tau_m, "log_f_k": log_fk,
                    "dft": {"M": d0["M"], "K": d0["K"], **d0["err"]}}
        delta += 1.25 * short + 1e-6 if math.isfinite(short) else delta
    return None


def tail_pooling_channel(N: int, k: int, k_up: int):
    """The channel of :func:`solve_tilted` as a sparse (N + 1) × (k_up − k + 3) matrix: output 0
    pools s < k, output 1 + s − k reveals s ∈ [k, k_up], the last output pools s > k_up."""
    from scipy import sparse

    s = np.arange(N + 1)
    col = np.where(s < k, 0, np.where(s > k_up, k_up - k + 2, s - k + 1))
    return sparse.csr_matrix((np.ones(N + 1), (s, col)), shape=(N + 1, k_up - k + 3))


def solve_tilted(p, epsilon: float, *, gap_tol: float = 1e-6, dense_max: float = 1e7) -> Result:
    """Verified CIP at large N (tens of thousands of users) without the N × N leave-one-out laws:
    reveal s ∈ [k, k'] and pool each tail whole into one output; proved CIP for every user's own
    prior by interval checks, and its MSE bounded above (it underflows far out).

    Proof. An output of posterior ρ over S is CIP iff E_ρ[a_i] ∈ [L_i, U_i] for every user
    (:func:`censored_users`); a_i(s) increases in s (log-concave laws). Lower pool {s < k}: its
    first T atoms k − T..k − 1 have a_i ≥ a_i(k − T); the mass τ below them is ≤ f(k − T)·r/(1 − r)
    (r = f(k − T − 1)/f(k − T) bounds every ratio below: f is log-concave) and their own mass M ≥
    f(k − T)(r_k^{−T} − 1)/(1/r_k − 1) (r_k = f(k − 1)/f(k)); so E[a_i | pool] ≥ a_i(k − T)(1 − τ/M)
    and E[b_i | pool] ≤ b_i(k − T) + τ/M, b_i = 1 − a_i; above, E[a_i | pool] ≤ a_i(k) and the
    revealed values k..k' lie between the pools' bounds (monotonicity). The upper pool is the lower
    pool of the complemented bits. a_i and b_i at k − T come from :func:`_dft_laws` (the tilt that
    centres S at k − T: no underflow), with a relative margin 1e-9 for round-off. k − T is placed at
    the tilt θ_lo + δ, θ_lo = max_i (logit L_i − logit p_i) (where the tilted priors reach the
    windows), δ grown until every check passes. The realised ε in the certificate is the upper bound
    these intervals give (max over users of |log posterior/prior| at their ends), not a Bayes
    computation over an N × N table.

    MSE: pool {s < k} ≤ f(k − 1) r_k(1 + r_k)/(1 − r_k)³ (squared distance to k − 1, geometric
    tail), in logs; the ``objective`` is exp of the sum of both pools' bounds (0.0 where it
    underflows: ``stats["mse_log10_upper"]`` keeps it). The bound is the trivial 0, so the status is
    by the absolute floor of :func:`gap_status` (gap ≤ 1e-8·Var S) or not at all: ``certified_by``
    says which, and ``gap_rel_true`` is 1 (bound 0 against a positive MSE). ``mechanism``: the dense
    channel when (N + 1)·(k' − k + 3) ≤ ``dense_max``, else None (``tail_pooling_channel(N, k, k_up)``
    gives it sparse)."""
    from ...mechanism import PrivacyCertificate

    t0 = time.perf_counter()
    p = _check_p(p)
    eps = check_epsilon(epsilon)
    N = p.size
    sec = (p > 0) & (p < 1)
    if not sec.any():
        raise InputError("no user has a secret (every prior is 0 or 1): S is public")
    r = p[sec]
    n1 = int((p == 1).sum())
    q, L, U = user_windows(p, eps)
    lo = _lower_pool(r, q, L, U, eps)
    hi = _lower_pool(1 - r, 1 - q, 1 - U, 1 - L, eps)
    if lo is None or hi is None or lo["k"] > r.size - hi["k"]:
        raise SolverError("CIP tilted construction: no room for the pools (window too narrow for "
                          "the tails at this N); use method='censored' (N ≤ a few thousand)")
    k, k_up = n1 + lo["k"], n1 + r.size - hi["k"]
    a_min, b_max = lo["a_lo"], lo["b_hi"]  # every output's E[a_i] ∈ [a_min, 1 − b_min] ...
    b_min, a_max = hi["a_lo"], hi["b_hi"]  # ... and E[b_i] ∈ [b_min, b_max]
    with np.errstate(divide="ignore"):
        eps_user = np.max([np.log(a_max / q), np.log(q / a_min), np.log(b_max / (1 - q)),
                           np.log((1 - q) / b_min)], axis=0)
    real = float(eps_user.max())
    viol = float(np.max([L - a_min, a_max - U, (1 - U) - b_min, b_max - (1 - L)]))
    ok = real <= eps * (1 + EPS_RTOL) and viol <= 0
    log_mse = float(np.logaddexp(lo["log_mse"], hi["log_mse"]))
    mse = math.exp(log_mse) if log_mse > -745 else 0.0
    var_s = float((r * (1 - r)).sum())
    opt = OptimalityCertificate.from_values(mse, 0.0, source="trivial bound 0; MSE bounded above")
    floor_ok = log_mse <= math.log(GAP_ABS_TOL * var_s) if var_s > 0 else False
    solved = "optimal" if floor_ok else gap_status(opt, gap_tol, scale=var_s)
    by = None if solved != "optimal" else "absolute floor" if floor_ok else "relative gap"
    cert = PrivacyCertificate(
        notion="cip", realized_epsilon=real, target_epsilon=eps, gamma=math.inf,
        worst_violation=viol, violation_ratio=0.0 if viol <= 0 else float("nan"),
        violation_magnitude=0.0, n_constraints=int(4 * q.size * 3), satisfied=ok)
    Q = None
    if (N + 1) * (k_up - k + 3) <= dense_max:
        Q = tail_pooling_channel(N, k, k_up).toarray()
    stats = {"mode": "verified", "method": "tilted", "stop": "construction (interval checks)",
             "N": N, "epsilon": eps, "k": k, "k_up": k_up, "T": lo["T"], "T_up": hi["T"],
             "mse_true": mse, "mse_log10_upper": log_mse / math.log(10), "bound_raw": 0.0,
             "realized_epsilon": real, "realized_epsilon_is": "upper bound from the interval checks",
             "theta_lo": lo["theta"], "theta_up": -hi["theta"], "theta_window": (lo["theta_lo"],
                                                                               -hi["theta_lo"]),
             "tail_over_mass": (lo["tau_over_m"], hi["tau_over_m"]), "dft": (lo["dft"], hi["dft"]),
             "pools_log10_mass_at_edge": (lo["log_f_k"] / math.log(10), hi["log_f_k"] / math.log(10)),
             "gap_rel_true": 1.0, "certified_by": by, "var_s": var_s,
             "abs_floor": GAP_ABS_TOL * var_s, "paper_feasible": None, "time_s": time.perf_counter() - t0}
    mech = Mechanism(Q, name="cip-verified-tilted", certificate=cert) if Q is not None else None
    out = Result(solved, mech, cert, opt, stats)
    if not ok:
        raise SolverError(f"CIP tilted construction: realised ε bound {real:.6g} above the target "
                          f"{eps:g}", result=dataclasses.replace(out, status="error"))
    raise_for_status(out, "CIP verified mode (tilted construction)")
    return out
