"""Geo-Ind as a :class:`~lpmech.design.notion.Notion`: rows F_ij v_i − v_j ≤ 0 on every output column.

``F`` is the K×K factor matrix, F_ij = e^{−ε d_ij} on the pairs that need a row (0 elsewhere; see
:func:`factor_matrix`), so column v satisfies every row iff
max_i F_ij v_i ≤ v_j for all j. With K² rows per column the notion never writes them all for a lazy
solve: it starts from the rows to near neighbours (and, for output k, the rows out of k, the "star"),
and separates with the vectorised max-product oracle :func:`most_violated`.

The rows of an instance (:func:`factor_matrix`, :func:`geo_ind_pairs`, :func:`implied_pairs`) live
here, on the engine's side; :mod:`lpmech.models.omg` imports and re-exports them. The primitives here
(the oracle, :func:`near_pairs`, :func:`tents`, the row builder) are shared by
the OMG cutting-plane path and the decomposition; :mod:`lpmech.models.omg.omg_large` re-exports them.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from .. import _jit
from ..instance import Instance
from ..mechanism import MERGE_EPS_D, check_epsilon, used_columns
from .notion import SEPARATION_TOL, Notion, NotionCertificate

# ------------------------------------------------------------------- where the covering rows help


def tents_overlap(metric, epsilon: float) -> bool:
    """Whether ε × the median distance from a location to its nearest other location (on up to
    256 locations) is below 1, i.e. neighbouring tents overlap: there a restricted master's
    multipliers start far off (OMG, K = 400 at ε = 0.5: a first bound of −2,193, the optimum 3.18)."""
    D = np.asarray(metric)
    K = D.shape[0]
    rows = np.unique(np.linspace(0, K - 1, min(K, 256)).astype(np.int64))
    sub = np.array(D[rows], dtype=float)
    sub[np.arange(rows.size), rows] = np.inf
    return bool(epsilon * float(np.median(sub.min(axis=1))) < 1.0)


def nearly_coincide(metric, epsilon: float) -> bool:
    """Whether two locations lie within ε·d ≤ ``MERGE_EPS_D`` (1e-3) of each other: with such
    near-duplicate rows the decomposition's equality master after the covering rows' switch ended
    in a HiGHS error (every fallback too) on the OMG sweep's near-duplicate instance at ε = 0.3."""
    D = np.array(metric, dtype=float)
    np.fill_diagonal(D, np.inf)
    return bool(epsilon * float(D.min(initial=np.inf)) <= MERGE_EPS_D)


# ------------------------------------------------------------------- the factor matrix of an instance


def implied_pairs(metric, mask=None, *, rtol: float = 1e-12) -> np.ndarray:
    """Pairs whose Geo-Ind rows are implied by two strictly shorter pairs (a point "between" them).

    (i, j) is implied when some l ≠ i, j has 0 < d_il < d_ij, 0 < d_lj < d_ij and
    d_il + d_lj ≤ d_ij·(1 + ``rtol``): then z_ik ≤ e^{ε d_il} z_lk ≤ e^{ε (d_il + d_lj)} z_jk ≤
    e^{ε d_ij (1 + rtol)} z_jk for every output k and every ε. On a graph metric every non-edge is
    implied (only edges remain); on a grid every pair with a cell on the segment between them is.
    ``mask`` restricts to the pairs that need a row (d ≤ γ; shorter pairs stay within γ).

    Soundness under round-off. Both legs must be *strictly* shorter than (i, j), compared as the
    stored doubles: "shorter" is then a well-founded order, so by induction on d every dropped pair
    is implied by a chain of pairs that are kept in the LP (each chain multiplies at most K factors
    (1 + rtol), far below the certificate's 1e-6). Without the strict comparison ``rtol`` lets two
    points 1e-13 apart drop each other's links to a third point (i–l via j *and* j–l via i), and
    nothing ties the pair to l any more. Zero distances are never legs: a point is not "between"
    itself and its duplicate. The certificate of the returned matrix still checks every pair.
    """
    d = np.asarray(metric, float)
    K = d.shape[0]
    pos = d > 0
    out = np.zeros((K, K), dtype=bool)
    step = max(1, 2_000_000 // (K * K))
    for start in range(0, K, step):
        i = slice(start, min(K, start + step))
        dij = d[i, None, :]  # dij[a, ., j] = d_ij
        via = d[i, :, None] + d[None, :, :]  # via[a, l, j] = d_il + d_lj
        ok = (via <= dij * (1 + rtol)) & pos[i, :, None] & pos[None, :, :]
        ok &= (d[i, :, None] < dij) & (d[None, :, :] < dij)  # both legs strictly shorter
        out[i] = ok.any(axis=1)
    out &= pos
    if mask is not None:
        out &= mask
    return out


def geo_ind_pairs(instance: Instance, epsilon: float, *, reduce: bool = True):
    """Ordered neighbour pairs (i, j), i ≠ j, d_ij ≤ γ, and their factors e^{−ε d_ij} (those > 0).

    With ``reduce`` (default) the pairs of :func:`implied_pairs` are left out: the optimum is the
    same and the certificate still checks them.
    """
    eps = check_epsilon(epsilon)
    mask = instance.neighbours()
    if reduce:
        mask = mask & ~implied_pairs(instance.metric, mask)
    i, j = np.nonzero(mask)
    factor = np.exp(-eps * instance.metric[i, j])
    keep = factor > 0
    return i[keep], j[keep], factor[keep]


def factor_matrix(instance: Instance, epsilon: float, *, reduce: bool = True) -> np.ndarray:
    """F[i, j] = e^{−ε d_ij} for the pairs of :func:`geo_ind_pairs`, 0 elsewhere (K×K).

    Column k of a mechanism satisfies every row iff max_i F[i, j] z[i, k] ≤ z[j, k] for all j.
    """
    i, j, f = geo_ind_pairs(instance, epsilon, reduce=reduce)
    F = np.zeros((instance.K, instance.K))
    F[i, j] = f
    return F


# ------------------------------------------------------------------------------ rows and oracle


def column_rows(F: np.ndarray, i: np.ndarray, j: np.ndarray, n_vars: int, k=None) -> sp.csr_matrix:
    """Rows F_ij x[i] − x[j] ≤ 0 over one column's ``n_vars`` variables, or, with outputs ``k``,
    rows F_ij z[i, k] − z[j, k] ≤ 0 over the K² variables z[i, k] = x[i·K + k] (n_vars = K)."""
    n = i.size
    ci, cj = (i, j) if k is None else (i * n_vars + k, j * n_vars + k)
    cols = np.empty(2 * n, np.int64)
    vals = np.empty(2 * n)
    cols[0::2], cols[1::2] = ci, cj
    vals[0::2], vals[1::2] = F[i, j], -1.0
    width = n_vars if k is None else n_vars * n_vars
    if n and (ci == cj).any():  # a self-pair (never from a factor matrix with a zero diagonal)
        return sp.csr_matrix((vals, (np.repeat(np.arange(n), 2), cols)), shape=(n, width))
    return sp.csr_matrix((vals, cols, np.arange(0, 2 * n + 1, 2)), shape=(n, width))


def row_pairs(R) -> tuple[np.ndarray, np.ndarray]:
    """The pairs (i, j) of rows F_ij x[i] − x[j] ≤ 0 (the inverse of :func:`column_rows`)."""
    coo = sp.coo_matrix(R)
    i, j = np.empty(R.shape[0], np.int64), np.empty(R.shape[0], np.int64)
    pos, neg = coo.data > 0, coo.data < 0
    i[coo.row[pos]], j[coo.row[neg]] = coo.col[pos], coo.col[neg]
    return i, j


def most_violated(F: np.ndarray, Z: np.ndarray, tol: float = SEPARATION_TOL, present=None):
    """For every entry (j, k): the row i maximising F_ij Z_ik − Z_jk, if it exceeds ``tol``.

    ``present`` (bool, shape (K, K, n), True for rows (i, j, k) already in the LP) leaves those
    rows out: the solver enforces them to its own tolerance, and finding them again would loop.
    Returns ``(i, j, k, violation)`` arrays of the violated entries (a vectorised oracle over all
    K² pairs of each column, chunked to bound memory).
    """
    Z = Z.reshape(F.shape[0], -1)
    used = used_columns(Z)
    if used.size < Z.shape[1] and tol >= 0:  # a column of zeros violates no row (F ≥ 0)
        if used.size == 0:
            return (np.zeros(0, np.int64),) * 3 + (np.zeros(0),)
        i, j, k, v = most_violated(F, Z[:, used], tol, None if present is None else present[:, :, used])
        return i, j, used[k], v
    K, n = Z.shape
    best = np.empty((K, n))
    arg = np.empty((K, n), dtype=np.int64)
    step = max(1, 4_000_000 // (K * n))
    for start in range(0, K, step):
        cols = slice(start, min(K, start + step))
        T = F[:, cols, None] * Z[:, None, :]  # T[i, j, k] = F_ij Z_ik
        if present is not None:
            T[present[:, cols]] = -np.inf
        arg[cols] = T.argmax(axis=0)
        best[cols] = np.take_along_axis(T, arg[cols][None], axis=0)[0]
    viol = best - Z
    j, k = np.nonzero(viol > tol)
    return arg[j, k], j, k, viol[j, k]


#: from this many locations up, a pricing LP's oracle (:meth:`GeoInd.separator`) is compiled with
#: numba: the same rows as the numpy oracle, without its K×K temporaries
JIT_MIN_K = 200


def _separation(F, v, present, S, best_i, best_val):  # pragma: no cover - compiled
    """For every j, the row i ∈ S not in ``present`` maximising F_ij v_i (the first such i on
    ties, as ``argmax``) into ``best_i``, its F_ij v_i into ``best_val``. ``present`` is a bit
    set: row (i, j) is in the LP when bit j % 8 of ``present[i, j // 8]`` is set."""
    K = v.shape[0]
    for j in range(K):
        best_val[j] = -np.inf
        best_i[j] = -1
    for a in range(S.shape[0]):
        s = S[a]
        vs = v[s]
        for j in range(K):
            if not (present[s, j >> 3] >> (j & 7)) & 1:
                t = F[s, j] * vs
                if t > best_val[j]:
                    best_val[j] = t
                    best_i[j] = s


def _mark(present: np.ndarray, i: np.ndarray, j: np.ndarray) -> None:
    """Set the bits of rows (i, j) in the bit set ``present`` of :func:`_separation`."""
    j = np.asarray(j, np.int64)
    np.bitwise_or.at(present, (np.asarray(i, np.int64), j >> 3), (1 << (j & 7)).astype(np.uint8))


def _raise(T, v, out):  # pragma: no cover - compiled
    """The repair of one column: out_j = max(v_j, max_s T_sj v_s)."""
    K = v.shape[0]
    for j in range(K):
        out[j] = v[j]
    for s in range(K):
        vs = v[s]
        for j in range(K):
            t = T[s, j] * vs
            if t > out[j]:
                out[j] = t


def _separation_kernel():
    """The compiled oracle :func:`_separation`, or None without numba."""
    return _jit.compiled(_separation)


def _raise_kernel():
    """The compiled repair :func:`_raise`, or None without numba."""
    return _jit.compiled(_raise)


def near_pairs(F: np.ndarray, n_near: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """The rows (i, j) to start with: each i with its ``n_near`` largest factors F_ij (both ways)."""
    K = F.shape[0]
    n_near = min(n_near, K - 1)
    if n_near <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    j = np.argpartition(-F, n_near - 1, axis=1)[:, :n_near]
    i = np.repeat(np.arange(K), n_near)
    j = j.ravel()
    keep = F[i, j] > 0
    mask = np.zeros((K, K), dtype=bool)
    mask[i[keep], j[keep]] = True
    mask |= mask.T
    mask &= F > 0
    return np.nonzero(mask)


def tents(F: np.ndarray, *, predecessors: bool = False):
    """Columns T[:, s] = e^{−P(s, ·)}, P the shortest paths of arcs i→j of length −log F_ij: in C.

    With ``predecessors``, also the shortest-path trees (``pred[s, j]``: the arc into j on the
    path from s, −9999 where none): the rows tight at the tent of s.
    """
    i, j = np.nonzero(F)
    w = np.maximum(-np.log(F[i, j]), 1e-300)  # csgraph reads a stored 0 as an edge only if sparse
    G = sp.csr_matrix((w, (i, j)), shape=F.shape)
    if predecessors:
        P, pred = shortest_path(G, directed=True, return_predecessors=True)
        return np.exp(-P).T, pred
    return np.exp(-shortest_path(G, directed=True)).T


def _strongly_connected(F: np.ndarray) -> bool:
    """Whether the rows F_ij v_i ≤ v_j (F_ij > 0) chain every location to every other."""
    from scipy.sparse.csgraph import connected_components

    return connected_components(sp.csr_matrix(F > 0), directed=True, connection="strong")[0] == 1


# ------------------------------------------------------------------------------ the notion


class GeoInd(Notion):
    """(ε, γ)-Geo-Ind from its factor matrix ``F`` (rows F_ij v_i ≤ v_j on every column).

    Args:
        F: K×K factors e^{−ε d_ij} of the rows that must hold (0: no row).
        metric, epsilon, gamma: what :meth:`certify` checks (every pair of the metric, not only the
            rows of ``F``); without them :meth:`certify` measures the rows of ``F`` only.
        n_near: lazy solves start with the rows to each location's ``n_near`` nearest neighbours
            (and, for output k, the rows out of k).
        closure, trees: the max-product closure T[s, j] (:func:`tents` transposed) and the
            shortest-path trees ``pred`` of :func:`tents`; with ``trees`` the lazy LP of output k
            also starts with the rows of the tree from k (tight at the tent of k).
    """

    name = "geo-ind"

    def __init__(self, F: np.ndarray, *, metric=None, epsilon: float | None = None,
                 gamma: float = math.inf, n_near: int = 0, closure: np.ndarray | None = None,
                 trees: np.ndarray | None = None):
        F = np.asarray(F, float)
        super().__init__(F.shape[0])
        self.F = F
        self._closure = closure
        self.trees = trees
        self.metric = None if metric is None else np.asarray(metric, float)
        self.epsilon = None if epsilon is None else float(epsilon)
        self.gamma = float(gamma)
        self.n_near = int(n_near)
        self._dense: bool | None = None

    @classmethod
    def from_instance(cls, instance, epsilon: float, *, reduce: bool = True, n_near: int = 0):
        """The notion of an OMG instance (rows of :func:`factor_matrix`)."""
        return cls(factor_matrix(instance, epsilon, reduce=reduce), metric=instance.metric,
                   epsilon=epsilon, gamma=instance.gamma, n_near=n_near)

    def rows(self) -> sp.csr_matrix:
        i, j = np.nonzero(self.F)
        return column_rows(self.F, i, j, self.K)

    def initial_rows(self, k: int | None = None) -> sp.csr_matrix:
        pi, pj = near_pairs(self.F, self.n_near)
        if k is not None:
            star = np.nonzero(self.F[k] > 0)[0]
            pi, pj = np.concatenate([pi, np.full(star.size, k)]), np.concatenate([pj, star])
            if self.trees is not None:
                tj = np.nonzero(self.trees[k] >= 0)[0]
                pi, pj = np.concatenate([pi, self.trees[k, tj]]), np.concatenate([pj, tj])
            keep = np.unique(pi * self.K + pj, return_index=True)[1]
            pi, pj = pi[keep], pj[keep]
        return column_rows(self.F, pi, pj, self.K)

    def separate(self, V: np.ndarray, tol: float = SEPARATION_TOL) -> list[sp.csr_matrix]:
        V = np.asarray(V, float).reshape(self.K, -1)
        i, j, k, _ = most_violated(self.F, V, tol)
        return [column_rows(self.F, i[k == c], j[k == c], self.K) for c in range(V.shape[1])]

    def separator(self, k: int, start: sp.csr_matrix, tol: float = SEPARATION_TOL):
        """A stateful oracle for one pricing LP: the rows v violates by more than ``tol``, never a
        row already in it."""
        F, K = self.F, self.K
        kernel = _separation_kernel() if K >= JIT_MIN_K else None
        if kernel is not None:  # the rows present as a bit set: K²/8 bytes per pricing LP
            F = np.ascontiguousarray(F, float)
            best_i, best_val = np.empty(K, np.int64), np.empty(K)
            present = np.zeros((K, (K + 7) // 8), dtype=np.uint8)
            _mark(present, *row_pairs(start))
        else:
            present = np.zeros((K, K), dtype=bool)
            present[row_pairs(start)] = True

        def separate(v):
            # only entries v_i above the tolerance can violate a row (F ≤ 1): the others are
            # skipped (an unused output's v = 0 needs no work)
            S = np.nonzero(v > tol)[0]
            if S.size == 0:
                return None
            if kernel is not None:
                kernel(F, np.ascontiguousarray(v, float), present, S, best_i, best_val)
                j = np.nonzero(best_val - v > tol)[0]
                i = best_i[j]
            else:
                T = F[S] * v[S, None]  # T[s, j] = F_ij v_i for i = S[s]
                T[present[S]] = -np.inf
                i = T.argmax(axis=0)
                j = np.nonzero(T[i, np.arange(K)] - v > tol)[0]
                i = S[i[j]]
            if j.size == 0:
                return None
            if kernel is not None:
                _mark(present, i, j)
            else:
                present[i, j] = True
            return column_rows(F, i, j, K)

        return separate

    @property
    def dense_columns(self) -> bool:
        """Rows that chain every location to every other: a column is all positive or all zero
        (computed on first use)."""
        if self._dense is None:
            self._dense = bool(self.K) and _strongly_connected(self.F)
        return self._dense

    @property
    def closure(self) -> np.ndarray:
        """T[s, j] = e^{−P(s, j)} (:func:`tents`, transposed): the largest factor any chain of rows
        puts between v_s and v_j."""
        if self._closure is None:
            self._closure = tents(self.F).T.copy()
        return self._closure

    def repair(self, Z: np.ndarray) -> np.ndarray:
        """The smallest entrywise raise of the columns of ``Z`` that satisfies every row exactly:
        Z'_jk = max_s T_sj Z_sk ≥ Z_jk (T has a unit diagonal); entries stay in [0, max Z]."""
        Z = np.asarray(Z, float).reshape(self.K, -1)
        T = self.closure
        kernel = _raise_kernel() if self.K >= JIT_MIN_K and Z.shape[1] == 1 else None
        if kernel is not None:  # one column (a pricing LP's): compiled, no K×K temporary
            out = np.empty(self.K)
            kernel(T, np.ascontiguousarray(Z[:, 0]), out)
            return out[:, None]
        out = np.empty_like(Z)
        step = max(1, 4_000_000 // (self.K * self.K))
        for a in range(0, Z.shape[1], step):
            b = min(Z.shape[1], a + step)
            out[:, a:b] = (T[:, :, None] * Z[:, None, a:b]).max(axis=0)
        return np.maximum(out, Z)

    def clean(self, Z: np.ndarray) -> np.ndarray | None:
        """The package's cleaning of a solver's matrix against the metric
        (:func:`lpmech.mechanism.clean`: one common row per near-duplicate group, the quotient
        closure, renormalised until certified), or None without a metric. The repair of
        :meth:`repair` then renormalising rows divides near-equal rows by different sums: two
        points 1e-7 apart at ε = 2 certified ε = 2.0017."""
        if self.metric is None or self.epsilon is None:
            return None
        from ..mechanism import clean

        return clean(Z, self.metric, self.epsilon, self.gamma)

    def certify(self, Z: np.ndarray) -> NotionCertificate:
        from ..mechanism import certify, realized_epsilon

        Z = np.asarray(Z, float)
        if self.metric is not None and self.epsilon is not None:
            cert = certify(Z, self.metric, self.epsilon, self.gamma)
            return NotionCertificate(self.name, self.epsilon, cert.realized_epsilon,
                                     cert.worst_violation, cert.satisfied,
                                     {"gamma": self.gamma if math.isfinite(self.gamma) else "inf"})
        worst = float((self.F[:, :, None] * Z[:, None, :] - Z[None, :, :]).max(initial=0.0))
        real = realized_epsilon(Z, self.metric, self.gamma) if self.metric is not None else math.nan
        return NotionCertificate(self.name, self.epsilon, real, worst, worst <= SEPARATION_TOL)


__all__ = ["GeoInd", "column_rows", "factor_matrix", "geo_ind_pairs", "implied_pairs", "most_violated",
           "near_pairs", "nearly_coincide", "tents", "tents_overlap"]
