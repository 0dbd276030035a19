"""Mechanisms (row-stochastic matrices) and their privacy certifiers.

A :class:`Mechanism` is a validated K×n matrix Z with Z[i, k] = Pr[report k | true i] (Qiu et al., LR-Geo §1).
The certifiers compute what the matrix *really* satisfies:

* :func:`realized_epsilon`: the smallest ε for which Z is (ε, γ)-Geo-Ind (Qiu et al., LR-Geo Def. 2.1, (1)),
  i.e. Z[i, k] ≤ e^{ε d_ij} Z[j, k] for every neighbour pair d_ij ≤ γ and every output k. With
  γ = ∞ this is d-privacy (metric LDP); with d ≡ 1 off the diagonal it is ε-LDP (:func:`ldp_epsilon`).
* :func:`certify`: the realised ε, the worst violation max(Z[i,k] − e^{ε d_ij} Z[j,k]) at a target ε,
  and the Geo-Ind violation ratio (32) and magnitude (33) of Qiu et al., LR-Geo §5.1.3.

Solver output goes through :func:`clean` (clip solver noise, repair tiny Geo-Ind violations, renormalise)
before it is certified; see DESIGN "Numerics".
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from .errors import CertificationError, InputError

ROW_TOL = 1e-9  # rows of a Mechanism sum to 1 within this
EPS_RTOL = 1e-6  # a mechanism is accepted when realised ε ≤ target·(1 + EPS_RTOL)
_CHUNK = 1 << 22  # elements per block in the O(K²·n) certifier loops


@dataclasses.dataclass(frozen=True)
class PrivacyCertificate:
    """What a mechanism was checked to satisfy.

    Attributes:
        notion: ``"geo-ind"`` ((ε, γ)-Geo-Ind / d-privacy when γ = ∞) or ``"ldp"``.
        realized_epsilon: the smallest ε the matrix satisfies (``inf`` if none).
        target_epsilon: the ε it was built for (``None`` when only measured).
        gamma: the neighbour threshold γ of the check.
        worst_violation: max over constraints of Z[i,k] − e^{ε d_ij} Z[j,k] at the target (≤ 0 is fine).
        violation_ratio: eq. (32), the fraction of (pair, output) constraints violated by more than
            ``tol`` at the target.
        violation_magnitude: eq. (33), the mean violation over the violated constraints (0 if none).
        n_constraints: the number of (ordered pair, output) constraints checked.
        satisfied: realised ε ≤ target·(1 + rtol).
    """

    notion: str
    realized_epsilon: float
    target_epsilon: float | None
    gamma: float
    worst_violation: float
    violation_ratio: float
    violation_magnitude: float
    n_constraints: int
    satisfied: bool
    rtol: float = EPS_RTOL

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


class Mechanism:
    """A validated row-stochastic matrix, with the certificate it was issued with (if any).

    Parameters
    ----------
    matrix : array_like
        K×n array with non-negative entries and rows summing to 1 within ``ROW_TOL``.
    name : str
        A label for reports.
    certificate : PrivacyCertificate, optional
        The :class:`PrivacyCertificate` of the matrix.

    Raises
    ------
    InputError
        A matrix that is empty, not 2-D, non-finite, negative, or whose rows do not sum to 1.

    Examples
    --------
    >>> import math
    >>> import numpy as np
    >>> from lpmech.mechanism import Mechanism, certify, realized_epsilon
    >>> Z = np.array([[math.e, 1.0], [1.0, math.e]]) / (1 + math.e)  # randomised response
    >>> d = [[0.0, 1.0], [1.0, 0.0]]
    >>> mech = Mechanism(Z, name="RR").with_certificate(certify(Z, d, 1.0))
    >>> print(mech)
    Mechanism('RR', shape=(2, 2), realized_epsilon=1.0)
    >>> print(mech.sample([0, 1, 1], np.random.default_rng(0)), f"{mech.expected_loss([0.5, 0.5], d):.4f}")
    [0 1 0] 0.2689
    """

    def __init__(self, matrix, *, name: str = "", certificate: PrivacyCertificate | None = None):
        z = np.array(matrix, dtype=float)
        if z.ndim != 2 or 0 in z.shape:
            raise InputError(f"a mechanism is a non-empty 2-D matrix, got shape {z.shape}")
        if not np.isfinite(z).all():
            raise InputError("mechanism matrix has a non-finite entry")
        if (z < 0).any():
            i, k = np.argwhere(z < 0)[0]
            raise InputError(f"mechanism entry ({i}, {k}) is negative ({z[i, k]:g}); "
                             "use lpmech.mechanism.clean() on raw solver output")
        err = np.abs(z.sum(axis=1) - 1.0)
        if err.max() > ROW_TOL:
            i = int(np.argmax(err))
            raise InputError(f"mechanism row {i} sums to {z[i].sum():.12g}, not 1")
        z.setflags(write=False)
        self.matrix = z
        self.name = name
        self.certificate = certificate

    @property
    def shape(self) -> tuple[int, int]:
        return self.matrix.shape

    def __repr__(self) -> str:
        eps = self.certificate.realized_epsilon if self.certificate else None
        return f"Mechanism({self.name!r}, shape={self.shape}, realized_epsilon={eps})"

    def sample(self, true_index, rng: np.random.Generator) -> np.ndarray | int:
        """Report(s) for true location index/indices, drawn with the explicit ``rng``."""
        if not isinstance(rng, np.random.Generator):
            raise InputError("sample() needs an explicit numpy.random.Generator "
                             "(numpy.random.default_rng(seed))")
        idx = np.asarray(true_index)
        if idx.dtype.kind not in "iu" or (idx < 0).any() or (idx >= self.shape[0]).any():
            raise InputError(f"true indices must be integers in [0, {self.shape[0]})")
        cdf = np.cumsum(self.matrix[idx.ravel()], axis=1)
        u = rng.random(idx.size) * cdf[:, -1]
        out = (cdf < u[:, None]).sum(axis=1).reshape(idx.shape)
        return int(out) if out.ndim == 0 else out

    def expected_loss(self, prior, loss) -> float:
        """Σ_i p_i Σ_k L[i, k] Z[i, k]: the expected loss under ``prior`` (Qiu et al., LR-Geo eq. (4))."""
        p, L = np.asarray(prior, float), np.asarray(loss, float)
        if p.shape != (self.shape[0],) or L.shape != self.shape:
            raise InputError(f"prior {p.shape} / loss {L.shape} do not fit a {self.shape} mechanism")
        return float(p @ (L * self.matrix).sum(axis=1))

    def certify(self, metric, epsilon: float, gamma: float = math.inf, **kw) -> PrivacyCertificate:
        """Certify this matrix under (ε, γ)-Geo-Ind for ``metric``; see :func:`certify`."""
        return certify(self.matrix, metric, epsilon, gamma, **kw)

    def with_certificate(self, cert: PrivacyCertificate) -> Mechanism:
        return Mechanism(self.matrix, name=self.name, certificate=cert)


# ---------------------------------------------------------------------------------- certifiers


def _pairs_blocks(d: np.ndarray, gamma: float):
    """Yield (rows, mask) blocks: rows of the matrix and their neighbour masks d_ij ≤ γ, i ≠ j."""
    K = d.shape[0]
    step = max(1, _CHUNK // (K * K))
    for start in range(0, K, step):
        rows = np.arange(start, min(K, start + step))
        mask = d[rows] <= gamma
        mask[np.arange(rows.size), rows] = False
        yield rows, mask


def used_columns(z: np.ndarray) -> np.ndarray:
    """The columns with a non-zero entry: a mechanism from an LP uses few of its outputs (LE's
    LP (8) at m = 1,024: 45), and the O(m³) checks skip the others (certification 79 s → 7.6 s)."""
    return np.nonzero((z != 0).any(axis=0))[0]


def _check_shapes(z: np.ndarray, d: np.ndarray) -> None:
    if d.ndim != 2 or d.shape[0] != d.shape[1] or d.shape[0] != z.shape[0]:
        raise InputError(f"metric of shape {d.shape} does not fit a mechanism with {z.shape[0]} rows")


#: pairs with d_ij below this fraction of the largest distance get their log-ratios recomputed as
#: log1p((Z_ik − Z_jk) / Z_jk) (see :func:`realized_epsilon`)
FINE_PAIR_RTOL = 1e-3


def _top_log_ratios(z, logz, rows, mask, d, fine: float) -> np.ndarray:
    """top[r, j] = max_k log(Z[i_r, k] / Z[j, k]) over the neighbour pairs of ``mask`` (0 elsewhere).

    log Z_ik − log Z_jk carries an absolute error of a few ulps of |log Z| (≈ 1e-14 for entries
    near 1e-6): divided by d_ij that is a wrong realised ε once d_ij ≲ 1e-8. Pairs with
    d_ij < ``fine`` are recomputed as log1p((Z_ik − Z_jk) / Z_jk), accurate to a few ulps of the
    ratio's distance from 1 (the difference of near-equal doubles is exact).
    """
    diff = logz[rows, None, :] - logz[None, :, :]
    # 0/0 (both zero, no constraint) is NaN: fmax skips it (a row of NaNs gives NaN, then 0)
    top = np.fmax.reduce(diff, axis=2)
    top = np.where(mask & ~np.isnan(top), top, 0.0)
    r, j = np.nonzero(mask & (d[rows] < fine))
    if r.size:
        a, b = z[rows[r]], z[j]
        q = np.where(b > 0, (a - b) / np.where(b > 0, b, 1.0), np.where(a > 0, np.inf, 0.0))
        top[r, j] = np.log1p(q).max(axis=1)
    return top


def realized_epsilon(matrix, metric, gamma: float = math.inf) -> float:
    """The smallest ε with Z[i,k] ≤ e^{ε d_ij} Z[j,k] for all k and all i ≠ j with d_ij ≤ γ.

    Parameters
    ----------
    matrix : array_like
        The K×n mechanism Z.
    metric : array_like
        The K×K metric d.
    gamma : float
        Neighbour threshold γ (default ∞: every pair).

    Returns
    -------
    float
        max over pairs of log(Z[i,k] / Z[j,k]) / d_ij; ``inf`` when Z[j,k] = 0 < Z[i,k] or when
        d_ij = 0 and the rows differ. 0 for a single location.

    Raises
    ------
    InputError
        Shapes that do not match.

    Notes
    -----
    Near-duplicate pairs (d_ij below ``FINE_PAIR_RTOL``·max d) are evaluated with log1p of the
    relative difference, so that two rows one ulp apart at d = 1e-13 give ε ≈ 1e-3 and not the
    round-off of two logarithms.

    Examples
    --------
    >>> import math
    >>> import numpy as np
    >>> from lpmech.mechanism import Mechanism, certify, realized_epsilon
    >>> Z = np.array([[math.e, 1.0], [1.0, math.e]]) / (1 + math.e)  # randomised response
    >>> d = [[0.0, 1.0], [1.0, 0.0]]
    >>> print(f"{realized_epsilon(Z, d):.4f}", f"{realized_epsilon(Z, np.multiply(d, 2)):.4f}")
    1.0000 0.5000
    """
    z, d = np.asarray(matrix, float), np.asarray(metric, float)
    _check_shapes(z, d)
    z = z[:, used_columns(z)]  # a column of zeros has no ratio (0/0 counts as none)
    fine = FINE_PAIR_RTOL * float(d.max(initial=0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        logz = np.log(z)
        worst = 0.0
        for rows, mask in _pairs_blocks(d, gamma):
            top = _top_log_ratios(z, logz, rows, mask, d, fine)
            ratio = np.where(top > 0, top / d[rows], 0.0)  # d = 0 with top > 0 -> inf
            worst = max(worst, float(ratio.max(initial=0.0)))
    return worst


def ldp_epsilon(matrix) -> float:
    """The realised ε of ε-LDP: max_k log(max_i Z[i,k] / min_i Z[i,k]) over outputs with mass."""
    z = np.asarray(matrix, float)
    hi, lo = z.max(axis=0), z.min(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):  # columns with no mass: 0 by np.where
        r = np.where(hi > 0, np.log(hi) - np.log(lo), 0.0)
    return float(r.max(initial=0.0))


def certify(matrix, metric, epsilon: float, gamma: float = math.inf, *, tol: float = 1e-12,
            rtol: float = EPS_RTOL, notion: str = "geo-ind") -> PrivacyCertificate:
    """Certify Z against (ε, γ)-Geo-Ind on ``metric`` (``notion="ldp"``: ε-LDP, metric ignored).

    Parameters
    ----------
    matrix : array_like
        The K×n mechanism Z.
    metric : array_like
        The K×K metric d (ignored for ``notion="ldp"``).
    epsilon : float
        The target ε.
    gamma : float
        Neighbour threshold γ (default ∞: every pair).
    tol : float
        A constraint counts as violated in (32)–(33) when Z[i,k] − e^{ε d_ij} Z[j,k] > ``tol``.
    rtol : float
        Satisfied when realised ε ≤ ε·(1 + ``rtol``).
    notion : {"geo-ind", "ldp"}
        The notion checked.

    Returns
    -------
    PrivacyCertificate
        Realised ε (:func:`realized_epsilon`), worst violation, violation ratio (32) and magnitude
        (33) of Qiu, Liu, Pappachan, Squicciarini & Xie, "Time-Efficient Locally Relevant
        Geo-Location Privacy Protection", PETS 2025, and ``satisfied``.

    Raises
    ------
    InputError
        ε ≤ 0, shapes that do not match, or an unknown notion.

    Examples
    --------
    >>> import math
    >>> import numpy as np
    >>> from lpmech.mechanism import Mechanism, certify, realized_epsilon
    >>> Z = np.array([[math.e, 1.0], [1.0, math.e]]) / (1 + math.e)  # randomised response
    >>> d = [[0.0, 1.0], [1.0, 0.0]]
    >>> cert = certify(Z, d, 1.0)
    >>> print(cert.satisfied, f"{cert.realized_epsilon:.4f}", cert.n_constraints)
    True 1.0000 4
    >>> cert = certify(Z, d, 0.5)
    >>> print(cert.satisfied, f"{cert.violation_ratio:.2f}", f"{cert.worst_violation:.4f}")
    False 0.50 0.2876
    """
    z = np.asarray(matrix, float)
    eps = check_epsilon(epsilon)
    if notion == "ldp":
        d, gamma = 1.0 - np.eye(z.shape[0]), math.inf
    elif notion == "geo-ind":
        d = np.asarray(metric, float)
        _check_shapes(z, d)
    else:
        raise InputError(f"unknown privacy notion {notion!r}: use 'geo-ind' or 'ldp'")
    real = ldp_epsilon(z) if notion == "ldp" else realized_epsilon(z, d, gamma)
    n_cols = z.shape[1]
    used = used_columns(z) if tol >= 0 else np.arange(n_cols)
    z = z[:, used]  # the rows of a column of zeros all hold with violation 0
    worst = 0.0 if used.size < n_cols else -math.inf
    n_bad, total_bad, n = 0, 0.0, 0
    every = math.isinf(gamma)  # the mask is "i ≠ j": set the diagonal instead of a masked copy
    for rows, mask in _pairs_blocks(d, gamma):
        # factor[r, j] = e^{ε d_ij}, capped at e^709 (finite): a capped bound is ≥ 1e307·Z_jk, which
        # no entry ≤ 1 violates, and 0 where Z_jk = 0, as inf·0 = 0 would be
        factor = np.exp(np.minimum(eps * d[rows], MAX_EPS_D))
        viol = z[rows, None, :] - factor[:, :, None] * z[None, :, :]
        if every:
            viol[np.arange(rows.size), rows, :] = -np.inf
        else:
            viol = np.where(mask[:, :, None], viol, -np.inf)
        block_worst = float(viol.max(initial=-np.inf))
        worst = max(worst, block_worst)
        if block_worst > tol:  # (no violated row in the block: nothing to count)
            bad = viol > tol
            n_bad += int(bad.sum())
            total_bad += float(viol[bad].sum())
        n += int(mask.sum()) * n_cols
    return PrivacyCertificate(
        notion=notion, realized_epsilon=real, target_epsilon=eps, gamma=float(gamma),
        worst_violation=worst if n else 0.0, violation_ratio=n_bad / n if n else 0.0,
        violation_magnitude=total_bad / n_bad if n_bad else 0.0, n_constraints=n,
        satisfied=real <= eps * (1 + rtol), rtol=rtol)


def check_epsilon(epsilon) -> float:
    try:
        e = float(epsilon)
    except (TypeError, ValueError):
        raise InputError(f"epsilon must be a number, got {epsilon!r}") from None
    if not math.isfinite(e) or e <= 0:
        raise InputError(f"epsilon must be a positive finite number, got {epsilon!r}")
    return e


#: largest ε·d whose factor e^{ε·d} is a finite double (log of the largest double, 709.78)
MAX_EPS_D = 709.0
#: smallest ε·d (positive distances) a model may divide by without overflow
MIN_EPS_D = 1e-300


def check_epsilon_scale(epsilon, distances, *, gamma: float = math.inf, min_eps_d: float = MIN_EPS_D,
                        max_eps_d: float = MAX_EPS_D, flag: str = "epsilon",
                        why_large: str = "so e^(epsilon·d) overflows double precision",
                        why_small: str = "underflows double precision",
                        scope: str = "this metric") -> float:
    """ε, checked against the metric's scale: an :class:`InputError` naming the usable range.

    The ratio bounds e^{ε·d_ij} of every constrained pair (d_ij ≤ ``gamma``) must be finite doubles
    (ε·d_max ≤ ``max_eps_d``), and ε·d_min over positive distances must stay ≥ ``min_eps_d`` (a
    model that divides by ε·d, or needs e^{−ε·d} < 1 to be resolved, passes a larger
    ``min_eps_d``). ``flag`` is how the message names ε (e.g. ``"--epsilon"``); ``why_large`` /
    ``why_small`` / ``scope`` word the message for a model whose limits have another cause. Shared by the
    models (OMG, LIP, matrix mechanism) so that ε·d overflow/underflow is one input error.
    """
    eps = check_epsilon(epsilon)
    d = np.asarray(distances, float)
    d = d[(d > 0) & (d <= gamma)] if math.isfinite(gamma) else d[d > 0]
    if d.size == 0:
        return eps
    d_min, d_max = float(d.min()), float(d.max())
    lo, hi = min_eps_d / d_min, max_eps_d / d_max
    usable = f"the usable range for {scope} is {lo:.4g} <= {flag} <= {hi:.4g}"
    metric = scope == "this metric"
    rescale = " (or rescale the distances)" if metric else ""
    if eps * d_max > max_eps_d:
        what = f"epsilon·d_max = {eps * d_max:.4g}" if metric else f"epsilon = {eps:.4g}"
        raise InputError(f"{flag} {eps:g} is too large for {scope}: {what} > {max_eps_d:g}, "
                         f"{why_large}; {usable}{rescale}")
    if eps * d_min < min_eps_d:
        what = f"epsilon·d_min = {eps * d_min:.4g}" if metric else f"epsilon = {eps:.4g}"
        raise InputError(f"{flag} {eps:g} is too small for {scope}: {what} < {min_eps_d:g} "
                         f"{why_small}; {usable}{rescale}")
    return eps


# ------------------------------------------------------------------------------------- clean-up


#: in the repair step, neighbour pairs with ε·d_ij at most this share one common row (see :func:`clean`)
NEAR_DUPLICATE_EPS_D = 1e-6
#: a pass may merge a still-violated pair into one group only up to this ε·d (a common row costs up
#: to a factor e^{ε d} on the merged rows; farther pairs are left to the next close-and-renormalise)
MERGE_EPS_D = 1e-3
#: at most this many repair passes
_REPAIR_PASSES = 8


def clean(raw, metric=None, epsilon: float | None = None, gamma: float = math.inf, *,
          neg_tol: float = 1e-6) -> np.ndarray:
    """Turn a solver's matrix into an exact row-stochastic one before certification.

    1. Entries in [−``neg_tol``, 0) are solver noise and clipped to 0 (below that: an error);
       rows are renormalised. If the result is certified, it is returned.
    2. With ``metric`` and ``epsilon``, a matrix that violates some Geo-Ind ratio (solver
       tolerance) is repaired so that the ratios hold *after* the rows are renormalised:

       * near-duplicate groups (connected through neighbour pairs with ε·d_ij ≤
         ``NEAR_DUPLICATE_EPS_D``) get one common row, the entrywise maximum of their rows;
       * the group rows are raised to the least matrix that satisfies every ratio of the quotient
         metric d_q(A, B) = min_{a∈A, b∈B} d_ab (:func:`geo_ind_closure`; Thm 3.2 of Qiu et al., LR-Geo),
         then renormalised.

    Why groups. For d_ij = 0 Geo-Ind forces rows i and j to be *equal*; for a tiny d it forces them
    equal up to the factor e^{ε d_ij}. Raising entries and renormalising the rows divides row i by
    its own sum s_i, which moves the ratio Z_ik / Z_jk by s_j / s_i: harmless for a pair with
    ε·d ≫ |log(s_i / s_j)| ≈ the solver's tolerance, fatal for near-equal rows (two points 1e-11
    apart then certify ε ≈ 10¹¹). A common row keeps their ratio exactly 1 through any
    renormalisation, and the minimum linkage keeps every ratio to the other groups valid for every
    member (z_A ≤ e^{ε d_q} z_B ≤ e^{ε d_ab} z_B). If the renormalised matrix still misses the
    certificate, the pass is repeated from it: closing and renormalising again contracts the
    violations quickly (they are the renormalisation's own, ~1e-6 relative after the first pass,
    ~1e-8 after the second on a spiky-prior instance), and pairs with ε·d ≤ ``MERGE_EPS_D`` that
    are still violated after two passes join one group. A common row can only cost optimality (at
    most a factor e^{ε d} on the merged rows); the objective and gap reported by the models are
    those of the returned matrix, so that cost is never hidden.
    """
    if metric is None or epsilon is None:
        return _clip_normalise(raw, neg_tol)
    return clean_and_certify(raw, metric, epsilon, gamma, neg_tol=neg_tol)[0]


def clean_and_certify(raw, metric, epsilon: float, gamma: float = math.inf, *,
                      rtol: float = EPS_RTOL, neg_tol: float = 1e-6):
    """:func:`clean` then :func:`certify`: ``(Z, PrivacyCertificate)``.

    One certification pass when the solver's matrix needs no repair, usually two when it does
    (more only when a repair pass must merge further near-equal rows).
    """
    z = _clip_normalise(raw, neg_tol)
    cert = certify(z, metric, epsilon, gamma, rtol=rtol)
    if cert.realized_epsilon <= epsilon * (1 + 1e-12):
        return z, cert
    d = np.asarray(metric, float)
    labels = near_duplicate_groups(d, epsilon, gamma)
    for rnd in range(_REPAIR_PASSES):
        z = _clip_normalise(_group_closure(z, d, epsilon, gamma, labels), neg_tol)
        cert = certify(z, d, epsilon, gamma, rtol=rtol)
        if cert.satisfied:
            break
        # the next pass starts from this matrix (close-and-renormalise contracts: each pass leaves
        # the violations of the renormalisation only); from the third pass on, near pairs still
        # violated share a row
        if rnd >= 2:
            bad = _violated_pairs(z, d, epsilon * (1 + rtol), gamma) & (epsilon * d <= MERGE_EPS_D)
            if bad.any():
                labels = _merge(labels, bad)
    return z, cert


def near_duplicate_groups(metric, epsilon: float, gamma: float = math.inf, *,
                          eps_d: float = NEAR_DUPLICATE_EPS_D) -> np.ndarray:
    """Group labels 0..G−1 of the components of the neighbour pairs with ε·d_ij ≤ ``eps_d``."""
    from scipy.sparse.csgraph import connected_components

    d = np.asarray(metric, float)
    close = (epsilon * d <= eps_d) & (d <= gamma)
    np.fill_diagonal(close, False)
    if not close.any():
        return np.arange(d.shape[0])
    return connected_components(csr_matrix(close), directed=False)[1]


def _merge(labels: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    from scipy.sparse.csgraph import connected_components

    G = int(labels.max()) + 1
    i, j = np.nonzero(pairs)
    link = csr_matrix((np.ones(i.size), (labels[i], labels[j])), shape=(G, G))
    return connected_components(link, directed=False)[1][labels]


def group_min_linkage(metric, labels: np.ndarray) -> np.ndarray:
    """d_q(A, B) = min_{a∈A, b∈B} d_ab between the groups of ``labels`` (0 on the diagonal)."""
    d = np.asarray(metric, float)
    G = int(labels.max()) + 1
    rows = np.full((G, d.shape[1]), np.inf)
    np.minimum.at(rows, labels, d)
    out = np.full((G, G), np.inf)
    np.minimum.at(out.T, labels, rows.T)
    np.fill_diagonal(out, 0.0)
    return out


def _group_closure(z: np.ndarray, d: np.ndarray, epsilon: float, gamma: float,
                   labels: np.ndarray) -> np.ndarray:
    """Common row per group (entrywise max), closed under the groups' min-linkage metric."""
    G = int(labels.max()) + 1
    if G == z.shape[0]:
        return geo_ind_closure(z, d, epsilon, gamma)
    zq = np.zeros((G, z.shape[1]))
    np.maximum.at(zq, labels, z)
    zq = geo_ind_closure(zq, group_min_linkage(d, labels), epsilon, gamma)
    return zq[labels]


def _violated_pairs(z: np.ndarray, d: np.ndarray, epsilon: float, gamma: float) -> np.ndarray:
    """K×K bool: the neighbour pairs (i, j) with max_k log(Z_ik / Z_jk) > ε·d_ij (either way)."""
    out = np.zeros(d.shape, dtype=bool)
    fine = FINE_PAIR_RTOL * float(d.max(initial=0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        logz = np.log(z)
        for rows, mask in _pairs_blocks(d, gamma):
            out[rows] = mask & (_top_log_ratios(z, logz, rows, mask, d, fine) > epsilon * d[rows])
    return out | out.T


def _clip_normalise(raw, neg_tol: float) -> np.ndarray:
    z = np.array(raw, dtype=float)
    if not np.isfinite(z).all():
        raise CertificationError("solver returned a non-finite matrix entry")
    if z.min(initial=0.0) < -neg_tol:
        raise CertificationError(f"solver returned a negative entry {z.min():g} beyond noise")
    z = np.clip(z, 0.0, None)
    s = z.sum(axis=1, keepdims=True)
    if (s <= 0).any():
        raise CertificationError("solver returned an all-zero mechanism row")
    return z / s


def geo_ind_closure(z: np.ndarray, metric: np.ndarray, epsilon: float, gamma: float = math.inf):
    """The smallest Z' ≥ Z with Z'[i,k] ≥ e^{−ε D_ij} Z'[j,k] for all i, j (D: neighbour-graph paths)."""
    d = np.asarray(metric, float)
    # edges d_ij ≤ γ, given as a *sparse* graph: a dense csgraph drops every entry within 1e-8 of
    # 0 (numpy.ma.masked_values), i.e. exactly the near-duplicate pairs; zero distances become
    # tiny edges. Shortest paths also make the closure right for a non-metric d (allow_nonmetric)
    i, j = np.nonzero(d <= gamma)
    off = i != j
    adj = csr_matrix((np.maximum(d[i[off], j[off]], 1e-300), (i[off], j[off])), shape=d.shape)
    paths = shortest_path(adj, method="auto", directed=False)
    out = np.empty_like(z)
    factor_rows = np.exp(-epsilon * paths)  # factor[i, j] = e^{−ε D_ij}
    K = z.shape[0]
    step = max(1, _CHUNK // (K * z.shape[1]))
    for start in range(0, K, step):
        rows = slice(start, min(K, start + step))
        out[rows] = (factor_rows[rows, :, None] * z[None, :, :]).max(axis=1)
    return np.maximum(out, z)
