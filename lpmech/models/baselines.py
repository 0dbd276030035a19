"""Closed-form baseline mechanisms, certified like every other mechanism of the package.

* :func:`exponential`: exponential mechanism on the Geo-Ind distance d (Qiu et al., LR-Geo §8.2 "ExpMech").
* :func:`planar_laplace`: planar Laplace noise snapped to the nearest location (Qiu et al., LR-Geo §8.2
  "Laplace"), with the *exact* probability of each grid cell (1-D Laplace on a line).
* :func:`geometric`: truncated geometric mechanism on a line.
* :func:`randomized_response`: generalised randomised response (GRR), ε-LDP.

Each returns a :class:`~lpmech.mechanism.Mechanism` whose certificate was computed against the
instance's metric and γ (LDP for GRR). All are exact, so a realised ε above ε·(1 + 1e-6) is a
:class:`~lpmech.errors.CertificationError`, never a silent result. Probabilities are formed in log
space; if the exact matrix has entries below the smallest normal float64 (about 1e-308), which
would break the ratio checks, an :class:`~lpmech.errors.InputError` asks for a smaller ε or domain.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import integrate, special

from ..errors import InputError
from ..instance import Instance
from ..mechanism import Mechanism, check_epsilon
from .common import certified_mechanism

__all__ = ["UnaryEncoding", "exponential", "geometric", "oue", "planar_laplace", "planar_laplace_sample",
           "randomized_response", "randomized_response_dprivate"]

_LOG_TINY = math.log(np.finfo(float).tiny)  # ≈ −708.4: below this a probability is not normal
_QUAD_EPSREL = 1e-12  # relative accuracy of each planar-Laplace region probability
_W_MAX = 700.0  # |log tan θ| beyond which the angular weight 1/(2 cosh w) is negligible


# ---------------------------------------------------------------------------------- mechanisms


def exponential(instance: Instance, epsilon: float) -> Mechanism:
    """Exponential mechanism z_ik ∝ exp(−ε d_ik / 2) on the instance's metric d.

    McSherry & Talwar (FOCS 2007) with the distance as score, i.e. the "ExpMech" baseline of
    Qiu et al., LR-Geo §8.2. The paper writes the cost c instead of d; we use d as decided in
    spec/seed002_lrgeo.md §9 item 11. It is ε-d-private whenever d satisfies the triangle
    inequality (any instance kind).
    """
    eps = check_epsilon(epsilon)
    logw = -0.5 * eps * np.asarray(instance.metric, float)
    return _finish(logw, instance, eps, "exponential",
                   hint="the exponential mechanism is ε-d-private only for a metric d")


def planar_laplace(instance: Instance, epsilon: float) -> Mechanism:
    """Planar Laplace noise added to the true location, snapped to the nearest location.

    Andrés et al., "Geo-indistinguishability", CCS 2013; the "Laplace" baseline of Qiu et al., LR-Geo §8.2
    (spec/seed002_lrgeo.md §9 item 12). The noise has density ε²/(2π) e^{−ε r}.

    * ``grid``: exact. The snapping regions are the grid's squares, the boundary cells extending
      to infinity (the same squares for the Euclidean and the Manhattan metric). Each region is cut
      at the true location into rectangles of one quadrant; the probability of such a rectangle is
      a 1-D integral over the angle of the radial Gamma(2, 1/ε) law, whose integrand is a sum of
      positive terms (no cancellation), so every cell keeps a relative accuracy of about 1e-12
      however far it is. Rectangles repeat at multiples of the cell size: only O(W·H) are
      integrated. Snapping post-processes an ε-Geo-Ind mechanism, so the matrix is ε-d-private.
    * ``line``: the 1-D analogue, Laplace noise (ε/2) e^{−ε|x|}, exact from its CDF.
    * ``points``: raises InputError: arbitrary points snap to Voronoi cells, which are not
      supported; build a grid, or use :func:`exponential`.
    * ``latlon``, ``graph``, ``matrix``: raise InputError (no plane to add noise in).
    """
    eps = check_epsilon(epsilon)
    if instance.kind == "grid":
        W, H = instance.shape
        e = eps * instance.cell  # ε in units of the cell size
        table = _RectangleTable(e)
        x_pieces, x_index = _interval_pieces(W)
        y_pieces, y_index = _interval_pieces(H)
        # logr[a, b]: log P(noise in x-piece a × y-piece b); the last piece of each is "none"
        logr = np.full((len(x_pieces) + 1, len(y_pieces) + 1), -np.inf)
        for a, px in enumerate(x_pieces):
            for b, py in enumerate(y_pieces):
                logr[a, b] = table.log_prob(px, py)
        logz = np.full((H, W, H, W), -np.inf)  # logz[true row, true col, cell row, cell col]
        for a in range(2):
            for b in range(2):
                part = logr[x_index[None, :, None, :, a], y_index[:, None, :, None, b]]
                logz = np.logaddexp(logz, part)
        logz = logz.reshape(instance.K, instance.K)  # row-major: index = row·W + col
    elif instance.kind == "line":
        pieces, index = _interval_pieces(instance.K)
        e = eps * instance.cell
        logp = np.array([_log_laplace_1d(lo, hi, e) for lo, hi in pieces] + [-np.inf])
        logz = np.logaddexp(logp[index[..., 0]], logp[index[..., 1]])
    elif instance.kind == "points":
        raise InputError(
            "planar_laplace computes exact snapping probabilities only on a grid (or a line): "
            "arbitrary points snap to Voronoi cells, which are not supported; build the instance "
            "with lpmech.instance.grid, or use baselines.exponential for these points")
    else:
        raise InputError(
            f"planar_laplace needs locations in a plane (a grid or line instance), but this is a "
            f"{instance.kind} instance; project the locations onto a grid, or use "
            "baselines.exponential")
    return _finish(logz, instance, eps, "planar_laplace",
                   hint="the exact snapped Laplace matrix should never fail; please report it")


def geometric(instance: Instance, epsilon: float) -> Mechanism:
    """Truncated geometric mechanism on a ``line`` instance, α = e^{−ε·cell}.

    Ghosh, Roughgarden & Sundararajan, "Universally utility-maximizing privacy mechanisms",
    STOC 2009: z_ik = (1−α)/(1+α) α^{|i−k|} for interior k, and the end columns collect the mass
    beyond them, z_ik = α^{|i−k|}/(1+α). It is ε-d-private with realised ε = ε (m ≥ 2).
    """
    eps = check_epsilon(epsilon)
    if instance.kind != "line":
        raise InputError(f"the geometric mechanism needs a line instance (lpmech.instance.line), "
                         f"got a {instance.kind} instance")
    m, e = instance.K, eps * instance.cell
    steps = np.abs(np.arange(m)[:, None] - np.arange(m)[None, :])
    logz = -e * steps + math.log(-math.expm1(-e)) - math.log1p(math.exp(-e))
    if m > 1:
        logz[:, [0, m - 1]] = -e * steps[:, [0, m - 1]] - math.log1p(math.exp(-e))
    else:
        logz[:] = 0.0
    return _finish(logz, instance, eps, "geometric",
                   hint="the truncated geometric matrix should never fail; please report it")


def randomized_response(instance_or_K, epsilon: float) -> Mechanism:
    """Generalised randomised response (GRR / k-RR) on K values, certified under ε-LDP.

    Kairouz, Oh & Viswanath (NeurIPS 2014); Wang et al. (USENIX Security 2017):
    z_ii = e^ε/(e^ε + K − 1), z_ik = 1/(e^ε + K − 1) for k ≠ i. Its realised ε-LDP is ε.
    Takes an :class:`Instance` or the number of values K.
    """
    eps = check_epsilon(epsilon)
    if isinstance(instance_or_K, Instance):
        instance, K = instance_or_K, instance_or_K.K
    elif isinstance(instance_or_K, int | np.integer) and not isinstance(instance_or_K, bool):
        instance, K = None, int(instance_or_K)
        if K < 1:
            raise InputError(f"randomized_response needs K ≥ 1 values, got {K}")
    else:
        raise InputError(f"randomized_response takes an Instance or an integer K, "
                         f"got {instance_or_K!r}")
    log_norm = eps + math.log1p((K - 1) * math.exp(-eps))  # log(e^ε + K − 1)
    logz = np.full((K, K), -log_norm)
    np.fill_diagonal(logz, eps - log_norm)
    return _finish(logz, instance, eps, "randomized_response", notion="ldp",
                   hint="GRR should never fail its LDP certificate; please report it")


# ------------------------------------------------------------------------------------- helpers


def _finish(logz: np.ndarray, instance: Instance | None, eps: float, name: str, *,
            notion: str = "geo-ind", hint: str) -> Mechanism:
    """Normalise log-weights per row, certify, and refuse a matrix that fails its certificate."""
    logz = logz - special.logsumexp(logz, axis=1, keepdims=True)
    low = float(logz.min())
    if low < _LOG_TINY:
        raise InputError(
            f"{name}: at epsilon = {eps:g} some probabilities are as small as e^{low:.0f}, which "
            "underflows float64 and would break the privacy certificate; use a smaller epsilon "
            "or a smaller domain")
    return certified_mechanism(np.exp(logz), instance, eps, name=name, notion=notion, hint=hint)


def _interval_pieces(n: int):
    """The 1-D snapping intervals of n cells (unit spacing), cut at the true location.

    Cell k of true location i covers offsets [k − i − ½, k − i + ½], the first cell from −∞ and
    the last up to +∞. Cut at 0 and reflected to x ≥ 0, it is one or two intervals [lo, hi] with
    0 ≤ lo < hi ≤ ∞. Returns the distinct intervals and an (n, n, 2) array of their indices per
    (i, k), where index len(pieces) means "no piece".
    """
    pieces: dict[tuple[float, float], int] = {}
    index = np.full((n, n, 2), -1, dtype=int)
    for i in range(n):
        for k in range(n):
            lo = -math.inf if k == 0 else k - i - 0.5
            hi = math.inf if k == n - 1 else k - i + 0.5
            if lo > 0:
                parts = [(lo, hi)]
            elif hi < 0:
                parts = [(-hi, -lo)]
            else:
                parts = [(0.0, -lo), (0.0, hi)]
            for slot, part in enumerate(parts):
                index[i, k, slot] = pieces.setdefault(part, len(pieces))
    index[index < 0] = len(pieces)
    return list(pieces), index


def _log_laplace_1d(lo: float, hi: float, e: float) -> float:
    """log P(lo ≤ X ≤ hi), 0 ≤ lo < hi ≤ ∞, for X with density (e/2) e^{−e|x|}."""
    return math.log(0.5) - e * lo + math.log(-math.expm1(-e * (hi - lo)))


class _RectangleTable:
    """log P(N ∈ [x1, x2] × [y1, y2]) for planar Laplace noise N with parameter e (unit cell).

    Only rectangles in the quadrant x, y ≥ 0 are asked for, 0 ≤ x1 < x2 ≤ ∞, 0 ≤ y1 < y2 ≤ ∞.
    In polar coordinates the angle θ is uniform and the radius is Gamma(2, 1/e); a ray at angle θ
    crosses the rectangle on [r_in(θ), r_out(θ)], so with a = e·r_in and t = e·(r_out − r_in)

        P = 1/(2π) ∫ e^{−a} (a·(1 − e^{−t}) + P(2, t)) dθ,

    P(2, ·) the regularised lower incomplete gamma function. Both terms are positive, so no
    digits are lost to cancellation. The angle is integrated as w = log tan θ (dθ = dw / (2 cosh w)):
    a long strip seen from afar is a sliver of angle next to 0 or π/2, whose structure lives on a
    log scale of the angle; in w it is smooth and of unit width. The range is cut at the corners'
    angles, where r_in or r_out has a kink. The factor e^{−e·|(x1, y1)|} (the nearest corner) is
    taken out, so far rectangles neither underflow nor lose relative accuracy. Results are cached
    and the x ↔ y mirror image is reused.
    """

    def __init__(self, e: float):
        self.e = e
        self.cache: dict[tuple, float] = {}

    def log_prob(self, xs: tuple[float, float], ys: tuple[float, float]) -> float:
        key = (xs, ys) if xs <= ys else (ys, xs)
        if key not in self.cache:
            self.cache[key] = self._integrate(*key[0], *key[1])
        return self.cache[key]

    def _integrate(self, x1: float, x2: float, y1: float, y2: float) -> float:
        e = self.e
        r_min = math.hypot(x1, y1)

        def integrand(w: float) -> float:
            if abs(w) > _W_MAX:  # the weight e^{−|w|} is below 1e-304 there
                return 0.0
            sec, csc = math.hypot(1.0, math.exp(w)), math.hypot(1.0, math.exp(-w))  # 1/cos, 1/sin
            r_in = max(x1 * sec if x1 else 0.0, y1 * csc if y1 else 0.0)
            r_out = min(x2 * sec, y2 * csc)
            if r_out <= r_in:
                return 0.0
            a, t = e * r_in, e * (r_out - r_in)
            radial = math.exp(e * r_min - a) * (-a * math.expm1(-t) + special.gammainc(2, t))
            return radial * math.exp(-abs(w)) / (1.0 + math.exp(-2.0 * abs(w)))  # / (2 cosh w)

        cuts = sorted({_log_slope(y1, x2), _log_slope(y1, x1), _log_slope(y2, x2),
                       _log_slope(y2, x1)})
        lo, hi = _log_slope(y1, x2), _log_slope(y2, x1)
        cuts = [c for c in cuts if lo <= c <= hi]
        total = 0.0
        for a, b in itertools.pairwise(cuts):
            if a < b:
                total += integrate.quad(integrand, a, b, epsabs=0.0, epsrel=_QUAD_EPSREL,
                                        limit=200)[0]
        return -e * r_min + math.log(total / (2 * math.pi))


def _log_slope(y: float, x: float) -> float:
    """log(y / x) for 0 ≤ x, y ≤ ∞ (the w = log tan θ of the point (x, y)); ±∞ at the axes."""
    if y == 0 or x == math.inf:
        return -math.inf if y < math.inf else 0.0
    if x == 0 or y == math.inf:
        return math.inf
    return math.log(y) - math.log(x)


# ------------------------------------------- Gu et al., LE baselines (LE comparisons, issue 5)
# RR is :func:`randomized_response` (denominator e^ε + m − 1, the corrected form of Gu et al., LE §VI)
# and EM with ε/2 is :func:`exponential`; below: RR certified under d-privacy, OUE, and planar
# Laplace sampled continuously on large grids.


def randomized_response_dprivate(instance: Instance, epsilon: float) -> Mechanism:
    """GRR at ε certified under ε-d-privacy on the instance's metric (Gu et al., LE §VI).

    An ε-LDP matrix is ε-d-private when every distance is ≥ 1 (after the seed's normalisation
    d ← d/d_min); its realised d-privacy ε is ε/d_min. A metric with d_min < 1 fails the
    certificate (CertificationError), as it should.
    """
    eps = check_epsilon(epsilon)
    z = randomized_response(instance.K, eps).matrix
    return certified_mechanism(z, instance, eps, name="randomized_response",
                               hint="GRR is ε-d-private only when every distance is >= 1 "
                                    "(normalise the metric by its smallest distance)")


class UnaryEncoding:
    """Optimised unary encoding (OUE; Wang et al., USENIX Security 2017), ε-LDP, m values.

    A user with value x sends m bits: bit x is 1 with probability p = 1/2, every other bit is 1
    with probability q = 1/(e^ε + 1). The server counts c_k = number of reports with bit k set and
    estimates ĉ_k = (c_k − n q)/(p − q). Its output is a bit vector, not a value, so it has no
    range-query error (Gu et al., LE §VI). ``certificate`` holds the realised LDP ε,
    ln[p(1−q) / ((1−p) q)] (the worst output differs from two inputs in their two bits).
    """

    def __init__(self, epsilon: float, m: int):
        self.epsilon = check_epsilon(epsilon)
        if int(m) != m or m < 1:
            raise InputError(f"OUE needs m >= 1 values, got {m}")
        self.m = int(m)
        self.p, self.q = 0.5, 1.0 / (math.exp(self.epsilon) + 1.0)
        real = math.log(self.p * (1 - self.q) / ((1 - self.p) * self.q))
        from ..mechanism import EPS_RTOL, PrivacyCertificate

        self.certificate = PrivacyCertificate(
            notion="ldp", realized_epsilon=real, target_epsilon=self.epsilon, gamma=math.inf,
            worst_violation=0.0, violation_ratio=0.0, violation_magnitude=0.0, n_constraints=0,
            satisfied=real <= self.epsilon * (1 + EPS_RTOL))

    def sample_counts(self, cstar, rng: np.random.Generator) -> np.ndarray:
        """Bit counts c_k of n = Σ c* users: Binomial(c*_k, p) + Binomial(n − c*_k, q)."""
        if not isinstance(rng, np.random.Generator):
            raise InputError("pass an explicit numpy.random.Generator")
        c = np.asarray(cstar, np.int64).ravel()
        if c.shape != (self.m,) or (c < 0).any():
            raise InputError(f"true counts must be {self.m} non-negative integers")
        return rng.binomial(c, self.p) + rng.binomial(c.sum() - c, self.q)

    def estimate(self, counts, n: float) -> np.ndarray:
        """ĉ_k = (c_k − n q)/(p − q) (unbiased)."""
        return (np.asarray(counts, float) - n * self.q) / (self.p - self.q)

    def mse(self, n: float) -> float:
        """Total MSE Σ_k Var(ĉ_k) = n m q(1−q)/(p−q)² + n(1−p−q)/(p−q) (Gu et al., LE (22) with a=p, b=q)."""
        p, q = self.p, self.q
        return n * self.m * q * (1 - q) / (p - q) ** 2 + n * (1 - p - q) / (p - q)


def oue(epsilon: float, m: int) -> UnaryEncoding:
    """OUE on m values at ε; see :class:`UnaryEncoding`."""
    return UnaryEncoding(epsilon, m)


def planar_laplace_sample(rows, cols, W: int, H: int, epsilon: float,
                          rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Planar Laplace (Andrés et al. 2013) on a W×H grid of unit cells, sampled continuously.

    Each true cell centre (row, col) gets noise of radius Gamma(2, 1/ε) at a uniform angle and is
    snapped to the nearest cell, clamped to the grid (the mass beyond the border lands on the
    border cells, as in :func:`planar_laplace`; Gu et al., LE spec §6.2 item 7, no discretisation
    correction). It is ε-Geo-Ind (post-processing); use it where the exact matrix of
    :func:`planar_laplace` is too large. Returns the reported (rows, cols).
    """
    eps = check_epsilon(epsilon)
    if not isinstance(rng, np.random.Generator):
        raise InputError("pass an explicit numpy.random.Generator")
    r0 = np.asarray(rows, float)
    c0 = np.asarray(cols, float)
    radius = rng.gamma(2.0, 1.0 / eps, size=r0.shape)
    theta = rng.uniform(0.0, 2 * math.pi, size=r0.shape)
    r = np.clip(np.rint(r0 + radius * np.sin(theta)), 0, H - 1).astype(np.int64)
    c = np.clip(np.rint(c0 + radius * np.cos(theta)), 0, W - 1).astype(np.int64)
    return r, c
