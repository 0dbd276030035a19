"""Closed-form LIP and LDP mechanisms: the papers' forms (``paper`` mode) and verified corrections.

All binary channels use X ∈ {0, 1}, prior (1 − P1, P1) and Q = [[1 − q0, q0], [q1, 1 − q1]] with
q0 = Pr(Y=1 | X=0), q1 = Pr(Y=0 | X=1) ([001] eq. (15)). E := e^ε.

Paper forms (each certified by :func:`.lip.lip_epsilon`; several violate LIP, spec §0):

* :func:`rr_lip_paper`: [001] Thm 2/3/5, [004] Thm 3: q_mm = 1 − (1−P_m)/E, q_mk = P_k/E. It is
  ε-LIP iff min P ≥ 1/(1 + E) (spec §5.4), which :func:`paper_feasible` states in closed form.
* :func:`latent_binary_paper`: [004] Thm 2; :func:`bp_binary_paper`: [004] Prop. 2 (interval prior);
* :func:`.lip_solve.lh_lip` (``paper=True``): [004] Prop. 3, RR-LIP on the hashed prior;
* :func:`ue_lip_paper`: [004] Thm 4 / Cor. 2 (q10 = 1/2).

Verified forms: :func:`binary_optimal` (the "kink" of spec §5.2, optimal for every binary case:
fixed, latent and bounded prior), :func:`structured_correction` (spec §5.4†, always feasible, a warm
start), :func:`ue_lip_optimal` (the exact 1-D search of spec §5.9) and verified LH (the optimum on
the hashed domain, exact by the vertex method).

LDP counterparts: :func:`binary_rr` (= GRR with d = 2), GRR via
:func:`lpmech.models.baselines.randomized_response`, OUE (:func:`oue_ldp`) and OLH (:func:`lh_ldp`).
"""

from __future__ import annotations

import math
import time

import numpy as np
from scipy.optimize import minimize_scalar

from ...certificate import OptimalityCertificate
from ...errors import InputError
from ...mechanism import Mechanism, check_epsilon
from ...solvers.result import Result
from ..baselines import randomized_response
from .lip import Scenario, lip_certificate, lip_epsilon
from .lip_estimation import column_utility, second_moment

__all__ = [
    "binary_channel", "binary_optimal", "binary_rr", "bp_binary_paper", "hash_matrix",
    "latent_binary_paper", "lh_ldp", "oue_ldp", "paper_feasible", "paper_solution",
    "rr_lip_paper", "structured_correction", "ue_channel", "ue_lip_epsilon", "ue_lip_optimal",
    "ue_lip_paper", "ue_mse", "warm_starts",
]


def binary_channel(q0: float, q1: float) -> np.ndarray:
    """[[1 − q0, q0], [q1, 1 − q1]]."""
    return np.array([[1 - q0, q0], [q1, 1 - q1]], dtype=float)


def paper_feasible(prior, epsilon: float) -> bool:
    """Whether the RR-LIP closed form is ε-LIP: min_k P_k ≥ 1/(1 + e^ε) (spec §5.1, §5.4)."""
    P = np.asarray(prior, float)
    return bool(P.min() >= 1 / (1 + math.exp(epsilon)))


def rr_lip_paper(prior, epsilon: float) -> np.ndarray:
    """[001] Thm 3 / [004] Thm 3: keep X w.p. 1 − e^{−ε}, else draw from the prior.
    For d = 2 this is [001] Thm 2: (q0, q1) = (P1/E, (1 − P1)/E)."""
    eps = check_epsilon(epsilon)
    P = np.asarray(prior, float)
    E = math.exp(eps)
    return (1 - 1 / E) * np.eye(P.size) + np.outer(np.ones(P.size), P) / E


def latent_binary_paper(P1: float, t_lo: float, t_hi: float, epsilon: float) -> np.ndarray:
    """[004] Thm 2 (binary X, latent G; t = Pr(X=1 | G=g)); a pair term with t = P1 (independence)
    imposes nothing and is taken as 0. Feasible but sometimes suboptimal (spec §5.3)."""
    E = math.exp(check_epsilon(epsilon))

    def term(num, den):
        return num / ((E + 1) * den) if abs(den) > 1e-15 else 0.0

    q0 = max(0.0, term(t_hi - P1 * E, t_hi - P1), term(P1 - t_lo * E, P1 - t_lo))
    q1 = max(0.0, term(1 + t_hi * E - E - P1, t_hi - P1), term(1 + P1 * E - E - t_lo, P1 - t_lo))
    return binary_channel(q0, q1)


def bp_binary_paper(a: float, b: float, epsilon: float) -> np.ndarray:
    """[004] Prop. 2 for P1 ∈ [a, b]: q01 = b/(b − a + E), q10 = (1 − a)/(b − a + E).
    Infeasible whenever b < 1 − aE or a > E(1 − b) (spec §5.7)."""
    E = math.exp(check_epsilon(epsilon))
    return binary_channel(b / (b - a + E), (1 - a) / (b - a + E))


def binary_optimal(scenarios, epsilon: float) -> np.ndarray:
    """The verified binary LIP optimum, spec §5.2 (the "kink"), for every scenario at once.

    ``scenarios``: (P1, t_lo, t_hi) triples, t = Pr(X=1 | G=g) (G = X: t_lo = 0, t_hi = 1; an
    interval prior [a, b]: the two endpoints). c1 = max(0, t_hi − E·P, P − E·t_lo),
    c0 = max(0, (1−P) − E(1−t_hi), (1−t_lo) − E(1−P)) maximised over scenarios;
    q0 = c1/(E − 1 + c1 + c0), q1 = c0/(E − 1 + c1 + c0).
    """
    E = math.exp(check_epsilon(epsilon))
    c1 = c0 = 0.0
    for P, t_lo, t_hi in scenarios:
        c1 = max(c1, t_hi - E * P, P - E * t_lo)
        c0 = max(c0, (1 - P) - E * (1 - t_hi), (1 - t_lo) - E * (1 - P))
    den = E - 1 + c1 + c0
    return binary_channel(c1 / den, c0 / den)


def binary_rr(epsilon: float) -> np.ndarray:
    """Binary RR-LDP ([001] Prop. 4): q0 = q1 = 1/(e^ε + 1)."""
    return randomized_response(2, epsilon).matrix.copy()


def structured_correction(priors, epsilon: float) -> np.ndarray:
    """Spec §5.4†: q = D·I + 1βᵀ, β_k = c_k/(E−1+Σc), c_k = max_θ max(P_θk, 1 − E·P_θk),
    D = (E−1)/(E−1+Σc). Always ε-LIP for the given priors (G = X); optimal for d = 2."""
    E = math.exp(check_epsilon(epsilon))
    Ps = np.atleast_2d(np.asarray(priors, float))
    c = np.maximum(Ps, 1 - E * Ps).max(axis=0)
    den = E - 1 + c.sum()
    return (E - 1) / den * np.eye(c.size) + np.outer(np.ones(c.size), c / den)


# --------------------------------------------------------------------------------- hashing (LH)


def hash_matrix(h, g: int | None = None) -> np.ndarray:
    """H[x, x'] = 1{h(x) = x'} for a hash given as an array of bucket indices."""
    h = np.asarray(h, int)
    g = int(h.max()) + 1 if g is None else g
    H = np.zeros((h.size, g))
    H[np.arange(h.size), h] = 1.0
    return H


def lh_ldp(d: int, h, epsilon: float) -> np.ndarray:
    """OLH / LH-LDP: GRR with ε on the hashed domain, as a channel from X (Wang et al. 2017)."""
    H = hash_matrix(h)
    return H @ randomized_response(H.shape[1], epsilon).matrix


# ------------------------------------------------------------------------------ unary encoding


def ue_lip_paper(prior, epsilon: float) -> tuple[float, float]:
    """[004] Thm 4 / Cor. 2: (q01, q10) = ((1 − P_min)/(E − 2P_min + 1), 1/2); pass the union of
    a bounded set's priors to get Cor. 2 (P_min over the set)."""
    E = math.exp(check_epsilon(epsilon))
    pmin = float(np.min(prior))
    return (1 - pmin) / (E - 2 * pmin + 1), 0.5


def oue_ldp(epsilon: float) -> tuple[float, float]:
    """OUE-LDP: (q01, q10) = (1/(e^ε + 1), 1/2) ([004] §4.4)."""
    return 1 / (math.exp(check_epsilon(epsilon)) + 1), 0.5


def ue_lip_epsilon(prior, q01: float, q10: float) -> float:
    """Realised LIP ε of UE with per-bit flips (q01, q10) (spec §5.9, exact reduction of [004] eq.
    (32)): with γ = (1−p)(1−q)/(pq) ≥ 1, the extreme ratios are (1−P_r)γ + P_r and
    1/(P_r + (1−P_r)/γ)."""
    P = np.asarray(prior, float)
    p, q = q10, q01
    if p + q > 1:  # relabel the outputs of every bit: the same privacy
        p, q = 1 - p, 1 - q
    if p <= 0 or q <= 0:
        return math.inf
    g = (1 - p) * (1 - q) / (p * q)
    return float(max(np.log((1 - P) * g + P).max(), -np.log(P + (1 - P) / g).min()))


def ue_channel(d: int, q01: float, q10: float) -> np.ndarray:
    """The full UE channel from X to Y ∈ {0,1}^d (2^d outputs, bit k of column index y)."""
    if d > 16:
        raise InputError("the full UE channel has 2^d columns; use ue_lip_epsilon for d > 16")
    Y = (np.arange(2 ** d)[:, None] >> np.arange(d)[None, :]) & 1  # 2^d × d
    out = np.empty((d, 2 ** d))
    for x in range(d):
        u = np.zeros(d, int)
        u[x] = 1
        pr = np.where(u == 1, np.where(Y == 1, 1 - q10, q10), np.where(Y == 1, q01, 1 - q01))
        out[x] = pr.prod(axis=1)
    return out


def ue_mse(prior, q01: float, q10: float) -> float:
    """Per-user histogram MSE of UE with the per-bit MMSE estimator ([004] eq. (30)–(31))."""
    Qb = binary_channel(q01, q10)
    return float(sum(p * (1 - p) - (column_utility(Qb, [1 - p, p], [0.0, 1.0]).sum() - p * p)
                     for p in np.asarray(prior, float)))


def ue_lip_optimal(prior, epsilon: float) -> tuple[float, float]:
    """The UE pair maximising [004] eq. (33) (per-bit MMSE) under ε-LIP (spec §5.9): on the
    boundary q = (1−p)/(Γp + 1 − p), Γ = (E − P_min)/(1 − P_min), by a grid then a bounded 1-D
    search over p = q10."""
    E = math.exp(check_epsilon(epsilon))
    pmin = float(np.min(prior))
    G = (E - pmin) / (1 - pmin)

    def neg(p):
        return ue_mse(prior, (1 - p) / (G * p + 1 - p), p)

    grid = np.linspace(1e-4, 1 - 1e-4, 401)
    i = int(np.argmin([neg(p) for p in grid]))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    p = float(minimize_scalar(neg, bounds=(lo, hi), method="bounded",
                              options={"xatol": 1e-12}).x)
    if neg(grid[i]) < neg(p):
        p = float(grid[i])
    q = (1 - p) / (G * p + 1 - p)
    return q, p


# ------------------------------------------------------------------------------ paper mode


def _binary_scenario(s: Scenario) -> tuple[float, float, float]:
    P1 = float(s.prior[1])
    if s.T is None:
        return P1, 0.0, 1.0
    return P1, float(s.T[:, 1].min()), float(s.T[:, 1].max())


def paper_solution(scenarios, epsilon: float, V, *, t0: float | None = None) -> Result:
    """The papers' closed form for this problem, with its feasibility report (``paper`` mode).

    One prior, G = X: [001] Thm 2/3, [004] Thm 3. Binary with latent G: [004] Thm 2. Binary with a
    prior set: [004] Prop. 2 on [min P1, max P1]. The papers give no closed form otherwise
    (InputError). ``stats["paper_feasible"]`` is the certificate's verdict.
    """
    t0 = time.perf_counter() if t0 is None else t0
    s0 = scenarios[0]
    d = s0.prior.size
    if len(scenarios) == 1 and s0.T is None:
        Q, name = rr_lip_paper(s0.prior, epsilon), "RR-LIP [001] Thm 3 / [004] Thm 3"
    elif d == 2 and len(scenarios) == 1:
        P1, lo, hi = _binary_scenario(s0)
        Q, name = latent_binary_paper(P1, lo, hi, epsilon), "latent binary [004] Thm 2"
    elif d == 2 and all(s.T is None for s in scenarios):
        P1s = [float(s.prior[1]) for s in scenarios]
        Q, name = bp_binary_paper(min(P1s), max(P1s), epsilon), "bounded prior [004] Prop. 2"
    else:
        raise InputError("the papers give no closed form for an M-ary latent or bounded-prior "
                         "problem ([004] §4.1-4.2 solve it numerically); use mode='verified'")
    cert = lip_certificate(Q, scenarios, epsilon)
    V = np.asarray(V, float).reshape(d, -1)
    mses = [second_moment(s.prior, V) - float(column_utility(Q, s.prior, V).sum()) for s in scenarios]
    stats = {"mode": "paper", "method": "closed_form", "closed_form": name, "d": d,
             "epsilon": float(epsilon), "mse": max(mses), "paper_feasible": cert.satisfied,
             "realized_epsilon": cert.realized_epsilon, "time_s": time.perf_counter() - t0}
    return Result("closed_form", Mechanism(Q, name=name, certificate=cert), cert,
                  OptimalityCertificate.from_values(max(mses), None, source="closed form"), stats)


def warm_starts(scenarios, epsilon: float, notion: str = "lip") -> list[np.ndarray]:
    """Certified-feasible closed forms to seed the local solve: GRR (ε-LDP ⇒ ε-LIP and
    ε-Pufferfish), the structured correction and RR-LIP where they are feasible."""
    d = scenarios[0].prior.size
    cands = [randomized_response(d, epsilon).matrix.copy()]
    if notion == "lip" and all(s.T is None for s in scenarios):
        cands.append(structured_correction([s.prior for s in scenarios], epsilon))
        if len(scenarios) == 1:
            cands.append(rr_lip_paper(scenarios[0].prior, epsilon))
    out = []
    for Q in cands:
        ok = (lip_certificate(Q, scenarios, epsilon, notion=notion).satisfied
              if notion != "lip" else all(lip_epsilon(Q, s.prior, s.T) <= epsilon * (1 + 1e-9)
                                          for s in scenarios))
        if ok:
            out.append(Q)
    return out
