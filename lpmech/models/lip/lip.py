"""Local information privacy (LIP): constraint families, certifiers and the certified optimum.

Seeds 001 ([001], "Localized Information Privacy") and 004 ([004], "Local Information Privacy");
reading in ``spec/seed001_004_lip.md``. A channel Q (d × f, Q[m, k] = Pr(Y=k | X=m)) is ε-LIP for a
prior P when e^{−ε} ≤ Pr(X=x)/Pr(X=x | Y=y) ≤ e^ε ([001] Def. 3, eq. (3); [004] Def. 6, eq. (6)).

**Constraint families** (spec §6). Every notion used here is a set of *homogeneous* linear rows on
each output column c = Q[:, k] separately, ``A c ≤ 0``, written in the well-scaled direction
e^{−ε}·u·c − v·c ≤ 0 with u, v probability vectors (DESIGN, Numerics):

* :func:`lip_rows`: ε-LIP (G = X, [001] eq. (26)) or latent-secret LIP with T[g, x] = Pr(X=x | G=g)
  ([004] eq. (9));
* :func:`bounded_prior_rows`: BP-LIP, the LIP rows of every scenario of a finite set (for a box or
  polytope of priors pass its vertices, :func:`box_prior_vertices`; the rows are linear in the prior);
* :func:`ldp_rows`: ε-LDP ([001] eq. (1)); :func:`pufferfish_rows`: local Pufferfish ([004] eq. (5)).

**Certifiers** compute what a matrix really satisfies: :func:`lip_epsilon` (also latent and over a
scenario set), :func:`pufferfish_epsilon`, :func:`mutual_information` (ε-MIP, nats),
:func:`max_information_leakage`, :func:`di_epsilon`; ε-LDP is :func:`lpmech.mechanism.ldp_epsilon`.

**Optimum** (spec §4.7). Minimising the MMSE estimator's MSE means maximising a convex function of
Q over the privacy polytope: non-convex, but exactly an LP over the extreme rays of the per-column
privacy cone. :mod:`.lip_optimize` holds the solvers (exact vertex method, column generation with
local pricing, the declarative Pyomo model solved by SCIP, and the LPs of linear utilities);
:func:`~.lip_solve.solve` (in :mod:`.lip_solve`, above the other LIP modules) dispatches, cleans
and certifies, and returns a :class:`~lpmech.solvers.result.Result`.
The papers' closed forms are in :mod:`.lip_closed_forms`, estimators and MSE in
:mod:`.lip_estimation`.
"""

from __future__ import annotations

import dataclasses
import logging
import math

import numpy as np

from ...errors import InputError
from ...mechanism import (
    EPS_RTOL,
    Mechanism,
    PrivacyCertificate,
    check_epsilon,
    ldp_epsilon,
)

log = logging.getLogger(__name__)

NOTIONS = ("lip", "ldp", "pufferfish", "di")
PRIOR_ATOL = 1e-9  # a prior must sum to 1 within this
VERTEX_MAX_D = 8  # solve(method="auto") uses the exact vertex method up to this domain size
#: usable ε of solve(): e^{−ε} must differ from 1, and the channel's entries span e^{2ε} (with priors
#: down to 1e-3, the vertex method was certified on every draw up to ε = 13 and failed some at 14)
MIN_EPS, MAX_EPS = 1e-9, 12.0

__all__ = [
    "Scenario", "bounded_prior_rows", "box_prior_vertices", "check_prior", "di_epsilon", "di_interior",
    "di_rows", "family_rows",
    "ldp_rows",
    "lip_certificate", "lip_epsilon", "lip_rows", "max_information_leakage", "mutual_information",
    "pufferfish_epsilon", "pufferfish_rows", "repair_columns",
]


# ------------------------------------------------------------------------------------- inputs


def check_prior(prior, d: int | None = None, name: str = "prior") -> np.ndarray:
    """A probability vector (non-negative, finite, summing to 1 within 1e-9), renormalised."""
    try:
        P = np.asarray(prior, dtype=float).ravel()
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a list of probabilities, got {prior!r}") from None
    if P.size == 0 or not np.isfinite(P).all() or (P < 0).any():
        raise InputError(f"{name} must be non-empty, finite and non-negative, got {prior!r}")
    if abs(P.sum() - 1) > PRIOR_ATOL:
        raise InputError(f"{name} sums to {P.sum():.12g}, not 1; normalise it")
    if d is not None and P.size != d:
        raise InputError(f"{name} has {P.size} entries, expected {d}")
    return P / P.sum()


@dataclasses.dataclass(frozen=True)
class Scenario:
    """One data-evolution scenario θ_XG ([004] §2.2): the prior of X and, for a latent secret G,
    T[g, x] = Pr(X = x | G = g) (``None``: G = X)."""

    prior: np.ndarray
    T: np.ndarray | None = None

    @classmethod
    def make(cls, prior, T=None) -> Scenario:
        P = check_prior(prior)
        if T is not None:
            T = np.asarray(T, dtype=float)
            if T.ndim != 2 or T.shape[1] != P.size or not np.isfinite(T).all() or (T < 0).any():
                raise InputError(f"correlation T must be a non-negative |G| × {P.size} matrix")
            if np.abs(T.sum(axis=1) - 1).max() > PRIOR_ATOL:
                raise InputError("each row of T (Pr(X | G = g)) must sum to 1")
            from scipy.optimize import nnls

            _, resid = nnls(T.T, P, maxiter=100 * T.shape[0])  # some Pr(G) ≥ 0 with Pr(G)ᵀT = P
            if resid > 1e-7:
                raise InputError("the correlation T is inconsistent with the prior: no distribution "
                                 "of G gives Σ_g Pr(g)·T[g] = P (residual "
                                 f"{resid:.2g}); build T from a joint Pr(G, X)")
        return cls(P, T)


def _scenarios(prior=None, priors=None, T=None) -> list[Scenario]:
    if priors is None:
        if prior is None:
            raise InputError("give a prior (or a set of priors)")
        return [Scenario.make(prior, T)]
    items = list(priors)
    if not items:
        raise InputError("the bounded prior set is empty")
    Ts = T if isinstance(T, list | tuple) else [T] * len(items)
    if len(Ts) != len(items):
        raise InputError("give one correlation matrix T per prior of the set")
    out = [Scenario.make(p, t) for p, t in zip(items, Ts, strict=True)]
    if len({s.prior.size for s in out}) != 1:
        raise InputError("all priors of the set must have the same number of values")
    return out


def box_prior_vertices(lo, hi) -> np.ndarray:
    """Vertices of the prior box {lo ≤ P ≤ hi, Σ P = 1} (enough for BP-LIP: the rows are linear
    in P, spec §2.7)."""
    lo, hi = np.asarray(lo, float).ravel(), np.asarray(hi, float).ravel()
    if lo.shape != hi.shape or (lo < 0).any() or (hi > 1).any() or (lo > hi).any():
        raise InputError("a prior box needs 0 ≤ lo ≤ hi ≤ 1 of equal length")
    if lo.sum() > 1 + PRIOR_ATOL or hi.sum() < 1 - PRIOR_ATOL:
        raise InputError(f"the prior box is empty: Σlo = {lo.sum():g}, Σhi = {hi.sum():g}")
    d = lo.size
    verts = []
    for free in range(d):  # all but one coordinate at a bound, the free one fixed by Σ P = 1
        others = [m for m in range(d) if m != free]
        for mask in range(1 << (d - 1)):
            p = np.empty(d)
            for b, m in enumerate(others):
                p[m] = hi[m] if mask >> b & 1 else lo[m]
            p[free] = 1 - p[others].sum()
            if lo[free] - 1e-12 <= p[free] <= hi[free] + 1e-12:
                verts.append(np.clip(p, 0, 1))
    V = np.unique(np.round(np.array(verts), 12), axis=0)
    return V / V.sum(axis=1, keepdims=True)


# -------------------------------------------------------------------------- constraint families


def _ratio_rows(U, W, eps: float) -> np.ndarray:
    """Rows e^{−ε} u·c − w·c ≤ 0 for every pair of rows (u, w) of U, W (same count)."""
    return math.exp(-eps) * np.asarray(U) - np.asarray(W)


def lip_rows(prior, epsilon: float, T=None) -> np.ndarray:
    """ε-LIP rows on one output column c: e^{−ε} t_g·c − P·c ≤ 0 and e^{−ε} P·c − t_g·c ≤ 0.

    G = X (``T=None``): t_g = e_x for every x with P_x > 0 ([001] eq. (26)). Latent G: t_g = T[g]
    ([004] eq. (9)). 2·|G| rows.
    """
    eps = check_epsilon(epsilon)
    s = Scenario.make(prior, T)
    Tm = np.eye(s.prior.size)[s.prior > 0] if s.T is None else s.T
    Pm = np.tile(s.prior, (Tm.shape[0], 1))
    return np.vstack([_ratio_rows(Tm, Pm, eps), _ratio_rows(Pm, Tm, eps)])


def bounded_prior_rows(scenarios, epsilon: float) -> np.ndarray:
    """BP-LIP ([004] §4.2): the LIP rows of every scenario (a list of priors or :class:`Scenario`)."""
    out = [lip_rows(s.prior, epsilon, s.T) if isinstance(s, Scenario) else lip_rows(s, epsilon)
           for s in scenarios]
    if not out:
        raise InputError("the bounded prior set is empty")
    return np.vstack(out)


def ldp_rows(d: int, epsilon: float) -> np.ndarray:
    """ε-LDP rows e^{−ε} c_m − c_n ≤ 0 for all m ≠ n ([001] eq. (1)): d(d−1) rows."""
    eps = check_epsilon(epsilon)
    m, n = np.nonzero(~np.eye(d, dtype=bool))
    eye = np.eye(d)
    return _ratio_rows(eye[m], eye[n], eps)


def pufferfish_rows(Ts, epsilon: float, pairs=None) -> np.ndarray:
    """Local Pufferfish ([004] Def. 5, eq. (5)), linear in Q (spec §2.5): for every scenario's
    T and every ordered pair (g, g') (default: all pairs, spec §11.6),
    e^{−ε} Σ_x t_gx c_x − Σ_x t_g'x c_x ≤ 0."""
    eps = check_epsilon(epsilon)
    rows = []
    for T in Ts:
        T = np.asarray(T, float)
        G = T.shape[0]
        pr = [(g, h) for g in range(G) for h in range(G) if g != h] if pairs is None else pairs
        if pr:
            gi, gj = np.array(pr).T
            rows.append(_ratio_rows(T[gi], T[gj], eps))
    if not rows:
        raise InputError("Pufferfish needs at least one secret pair")
    return np.vstack(rows)


def di_rows(prior, epsilon: float) -> np.ndarray:
    """ε-differential identifiability ([004] Def. 4, eq. (4)) as a design constraint on one output
    column: Pr(X=x | Y=y) ≤ e^ε Pr(X=x' | Y=y) ⇔ e^{−ε} P_x c_x − P_x' c_x' ≤ 0 for every ordered
    pair of inputs with positive prior (|supp|·(|supp|−1) rows). Inputs of zero prior are free."""
    eps = check_epsilon(epsilon)
    P = check_prior(prior)
    s = np.nonzero(P > 0)[0]
    if s.size < 2:
        return np.zeros((0, P.size))
    i, j = np.nonzero(~np.eye(s.size, dtype=bool))
    D = np.diag(P)[s]
    return _ratio_rows(D[i], D[j], eps)


def di_interior(prior) -> np.ndarray:
    """A strictly interior column of the ε-DI cone: c_x ∝ 1/P_x on the support (the output whose
    posterior is uniform, ratio 1 < e^ε), 1 elsewhere. The uniform column is NOT interior (nor even
    feasible) when max P / min P ≥ e^ε (then only the channel problem is infeasible, as the prior is a
    mixture of the posteriors), and is poorly centred for skewed priors; the vertex method starts
    here."""
    P = check_prior(prior)
    c = np.where(P > 0, 1.0 / np.where(P > 0, P, 1.0), 1.0)
    return c / c.sum()


def family_rows(notion: str, scenarios: list[Scenario], epsilon: float, *, pufferfish_T=None):
    """The rows of ``notion`` (``"lip"``: LIP / latent / bounded prior over ``scenarios``;
    ``"ldp"``; ``"pufferfish"``: over ``pufferfish_T``, default the scenarios' T)."""
    d = scenarios[0].prior.size
    if notion == "lip":
        return bounded_prior_rows(scenarios, epsilon)
    if notion == "ldp":
        return ldp_rows(d, epsilon)
    if notion == "di":
        if len(scenarios) != 1 or scenarios[0].T is not None:
            raise InputError("notion 'di' needs one prior and no latent correlation")
        return di_rows(scenarios[0].prior, epsilon)
    if notion == "pufferfish":
        Ts = pufferfish_T or [np.eye(d) if s.T is None else s.T for s in scenarios]
        return pufferfish_rows(Ts, epsilon)
    raise InputError(f"unknown privacy notion {notion!r}: use one of {NOTIONS}")


# ---------------------------------------------------------------------------------- certifiers


def _log_ratio_eps(num: np.ndarray, lam: np.ndarray) -> float:
    """max |log(num/λ)| over outputs with λ > 0 (inf when num = 0 < λ)."""
    m = lam > 0
    if not m.any():
        return 0.0
    with np.errstate(divide="ignore"):
        return float(np.abs(np.log(num[:, m]) - np.log(lam[m])).max(initial=0.0))


def lip_epsilon(Q, prior=None, T=None, *, priors=None) -> float:
    """The realised ε of ε-LIP: max_{g,y} |log(Pr(Y=y | G=g) / Pr(Y=y))| over outputs with mass.

    G = X by default (rows of inputs with P_x > 0); latent G with T[g, x] = Pr(X=x | G=g); over a
    scenario set with ``priors`` (the maximum over the set, BP-LIP).
    """
    Q = np.asarray(Q, float)
    worst = 0.0
    for s in _scenarios(prior, priors, T):
        lam = s.prior @ Q
        num = Q[s.prior > 0] if s.T is None else s.T @ Q
        worst = max(worst, _log_ratio_eps(num, lam))
    return worst


def pufferfish_epsilon(Q, Ts, pairs=None) -> float:
    """Realised ε of local Pufferfish: max log(Pr(Y=y|g)/Pr(Y=y|g')) over pairs and scenarios."""
    Q = np.asarray(Q, float)
    worst = 0.0
    for T in Ts:
        T = np.asarray(T, float)
        G = T.shape[0]
        pr = [(g, h) for g in range(G) for h in range(G) if g != h] if pairs is None else pairs
        Y = T @ Q
        with np.errstate(divide="ignore", invalid="ignore"):
            for g, h in pr:
                r = np.log(Y[g]) - np.log(Y[h])
                r = np.where(Y[g] > 0, r, 0.0)
                worst = max(worst, float(r.max(initial=0.0)))
    return worst


def di_epsilon(Q, prior) -> float:
    """Realised ε of differential identifiability ([004] Def. 4, eq. (4)):
    max over outputs with mass of log(Pr(X=x | Y=y) / Pr(X=x' | Y=y)), inputs with P_x > 0."""
    Q, P = np.asarray(Q, float), check_prior(prior)
    joint = (P[:, None] * Q)[P > 0]  # ∝ posterior per column
    joint = joint[:, joint.sum(axis=0) > 0]  # outputs the prior can produce (not Q's column sums:
    # a column only a zero-prior input uses gave log 0 − log 0 = nan)
    with np.errstate(divide="ignore"):
        lj = np.log(joint)
    return float((lj.max(axis=0) - lj.min(axis=0)).max(initial=0.0))


def mutual_information(Q, prior) -> float:
    """I(X; Y) in nats ([001] Def. 2, eq. (2)): ε-MIP holds iff this is ≤ ε."""
    Q, P = np.asarray(Q, float), check_prior(prior)
    joint = P[:, None] * Q
    lam = joint.sum(axis=0)
    m = joint > 0
    return float((joint[m] * np.log(joint[m] / (P[:, None] * lam[None, :])[m])).sum())


def max_information_leakage(Q) -> float:
    """𝓛(X → Y) = log Σ_y max_x Pr(Y=y | X=x) ([004] Def. 2, eq. (2))."""
    return float(math.log(np.asarray(Q, float).max(axis=0).sum()))


def lip_certificate(Q, scenarios, epsilon: float, *, notion: str = "lip", rows=None,
                    pufferfish_T=None, tol: float = 1e-12) -> PrivacyCertificate:
    """Certify Q under ``notion`` at ``epsilon``: realised ε, worst row violation and the
    violation ratio/magnitude of the linear rows (same fields as the Geo-Ind certificate)."""
    Q = np.asarray(Q, float)
    if notion == "lip":
        real = max(lip_epsilon(Q, s.prior, s.T) for s in scenarios)
    elif notion == "ldp":
        real = ldp_epsilon(Q[:, Q.sum(axis=0) > 0])
    elif notion == "di":
        real = di_epsilon(Q, scenarios[0].prior)
    elif notion == "pufferfish":
        d = Q.shape[0]
        Ts = pufferfish_T or [np.eye(d) if s.T is None else s.T for s in scenarios]
        real = pufferfish_epsilon(Q, Ts)
    else:
        raise InputError(f"unknown privacy notion {notion!r}: use one of {NOTIONS}")
    A = family_rows(notion, scenarios, epsilon, pufferfish_T=pufferfish_T) if rows is None else rows
    viol = A @ Q
    bad = viol > tol
    return PrivacyCertificate(
        notion=notion, realized_epsilon=real, target_epsilon=float(epsilon), gamma=math.inf,
        worst_violation=float(viol.max(initial=-np.inf)), violation_ratio=float(bad.mean()),
        violation_magnitude=float(viol[bad].mean()) if bad.any() else 0.0,
        n_constraints=int(viol.size), satisfied=real <= epsilon * (1 + EPS_RTOL))


# ------------------------------------------------------------------------------------- solve


#: a row of a solver's channel whose sum is off by more than this is refilled
#: (:func:`_refill_row`); below it, dividing by the sum is round-off that the mixing absorbs
ROW_TOL = 1e-9
#: the violation (relative to the row's scale and the column's largest entry) a refilled row may
#: leave on other rows, removed by the mixing of :func:`repair_columns`. A master holds an input
#: of prior P_x to ~1e-9/P_x, and ε-LIP's rows see its entries through P_x·c_x (λ = P·c): moving
#: the row back strains the rows of every other input by ~1e-9, at a mixing cost of that order
REFILL_SLACK = 1e-9


def _refill_row(Q, A, x: int) -> np.ndarray | None:
    """Row ``x`` of ``Q`` moved to sum 1 inside the interval the rows ``A`` (A c ≤ 0 per column)
    leave each entry, the other rows fixed; ``None`` if that interval cannot reach 1. The change
    is the smallest along the row: the normalised row clipped, then moved towards the side it
    lacks. Every row of A that held before still holds after (to round-off)."""
    ax = A[:, x]
    nz = ax != 0
    a = ax[nz][:, None]
    rest = A[nz] @ Q - a * Q[x]
    scale = np.abs(A[nz]).sum(axis=1)[:, None] * Q.max(axis=0)[None, :]
    # a_x c_x + rest ≤ allow: c_x ≤ b (a_x > 0) or c_x ≥ b (a_x < 0); the least allowance that
    # lets the row reach 1 (each strained row costs the mixing about its violation)
    for slack in REFILL_SLACK * 10.0 ** np.arange(-5, 1):
        b = (slack * scale - rest) / a
        up = np.minimum(1.0, np.where(a > 0, b, np.inf).min(axis=0, initial=np.inf))
        lo = np.maximum(0.0, np.where(a < 0, b, -np.inf).max(axis=0, initial=-np.inf))
        if np.all(lo <= up) and lo.sum() <= 1 <= up.sum():
            break
    else:
        return None
    s = Q[x].sum()
    q = np.clip(Q[x] / s if s > 0 else np.full(Q.shape[1], 1.0 / Q.shape[1]), lo, up)
    t = q.sum()
    room = up - q if t < 1 else q - lo
    if room.sum() < abs(1 - t):
        return None
    return q + np.sign(1 - t) * room * (abs(1 - t) / room.sum()) if t != 1 else q


def _mix(Q, A, tol):
    """Every column c violating a row of ``A`` by more than ``tol`` × its mass mixed with the
    constant column, c + β·1 (β = max (a·c)/(−a·1) over its violated rows), then every row divided
    by 1 + Σβ: row sums stay as they were where they were 1. ``(Q, columns left violated)``: those
    with a violated row that the constant column does not satisfy strictly."""
    mass = Q.sum(axis=0)
    viol = A @ Q
    bad = (mass > 0) & (viol.max(axis=0, initial=-np.inf) > tol * np.maximum(mass, 1e-300))
    if not bad.any():
        return Q, bad
    slack = -A.sum(axis=1)  # −a·1
    strict = slack > 1e-12 * np.abs(A).sum(axis=1)
    hit = viol[:, bad] > 0
    mixable = ~np.any(hit & ~strict[:, None], axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where(hit & strict[:, None], viol[:, bad] / slack[:, None], 0.0)
    beta = np.zeros(Q.shape[1])
    beta[np.nonzero(bad)[0][mixable]] = need[:, mixable].max(axis=0, initial=0.0)
    left = np.zeros(Q.shape[1], bool)
    left[np.nonzero(bad)[0][~mixable]] = True
    return (Q + beta) / (1.0 + beta.sum()), left


def repair_columns(Q, rows, *, rtol: float = 1e-10) -> np.ndarray:
    """Clean solver noise so that the rows of ``Q`` sum to 1 and every column lies in the cone
    {c : rows·c ≤ 0}, at a cost of the order of the noise.

    1. Clip negative entries. A row whose sum is off by more than :data:`ROW_TOL` (a master LP in
       posterior form holds an input of prior 1e-12 to its tolerance only: row sums from 0.12 to
       2.2 seen) is refilled inside the interval the rows leave each entry (:func:`_refill_row`),
       and the columns this strains by round-off are mixed (:func:`_mix`) before the next row; the
       other rows are divided by their sums.
    2. A column c violating a row by more than ``rtol`` relative to its mass is mixed with the
       constant column (:func:`_mix`). The constant column (output independent of the input) is
       strictly inside every cone here (a·1 < 0 for ε > 0), so this is exact, and the objective
       moves by O(β). Before, such a column was merged into the heaviest one, which could cost its
       whole utility (prior (0.021, 0.979, 7e-12, 5e-14, 3.5e-6), ε = 0.1: MSE 2e-4 above the
       bound).
    3. A column still violating a row (one the constant column does not satisfy strictly) is
       merged into the heaviest column (the cone is convex: the merge stays feasible up to its
       tiny mass).
    """
    A = np.asarray(rows, float)
    Q = np.clip(np.asarray(Q, float), 0, None)
    for x in np.nonzero(np.abs(Q.sum(axis=1) - 1) > ROW_TOL)[0]:
        q = _refill_row(Q, A, int(x))
        if q is not None:
            Q[x] = q
            Q, _ = _mix(Q, A, 0.0)
    Q = Q / Q.sum(axis=1, keepdims=True)
    Q, merge = _mix(Q, A, rtol)
    mass = Q.sum(axis=0)
    if merge.any() and (~merge & (mass > 0)).any():
        keep = int(np.argmax(np.where(merge, -1.0, mass)))
        Q[:, keep] += Q[:, merge].sum(axis=1)
        Q[:, merge] = 0.0
    return Q


def _certify_matrix(Q, scenarios, eps, notion, rows, name, pufferfish_T=None) -> Mechanism:
    if notion in ("lip", "di") and all(s.T is None for s in scenarios):
        # inputs no scenario can produce: ε-LIP, DI and the MSE leave their rows free, and a column
        # one of them owns is noise on the others (vertex solve, prior (0, 0.25, 0.75), ε = 2: a
        # column (1, 0, 9e-17) certified ε = inf). They report from the output marginal instead.
        free = np.all([s.prior == 0 for s in scenarios], axis=0)
        if free.any():  # (the other rows stay as they are: repair_columns refills those off 1)
            Q = np.clip(np.asarray(Q, float), 0, None)
            Q[free] = 0.0
            marginal = scenarios[0].prior @ Q
            Q[free] = marginal / marginal.sum()
    Q = repair_columns(Q, rows)
    cert = lip_certificate(Q, scenarios, eps, notion=notion, rows=rows, pufferfish_T=pufferfish_T)
    return Mechanism(Q, name=name, certificate=cert)
