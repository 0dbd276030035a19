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
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from ...certificate import OptimalityCertificate
from ...errors import InputError
from ...mechanism import EPS_RTOL, Mechanism, check_epsilon
from ...solvers.result import Result, gap_status, raise_for_status

__all__ = ["cip_correlation", "cip_epsilon", "cip_rows", "mean_window", "paper_rows", "solve",
           "sum_distribution"]


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


def paper_rows(N: int, p: float, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """``(P_S, rows)`` of [001] Prop. 5 as printed: S ~ Binomial(N, p), L·P_S·c − (s∘P_S)·c ≤ 0 and
    (s∘P_S)·c − U·P_S·c ≤ 0 with the printed window."""
    PS = sum_distribution(np.full(N, p))
    L, U = mean_window(N, p, epsilon, printed=True)
    s = np.arange(N + 1.0)
    return PS, np.vstack([(L - s) * PS, (s - U) * PS])


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
    Returns a :class:`Result` with ``objective`` the per-database MSE E[(S − Ŝ)²] and the certificate's
    ``notion`` ``"cip"`` (realised ε under the users' priors).
    """
    from . import lip, lip_solve
    from .lip_estimation import mmse_mse

    t0 = time.perf_counter()
    p = _check_p(p)
    eps = check_epsilon(epsilon)
    N = p.size
    values = np.arange(N + 1.0)
    PS_true, T = cip_correlation(p)
    # the MSE does not change with a shift of the values: centre them (E‖V‖² = Var S, not E[S²],
    # so a tiny MSE is not the difference of two large numbers in the ray LP)
    centred = values - float(PS_true @ values)
    if mode == "verified":
        if T.shape[0] == 0:
            raise InputError("no user has a secret (every prior is 0 or 1): S is public")
        res = lip_solve.solve(PS_true, eps, values=centred, T=T, method=method, time_limit=time_limit,
                        gap_tol=gap_tol)
        Q = res.mechanism.matrix
        stats = dict(res.stats, mse_true=res.objective)
        opt = res.optimality
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
    out = Result("closed_form", mech, cert, opt, stats)
    if solved != "optimal":
        raise_for_status(dataclasses.replace(out, status=solved), "CIP paper program")
    return out
