"""LE: the linear-equations mechanism for local d-privacy (Gu et al., LE §IV, eqs. (8)–(14)).

Seed 000 (Gu, Li, Cao, Xiong, CNS 2019) makes every privacy row of the design problem (8) tight
against the diagonal of its column, p_jk = e^{−ε d_jk} p_kk (9); the row sums then give

    E p = 1,   E = [e^{−ε d_jk}]  (10),     P = E · diag(p).

* :func:`le` builds P for any metric when the precondition of Prop. 1, p = E⁻¹1 ≥ 0, holds, and
  certifies it (realised ε by :func:`lpmech.mechanism.realized_epsilon`). When it fails it raises
  :class:`~lpmech.errors.InfeasibleError` naming the smallest ε at which it holds (bisection,
  :func:`feasibility_threshold`). In 1-D (|i−j|) and on a Manhattan grid it holds for every ε; on
  a Euclidean grid only above ε* (≈ 0.6654 per cell on large grids, spec §2.4).
* :func:`build_pyomo` / :func:`build_lp`: the design problem (8) with the co-location objective
  (12) (r = 0) or any range radius r and prior weights w: minimise Error_range (6)
  = Σ_i w_i Σ_k 1[d_ik > r] p_ik, with the well-scaled rows e^{−ε d_ij} p_ik − p_jk ≤ 0. It is the
  OMG LP of Qiu et al., LR-Geo with the range loss, so both builders reuse :mod:`lpmech.models.omg`.
* :func:`kkt` verifies Theorem 1 with the multipliers (14) (λ = E⁻¹w, μ_ij^(i) = λ_j e^{−ε d_ij})
  and reports stationarity, primal/dual feasibility and complementary slackness residuals; the
  Lagrangian bound of those multipliers certifies LE's optimality. For a weighted objective
  (non-uniform prior w) LE is optimal when E⁻¹w ≥ 0 (the LP-dual test of spec §2.6; sufficient,
  not necessary).
* :func:`solve` returns a certified :class:`~lpmech.solvers.result.Result`: LE with its KKT bound
  when the test passes, else the LP optimum (warm-started from LE when LE is feasible) and the gap
  of LE to it.
* :class:`GridLE`: the scale path for a W×H grid (Euclidean or Manhattan metric in cells), never
  forming an m×m matrix. E is block-Toeplitz: Euclidean solves use preconditioned conjugate
  gradients (E is symmetric positive definite: e^{−ε‖x‖} is a positive-definite kernel) with
  FFT products on a torus of (H + R)×(W + R), R the kernel's 1e-16 cut-off radius;
  Manhattan uses E = E_H ⊗ E_W whose factors have tridiagonal inverses (exact, O(m)).

Objective units: :func:`solve` reports the weighted co-location error 1 − Σ_k w_k p_kk (w the
instance's prior, so uniform w gives the paper's Error_range at r = 0); :func:`kkt` works in the
paper's units f(p) = −Σ_k w_k p_kk with w = 1 for (12).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
import warnings

import numpy as np
import scipy.fft as sfft
import scipy.linalg as sla

from ...certificate import OptimalityCertificate
from ...errors import (
    CertificationError,
    InfeasibleError,
    InputError,
    IterationLimitError,
    NotOptimalError,
    SolverError,
    TimeLimitError,
)
from ...instance import Instance
from ...mechanism import Mechanism, PrivacyCertificate, check_epsilon
from ...progress import Progress
from ...solvers.result import STOPS, Result, check_time_limit
from .. import omg
from ..common import certified_mechanism, reserve_certification, verbose_entry

log = logging.getLogger(__name__)

_MAX_EXPONENT = 700.0  # ε·d beyond this underflows e^{−ε d} (dense path refuses it)
#: smallest ε·d LE accepts at the scale of the metric: on a dense instance ε·d_max (below it every
#: e^{−ε d} is within 1e-6 of 1 and E is numerically the all-ones matrix; near-duplicate pairs
#: alone, with d_max large, are left to the singular-E and undecided-sign checks, which fall back
#: to the LP), on the grid scale path ε per cell (neighbouring cells resolved). A 200×200
#: Manhattan grid at ε = 1e-8 gave ‖Ep − 1‖∞ = 2e-6 and p of the wrong sign before this check
MIN_EPS_D = 1e-6
#: LE (any path) is reported only when ‖E p − 1‖∞ ≤ this: the row sums of P = E·diag(p) are 1
#: to this tolerance (above it the mechanism is not row-stochastic and nothing is certified)
RESIDUAL_TOL = 1e-9
P_TOL = 1e-12  # p_kk ≥ −P_TOL counts as non-negative (round-off of the solve)
LAMBDA_TOL = 1e-10  # λ = E⁻¹w ≥ −LAMBDA_TOL·max|λ| passes the LP-dual test
#: methods for the LP (8): the design engine's (full, outputs, decomposition) and support
#: generation (:mod:`lpmech.models.le.le_support`); "auto": the full LP up to FULL_LP_MAX cells,
#: else support generation
LP_METHODS = ("auto", "full", "support", "outputs", "decomposition")
#: support generation stops once its mechanism is within this relative gap of its bound: half the
#: certificate's 1e-6 (:func:`lpmech.design.problem.certified_result`), which then decides. Its
#: last core may then be a partial one, repaired (:func:`lpmech.models.le.le_support._repair`):
#: on Gowalla 32×32 at ε = 1 the repaired mechanism was 4.2e-7 off (relative) in 5 s, where the
#: core solved again to its last row (1e-9) took 196 s
SUPPORT_TOL = 5e-7
FULL_LP_MAX = 64
#: the Euclidean grid's conjugate gradients multiply by E with the kernel e^{−ε|n|} cut at the
#: smallest radius R whose dropped entries (offsets within the grid) sum to at most this: an
#: ∞-norm bound on the dropped part of E, below the FFT product's own round-off. The FFT torus is
#: then (H + R)×(W + R) instead of (2H − 1)×(2W − 1): 3.4x fewer points at ε = 1 (R = 43) on
#: 1000×1000. The residual ‖E p − 1‖∞ is measured with every entry
TRUNCATION_TOL = 1e-16
#: relative residual of the Hutchinson probes' solves in :meth:`GridLE.mse_theory`: a probe's value
#: ‖s ⊙ E⁻¹z‖² is then off by ≲ 2·κ(E)·(max s / min s)·1e-8 relative (≈ 1e-6 at ε = 1; the
#: benchmark measures 1e-9 against 1e-12 solves), far below the estimate's own standard error
#: (≈ 2e-4 relative with 16 probes on 1000×1000)
PROBE_RTOL = 1e-8


# ------------------------------------------------------------------------------ the mechanism


def check_le_epsilon(epsilon, distances, *, flag: str = "epsilon", scale: str | None = None) -> float:
    """ε checked against the metric's scale for LE, before any solve: ε·d_max ≤ 700 (beyond it
    e^{−ε d} underflows and E loses entries) and ε·d_max ≥ :data:`MIN_EPS_D` (below it E is the
    all-ones matrix to 6 digits: p = E⁻¹1 is not resolved). ``distances``: the metric, or its
    positive distances' extremes. ``scale`` (the grid path): check the lower limit on this
    distance instead of d_max. An :class:`InputError` names the usable range."""
    eps = check_epsilon(epsilon)
    d = np.asarray(distances, float)
    d = d[d > 0]
    if d.size == 0:
        return eps
    d_max = float(d.max())
    d_low = d_max if scale is None else float(scale)
    lo, hi = MIN_EPS_D / d_low, _MAX_EXPONENT / d_max
    which = "d_max" if scale is None else "d_cell"
    usable = f"the usable range for this metric is {lo:.4g} <= {flag} <= {hi:.4g}"
    if eps * d_max > _MAX_EXPONENT:
        raise InputError(f"{flag} {eps:g} is too large for this metric: epsilon·d_max = "
                         f"{eps * d_max:.4g} > {_MAX_EXPONENT:g}, so e^(-epsilon·d) underflows double "
                         f"precision and LE's E loses its entries; {usable} (or rescale the distances)")
    if eps * d_low < MIN_EPS_D:
        raise InputError(f"{flag} {eps:g} is too small for this metric: epsilon·{which} = "
                         f"{eps * d_low:.4g} < {MIN_EPS_D:g}, so every e^(-epsilon·d) is within "
                         f"{MIN_EPS_D:g} of 1 and E = exp(-epsilon·d) is numerically the all-ones "
                         f"matrix (LE is not resolved in double precision); {usable} (or rescale the "
                         "distances)")
    return eps


def kernel(metric, epsilon: float) -> np.ndarray:
    """E = [e^{−ε d_jk}] of (10) (ε checked by :func:`check_le_epsilon`)."""
    d = np.asarray(metric, float)
    eps = check_le_epsilon(epsilon, d)
    return np.exp(-eps * d)


def _sym_solve(E: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve E x = b for symmetric E: Cholesky when E is positive definite, else LU."""
    try:
        return sla.cho_solve(sla.cho_factor(E, check_finite=False), b, check_finite=False)
    except sla.LinAlgError:
        pass
    try:
        with warnings.catch_warnings():  # an ill-conditioned E: the residual below decides
            warnings.simplefilter("ignore", sla.LinAlgWarning)
            x = sla.solve(E, b, assume_a="sym", check_finite=False)
    except sla.LinAlgError:
        raise InputError("E = exp(-epsilon·d) is singular (two locations at distance 0?); LE needs "
                         "E invertible (Theorem 1); merge duplicate locations") from None
    res = np.abs(E @ x - b).max() / max(np.abs(b).max(), 1e-300)
    if not np.isfinite(x).all() or res > 1e-6:
        raise SolverError(f"E = exp(-epsilon·d) is numerically singular (relative residual {res:.1e}); "
                          "LE is not defined here, use solve(..., path='lp') or the exponential "
                          "mechanism")
    return x


def _resolved_diagonal(E: np.ndarray) -> np.ndarray:
    """p = E⁻¹1, and a :class:`SolverError` when its negative entries are within the round-off
    E's conditioning allows: ‖δp‖∞ ≲ m·u·κ₁(E)·‖p‖∞ (κ₁ from LAPACK's estimate after Cholesky).
    Then the sign that decides Prop. 1 is not known, and "infeasible" would be a guess (a 20×20
    Manhattan grid, where LE is feasible for every ε, came out "infeasible" at ε = 1e-4)."""
    m = E.shape[0]
    p = _sym_solve(E, np.ones(m))
    if p.min() >= -P_TOL:
        return p
    anorm = float(np.abs(E).sum(axis=0).max())
    try:
        c, lower = sla.cho_factor(E, check_finite=False)
        rcond, info = sla.lapack.dpocon(c, anorm, uplo="L" if lower else "U")
    except sla.LinAlgError:  # not (numerically) positive definite: LAPACK's LU estimate
        lu, _piv, info = sla.lapack.dgetrf(E)
        rcond, info2 = sla.lapack.dgecon(lu, anorm, norm="1") if info == 0 else (0.0, 0)
        info = info2
    err = m * np.finfo(float).eps * float(np.abs(p).max()) / rcond if rcond > 0 else math.inf
    if info == 0 and -p.min() <= err:
        raise SolverError(f"LE's feasibility is not decided at this epsilon: min(E^-1 1) = "
                          f"{p.min():.3g} is within the round-off {err:.2g} of E = exp(-epsilon·d) "
                          f"(condition number {1 / rcond if rcond > 0 else math.inf:.2g}); use a "
                          "larger epsilon")
    return p


def le_diagonal(metric, epsilon: float) -> np.ndarray:
    """p = E⁻¹1 of (10): the diagonal of LE (may have negative entries: Prop. 1 fails)."""
    E = kernel(metric, epsilon)
    return _sym_solve(E, np.ones(E.shape[0]))


def feasibility_threshold(min_p, epsilon: float, *, rtol: float = 1e-6, eps_max: float = 1e4,
                          known: float | None = None, guess: float | None = None) -> float:
    """The smallest ε' ≥ ``epsilon`` at which min(E⁻¹1) ≥ 0, by doubling then bisection.

    ``min_p(ε)`` returns min_k (E⁻¹1)_k; ``known`` is min_p(``epsilon``) when the caller has it
    (no solve is repeated). ``guess``: a nearby threshold (e.g. of a smaller grid): the bracket
    then starts at ``guess``·(1 ± 1e-5) and grows 8-fold from there, so that a bisection
    starting at a tiny ε does not pay a doubling per factor 2 (each a solve). Assumes (as checked
    on grids, spec §2.4) that the infeasible ε form one interval below the threshold; the answer
    is exact to ``rtol``.
    """
    epsilon = float(epsilon)
    first = min_p(epsilon) if known is None else known
    if first >= -P_TOL:
        return epsilon
    lo, hi = epsilon, epsilon
    if guess is not None and guess > epsilon:
        lo, hi = _bracket(min_p, epsilon, guess, eps_max)
    else:
        while True:
            lo, hi = hi, 2 * hi
            if hi > eps_max:
                raise InfeasibleError(f"E^-1 1 stays negative up to epsilon = {eps_max:g}; LE does "
                                      "not exist for this metric (use solve(..., path='lp'))")
            if min_p(hi) >= -P_TOL:
                break
    while hi - lo > rtol * hi:
        mid = 0.5 * (lo + hi)
        if min_p(mid) < -P_TOL:
            lo = mid
        else:
            hi = mid
    return hi


def _bracket(min_p, epsilon: float, guess: float, eps_max: float) -> tuple[float, float]:
    """``(lo, hi)``: an infeasible ``lo`` ≥ ``epsilon`` and a feasible ``hi`` around ``guess``,
    from the relative half-width 1e-5 growing 8-fold (few solves when the guess is close)."""
    delta, lo, hi = 1e-5, epsilon, None
    up = guess * (1 + delta)
    while True:  # a feasible upper end
        if up > eps_max:
            raise InfeasibleError(f"E^-1 1 stays negative up to epsilon = {eps_max:g}; LE does not "
                                  "exist for this metric (use solve(..., path='lp'))")
        if min_p(up) >= -P_TOL:
            hi = up
            break
        lo, delta = up, delta * 8
        up = guess * (1 + delta)
    if lo == epsilon:  # an infeasible lower end, walking down from the guess
        delta = 1e-5
        while True:
            down = guess * (1 - delta)
            if down <= epsilon:
                break
            if min_p(down) < -P_TOL:
                lo = down
                break
            hi, delta = down, delta * 8
    return lo, hi


def _infeasible_message(p: np.ndarray, eps: float, threshold: float, where=None) -> str:
    bad = np.flatnonzero(p < -P_TOL)
    k = int(np.argmin(p))
    at = f"{k}" if where is None else where(k)
    return (f"LE is infeasible at epsilon = {eps:g}: E^-1 1 has {bad.size} negative entries "
            f"(min {p[k]:.4g} at location {at}), so Prop. 1's precondition fails; "
            + (f"it holds for epsilon >= {threshold:.6g} (bisection). " if math.isfinite(threshold)
               else "no threshold was found (E turns singular at larger epsilon). ")
            + "Use a larger epsilon, the LP (8) (small domains: "
            "'lpmech le --lp', or lpmech.models.le.solve(..., path='lp')), or the exponential "
            "mechanism")


def _where(instance: Instance):
    """Names a location by (row, col) on a grid instance, else by its index."""
    if instance.kind == "grid" and instance.shape is not None:
        W = instance.shape[0]
        return lambda k: f"{k} (row {k // W}, col {k % W})"
    return None


def _check_instance(instance: Instance) -> None:
    if not isinstance(instance, Instance):
        raise InputError(f"expected an lpmech Instance, got {type(instance).__name__}")
    if math.isfinite(instance.gamma):
        raise InputError(f"LE is defined for local d-privacy (gamma = inf), but the instance has "
                         f"gamma = {instance.gamma:g}; rebuild it without --gamma")


def le(instance: Instance, epsilon: float) -> Mechanism:
    """The LE mechanism P = E·diag(E⁻¹1) (9)–(10), certified under ε-d-privacy (Prop. 1).

    Gu, Li, Cao & Xiong, "Supporting both Range Queries and Frequency Estimation with Local
    Differential Privacy", CNS 2019, §IV.

    Parameters
    ----------
    instance : Instance
        Points and metric d (γ must be infinite; the prior is not used).
    epsilon : float
        Privacy budget ε (per unit of the metric).

    Returns
    -------
    Mechanism
        P = E·diag(p) with E = [e^{−ε d_jk}] and p = E⁻¹1, with its privacy certificate (realised
        ε by :func:`lpmech.mechanism.realized_epsilon`).

    Raises
    ------
    InputError
        ε ≤ 0, an ε·d that over- or underflows, or a finite γ.
    InfeasibleError
        E⁻¹1 has negative entries (Prop. 1's precondition fails); the message names the smallest
        feasible ε (bisection, :func:`feasibility_threshold`).
    SolverError
        LE's feasibility is not decided at this ε (min(E⁻¹1) within E's round-off).

    Notes
    -----
    In 1-D (|i−j|) and on a Manhattan grid p = E⁻¹1 ≥ 0 for every ε; on a Euclidean grid only
    above ε* (≈ 0.6654 per cell on large grids, spec §2.4).

    Examples
    --------
    >>> from lpmech import instance as li
    >>> from lpmech.errors import InfeasibleError
    >>> from lpmech.models import le
    >>> mech = le.le(li.grid(4, 4), 1.0)
    >>> print(mech.matrix.shape, f"{mech.certificate.realized_epsilon:.4f}")
    (16, 16) 1.0000
    >>> try:
    ...     le.le(li.grid(4, 4), 0.5)
    ... except InfeasibleError as exc:
    ...     print(str(exc)[:60])
    LE is infeasible at epsilon = 0.5: E^-1 1 has 4 negative ent
    """
    _check_instance(instance)
    eps = check_epsilon(epsilon)
    p = _resolved_diagonal(kernel(instance.metric, eps))
    if p.min() < -P_TOL:
        thr = feasibility_threshold(
            lambda e: _resolved_diagonal(kernel(instance.metric, e)).min(), eps,
            known=float(p.min()))
        raise InfeasibleError(_infeasible_message(p, eps, thr, _where(instance)))
    P = kernel(instance.metric, eps) * np.clip(p, 0.0, None)[None, :]
    return certified_mechanism(P, instance, eps, name="LE",
                               hint="LE satisfies d-privacy for a metric with E^-1 1 >= 0 (Prop. 1)")


# --------------------------------------------------------------------------------------- the LP


def range_loss(metric, r: float = 0.0) -> np.ndarray:
    """Loss 1[d_ik > r]: its expected value under a prior is Error_range (6); r = 0 is (12)."""
    if not (isinstance(r, int | float) and math.isfinite(r) and r >= 0):
        raise InputError(f"range radius r must be a finite number >= 0, got {r!r}")
    d = np.asarray(metric, float)
    return (d > r * (1 + 1e-12) + 1e-12).astype(float)


def has_coincident_points(metric) -> bool:
    """Whether two points are at distance 0 for the loss 1[d > 0] of :func:`range_loss` (d ≤
    1e-12): reporting one's twin then counts as correct, so LP (8)'s co-location form
    1 − Σ_k w_k z_kk (support generation's) is not its objective."""
    off = ~np.eye(np.shape(metric)[0], dtype=bool)
    return bool((range_loss(metric)[off] == 0).any())


def _lp_instance(instance: Instance, r: float, weights) -> Instance:
    _check_instance(instance)
    inst = instance.with_loss(range_loss(instance.metric, r))
    return inst if weights is None else inst.with_prior(weights)


def build_lp(instance: Instance, epsilon: float, *, r: float = 0.0, weights=None,
             reduce: bool = True) -> omg.LPData:
    """LP (8) minimising Error_range (6) at radius r (r = 0: objective (12)), as sparse arrays.

    Rows e^{−ε d_ij} p_ik − p_jk ≤ 0 (i ≠ j, all k) and Σ_k p_ik = 1; variable p_ik is column
    i·m + k; the objective is Σ_i w_i Σ_k 1[d_ik > r] p_ik with w = ``weights`` or the prior.
    ``reduce`` leaves out the rows implied by two shorter pairs (:func:`lpmech.models.omg.implied_pairs`;
    same optimum, the certificate checks every row); ``reduce=False`` is (8) with all m²(m−1) rows.
    """
    return omg.build_lp(_lp_instance(instance, r, weights), epsilon, reduce=reduce)


def build_pyomo(instance: Instance, epsilon: float, *, r: float = 0.0, weights=None,
                reduce: bool = True):
    """LP (8) with the Error_range objective as a declarative Pyomo model (see :func:`build_lp`).

    Components: ``z[i, k]`` (= p_ik) in [0, 1], ``geo_ind[i, j, k]`` (the well-scaled rows (4)),
    ``unit[i]`` (h_k of (8)) and the objective ``cost``. Extend it, then :func:`solve_pyomo_model`.
    """
    model = omg.build_pyomo(_lp_instance(instance, r, weights), epsilon, reduce=reduce)
    model.name = "LE-LP(8)"
    return model


def solve_pyomo_model(model, *, time_limit: float | None = None, tee: bool = False) -> Result:
    """Solve a model from :func:`build_pyomo` (appsi HiGHS) into a certified Result."""
    if getattr(model, "_lpmech", None) is None:
        raise InputError("solve_pyomo_model() needs a model made by lpmech.models.le.build_pyomo")
    return omg.solve_model(model, time_limit=time_limit, tee=tee, name="LP(8)")


# ---------------------------------------------------------------------------------------- KKT


@dataclasses.dataclass(frozen=True)
class KKTReport:
    """Residuals of the KKT conditions of Theorem 1 at LE with the multipliers (14).

    Units are those of the paper: f(p) = −Σ_k w_k p_kk (w = 1: eq. (12)). Privacy rows are measured
    in the well-scaled form e^{−ε d_ij} p_ik − p_jk (dimensionless, ≤ 0 when feasible).

    Attributes:
        stationarity: max |∂ℒ/∂p_st| (App. A).
        primal_privacy: max(0, max_{i,j,k} e^{−ε d_ij} p_ik − p_jk).
        primal_rowsum: max |Σ_k p_ik − 1|.
        box: max violation of 0 ≤ p ≤ 1.
        dual: max(0, −min μ): how negative the multipliers are (0: dual feasible).
        complementary_slackness: max |μ_ij^(i) g_ij^(i)(p)|.
        lam: λ = E⁻¹w (the equality multipliers); LE is optimal for w when λ ≥ 0.
        objective: f at LE; bound: the Lagrangian lower bound of (λ, max(μ, 0)), valid always.
    """

    stationarity: float
    primal_privacy: float
    primal_rowsum: float
    box: float
    dual: float
    complementary_slackness: float
    lam: np.ndarray = dataclasses.field(repr=False)
    objective: float = math.nan
    bound: float = math.nan

    @property
    def max_residual(self) -> float:
        return max(self.stationarity, self.primal_privacy, self.primal_rowsum, self.box, self.dual,
                   self.complementary_slackness)

    def holds(self, tol: float = 1e-9) -> bool:
        return self.max_residual <= tol

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "lam"}
        out["max_residual"] = self.max_residual
        out["min_lambda"] = float(self.lam.min())
        return out


def kkt(instance_or_metric, epsilon: float, weights=None) -> KKTReport:
    """Check Theorem 1 (App. A, (23)) at LE for the objective −Σ_k w_k p_kk (w = 1 by default).

    Gu, Li, Cao & Xiong, "Supporting both Range Queries and Frequency Estimation with Local
    Differential Privacy", CNS 2019, Theorem 1 and App. A.

    Parameters
    ----------
    instance_or_metric : Instance or array_like
        An instance, or its m×m metric d.
    epsilon : float
        Privacy budget ε.
    weights : array_like, optional
        The objective's weights w (m finite non-negative numbers); ``None`` is w = 1, eq. (12).

    Returns
    -------
    KKTReport
        Stationarity, primal/dual feasibility and complementary slackness residuals, λ, LE's
        objective f and the Lagrangian bound of the multipliers (valid always); ``holds(tol)``
        says whether every residual is within ``tol``.

    Raises
    ------
    InputError
        ε ≤ 0, or weights of the wrong shape, non-finite or negative.

    Notes
    -----
    The primal point is P = E·diag(E⁻¹1) even when that is infeasible (residuals then show it); the
    multipliers are (14) with λ = E⁻¹w, μ_ij^(i) = λ_j e^{−ε d_ij}, the generalisation of spec §2.6
    (w = 1 gives λ = p). Units are the paper's: f(p) = −Σ_k w_k p_kk.

    Examples
    --------
    >>> from lpmech import instance as li
    >>> from lpmech.models import le
    >>> report = le.kkt(li.grid(4, 4), 1.0)
    >>> print(report.holds(), f"{report.objective:.4f}", f"{report.bound:.4f}")
    True -5.0026 -5.0026
    """
    metric = instance_or_metric.metric if isinstance(instance_or_metric, Instance) else \
        np.asarray(instance_or_metric, float)
    eps = check_epsilon(epsilon)
    m = metric.shape[0]
    w = np.ones(m) if weights is None else np.asarray(weights, float)
    if w.shape != (m,) or not np.isfinite(w).all() or (w < 0).any():
        raise InputError(f"KKT weights must be {m} finite non-negative numbers")
    E = kernel(metric, eps)
    up = np.exp(eps * metric)  # e^{ε d_ij} (finite: ε·d ≤ 700 checked by kernel)
    sol = _sym_solve(E, np.column_stack([np.ones(m), w]))
    p, lam = sol[:, 0], sol[:, 1]
    P = E * p[None, :]
    MU = lam[None, :] * E  # MU[i, j] = μ_ij^(i) = λ_j e^{−ε d_ij}, i ≠ j
    np.fill_diagonal(MU, 0.0)
    MUc = np.clip(MU, 0.0, None)

    def gradient(mu):
        G = lam[:, None] - mu.T * up  # ∂ℒ/∂p_st = λ_s − μ_ts^(t) e^{ε d_ts}, s ≠ t
        np.fill_diagonal(G, -w + lam + mu.sum(axis=1))  # ∂ℒ/∂p_tt = −w_t + λ_t + Σ_j μ_tj^(t)
        return G

    G = gradient(MU)
    priv = -np.inf
    for k in range(m):  # e^{−ε d_ij} p_ik − p_jk over all (i, j), column k
        col = P[:, k]
        v = E * col[:, None] - col[None, :]
        np.fill_diagonal(v, -np.inf)
        priv = max(priv, float(v.max(initial=-np.inf)))
    g_diag = np.diag(P)[:, None] - up * P.T  # g_ij^(i) = p_ii − e^{ε d_ij} p_ji
    np.fill_diagonal(g_diag, 0.0)
    # Lagrangian bound: min over the box of ℒ(p, λ, μ⁺) = −Σλ + Σ min(0, ∂ℒ/∂p) (ℒ is linear in p)
    bound = float(-lam.sum() + np.minimum(gradient(MUc), 0.0).sum())
    return KKTReport(
        stationarity=float(np.abs(G).max()),
        primal_privacy=max(0.0, priv),
        primal_rowsum=float(np.abs(P.sum(axis=1) - 1).max()),
        box=float(max(0.0, -P.min(), P.max() - 1)),
        dual=float(max(0.0, -MU.min())),
        complementary_slackness=float(np.abs(MU * g_diag).max()),
        lam=lam, objective=float(-(w * p).sum()), bound=bound)


# -------------------------------------------------------------------------------------- solve


@verbose_entry
def solve(instance: Instance, epsilon: float, *, path: str = "auto", lp_path: str = "fast",
          time_limit: float | None = None, max_lp_size: int = 144, fallback_lp: bool = True,
          lp_method: str = "auto", workers: int | None = None, verbose: bool = False) -> Result:
    """The co-location-optimal d-private mechanism for the instance's prior, certified.

    LE is the mechanism of Gu, Li, Cao & Xiong, "Supporting both Range Queries and Frequency
    Estimation with Local Differential Privacy", CNS 2019, eqs. (9)–(10); the LP it solves when LE
    is not optimal is the design problem (8) with the co-location objective (12).

    Parameters
    ----------
    instance : Instance
        Points, metric d and prior w (γ must be infinite: LE is defined for local d-privacy).
    epsilon : float
        Privacy budget ε (per unit of the metric).
    path : {"auto", "closed", "lp"}
        * ``"auto"``: LE when E⁻¹1 ≥ 0 and the LP-dual test E⁻¹w ≥ 0 passes (w = the prior; always
          true for a uniform prior by Theorem 1), with the KKT multipliers' Lagrangian bound; else
          the LP (8) (if m ≤ ``max_lp_size``, else LE with status ``feasible``, or the
          InfeasibleError), warm-started from LE when LE is feasible. LE is also left for the LP
          when E is (numerically) singular or LE's matrix misses its certificate by round-off
          (near-duplicate points; ``stats["le_undefined"]`` or ``stats["le_certification_failed"]``
          say why); beyond the LP's reach these raise.
        * ``"closed"``: LE only (InfeasibleError when E⁻¹1 has negative entries).
        * ``"lp"``: the LP only.
    lp_path : {"fast", "pyomo"}
        ``"fast"`` uses the design engine's sparse paths; ``"pyomo"`` solves the declarative model
        of :func:`build_pyomo` instead.
    time_limit : float, optional
        Seconds for the LP.
    max_lp_size : int
        The largest m for which ``path="auto"`` falls back to the LP (default 144).
    fallback_lp : bool
        With ``fallback_lp=False`` an infeasible LE raises InfeasibleError instead of solving the
        LP (the CLI without ``--lp``).
    lp_method : {"auto", "full", "support", "outputs", "decomposition"}
        Method of the design engine for the LP: ``"auto"`` is the full LP up to
        m = ``FULL_LP_MAX`` cells, else support generation (:mod:`lpmech.models.le.le_support`: the
        dual on real data is sparse, and where it is wide (large ε) support generation still beats
        output generation, ``benchmarks/le_gap_real.py``); a full LP that ends unproved or
        uncertifiable is solved again by support generation, ``stats["full_lp_failed"]``;
        coincident points go to output generation. ``"support"`` takes distinct points only.
        LE's columns (when LE is feasible) start the decomposition.
    workers : int, optional
        Pricing processes of ``lp_method="decomposition"``.
    verbose : bool
        Show the solver's log.

    Returns
    -------
    Result
        The objective is the weighted co-location error 1 − Σ_k w_k p_kk. ``status`` is
        ``"optimal"`` when LE passes the dual test (LE is then the LP optimum, Theorem 1) or the LP
        ran; ``"feasible"`` when LE is returned although the dual test fails (a non-uniform prior
        with ``path="closed"`` or m > ``max_lp_size``): LE is certified d-private but not proved
        optimal. Its bound is then the best of two valid bounds (:func:`closed_form_bound`): the
        Lagrangian bound of the KKT multipliers for the prior, and a knapsack bound from Theorem 1
        (Σ_k p_kk ≤ S* for every feasible mechanism, S* the uniform optimum, and 0 ≤ p_kk ≤ 1),
        both clipped at 0. ``stats`` carries ``le_feasible``, ``le_objective``, ``le_gap`` (LE − LP
        optimum, when the LP ran) and ``epsilon_threshold`` (when LE is infeasible).

    Raises
    ------
    InputError
        Bad input: ε ≤ 0, a finite γ, an unknown ``path``, ``lp_path`` or ``lp_method``.
    InfeasibleError
        LE is infeasible (E⁻¹1 has negative entries) and no LP is to be solved (``path="closed"``,
        ``fallback_lp=False`` or m > ``max_lp_size``); the message names the smallest feasible ε.
    SolverError, CertificationError
        E is numerically singular, or LE's matrix misses its certificate, beyond the LP's reach.
    TimeLimitError, IterationLimitError
        The LP stopped before a certified optimum (``exc.result`` holds the best certified one).

    Notes
    -----
    LE makes every privacy row of (8) tight against the diagonal of its column,
    p_jk = e^{−ε d_jk} p_kk (9); the row sums then give::

        E p = 1,   E = [e^{−ε d_jk}]  (10),     P = E · diag(p),

    a mechanism when p = E⁻¹1 ≥ 0 (Prop. 1). The LP (8)+(12) is solved by the design engine
    (:func:`lpmech.design.solve` with the d-privacy notion :class:`lpmech.design.DPrivacy` and the
    loss 1[d_ik > 0]), rows in the well-scaled form e^{−ε d_ij} p_ik − p_jk ≤ 0.

    References
    ----------
    X. Gu, M. Li, Y. Cao, L. Xiong, "Supporting both Range Queries and Frequency Estimation with
    Local Differential Privacy", IEEE CNS 2019, §IV–V.

    Examples
    --------
    On a 4×4 Euclidean grid with a uniform prior, LE exists at ε = 1 and is optimal (Theorem 1);
    at ε = 0.5 it is infeasible and the LP (8) runs instead:

    >>> from lpmech import instance as li
    >>> from lpmech.models import le
    >>> inst = li.grid(4, 4)
    >>> res = le.solve(inst, 1.0)
    >>> print(res.status, res.stats["path"], f"{res.objective:.4f}", res.gap < 1e-9)
    optimal closed 0.6873 True
    >>> res = le.solve(inst, 0.5)
    >>> print(res.status, res.stats["le_feasible"], f"{res.stats['epsilon_threshold']:.4f}")
    optimal False 0.6863
    """
    _check_instance(instance)
    eps = check_epsilon(epsilon)
    time_limit = check_time_limit(time_limit)
    if path not in ("auto", "closed", "lp"):
        raise InputError(f"unknown LE path {path!r}: use 'auto', 'closed' or 'lp'")
    if lp_path not in ("fast", "pyomo"):
        raise InputError(f"unknown LP path {lp_path!r}: use 'fast' or 'pyomo'")
    if lp_method not in LP_METHODS:
        raise InputError(f"unknown LP method {lp_method!r}: use one of {', '.join(LP_METHODS)}")
    t0 = time.perf_counter()
    w = np.asarray(instance.prior, float)
    stats: dict = {"model": "LE", "epsilon": eps, "K": instance.K}
    mech = report = None
    lp_allowed = path != "closed" and instance.K <= max_lp_size and fallback_lp
    p = None
    if path != "lp":
        E = kernel(instance.metric, eps)  # an underflowing e^{−ε d} is the user's: its own error
        try:
            p = _resolved_diagonal(E)  # le_diagonal on the kernel just built, sign decided
        except (InputError, SolverError) as exc:  # E (numerically) singular: LE is undefined
            if not lp_allowed:
                raise
            stats["le_undefined"] = str(exc)
            log.warning("LE m=%d eps=%g: %s; solving the LP (8) instead", instance.K, eps, exc)
    if p is not None:
        stats["le_feasible"] = bool(p.min() >= -P_TOL)
        if not stats["le_feasible"]:
            try:
                thr = feasibility_threshold(
                    lambda e: _resolved_diagonal(kernel(instance.metric, e)).min(), eps,
                    known=float(p.min()))
            except (InputError, SolverError):  # E singular at a larger ε (near duplicates)
                thr = math.nan
            stats["epsilon_threshold"] = thr
            if not lp_allowed:
                raise InfeasibleError(_infeasible_message(p, eps, thr, _where(instance)),
                                      result=Result("infeasible", stats=stats))
        else:
            try:
                mech = le(instance, eps)
            except CertificationError as exc:
                # E nearly singular (near-duplicate points; the sweep's neardup family at ε = 4:
                # realised ε 4.00003): LE misses its certificate by round-off; the LP may answer
                if not lp_allowed:
                    raise
                stats["le_certification_failed"] = str(exc)
                log.warning("LE m=%d eps=%g: %s; solving the LP (8) instead", instance.K, eps, exc)
        if mech is not None:
            report = kkt(instance.metric, eps, w)
            stats["le_objective"] = 1.0 + report.objective
            stats["lp_dual_test"] = bool(report.lam.min() >= -LAMBDA_TOL * np.abs(report.lam).max())
            stats["kkt_residual"] = report.max_residual
    use_le = mech is not None and (path == "closed" or stats["lp_dual_test"]
                                   or instance.K > max_lp_size)
    if use_le:
        objective = 1.0 + report.objective
        proved = stats["lp_dual_test"]
        bound = 1.0 + report.bound if proved else closed_form_bound(instance.metric, eps, w, report)
        res = Result("optimal" if proved else "feasible", mechanism=mech,
                     certificate=mech.certificate, stats=stats)
        res.optimality = OptimalityCertificate.from_values(objective, bound, "kkt")
        res.stats["path"] = "closed"
    else:
        res = _solve_lp(instance, eps, lp_path, mech, time_limit, verbose, lp_method, workers)
        res.stats.update(stats)
        if mech is not None:
            res.stats["le_gap"] = stats["le_objective"] - res.objective
    res.stats["time_s"] = time.perf_counter() - t0
    log.info("LE m=%d eps=%g path=%s: objective %.9g, bound %s", instance.K, eps,
             res.stats["path"], res.objective, res.bound)
    return res


def closed_form_bound(metric, epsilon: float, w, report: KKTReport | None = None) -> float:
    """A valid lower bound on the least weighted co-location error 1 − Σ_k w_k p_kk of any
    ε-d-private mechanism, for any prior ``w`` (used when LE is not proved optimal for ``w``).

    The best of: the Lagrangian bound 1 + ``report.bound`` of the KKT multipliers for ``w``
    (:func:`kkt`); the knapsack bound: Theorem 1's Lagrangian certificate for uniform weights gives
    Σ_k p_kk ≤ S for every feasible mechanism, so with 0 ≤ p_kk ≤ 1, Σ_k w_k p_kk is at most the
    fractional knapsack of ``w`` with capacity S (the largest weights first); and 0.
    """
    w = np.asarray(w, float)
    if report is None:
        report = kkt(metric, epsilon, w)
    S = -kkt(metric, epsilon).bound  # Σ_k p_kk ≤ S for every feasible P (Lagrangian, valid)
    top = np.sort(w)[::-1]
    full = min(math.floor(S), top.size)
    knap = top[:full].sum() + (top[full] * (S - full) if full < top.size else 0.0)
    return float(max(1.0 + report.bound, 1.0 - knap, 0.0))


def lp_problem(instance: Instance, epsilon: float, *, r: float = 0.0, weights=None):
    """LP (8) minimising Error_range (6) at radius r as a design-engine problem:
    ``(notion, costs)`` for :func:`lpmech.design.solve` (the d-privacy notion of the metric and
    C_ik = w_i·1[d_ik > r], w = ``weights`` or the prior)."""
    from ...design import DPrivacy

    inst = _lp_instance(instance, r, weights)
    return DPrivacy(inst.metric, check_epsilon(epsilon), n_near=8), inst.prior[:, None] * inst.loss


def _solve_lp(instance, eps, lp_path, warm: Mechanism | None, time_limit, verbose,
              lp_method: str = "auto", workers: int | None = None) -> Result:
    inst = _lp_instance(instance, 0.0, None)
    if lp_path == "pyomo":
        return solve_pyomo_model(build_pyomo(instance, eps), time_limit=time_limit, tee=verbose)
    from ...design import solve as design_solve

    notion, C = lp_problem(instance, eps)
    twins = has_coincident_points(inst.metric)
    method = lp_method
    if method == "auto":
        method = "full" if inst.K <= FULL_LP_MAX else "outputs" if twins else "support"
    if method == "support" and twins:
        raise InputError("LP(8) by support generation needs distinct points: coincident points "
                         "(d = 0) make a twin's report correct under the loss 1[d > 0]; use "
                         "lp_method='full' or 'outputs', or merge them (lpmech.quotient)")
    if method == "support":
        from ...design.problem import Problem, certified_result
        from .le_support import solve_support

        reserve_certification(inst.K)
        res = solve_support(inst, eps, tol=SUPPORT_TOL, time_limit=time_limit, verbose=verbose)
        if res.status in STOPS and res.x is None and warm is not None:
            # stopped before a core extended to every point: LE itself is the incumbent, with
            # the bound of the support generation's last round
            res.x = warm.matrix.ravel()
            res.optimality = OptimalityCertificate.from_values(
                math.fsum((C * warm.matrix).ravel()), res.stats.get("bound"))
        res = certified_result(res, Problem.make(notion, C, name="LP(8)"), res.x)
        res.stats.update(path="lp", engine_method="support", model="LP(8)", warm_start=None)
        return res
    columns = () if warm is None else [(k, warm.matrix[:, k] / warm.matrix[k, k])
                                       for k in range(inst.K) if warm.matrix[k, k] > 0]
    # output generation's restricted LP by interior point: the d-privacy rows make it degenerate
    # enough that warm dual simplex stalls (Gowalla 12×12, ε = 2: over 10 minutes against 234 s)
    extra = {"lp": "ipm"} if method == "outputs" else {}
    t0 = time.perf_counter()
    try:
        res = design_solve(notion, C, method=method, time_limit=time_limit, workers=workers,
                           columns=columns if method == "decomposition" else (), name="LP(8)",
                           verbose=verbose, **extra)
    except (NotOptimalError, CertificationError, SolverError) as exc:
        # auto's full LP by dual simplex can miss on a spiky prior (weights down to 1e-20 at
        # ε = 10: bound not proved, or a vertex beyond the repair's reach); the sparse paths
        # certify those (the LE sweep at K = 36: 90/90 cells each)
        if (lp_method != "auto" or method != "full"
                or isinstance(exc, TimeLimitError | IterationLimitError)):
            raise
        retry = "outputs" if twins else "support"
        log.warning("LP(8) m=%d eps=%g: the full LP ended with %s; solving by %s", inst.K, eps,
                    exc, retry)
        left = None if time_limit is None else max(1e-3, time_limit - (time.perf_counter() - t0))
        res = _solve_lp(instance, eps, lp_path, warm, left, verbose, retry, workers)
        res.stats["full_lp_failed"] = str(exc)
        return res
    res.stats.update(path="lp", engine_method=method,
                     warm_start="LE" if warm is not None and method == "decomposition" else None)
    res.stats.setdefault("model", "LP(8)")
    return res


# ------------------------------------------------------------------------------ scale: grids


class GridLE:
    """LE on a W×H grid of unit cells without m×m matrices (m = W·H), Gu et al., LE at Gowalla scale.

    Cells are numbered row·W + col (as :func:`lpmech.instance.grid` and
    :func:`lpmech.datasets.grid_counts`); distances are in cells, Euclidean or Manhattan.

    * ``metric="manhattan"``: E = E_H ⊗ E_W with E_n = [ρ^{|a−b|}] (ρ = e^{−ε}), whose inverse is
      tridiagonal (spec §2.4); p = p_H ⊗ p_W > 0 in closed form and E⁻¹x costs O(m) exactly.
    * ``metric="euclidean"``: E is symmetric block-Toeplitz with Toeplitz blocks and positive
      definite, so E⁻¹b is computed by preconditioned conjugate gradients (``rtol`` on the
      residual). Each product E·x is a real FFT on an (H + R)×(W + R) torus, the kernel cut at
      the radius R (``stats["truncation_radius"]``, 43 at ε = 1) beyond which its entries sum to
      ≤ :data:`TRUNCATION_TOL` = 1e-16; the preconditioner is the inverse of the circulant of the
      periodised kernel on the same torus, restricted to the grid (``stats["preconditioner"]``:
      "torus", or T. Chan's H×W circulant where that symbol is not resolved). O(m log m) per
      iteration, about 10 iterations to 1e-12 at ε = 1 whatever the size (1000×1000: 10 for
      p, 7 per Hutchinson probe at 1e-8). The residual ‖E p − 1‖∞ is re-measured with every
      kernel entry (a zero-padded FFT on the (2H−1)×(2W−1) torus) and kept in ``stats`` (it is
      the row-sum error of P = E·diag(p)).

    Privacy: with p ≥ 0, Prop. 1 gives p_ik/p_jk = e^{ε(d_jk − d_ik)} ≤ e^{ε d_ij} by the triangle
    inequality, with equality at k = i: the realised ε is exactly ε, so :attr:`certificate` is
    analytic (tests compare it with :func:`~lpmech.mechanism.realized_epsilon` on small grids).
    """

    dense_max = 4000  # mse_theory is exact (dense) up to this many cells

    def __init__(self, W: int, H: int, epsilon: float, *, metric: str = "euclidean",
                 rtol: float = 1e-12, check: bool = True):
        if int(W) != W or int(H) != H or W < 1 or H < 1:
            raise InputError(f"grid size must be positive integers, got {W}x{H}")
        if metric not in ("euclidean", "manhattan"):
            raise InputError(f"unknown grid metric {metric!r}: use 'euclidean' or 'manhattan'")
        self.W, self.H, self.m = int(W), int(H), int(W) * int(H)
        self.epsilon = check_grid_epsilon(W, H, epsilon, metric)
        self.metric, self.rtol = metric, float(rtol)
        self.stats: dict = {"cg_iterations": 0, "solves": 0}
        t0 = time.perf_counter()
        self._setup()
        self.p = self.solve(np.ones(self.m))
        self.stats["residual"] = float(np.abs(self.matvec(self.p) - 1).max())
        self.stats["le_time_s"] = time.perf_counter() - t0
        log.info("GridLE %dx%d %s eps=%g: min p %.4g, residual %.1e, %d CG iterations, %.2f s",
                 W, H, metric, self.epsilon, self.p.min(), self.stats["residual"],
                 self.stats["cg_iterations"], self.stats["le_time_s"])
        if not self.stats["residual"] <= RESIDUAL_TOL:  # also NaN
            raise SolverError(
                f"LE on the {W}x{H} grid at epsilon = {self.epsilon:g} is not resolved: "
                f"max |E p - 1| = {self.stats['residual']:.3g} > {RESIDUAL_TOL:g} (the rows of "
                "P = E diag(p) do not sum to 1); use a larger epsilon",
                result=Result("error", stats={"model": "LE", "epsilon": self.epsilon, "K": self.m,
                                              "residual": self.stats["residual"]}))
        if check and self.p.min() < -P_TOL:
            guess = None
            if metric == "euclidean" and self.m > self.dense_max:
                # the threshold is set by the corners (spec §2.4: 0.665389 on 10x10, 0.665352 on
                # 20x20) and a small grid's brackets it; each solve here costs CG iterations
                sw, sh = min(W, 24), min(H, 24)
                guess = GridLE(sw, sh, self.epsilon, metric=metric, check=False).threshold()
            thr = feasibility_threshold(
                lambda e: GridLE(W, H, e, metric=metric, rtol=rtol, check=False).p.min(),
                self.epsilon, known=float(self.p.min()), guess=guess)
            stats = {"model": "LE", "epsilon": self.epsilon, "K": self.m, "le_feasible": False,
                     "epsilon_threshold": thr}
            raise InfeasibleError(_infeasible_message(
                self.p, self.epsilon, thr, where=lambda k: f"(row {k // self.W}, col {k % self.W})"),
                result=Result("infeasible", stats=stats))
        self.certificate = PrivacyCertificate(
            notion="geo-ind", realized_epsilon=self.epsilon, target_epsilon=self.epsilon,
            gamma=math.inf, worst_violation=0.0, violation_ratio=0.0, violation_magnitude=0.0,
            n_constraints=self.m * self.m * (self.m - 1), satisfied=bool(self.p.min() >= -P_TOL))

    def threshold(self) -> float:
        """The smallest ε ≥ this grid's at which LE is feasible here (bisection, rtol 1e-6)."""
        return feasibility_threshold(
            lambda e: GridLE(self.W, self.H, e, metric=self.metric, rtol=self.rtol,
                             check=False).p.min(),
            self.epsilon, known=float(self.p.min()))

    # -- structure
    def _setup(self) -> None:
        eps, W, H = self.epsilon, self.W, self.H
        if self.metric == "manhattan":
            self._rho = math.exp(-eps)
            self._one_minus_rho = -math.expm1(-eps)  # 1 − ρ without cancellation at small ε
            self._one_minus_rho2 = -math.expm1(-2 * eps)
            self._EW = np.exp(-eps * np.abs(np.arange(W)[:, None] - np.arange(W)[None, :]))
            self._EH = np.exp(-eps * np.abs(np.arange(H)[:, None] - np.arange(H)[None, :]))
            return
        # the kernel on the non-negative offsets 0..H × 0..W (E is even in dy and in dx)
        jy, jx = np.arange(H + 1)[:, None], np.arange(W + 1)[None, :]
        rad = np.hypot(jy, jx)
        qp = np.exp(-eps * rad)
        # truncation radius R: the ℓ1 mass of the offsets within the grid beyond R (counted with
        # their 1, 2 or 4 mirror images) is an ∞-norm bound on the dropped part of E
        mult = np.where(jy[:H] > 0, 2.0, 1.0) * np.where(jx[:, :W] > 0, 2.0, 1.0)
        mass = np.bincount(np.ceil(rad[:H, :W]).astype(np.int64).ravel(),
                           weights=(mult * qp[:H, :W]).ravel())
        tail = np.concatenate([np.cumsum(mass[::-1])[::-1][1:], [0.0]])  # tail[R] = Σ_{b > R}
        R = int(np.argmax(tail <= TRUNCATION_TOL))
        self.stats["truncation_radius"] = R
        self.stats["truncation_mass"] = float(tail[R])
        Ry, Rx = min(R, H - 1), min(R, W - 1)
        self._quad = np.where(rad[:Ry + 1, :Rx + 1] <= R, qp[:Ry + 1, :Rx + 1], 0.0)
        self._fshape, self._khat = _torus_spectrum(H, W, self._quad, Ry, Rx)
        self._full = None if (Ry, Rx) != (H - 1, W - 1) else (self._fshape, self._khat)
        self._qp = qp
        # CG preconditioner: M⁻¹r = (C⁻¹ [r; 0])|grid with C the circulant on the same torus whose
        # kernel is e^{−ε|n|} periodised (the lattice symbol sampled at the torus frequencies, so
        # C is positive definite): the inverse of a Schur complement of C, which differs from E
        # only in a strip along the edges. At ε = 1 it takes 12 iterations to 1e-12 on random
        # right-hand sides where T. Chan's optimal H×W circulant took 24 (34 against 69 at
        # ε = 0.3; 300×300), and it uses the fast torus (an H or W with large prime factors
        # costs nothing). Where the periodised symbol is not resolved (min ≤ 1e-12·max), T. Chan's
        # circulant (positive definite as E is), else none.
        if Ry < H - 1 and Rx < W - 1:
            lam = self._khat  # N ≥ H + R > 2R: the truncated wrap is the periodised kernel
        else:
            lam = _periodised_spectrum(eps, self._fshape)
        self.stats["preconditioner"] = "torus"
        if not lam.min() > 1e-12 * lam.max():
            jy, jx = jy[:H], jx[:, :W]
            c = ((H - jy) * (W - jx) * qp[:H, :W] + (H - jy) * jx * qp[:H, W:0:-1]
                 + jy * (W - jx) * qp[H:0:-1, :W] + jy * jx * qp[H:0:-1, W:0:-1]) / (H * W)
            lam = sfft.rfft2(c, workers=-1).real
            self.stats["preconditioner"] = "chan"
            if not lam.min() > 1e-12 * lam.max():
                lam, self.stats["preconditioner"] = None, None
        self._pre = lam
        self._pre_inv = None if lam is None else 1.0 / lam

    def _product(self, X: np.ndarray, shape, spec) -> np.ndarray:
        """The circular product of the H×W array X with a torus spectrum, cut to the grid (a
        contiguous copy: the CG loop's dot products would otherwise copy the strided view)."""
        F = sfft.rfft2(X, s=shape, workers=-1)
        F *= spec
        return np.ascontiguousarray(sfft.irfft2(F, s=shape, workers=-1)[:self.H, :self.W])

    def _apply(self, X: np.ndarray) -> np.ndarray:
        """E·X for an H×W array X (Euclidean), with the kernel truncated at ``truncation_radius``:
        ‖(E − E_R) x‖∞ ≤ ``truncation_mass``·‖x‖∞ ≤ 1e-16·‖x‖∞, below the round-off of the FFT."""
        return self._product(X, self._fshape, self._khat)

    def _apply_full(self, X: np.ndarray) -> np.ndarray:
        """E·X with every kernel entry (the residual check of p uses it)."""
        if self._full is None:
            self._full = _torus_spectrum(self.H, self.W, self._qp[:self.H, :self.W],
                                         self.H - 1, self.W - 1)
        return self._product(X, *self._full)

    def convolve(self, kern: np.ndarray, x: np.ndarray) -> np.ndarray:
        """y_a = Σ_b kern[a − b] x_b on the grid, kern given on offsets (2H−1)×(2W−1) (centre H−1, W−1)."""
        H, W = self.H, self.W
        fs = (sfft.next_fast_len(2 * H - 1, real=True), sfft.next_fast_len(2 * W - 1, real=True))
        y = sfft.irfft2(sfft.rfft2(x.reshape(H, W), s=fs, workers=-1)
                        * sfft.rfft2(kern, s=fs, workers=-1), s=fs, workers=-1)
        return y[H - 1:2 * H - 1, W - 1:2 * W - 1].ravel()

    def matvec(self, x: np.ndarray) -> np.ndarray:
        """E x (every kernel entry: for Euclidean a zero-padded FFT on the (2H−1)×(2W−1) torus)."""
        H, W = self.H, self.W
        X = np.asarray(x, float).reshape(H, W)
        if self.metric == "manhattan":
            return (self._EH @ X @ self._EW).ravel()
        return self._apply_full(X).ravel()

    def _tri_inv(self, X: np.ndarray, axis: int) -> np.ndarray:
        """Apply E_n⁻¹ (tridiagonal, spec §2.4) along ``axis`` of X.

        Written as differences, (E_n⁻¹x)_k = [(1 − ρ)² x_k + ρ(2x_k − x_{k−1} − x_{k+1})]/(1 − ρ²)
        inside and [(1 − ρ) x_0 + ρ(x_0 − x_1)]/(1 − ρ²) at the ends, with 1 − ρ = −expm1(−ε):
        no cancellation at small ε (the expanded (1 + ρ²)x_k − ρ(x_{k−1} + x_{k+1}) lost every
        digit of p = tanh(ε/2)² at ε = 1e-8)."""
        rho, a, c = self._rho, self._one_minus_rho, self._one_minus_rho2
        X = np.moveaxis(X, axis, 0)
        if X.shape[0] == 1:
            return np.moveaxis(X.copy(), 0, axis)
        Y = (a * a) * X
        Y[0], Y[-1] = a * X[0], a * X[-1]
        D = X[1:] - X[:-1]  # x_{k+1} − x_k
        Y[:-1] -= rho * D
        Y[1:] += rho * D
        return np.moveaxis(Y / c, 0, axis)

    def solve(self, b: np.ndarray, *, rtol: float | None = None) -> np.ndarray:
        """E⁻¹ b (exact for Manhattan; preconditioned conjugate gradients for Euclidean, stopped
        at ‖b − E x‖₂ ≤ ``rtol``·‖b‖₂, by default the grid's ``rtol``)."""
        b = np.asarray(b, float).ravel()
        if b.shape != (self.m,):
            raise InputError(f"right-hand side has {b.size} entries, the grid has {self.m} cells")
        self.stats["solves"] += 1
        if self.metric == "manhattan":
            return self._tri_inv(self._tri_inv(b.reshape(self.H, self.W), 0), 1).ravel()
        x, it = self._pcg(b.reshape(self.H, self.W), self.rtol if rtol is None else float(rtol))
        self.stats["cg_iterations"] += it
        return x.ravel()

    def _precondition(self, R: np.ndarray) -> np.ndarray:
        if self._pre is None:
            return R.copy()
        if self.stats["preconditioner"] == "chan":
            return sfft.irfft2(sfft.rfft2(R, workers=-1) / self._pre, s=R.shape, workers=-1)
        return self._product(R, self._fshape, self._pre_inv)

    def _pcg(self, B: np.ndarray, rtol: float) -> tuple[np.ndarray, int]:
        """Preconditioned conjugate gradients on H×W arrays (Hestenes–Stiefel, as
        :func:`scipy.sparse.linalg.cg` with ``atol=0``, without its flattening copies)."""
        X = np.zeros_like(B)
        Rk = B.copy()
        stop = rtol * math.sqrt(float(np.vdot(B, B)))
        if stop == 0.0 and not B.any():
            return X, 0
        Z = self._precondition(Rk)
        P = Z.copy()
        rz = float(np.vdot(Rk, Z))
        maxiter = 20 * self.m + 100
        for it in range(1, maxiter + 1):
            Q = self._apply(P)
            alpha = rz / float(np.vdot(P, Q))
            X += alpha * P
            Q *= alpha
            Rk -= Q
            if math.sqrt(float(np.vdot(Rk, Rk))) <= stop:
                return X, it
            Z = self._precondition(Rk)
            rz_new = float(np.vdot(Rk, Z))
            P *= rz_new / rz
            P += Z
            rz = rz_new
            if not math.isfinite(rz):
                break
        raise SolverError(f"conjugate gradients did not reach rtol {rtol:g} on the "
                          f"{self.W}x{self.H} grid after {it} iterations")

    # -- mechanism quantities
    def dense(self) -> np.ndarray:
        """The m×m matrix P = E·diag(p) (for small grids and tests)."""
        if self.m > 4000:
            raise InputError(f"dense() would form a {self.m}x{self.m} matrix; use the grid methods")
        ys, xs = np.divmod(np.arange(self.m), self.W)
        if self.metric == "manhattan":
            d = np.abs(xs[:, None] - xs[None]) + np.abs(ys[:, None] - ys[None])
        else:
            d = np.hypot(xs[:, None] - xs[None], ys[:, None] - ys[None])
        return np.exp(-self.epsilon * d) * self.p[None, :]

    def estimate(self, counts) -> np.ndarray:
        """The inversion estimator (15) for LE: ĉ = (Pᵀ)⁻¹c = E⁻¹(c ⊘ p) (one symmetric solve)."""
        c = _as_counts(counts, self.m)
        if self.p.min() <= 0:
            raise InputError("the estimator (15) needs every p_kk > 0 (P invertible); at this "
                             "epsilon some p_kk = 0")
        return self.solve(c / self.p)

    def range_error(self, cstar, r: float = 0.0) -> float:
        """Expected Error_range (6) for true counts c*: 1 − (1/n) Σ_x c*_x Σ_{d(k,x) ≤ r} p_xk."""
        c = _as_counts(cstar, self.m)
        H, W = self.H, self.W
        # the kernel is 0 beyond the radius: an FFT on an (H + r)×(W + r) torus, not (2H)×(2W)
        reach = math.floor(min(max(r, 0.0), H + W) + 1e-9)
        Ry, Rx = min(H - 1, reach), min(W - 1, reach)
        dy, dx = np.arange(Ry + 1)[:, None], np.arange(Rx + 1)[None, :]
        d = dy + dx if self.metric == "manhattan" else np.hypot(dy, dx)
        quad = np.where(d <= r + 1e-9, np.exp(-self.epsilon * d), 0.0)
        # Σ_{k: d(k,x) ≤ r} e^{−ε d_xk} p_k
        inside = self._product(self.p.reshape(H, W), *_torus_spectrum(H, W, quad, Ry, Rx))
        return float(1.0 - c @ inside.ravel() / c.sum())

    def mse_theory(self, cstar, *, rng: np.random.Generator | None = None, probes: int = 64,
                   probe_rtol: float = PROBE_RTOL):
        """(20): MSE_freq = Σ_i (Pᵀc*)_i ‖Q e_i‖² − n with Q = E⁻¹diag(1/p), so ‖Q e_i‖² =
        (E⁻²)_ii / p_i².

        Manhattan: exact (diag(E⁻²) = diag(E_H⁻²) ⊗ diag(E_W⁻²)). Euclidean: exact by a dense
        Cholesky when m ≤ ``dense_max`` (4000); else a Hutchinson estimate of tr(E⁻¹ D E⁻¹) with ``probes``
        Rademacher vectors from ``rng`` (required), each solve E⁻¹z stopped at the relative
        residual ``probe_rtol`` (:data:`PROBE_RTOL`). Returns ``(value, standard_error)``.
        """
        c = _as_counts(cstar, self.m)
        n = c.sum()
        v = self.p * self.matvec(c) / self.p**2  # (Pᵀc*)_i / p_i²
        if self.metric == "manhattan":
            TW = self._tri_inv(np.eye(self.W), 0)
            TH = self._tri_inv(np.eye(self.H), 0)
            diag = np.kron((TH**2).sum(0), (TW**2).sum(0))
            return float(v @ diag - n), 0.0
        if self.m <= self.dense_max:
            E = self.dense() / self.p[None, :]
            Einv = sla.cho_solve(sla.cho_factor(E), np.eye(self.m))
            return float(v @ (Einv**2).sum(0) - n), 0.0
        if rng is None:
            raise InputError("mse_theory on a large Euclidean grid is a Hutchinson estimate: pass "
                             "rng=numpy.random.default_rng(seed)")
        sq = np.sqrt(v)
        vals = np.empty(probes)
        with Progress(f"LE mse_theory {self.W}x{self.H} (Hutchinson)", total=probes, unit="probe",
                      logger=log) as prog:
            for t in range(probes):
                z = rng.choice([-1.0, 1.0], size=self.m)
                vals[t] = np.sum((sq * self.solve(z, rtol=probe_rtol)) ** 2)
                prog.update(cg_iterations=self.stats["cg_iterations"])
        return float(vals.mean() - n), float(vals.std(ddof=1) / math.sqrt(probes))


def _torus_spectrum(H: int, W: int, quad: np.ndarray, Ry: int, Rx: int):
    """``(shape, spectrum)``: the real FFT of the even kernel k[dy, dx] = ``quad``[|dy|, |dx|]
    (|dy| ≤ Ry ≤ H − 1, |dx| ≤ Rx ≤ W − 1) wrapped on the smallest fast torus (N_y, N_x) with
    N ≥ H + R, on which its circular product with an H×W array, read on the first H×W entries,
    is the linear one: an offset a − b (|a − b| ≤ H − 1) aliases a stored one only when
    N ≤ H − 1 + R. The kernel is even, so the spectrum is real (its imaginary round-off dropped)."""
    Ny, Nx = sfft.next_fast_len(H + Ry, real=True), sfft.next_fast_len(W + Rx, real=True)
    Q = quad[:Ry + 1, :Rx + 1]
    kc = np.zeros((Ny, Nx))
    kc[:Ry + 1, :Rx + 1] = Q
    if Ry:
        kc[Ny - Ry:, :Rx + 1] = Q[Ry:0:-1]
    if Rx:
        kc[:Ry + 1, Nx - Rx:] = Q[:, Rx:0:-1]
    if Ry and Rx:
        kc[Ny - Ry:, Nx - Rx:] = Q[Ry:0:-1, Rx:0:-1]
    return (Ny, Nx), sfft.rfft2(kc, workers=-1).real


def _periodised_spectrum(epsilon: float, shape) -> np.ndarray:
    """The real FFT, on an (N_y, N_x) torus, of Σ_q e^{−ε|j + q∘N|} over the periodic images q
    (|q| ≤ 8 per axis, an image skipped once its nearest point is beyond e^{−ε d} < 1e-18):
    the lattice symbol of e^{−ε|n|} at the torus frequencies, positive where resolved."""
    Ny, Nx = shape
    jy = np.arange(Ny, dtype=float)
    jy = np.where(jy <= Ny // 2, jy, jy - Ny)[:, None]
    jx = np.arange(Nx, dtype=float)
    jx = np.where(jx <= Nx // 2, jx, jx - Nx)[None, :]
    reach = 44.0 / epsilon  # e^{−ε d} < 1e-19 beyond
    qy = min(8, math.ceil(reach / Ny) + 1)
    qx = min(8, math.ceil(reach / Nx) + 1)
    k = np.zeros((Ny, Nx))
    for a in range(-qy, qy + 1):
        near_y = max(0.0, (abs(a) - 0.5) * Ny)
        for b in range(-qx, qx + 1):
            if math.hypot(near_y, max(0.0, (abs(b) - 0.5) * Nx)) > reach:
                continue
            k += np.exp(-epsilon * np.hypot(jy + a * Ny, jx + b * Nx))
    return sfft.rfft2(k, workers=-1).real


def grid_distance_range(W: int, H: int, metric: str = "euclidean") -> tuple[float, float]:
    """(d_min, d_max) over distinct cells of a W×H unit grid (no m×m matrix): 1 and the diagonal."""
    if W * H < 2:
        return (1.0, 1.0)
    dmax = (W - 1) + (H - 1) if metric == "manhattan" else math.hypot(W - 1, H - 1)
    return 1.0, float(dmax)


def check_grid_epsilon(W: int, H: int, epsilon, metric: str = "euclidean", *,
                       flag: str = "epsilon") -> float:
    """ε for :class:`GridLE` on a W×H unit grid, in O(1), before any solve: ε per cell at least
    :data:`MIN_EPS_D` (neighbouring cells resolved), and ε ≤ 700 per cell. The scale
    path never forms P, and its certificate is analytic, so far cells whose e^{−ε d} underflows
    do not limit it as they limit the dense path (ε·d_max ≤ 700 there)."""
    if W * H < 2:
        return check_epsilon(epsilon)
    return check_le_epsilon(epsilon, [1.0], flag=flag, scale=1.0)


def le_grid(W: int, H: int, epsilon: float, *, metric: str = "euclidean", rtol: float = 1e-12) -> GridLE:
    """LE on a W×H grid (the scale path); see :class:`GridLE`.

    Parameters
    ----------
    W, H : int
        Grid width and height in cells (m = W·H, cell row·W + col).
    epsilon : float
        Privacy budget ε per cell; checked by :func:`check_grid_epsilon`.
    metric : {"euclidean", "manhattan"}
        Distances in cells. Manhattan: E = E_H ⊗ E_W, exact in O(m). Euclidean: conjugate
        gradients with FFT products.
    rtol : float
        Relative residual of the conjugate gradients (Euclidean).

    Returns
    -------
    GridLE
        p = E⁻¹1 (``.p``), the inversion estimator (15) (``.estimate``), Error_range (6)
        (``.range_error``), the MSE (20) (``.mse_theory``) and ``stats``.

    Raises
    ------
    InputError
        A bad grid size, metric or ε.
    InfeasibleError
        E⁻¹1 has negative entries (Euclidean, ε below ε* ≈ 0.6654 per cell on large grids);
        the message names the smallest feasible ε.
    SolverError
        The rows of P = E·diag(p) do not sum to 1 within the residual tolerance.

    Examples
    --------
    The inversion estimator (15) recovers counts c from their expected reports Pᵀc:

    >>> import numpy as np
    >>> from lpmech.models import le
    >>> g = le.le_grid(4, 4, 1.0, metric="manhattan")
    >>> counts = np.arange(16.0)
    >>> print(f"{g.p.min():.4f}", np.round(g.estimate(g.dense().T @ counts), 6)[:4])
    0.2136 [0. 1. 2. 3.]
    """
    return GridLE(W, H, epsilon, metric=metric, rtol=rtol)


def _as_counts(counts, m: int) -> np.ndarray:
    c = np.asarray(counts, float).ravel()
    if c.shape != (m,):
        raise InputError(f"counts have {c.size} entries, the domain has {m}")
    if not np.isfinite(c).all():
        raise InputError("counts must be finite")
    return c


__all__ = ["GridLE", "KKTReport", "build_lp", "build_pyomo", "check_grid_epsilon", "check_le_epsilon",
           "feasibility_threshold", "grid_distance_range",
           "has_coincident_points", "kernel", "kkt", "le", "le_diagonal", "le_grid", "lp_problem",
           "range_loss", "solve", "solve_pyomo_model"]
