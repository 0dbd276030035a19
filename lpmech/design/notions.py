"""Concrete privacy notions for the design engine (:mod:`lpmech.design.engine`).

Each one is a :class:`~lpmech.design.notion.Notion`: homogeneous rows ``A v ≤ 0`` on one output
column v (length K = the number of inputs), optional forced zeros, and a certificate of a finished
matrix. Rows are written in the well-scaled direction (every coefficient in [−1, 1]).

* :class:`DPrivacy` — d-privacy / (ε, γ)-Geo-Ind on a metric: e^{−ε d_ij} v_i − v_j ≤ 0 for
  d_ij ≤ γ (Qiu et al., LR-Geo eq. (1)); implied rows (a shorter pair chain exists) are left out, the
  certificate checks every pair (a :class:`lpmech.design.geoind.GeoInd` built from a metric).
* :class:`Factor` — a user factor matrix: F_ij v_i − v_j ≤ 0 for every F_ij > 0 (i ≠ j), with
  0 ≤ F ≤ 1. Every ratio notion is one (d-privacy: F = e^{−εd}; ε-LDP: F = e^{−ε}(1 − I)).
* :class:`LDP` — ε-LDP, v_i ≤ e^{ε} v_j for all i, j.
* :class:`LIP` — ε-LIP for a prior P ([001] eq. (26)) or a latent secret T[g, x] = Pr(X=x | G=g)
  ([004] eq. (9)): e^{−ε} t_g·v − P·v ≤ 0 and e^{−ε} P·v − t_g·v ≤ 0, built here from the
  definition e^{−ε} ≤ Pr(Y=y | G=g) / Pr(Y=y) ≤ e^{ε}; written on the auxiliary variable s = P·v
  (sparse rows).
* :class:`Rows` — any user rows ``A v ≤ 0`` (a K-column matrix).
* :class:`Exclusion` — "never report within r of the truth": z_ik = 0 whenever d(i, k) ≤ r, via
  :meth:`~lpmech.design.notion.Notion.zeros`. Note the mathematics: under any ratio notion whose
  row graph is connected (d-privacy with γ = ∞, ε-LDP, ε-LIP with a full-support prior), a zero
  entry forces its whole column to zero, so an exclusion zone that touches every column makes the
  problem infeasible; it combines with notions whose rows do not link all inputs (finite γ on a
  disconnected neighbour graph, user rows/factors, Pufferfish on some pairs).

Certificates (:class:`~lpmech.design.notion.NotionCertificate`): ``realized`` is the notion's own
parameter of the matrix (ε for d-privacy/LDP/LIP; the largest ratio F_ij z_ik / z_jk for a factor,
target 1; the largest row violation relative to the row's absolute mass for user rows, target 0;
the largest mass in the zone for an exclusion, target 0).

Notions that can be repaired exactly offer ``repair(Z)`` (the smallest entrywise raise that makes
every row hold: the max-product closure); the engine uses it on solver noise before certifying.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from ..errors import InputError
from ..mechanism import EPS_RTOL, certify, check_epsilon, geo_ind_closure, ldp_epsilon
from .geoind import GeoInd, implied_pairs
from .notion import SEPARATION_TOL, Notion, NotionCertificate, definition_rows, extend

#: a user row is satisfied when its violation is at most this times the row's absolute mass |A|·z
ROWS_RTOL = 1e-9

__all__ = ["LDP", "LIP", "DPrivacy", "Exclusion", "Factor", "Rows"]


def _square(a, name: str) -> np.ndarray:
    a = np.asarray(a, float)
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] == 0:
        raise InputError(f"{name} must be a non-empty square matrix, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise InputError(f"{name} has a non-finite entry")
    return a


def _max_product_closure(F: np.ndarray) -> np.ndarray:
    """P[i, j] = the largest product of factors along a path i → j (P_ii = 1), for 0 ≤ F ≤ 1."""
    mask = F > 0
    np.fill_diagonal(mask, False)
    i, j = np.nonzero(mask)
    w = np.maximum(-np.log(F[i, j]), 1e-300)  # a stored 0 would read as "no edge" in dense form
    paths = shortest_path(sp.csr_matrix((w, (i, j)), shape=F.shape), directed=True)
    return np.exp(-paths)


class Factor(GeoInd):
    """Rows F_ij v_i ≤ v_j for every F_ij > 0 (i ≠ j), F a K×K matrix with entries in [0, 1].

    Lazy solves start from the rows out of output k and separate with the vectorised max-product
    oracle (both from :class:`lpmech.design.geoind.GeoInd`). The certificate's ``realized`` is
    max over rows and outputs of F_ij z_ik / z_jk (≤ 1 means every row holds; ``inf`` when
    z_jk = 0 < F_ij z_ik), target 1.
    """

    name = "factor"

    def __init__(self, F, *, name: str | None = None):
        F = _square(F, "factor matrix F")
        if (F < 0).any() or (F > 1).any():
            raise InputError("factor matrix entries must lie in [0, 1] (rows F_ij v_i <= v_j in the "
                             "well-scaled direction; a factor above 1 would forbid the uniform "
                             "column); use Rows(A) for anything else")
        F = F.copy()
        np.fill_diagonal(F, 0.0)
        super().__init__(F)
        self.name = type(self).name if name is None else name

    def repair(self, Z: np.ndarray) -> np.ndarray:
        """The smallest Z' ≥ Z whose columns satisfy every row: z'_jk = max_i P_ij z_ik."""
        P = _max_product_closure(self.F)
        out = np.array(Z, float)
        step = max(1, 4_000_000 // (self.K * Z.shape[1]))
        for a in range(0, self.K, step):
            j = slice(a, min(self.K, a + step))
            out[j] = np.maximum(out[j], (P[:, j, None] * Z[:, None, :]).max(axis=0))
        return out

    def _ratio(self, Z: np.ndarray) -> tuple[float, float]:
        i, j = np.nonzero(self.F > 0)
        worst_ratio, worst_viol = 0.0, -math.inf
        step = max(1, 4_000_000 // max(1, Z.shape[1]))
        for a in range(0, i.size, step):
            ii, jj = i[a:a + step], j[a:a + step]
            num = self.F[ii, jj][:, None] * Z[ii]
            den = Z[jj]
            worst_viol = max(worst_viol, float((num - den).max(initial=-math.inf)))
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where(num > 0, num / den, 0.0)
            worst_ratio = max(worst_ratio, float(r.max(initial=0.0)))
        return worst_ratio, (worst_viol if i.size else 0.0)

    def certify(self, Z) -> NotionCertificate:
        Z = np.asarray(Z, float)
        ratio, viol = self._ratio(Z)
        return NotionCertificate(self.name, 1.0, ratio, viol, ratio <= 1.0 + EPS_RTOL,
                                 {"rows": int(np.count_nonzero(self.F))})


class LDP(Factor):
    """ε-LDP: e^{−ε} v_i − v_j ≤ 0 for all i ≠ j (Jiang, Li & Tandon, context-aware LIP, eq. (1));
    realised ε by
    :func:`lpmech.mechanism.ldp_epsilon` over the outputs with mass."""

    name = "ldp"

    def __init__(self, K: int, epsilon: float):
        if int(K) != K or K < 1:
            raise InputError(f"LDP needs a positive number of inputs, got {K!r}")
        eps = check_epsilon(epsilon)
        super().__init__(np.full((int(K), int(K)), math.exp(-eps)))
        self.epsilon = eps

    def repair(self, Z: np.ndarray) -> np.ndarray:
        return np.maximum(Z, math.exp(-self.epsilon) * Z.max(axis=0, keepdims=True))

    def certify(self, Z) -> NotionCertificate:
        Z = np.asarray(Z, float)
        real = ldp_epsilon(Z[:, Z.sum(axis=0) > 0])
        _, viol = self._ratio(Z)
        return NotionCertificate(self.name, self.epsilon, real, viol,
                                 real <= self.epsilon * (1 + EPS_RTOL))


class DPrivacy(GeoInd):
    """d-privacy / (ε, γ)-Geo-Ind on a K×K metric: e^{−ε d_ij} v_i − v_j ≤ 0 for i ≠ j, d_ij ≤ γ.

    ``metric`` may be an :class:`~lpmech.instance.Instance` (its metric and γ are used). With
    ``reduce`` the rows implied by two strictly shorter pairs (:func:`lpmech.design.geoind.
    implied_pairs`) are left out; the optimum is the same and :meth:`certify` checks every pair
    (:func:`lpmech.mechanism.certify`).
    """

    name = "d-privacy"

    def __init__(self, metric, epsilon: float, *, gamma: float | None = None, reduce: bool = True,
                 n_near: int = 0):
        if hasattr(metric, "metric"):  # an Instance
            gamma = metric.gamma if gamma is None else gamma
            metric = metric.metric
        d = _square(metric, "metric")
        if (d < 0).any():
            raise InputError("metric has a negative distance")
        eps = check_epsilon(epsilon)
        gamma = math.inf if gamma is None else float(gamma)
        mask = d <= gamma
        np.fill_diagonal(mask, False)
        if reduce:
            mask &= ~implied_pairs(d, mask)
        super().__init__(np.where(mask, np.exp(-eps * d), 0.0), metric=d, epsilon=eps, gamma=gamma,
                         n_near=n_near)
        self.name = "geo-ind" if math.isfinite(gamma) else "d-privacy"

    def repair(self, Z: np.ndarray) -> np.ndarray:
        return geo_ind_closure(Z, self.metric, self.epsilon, self.gamma)

    def certify(self, Z) -> NotionCertificate:
        c = certify(np.asarray(Z, float), self.metric, self.epsilon, self.gamma)
        return NotionCertificate(self.name, self.epsilon, c.realized_epsilon, c.worst_violation,
                                 c.satisfied, {"gamma": c.gamma if math.isfinite(c.gamma) else "inf",
                                               "violation_ratio": c.violation_ratio,
                                               "n_constraints": c.n_constraints})



class LIP(Notion):
    """ε-LIP for a prior: e^{−ε} ≤ Pr(Y=y | G=g) / Pr(Y=y) ≤ e^{ε} for every secret value g.

    G = X (``T=None``): one secret per input with P_x > 0, t_g = e_x. Latent secret: ``T`` (G×K),
    T[g, x] = Pr(X=x | G=g). Per output column v, Pr(Y=y | G=g) ∝ t_g·v and Pr(Y=y) ∝ P·v, so the
    rows are e^{−ε} t_g·v − P·v ≤ 0 and e^{−ε} P·v − t_g·v ≤ 0. Every one of these 2·G rows holds
    P·v, so they are written on auxiliary variables (:meth:`~lpmech.design.notion.Notion.aux_map`):
    s = P·v (and s_g = t_g·v for a latent secret), rows e^{−ε} s_g − s ≤ 0 and e^{−ε} s − s_g ≤ 0
    of two entries each, plus the definition rows of s (one dense pair): an LP that meets all 2·G
    rows stores O(K + G) entries in place of O(G·K).
    """

    name = "lip"

    def __init__(self, prior, epsilon: float, *, T=None):
        P = np.asarray(prior, float).ravel()
        if P.size == 0 or not np.isfinite(P).all() or (P < 0).any() or abs(P.sum() - 1) > 1e-9:
            raise InputError("LIP needs a prior: finite non-negative numbers summing to 1")
        super().__init__(P.size)
        self.prior = P
        self.epsilon = check_epsilon(epsilon)
        K = P.size
        if T is None:
            self.T = np.eye(K)[P > 0]
            secret = np.nonzero(P > 0)[0]  # s_g = v_x: the entry itself
            B = sp.csr_matrix(P[None, :])
        else:
            T = np.asarray(T, float)
            if T.ndim != 2 or T.shape[1] != K or (T < 0).any() or \
                    not np.allclose(T.sum(axis=1), 1.0, atol=1e-9):
                raise InputError(f"T must be a G×{K} matrix of conditional distributions "
                                 "Pr(X=x | G=g) (rows summing to 1)")
            self.T = T
            secret = K + 1 + np.arange(T.shape[0])  # s_g = t_g·v: an auxiliary variable each
            B = sp.csr_matrix(np.vstack([P, T]))
        self._B = B
        f = math.exp(-self.epsilon)
        G, s = secret.size, K  # s: the position of P·v in the extended column
        r = np.arange(G)
        ratio = sp.csr_matrix((np.concatenate([np.full(G, f), np.full(G, -1.0),
                                               np.full(G, -1.0), np.full(G, f)]),
                               (np.concatenate([r, r, G + r, G + r]),
                                np.concatenate([secret, np.full(G, s), secret, np.full(G, s)]))),
                              shape=(2 * G, K + B.shape[0]))
        self._ratio = ratio  # rows e^{−ε} s_g − s ≤ 0, then e^{−ε} s − s_g ≤ 0
        self._definition = definition_rows(B)

    def aux_map(self) -> sp.csr_matrix:
        return self._B

    def rows(self) -> sp.csr_matrix:
        return sp.vstack([self._definition, self._ratio], format="csr")

    def initial_rows(self, k: int | None = None) -> sp.csr_matrix:
        """Every row: the ratio rows have two entries each, so a lazy solve is cheaper with all of
        them up front than finding them by separation (measured, Geo-Ind ∧ LIP on a 14×14 grid by
        output generation: 43.5 s against 275 s)."""
        return self.rows()

    def separate(self, V, tol: float = SEPARATION_TOL) -> list[sp.csr_matrix]:
        U = np.asarray(V, float).reshape(self.K + self.n_aux, -1)
        AV = self._ratio @ U
        return [self._ratio[AV[:, c] > tol] for c in range(AV.shape[1])]

    def certify(self, Z) -> NotionCertificate:
        Z = np.asarray(Z, float)
        lam = self.prior @ Z
        num = self.T @ Z
        m = lam > 0
        with np.errstate(divide="ignore"):
            real = float(np.abs(np.log(num[:, m]) - np.log(lam[m])).max(initial=0.0)) if m.any() else 0.0
        viol = float((self._ratio @ extend(self, Z)).max(initial=-math.inf))
        return NotionCertificate(self.name, self.epsilon, real, viol,
                                 real <= self.epsilon * (1 + EPS_RTOL), {"secrets": int(self.T.shape[0])})


class Rows(Notion):
    """User rows ``A v ≤ 0`` on every output column (A: m×K, dense or sparse).

    Certificate: ``realized`` = the largest (A z_k)_r / (|A_r|·z_k) over rows and outputs with mass
    (0 when every row holds), target 0, satisfied within ``ROWS_RTOL``.
    """

    name = "rows"

    def __init__(self, A, *, name: str | None = None):
        A = sp.csr_matrix(A, dtype=float)
        if A.shape[1] == 0 or not np.isfinite(A.data).all():
            raise InputError(f"user rows must be a finite m×K matrix, got shape {A.shape}")
        super().__init__(A.shape[1])
        self.A = A
        self._absA = abs(A)
        if name is not None:
            self.name = name

    def rows(self) -> sp.csr_matrix:
        return self.A

    def certify(self, Z) -> NotionCertificate:
        Z = np.asarray(Z, float)
        AZ = self.A @ Z
        scale = self._absA @ Z
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(scale > 0, AZ / scale, np.where(AZ > 0, np.inf, 0.0))
        real = max(0.0, float(rel.max(initial=0.0)))
        return NotionCertificate(self.name, 0.0, real, float(AZ.max(initial=-math.inf)),
                                 real <= ROWS_RTOL, {"rows": int(self.A.shape[0])})


class Exclusion(Notion):
    """Never report within ``r`` of the truth: z_ik = 0 whenever d(i, k) ≤ r (no rows).

    ``metric`` is the K×n distance between inputs i and outputs k (square for a location domain).
    See the module docstring: with a connected ratio notion this is infeasible.
    """

    name = "exclusion"

    def __init__(self, metric, r: float):
        if hasattr(metric, "metric"):
            metric = metric.metric
        d = np.asarray(metric, float)
        if d.ndim != 2 or not np.isfinite(d).all():
            raise InputError("exclusion needs a finite K×n distance matrix")
        if not (isinstance(r, int | float) and math.isfinite(r) and r >= 0):
            raise InputError(f"exclusion radius r must be a finite number >= 0, got {r!r}")
        super().__init__(d.shape[0])
        self.r = float(r)
        self.zone = d <= self.r * (1 + 1e-12) + 1e-12
        self.name = f"exclusion(r={self.r:g})"

    def rows(self) -> sp.csr_matrix:
        return sp.csr_matrix((0, self.K))

    def zeros(self, k: int) -> np.ndarray | None:
        z = np.nonzero(self.zone[:, k])[0]
        return z if z.size else None

    def separate(self, V, tol: float = SEPARATION_TOL) -> list[sp.csr_matrix]:
        return [sp.csr_matrix((0, self.K)) for _ in range(np.asarray(V).reshape(self.K, -1).shape[1])]

    def certify(self, Z) -> NotionCertificate:
        Z = np.asarray(Z, float)
        zone = self.zone
        worst = float(Z[zone].max(initial=0.0))
        mass = float(np.where(zone, Z, 0.0).sum(axis=1).max(initial=0.0))
        return NotionCertificate(self.name, 0.0, mass, worst, worst <= 0.0, {"r": self.r})
