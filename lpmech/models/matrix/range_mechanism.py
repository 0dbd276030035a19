"""E_{L¹}-LDP range counting on [m_1]×…×[m_D] and quantiles (Xiang et al., metric LDP §4).

Each user reports, per dimension d, the threshold bits b_d[k] = −1 for k < x[d], +1 otherwise, each
flipped with probability p = 1/(e^ε+1) (§4.1; ε‖x−x'‖₁-LDP by Proposition 4). With o = Σ_i ⊗_d r_{i,d}
(Eq. 4), E[o] = q^D B c where B = ⊗_d B_{m_d,1} (Eq. 6, dimension 1 fastest, q = tanh(ε/2)), and

    ĉ = κ^D B⁻¹ o (Eq. 7, κ = 1/q),   ĉ(R) = κ^D Σ_i Π_d g_{R,d}·r_{i,d}  (Eq. 8, factorised: O(nD)),

with B⁻¹ = ⊗_d B_{m_d,1}⁻¹ (Eq. 9/10) and g_{R,d} the sum of the rows l_d..r_d of B_{m_d,1}⁻¹, which has
at most two non-zeros. :func:`range_variance` is the exact variance (spec §3.2); the paper's
Theorem 2/3 expression (constant 1) ignores covariances and is *not* an upper bound —
:func:`paper_bound` and :func:`valid_bound` are given side by side. Weighted queries (§4.3.2) and
quantiles (§4.4) build on the same reports.

Values are 0-based: x[d] ∈ 0..m_d−1 (the paper's x[d] − 1); a range is (l, r) inclusive.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Sequence

import numpy as np

from ...errors import InputError
from ...mechanism import check_epsilon

log = logging.getLogger("lpmech.range_mechanism")


#: the largest ε the encoder takes: e^ε stays a finite double (the flip probability ~e^{−ε} > 0)
EPS_MAX = 700.0
#: κ^{2D}·n (the scale of every variance here) must stay below this to be a finite double
_VAR_MAX = 1e300


def usable_epsilon_range(D: int = 1, n: int = 1, delta: float = 1.0) -> tuple[float, float]:
    """(ε_min, ε_max) for which the §4 quantities are finite doubles: the variances scale as
    n Δ² κ^{2D} with κ = coth(ε/2) ≈ 2/ε, so ε_min = 2 atanh((n Δ²/1e300)^{1/(2D)}); ε_max =
    :data:`EPS_MAX` keeps e^ε finite."""
    scale = max(float(n), 1.0) * max(float(delta), 1.0) ** 2
    return 2.0 * math.atanh(min((scale / _VAR_MAX) ** (1.0 / (2 * D)), 0.5)), EPS_MAX


def check_range_epsilon(epsilon, D: int = 1, n: int = 1, delta: float = 1.0) -> float:
    """ε as a float, or :class:`InputError` naming the usable range (:func:`usable_epsilon_range`)."""
    eps = check_epsilon(epsilon)
    lo, hi = usable_epsilon_range(D, n, delta)
    if not lo <= eps <= hi:
        raise InputError(f"epsilon {eps:g} is outside the usable range [{lo:.3g}, {hi:g}] of the "
                         f"range mechanism for D = {D}, n = {n}: the variances n·coth(ε/2)^(2D) "
                         "and e^ε must be finite doubles")
    return eps


def flip_probability(epsilon: float) -> float:
    """p = 1/(e^ε + 1) (computed as e^{−ε}/(1 + e^{−ε}): no overflow)."""
    t = math.exp(-check_epsilon(epsilon))
    return t / (1.0 + t)


def encoder_epsilon(epsilon: float) -> float:
    """The realised ε (per unit of ‖x − x'‖₁) of :func:`encode` *as implemented*: a bit flips when
    ``rng.random() < p`` and ``random()`` returns k·2⁻⁵³, so the flip probability is
    p' = ⌈p·2⁵³⌉/2⁵³ ≥ p and the realised ε = ln((1 − p')/p') (Proposition 4 with p'). It is ≤ ε
    (p' ≥ p) and ≈ 36.7 at most; ``inf`` if p' = 0."""
    p = flip_probability(epsilon)
    pq = math.ceil(math.ldexp(p, 53)) / 2.0 ** 53
    return math.inf if pq == 0 else math.log1p(-pq) - math.log(pq)


def bias(epsilon: float) -> float:
    """q = 1 − 2p = (e^ε − 1)/(e^ε + 1) = tanh(ε/2)."""
    return math.tanh(check_epsilon(epsilon) / 2.0)


def kappa(epsilon: float) -> float:
    """κ = 1/q, the de-biasing factor."""
    return 1.0 / bias(epsilon)




def domain_sizes(sizes, D: int | None = None) -> tuple[int, ...]:
    """(m_1, …, m_D) from one m and D, or from a list."""
    if isinstance(sizes, (int, np.integer)) and not isinstance(sizes, bool):
        if D is None or isinstance(D, bool) or not isinstance(D, (int, np.integer)) or D < 1:
            raise InputError(f"D must be a positive integer, got {D!r}")
        sizes = [int(sizes)] * int(D)
    try:
        sizes = tuple(int(s) for s in sizes)
    except (TypeError, ValueError):
        raise InputError(f"domain sizes must be positive integers, got {sizes!r}") from None
    if not sizes or min(sizes) < 1:
        raise InputError(f"domain sizes must be positive integers, got {sizes!r}")
    return sizes


def check_values(X, sizes: Sequence[int]) -> np.ndarray:
    """n×D integer array of 0-based values inside the domain."""
    X = np.asarray(X)
    if X.ndim == 1 and len(sizes) == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[1] != len(sizes) or not np.issubdtype(X.dtype, np.integer):
        raise InputError(f"values must be an n×{len(sizes)} integer array")
    if (X < 0).any() or (X >= np.asarray(sizes)).any():
        raise InputError(f"values out of the domain: dimension d takes 0..m_d−1 with m = {sizes}")
    return X


# --------------------------------------------------------------------------------- encoder


@dataclasses.dataclass(frozen=True, eq=False)
class Reports:
    """The n users' reports: ``bits[d]`` is the n×m_d ±1 matrix of dimension d."""

    bits: tuple[np.ndarray, ...]
    sizes: tuple[int, ...]
    epsilon: float

    @property
    def n(self) -> int:
        return self.bits[0].shape[0]

    @property
    def D(self) -> int:
        return len(self.sizes)


def threshold_bits(X, sizes) -> tuple[np.ndarray, ...]:
    """b_d[k] = −1 for k < x[d], +1 for k ≥ x[d] (§4.1), per dimension."""
    sizes = domain_sizes(sizes)
    X = check_values(X, sizes)
    return tuple(np.where(np.arange(m)[None, :] < X[:, d, None], -1, 1).astype(np.int8)
                 for d, m in enumerate(sizes))


def encode(X, sizes, epsilon: float, rng: np.random.Generator, *, pad: bool = False) -> Reports:
    """The §4.1 encoder: threshold bits, each flipped with probability 1/(e^ε+1).

    Parameters
    ----------
    X : array_like of int
        n×D 0-based values (a 1-D array when D = 1).
    sizes : int or sequence of int
        (m_1, …, m_D).
    epsilon : float
        ε per unit of ‖x − x'‖₁ (ε‖x−x'‖₁-LDP by Proposition 4; :func:`encoder_epsilon` is the ε
        realised by the double-precision coin flips).
    rng : numpy.random.Generator
        The source of the flips.
    pad : bool
        ``pad=True`` is §4.2's dummy-value trick: every dimension gets an extra value m_d that no
        one holds, so every query of the original domain has D_R = D (no privacy cost: the bit is
        constant).

    Returns
    -------
    Reports
        ``bits[d]``: the n×m_d ±1 matrix of dimension d.

    Raises
    ------
    InputError
        ``rng`` not a Generator, bad sizes, or values outside the domain.

    References
    ----------
    Z. Xiang, B. Ding, X. He, J. Zhou, "Linear and Range Counting under Metric-based Local
    Differential Privacy", ISIT 2020, §4.1.

    Examples
    --------
    >>> import numpy as np
    >>> from lpmech.models.matrix import range_mechanism as rm
    >>> rng = np.random.default_rng(0)
    >>> x = rng.integers(0, 16, size=10000)
    >>> rep = rm.encode(x, [16], 2.0, rng)
    >>> print(rep.n, rep.sizes, rep.bits[0].shape)
    10000 (16,) (10000, 16)
    """
    if not isinstance(rng, np.random.Generator):
        raise InputError("rng must be a numpy.random.Generator")
    sizes = domain_sizes(sizes)
    X = check_values(X, sizes)
    if pad:
        sizes = tuple(m + 1 for m in sizes)
    pf = flip_probability(epsilon)
    out = []
    for b in threshold_bits(X, sizes):
        flip = rng.random(b.shape) < pf
        out.append(np.where(flip, -b, b).astype(np.int8))
    return Reports(tuple(out), sizes, float(epsilon))


# ------------------------------------------------------------------- transform (Eqs. 6, 9, 10)


def base_transform(m: int) -> np.ndarray:
    """B_{m,1}[i, j] = +1 if j ≤ i else −1 (= 2L_m − 11ᵀ)."""
    return 2.0 * np.tril(np.ones((m, m))) - 1.0


def base_inverse(m: int) -> np.ndarray:
    """B_{m,1}⁻¹ (Eq. 9 base case): row 0 = (e_0 + e_{m−1})/2, row k ≥ 1 = (e_k − e_{k−1})/2."""
    M = np.zeros((m, m))
    M[0, 0] += 0.5
    M[0, m - 1] += 0.5
    k = np.arange(1, m)
    M[k, k] = 0.5
    M[k, k - 1] = -0.5
    return M


def _kron(mats) -> np.ndarray:
    """⊗ with the last dimension outermost (ind order: dimension 1 fastest, spec §5.20)."""
    out = np.ones((1, 1))
    for M in mats:
        out = np.kron(M, out)
    return out


def transform(sizes) -> np.ndarray:
    """B = B_{m_D,1} ⊗ … ⊗ B_{m_1,1} (Eq. 6; Eq. 10's C_D for unequal sizes)."""
    return _kron([base_transform(m) for m in domain_sizes(sizes)])


def inverse(sizes) -> np.ndarray:
    """B⁻¹ = ⊗ B_{m_d,1}⁻¹ (Eq. 9 / Eq. 10): 2^D non-zeros ±2^{−D} per row when all m_d ≥ 2."""
    return _kron([base_inverse(m) for m in domain_sizes(sizes)])


def _user_kron(vectors: Sequence[np.ndarray]) -> np.ndarray:
    """Row-wise ⊗ of n×m_d blocks, last dimension outermost: n×Πm_d."""
    out = np.asarray(vectors[0], float)
    for v in vectors[1:]:
        out = (np.asarray(v, float)[:, :, None] * out[:, None, :]).reshape(out.shape[0], -1)
    return out


def _chunks(n: int, width: int):
    step = max(1, int(4e6 // max(width, 1)))
    return (slice(i, i + step) for i in range(0, n, step))


def observations(rep: Reports) -> np.ndarray:
    """o_x = Σ_i Π_d R_i[d, x[d]] for every cell x in ind order (Eq. 4); O(n Π m_d)."""
    width = math.prod(rep.sizes)
    o = np.zeros(width)
    for sl in _chunks(rep.n, width):
        o += _user_kron([b[sl] for b in rep.bits]).sum(axis=0)
    return o


def frequencies(rep: Reports) -> np.ndarray:
    """ĉ = κ^D B⁻¹ o for all cells (Eq. 7), as κ^D Σ_i ⊗_d (B_{m_d,1}⁻¹ r_{i,d}); O(n Π m_d).

    Parameters
    ----------
    rep : Reports
        The users' reports (:func:`encode`).

    Returns
    -------
    numpy.ndarray
        The unbiased count estimate of every cell, in ind order (dimension 1 fastest).

    References
    ----------
    Z. Xiang, B. Ding, X. He, J. Zhou, "Linear and Range Counting under Metric-based Local
    Differential Privacy", ISIT 2020, §4.2, Eq. (7).

    Examples
    --------
    >>> import numpy as np
    >>> from lpmech.models.matrix import range_mechanism as rm
    >>> rng = np.random.default_rng(0)
    >>> x = rng.integers(0, 16, size=10000)
    >>> rep = rm.encode(x, [16], 2.0, rng)
    >>> c = rm.frequencies(rep)
    >>> print(c.shape, f"{c.sum():.1f}")
    (16,) 10018.5
    """
    width = math.prod(rep.sizes)
    inv = [base_inverse(m) for m in rep.sizes]
    c = np.zeros(width)
    for sl in _chunks(rep.n, width):
        c += _user_kron([b[sl] @ Bi.T for b, Bi in zip(rep.bits, inv)]).sum(axis=0)
    return kappa(rep.epsilon) ** rep.D * c


def frequencies_explicit(rep: Reports) -> np.ndarray:
    """ĉ = κ^D (Eq. 9 matrix) · o, built explicitly (small domains; the cross-check of the above)."""
    return kappa(rep.epsilon) ** rep.D * inverse(rep.sizes) @ observations(rep)


# ------------------------------------------------------------------------- range queries (Eq. 8)


def check_ranges(ranges, sizes) -> np.ndarray:
    """Q×D×2 integer array of inclusive 0-based ranges (one range may be given as D pairs)."""
    R = np.asarray(ranges)
    if R.ndim == 2:
        R = R[None]
    if R.ndim != 3 or R.shape[1:] != (len(sizes), 2) or not np.issubdtype(R.dtype, np.integer):
        raise InputError(f"a range is {len(sizes)} pairs (l, r) of integers, one per dimension")
    lo, hi = R[..., 0], R[..., 1]
    if (lo < 0).any() or (hi >= np.asarray(sizes)).any() or (lo > hi).any():
        raise InputError(f"ranges must satisfy 0 <= l <= r <= m_d − 1 with m = {sizes}")
    return R


def range_vector(lo: int, hi: int, m: int) -> np.ndarray:
    """g = Σ_{k=lo}^{hi} row_k(B_{m,1}⁻¹) (A.5): e_{m−1} for the whole line, (e_hi + e_{m−1})/2 for a
    prefix, (e_hi − e_{lo−1})/2 otherwise."""
    g = np.zeros(m)
    if lo == 0 and hi == m - 1:
        g[m - 1] = 1.0
    elif lo == 0:
        g[hi] += 0.5
        g[m - 1] += 0.5
    else:
        g[hi] += 0.5
        g[lo - 1] -= 0.5
    return g


def _factor(bits: np.ndarray, lo: np.ndarray, hi: np.ndarray, m: int) -> np.ndarray:
    """n×Q values g_{R,d}·r_{i,d} for Q ranges of one dimension, from ≤ 2 bits each (O(nQ))."""
    top = bits[:, hi].astype(float)
    last = bits[:, [m - 1]].astype(float)
    below = bits[:, np.maximum(lo - 1, 0)].astype(float)
    whole = (lo == 0) & (hi == m - 1)
    return np.where(whole, last, np.where(lo == 0, (top + last) / 2, (top - below) / 2))


def range_query(rep: Reports, ranges, weights=None) -> np.ndarray:
    """ĉ(R) = κ^D Σ_i w_i Π_d g_{R,d}·r_{i,d} for each range (Eq. 8, O(nD) per query).

    Parameters
    ----------
    rep : Reports
        The users' reports (:func:`encode`).
    ranges : array_like of int
        Q×D×2 inclusive 0-based ranges (l, r), or one range as D pairs.
    weights : array_like, optional
        ``weights`` (public, one per user; default 1) gives §4.3.2's non-private weighted query,
        identical to running the estimator per weight group g_w and summing w·ĉ_{g_w}(R).

    Returns
    -------
    numpy.ndarray
        The Q unbiased range-count estimates (exact variance: :func:`range_variance`).

    Raises
    ------
    InputError
        Ranges outside the domain, or weights of the wrong shape.

    References
    ----------
    Z. Xiang, B. Ding, X. He, J. Zhou, "Linear and Range Counting under Metric-based Local
    Differential Privacy", ISIT 2020, §4.2–4.3, Eq. (8).

    Examples
    --------
    >>> import numpy as np
    >>> from lpmech.models.matrix import range_mechanism as rm
    >>> rng = np.random.default_rng(0)
    >>> x = rng.integers(0, 16, size=10000)
    >>> rep = rm.encode(x, [16], 2.0, rng)
    >>> R = [[(0, 7)], [(4, 11)]]
    >>> print(np.round(rm.range_query(rep, R), 1), rm.true_counts(x, R, [16]))
    [4935.7 4980.3] [4970. 4935.]
    """
    R = check_ranges(ranges, rep.sizes)
    w = np.ones(rep.n) if weights is None else _weights(weights, rep.n)
    out = np.empty(R.shape[0])
    step = max(1, int(2e6 // rep.n))
    for q0 in range(0, R.shape[0], step):  # bounded memory: n × step per block
        Rq = R[q0:q0 + step]
        prod = np.ones((rep.n, Rq.shape[0]))
        for d, m in enumerate(rep.sizes):
            prod *= _factor(rep.bits[d], Rq[:, d, 0], Rq[:, d, 1], m)
        out[q0:q0 + step] = w @ prod
    return kappa(rep.epsilon) ** rep.D * out


def _weights(w, n: int) -> np.ndarray:
    w = np.asarray(w, float)
    if w.shape != (n,) or not np.isfinite(w).all():
        raise InputError(f"weights must be {n} finite numbers, one per user")
    return w


def true_counts(X, ranges, sizes, weights=None) -> np.ndarray:
    """c(R) = Σ_i w_i 1[x_i ∈ R] for each range."""
    sizes = domain_sizes(sizes)
    X = check_values(X, sizes)
    R = check_ranges(ranges, sizes)
    w = np.ones(len(X)) if weights is None else _weights(weights, len(X))
    return w @ _inside(X, R)


def _inside(X, R) -> np.ndarray:
    """n×Q: is x_i in range q."""
    return ((X[:, None, :] >= R[None, :, :, 0]) & (X[:, None, :] <= R[None, :, :, 1])).all(axis=2)


def user_variances(X, ranges, sizes, epsilon: float) -> np.ndarray:
    """n×Q exact per-user variance of ĉ(R) (spec §3.2, derived):
    κ^{2D} Π_{d nontrivial} (1 + σ_{i,d} q²)/2 − 1[x_i ∈ R], σ = +1 inside [l_d, r_d], −1 outside."""
    sizes = domain_sizes(sizes)
    X = check_values(X, sizes)
    R = check_ranges(ranges, sizes)
    q2 = bias(epsilon) ** 2
    f = np.full((len(X), R.shape[0]), kappa(epsilon) ** (2 * len(sizes)))
    for d, m in enumerate(sizes):
        lo, hi = R[:, d, 0], R[:, d, 1]
        ins = (X[:, d, None] >= lo) & (X[:, d, None] <= hi)
        nontrivial = ~((lo == 0) & (hi == m - 1))
        f *= np.where(nontrivial, np.where(ins, 1 + q2, 1 - q2) / 2, 1.0)
    return f - _inside(X, R)


def range_variance(X, ranges, sizes, epsilon: float, weights=None) -> np.ndarray:
    """Exact Var[ĉ(R)] for each range: Σ_i w_i² × the per-user variance."""
    V = user_variances(X, ranges, sizes, epsilon)
    w = np.ones(V.shape[0]) if weights is None else _weights(weights, V.shape[0])
    return (w ** 2) @ V


def nontrivial_dims(ranges, sizes) -> np.ndarray:
    """D_R of each range: the dimensions where [l, r] ≠ [0, m−1]."""
    R = check_ranges(ranges, domain_sizes(sizes))
    return ((R[..., 0] != 0) | (R[..., 1] != np.asarray(sizes) - 1)).sum(axis=1)


def paper_bound(D: int, DR, epsilon: float, n: int, delta: float = 1.0):
    """Theorems 2–4 with constant 1: κ^{2D} 2^{−D_R} (1 − q^{2D}) n Δ². NOT an upper bound (it
    ignores covariances, spec §3.2); shown beside the exact variance."""
    q, k = bias(epsilon), kappa(epsilon)
    return k ** (2 * D) * 2.0 ** (-np.asarray(DR, float)) * (1 - q ** (2 * D)) * n * delta ** 2


def valid_bound(D: int, DR, epsilon: float, n: int, delta: float = 1.0):
    """A valid upper bound of Var[ĉ(R)]: n Δ² κ^{2D} ((1 + q²)/2)^{D_R} (spec §3.2)."""
    q2 = bias(epsilon) ** 2
    return n * delta ** 2 * kappa(epsilon) ** (2 * D) * ((1 + q2) / 2) ** np.asarray(DR, float)


def average_cell_variance(sizes, epsilon: float, n: int) -> float:
    """Average of Var[ĉ_x] over all cells (data-independent): n[κ^{2D} Π_d a_d − 1/Π m_d] with
    a_d = (1 − (1 − 2/m_d) q²)/2 (a_d = 1 when m_d = 1)."""
    sizes = domain_sizes(sizes)
    q2 = bias(epsilon) ** 2
    a = [1.0 if m == 1 else (1 - (1 - 2 / m) * q2) / 2 for m in sizes]
    return n * (kappa(epsilon) ** (2 * len(sizes)) * math.prod(a) - 1 / math.prod(sizes))


# ---------------------------------------------------------------- private weights (§4.3.2)


def encode_private_weights(X, w, delta: float, sizes, epsilon: float, rng: np.random.Generator,
                           *, pad: bool = False) -> Reports:
    """Randomised rounding w' = 2 w.p. w/Δ else 1, encoded as an extra dimension of size 2.

    Privacy: ε‖x − x'‖₁ + ε (the weight coordinate is one bit; rounding is a mixture)."""
    sizes = domain_sizes(sizes)
    X = check_values(X, sizes)
    w = _weights(w, len(X))
    if not (delta > 0 and math.isfinite(delta)) or (w < 0).any() or (w > delta).any():
        raise InputError(f"weights must lie in [0, Δ] with Δ > 0, got Δ = {delta!r} and "
                         f"range [{w.min():g}, {w.max():g}]")
    wp = (rng.random(len(X)) < w / delta).astype(X.dtype)  # 0-based: 1 ↔ w' = 2
    rep = encode(X, sizes, epsilon, rng, pad=pad)
    wbits = encode(wp[:, None], (2,), epsilon, rng)
    return Reports(rep.bits + wbits.bits, (*rep.sizes, 2), rep.epsilon)


def private_weighted_query(rep: Reports, ranges, delta: float) -> np.ndarray:
    """ĉ_w(R) = Δ · ĉ(R × [2, 2]) (Theorem 4, private weights)."""
    R = check_ranges(ranges, rep.sizes[:-1])
    R = np.concatenate([R, np.ones((R.shape[0], 1, 2), R.dtype)], axis=1)
    return delta * range_query(rep, R)


def private_weighted_variance(X, w, delta: float, ranges, sizes, epsilon: float) -> np.ndarray:
    """Exact Var of :func:`private_weighted_query` (rounding and flips), per range:
    Σ_i Δ²[κ^{2(D+1)} Π_d f_{i,d} (1 + q²(2w_i/Δ − 1))/2 − (w_i/Δ)² 1[x_i ∈ R]]."""
    sizes = domain_sizes(sizes)
    X = check_values(X, sizes)
    R = check_ranges(ranges, sizes)
    w = _weights(w, len(X)) / delta
    k2, q2 = kappa(epsilon) ** 2, bias(epsilon) ** 2
    second = user_variances(X, R, sizes, epsilon) + _inside(X, R)  # κ^{2D} Π f = E[(κ^D Π z)²]
    term = second * (k2 * (1 + q2 * (2 * w - 1)) / 2)[:, None] - (w ** 2)[:, None] * _inside(X, R)
    return delta ** 2 * term.sum(axis=0)


# ------------------------------------------------------------------------ quantiles (§4.4)


@dataclasses.dataclass(frozen=True, eq=False)
class BitSums:
    """What quantiles need from 1-D reports: the column sums o_k = Σ_i r_i[k] (k = 0..m−1)."""

    o: np.ndarray
    n: int
    epsilon: float

    @property
    def sizes(self) -> tuple[int, ...]:
        return (self.o.size,)

    @property
    def D(self) -> int:
        return 1


def bit_sums(rep) -> BitSums:
    """The :class:`BitSums` of 1-D :class:`Reports` (a BitSums is returned as is)."""
    if isinstance(rep, BitSums):
        return rep
    if rep.D != 1:
        raise InputError("quantiles need one-dimensional reports (D = 1)")
    return BitSums(rep.bits[0].sum(axis=0).astype(float), rep.n, rep.epsilon)


def sample_bit_sums(x, m: int, epsilon: float, rng: np.random.Generator) -> BitSums:
    """Column sums of :func:`encode`'s 1-D reports, drawn directly in O(m) memory with the same
    distribution: column k has c_k = #{x_i ≤ k} bits +1 and n − c_k bits −1 before the flips, each
    flipped independently w.p. p, so o_k = (c_k − 2F⁺) − (n − c_k − 2F⁻) with F^± ~ Bin(·, p),
    independent across k (every bit is flipped independently)."""
    if not isinstance(rng, np.random.Generator):
        raise InputError("rng must be a numpy.random.Generator")
    X = check_values(np.asarray(x).reshape(-1, 1), (m,))
    n = X.shape[0]
    c = np.cumsum(np.bincount(X[:, 0], minlength=m))  # bits +1 in column k: x_i ≤ k
    p = flip_probability(epsilon)
    o = (c - 2 * rng.binomial(c, p)) - ((n - c) - 2 * rng.binomial(n - c, p))
    return BitSums(o.astype(float), n, float(epsilon))


def percentiles_hat(rep) -> np.ndarray:
    """σ̂ over j = 0..m (1-D reports or their :class:`BitSums`): σ̂(0) = 0, σ̂(j) = κ(o_j + o_m)/(2n)
    for j < m, and σ̂(m) = 1 (the collector knows n; the paper's κ o_m/n is its noisy estimate,
    spec §5.15)."""
    b = bit_sums(rep)
    m, o = b.o.size, b.o
    sig = np.empty(m + 1)
    sig[0] = 0.0
    sig[1:m] = kappa(b.epsilon) * (o[:m - 1] + o[m - 1]) / (2 * b.n)
    sig[m] = 1.0
    return sig


def quantile(rep, p: float, *, scan_width: int = 10) -> int:
    """The estimated p-quantile (0-based value) by binary search on σ̂, then a linear scan once
    R − L ≤ ``scan_width`` (§4.4).

    Parameters
    ----------
    rep : Reports or BitSums
        1-D reports (:func:`encode`) or their column sums (:func:`sample_bit_sums`).
    p : float
        The quantile, in (0, 1].
    scan_width : int
        Width below which the binary search turns into a linear scan.

    Returns
    -------
    int
        The estimated p-quantile, a 0-based value.

    Raises
    ------
    InputError
        p outside (0, 1], or reports with D ≠ 1.

    Notes
    -----
    Invariant σ̂(L) < p ≤ σ̂(R) (L = 0, R = m at the start), so the scan always finds j with
    σ̂(j−1) < p ≤ σ̂(j); the answer is value j − 1. Its error bound: :func:`quantile_error_bound`.

    References
    ----------
    Z. Xiang, B. Ding, X. He, J. Zhou, "Linear and Range Counting under Metric-based Local
    Differential Privacy", ISIT 2020, §4.4.

    Examples
    --------
    >>> import numpy as np
    >>> from lpmech.models.matrix import range_mechanism as rm
    >>> rng = np.random.default_rng(0)
    >>> x = rng.integers(0, 16, size=10000)
    >>> rep = rm.encode(x, [16], 2.0, rng)
    >>> xhat = rm.quantile(rep, 0.5)
    >>> print(xhat, f"{rm.quantile_error(x, xhat, 0.5):.4f}")
    8 0.0000
    """
    if not 0 < p <= 1:
        raise InputError(f"p must be in (0, 1], got {p!r}")
    sig = percentiles_hat(rep)
    lo, hi = 0, sig.size - 1
    while hi - lo > scan_width:
        mid = (lo + hi + 1) // 2
        if sig[mid] < p:
            lo = mid
        else:
            hi = mid
    for j in range(lo + 1, hi + 1):
        if sig[j - 1] < p <= sig[j]:
            return j - 1
    return hi - 1  # unreachable under the invariant


def quantile_error(x, xhat: int, p: float) -> float:
    """Err[x̂] = distance from p to the closed percentile interval [σ(x̂−1), σ(x̂)] (spec §5.14)."""
    x = np.asarray(x).ravel()
    lo, hi = float(np.mean(x < xhat)), float(np.mean(x <= xhat))
    return max(0.0, lo - p, p - hi)


def lemma1_bound(epsilon: float, n: int, delta: float, *, two_sided: bool = True) -> float:
    """Lemma 1: |σ̂(x) − σ(x)| ≤ κ sqrt((2/n) log(c/δ)) w.p. ≥ 1−δ for one x; c = 2 two-sided
    (Hoeffding), c = 1 as printed (one-sided, spec §5.9)."""
    return kappa(epsilon) * math.sqrt(2.0 / n * math.log((2.0 if two_sided else 1.0) / delta))


def quantile_error_bound(epsilon: float, n: int, m: int, delta: float, *, kind: str = "union") -> float:
    """Bound on Err[x̂] holding w.p. ≥ 1−δ.

    ``"paper"``: Theorem 5 as printed, 2κ sqrt((2/n) log(2 log₂ m/δ)) (0.0474 at ε = 1, n = 1e5,
    m = 1024, δ = 0.05). ``"union"`` (default, proved here): two-sided Hoeffding with a union bound
    over the m − 1 estimated prefix points gives |σ̂ − σ| ≤ Δ = κ sqrt((2/n) log(2(m−1)/δ)) on all
    of them, and the search's invariant gives Err ≤ Δ."""
    if kind == "paper":
        return 2 * kappa(epsilon) * math.sqrt(2.0 / n * math.log(2 * math.log2(m) / delta))
    if kind == "union":
        return kappa(epsilon) * math.sqrt(2.0 / n * math.log(2 * max(m - 1, 1) / delta))
    raise InputError(f"kind must be 'paper' or 'union', got {kind!r}")


# ----------------------------------------------------------------- synthetic data and queries


def zipf_values(n: int, sizes, rng: np.random.Generator, a: float = 1.1) -> np.ndarray:
    """n×D values, each coordinate independently from Zipf(a) truncated to [m_d]: P(v) ∝ (v+1)^−a
    (0-based; Xiang et al., metric LDP Fig. 2 uses a = 1.1, spec §5.16)."""
    sizes = domain_sizes(sizes)
    if not (isinstance(a, (int, float)) and math.isfinite(a) and a >= 0):
        raise InputError(f"the Zipf exponent must be a finite number >= 0, got {a!r}")
    if not isinstance(rng, np.random.Generator):
        raise InputError("rng must be a numpy.random.Generator")
    cols = []
    for m in sizes:
        p = np.arange(1, m + 1, dtype=float) ** -float(a)
        cols.append(rng.choice(m, size=int(n), p=p / p.sum()))
    return np.stack(cols, axis=1)


def random_ranges(Q: int, sizes, rng: np.random.Generator) -> np.ndarray:
    """Q×D×2 ranges, per dimension an interval drawn uniformly from the m(m+1)/2 intervals
    [l, r] ⊆ [0, m−1] (Xiang et al., metric LDP, do not say how their 100 random ranges are drawn,
    spec §5.17)."""
    sizes = domain_sizes(sizes)
    R = np.empty((int(Q), len(sizes), 2), np.int64)
    for d, m in enumerate(sizes):
        lo, hi = np.triu_indices(m)  # all l <= r
        pick = rng.integers(0, lo.size, int(Q))
        R[:, d, 0], R[:, d, 1] = lo[pick], hi[pick]
    return R


def true_quantile(x, p: float) -> int:
    """The p-quantile of the 1-D values x: the smallest v with σ(v) ≥ p (§1.8)."""
    x = np.sort(np.asarray(x).ravel())
    k = int(np.searchsorted(np.arange(1, len(x) + 1) / len(x), p, side="left"))
    return int(x[min(k, len(x) - 1)])
