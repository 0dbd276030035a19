"""Frequency estimation and utility measures for local mechanisms (Gu et al., LE §III-B and §V).

Notation: a mechanism P (m×m, P[i, k] = Pr[report k | true i]); true counts c* (length m,
n = Σ c*); reported counts c (c_k = number of users reporting k).

* :func:`estimate_counts`: the inversion estimator ĉ = (Pᵀ)⁻¹c (15), unbiased (Prop. 2, (16));
  ``project=True`` post-processes it onto {x ≥ 0, Σx = n} (Euclidean projection; biased, never
  worse in squared error since the true c* lies in that set; off by default to match the paper).
* :func:`mse_theory` (20) and :func:`mse_per_item` (19); :func:`mse_grr` (22) with the GRR and OUE
  parameters (:func:`grr_ab`, :func:`oue_ab`, spec §3.3); :func:`mse_raw` for raw counts (Fig. 4).
* :func:`range_error` (6) and :func:`range_error_empirical` (5): the share of users whose report
  falls outside the r-ball of their true value (r = 0: the co-location error).
* :func:`monte_carlo`: draw reports with an explicit Generator and measure (5) and the empirical
  MSE (1/n)Σ_k(ĉ_k − c*_k)² with their standard errors, to compare with the theory.

MSE values are in count units, as (20); divide by n for the paper's MSE_freq/n.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import scipy.linalg as sla

from .errors import InputError
from .mechanism import check_epsilon

__all__ = ["estimate_counts", "grr_ab", "monte_carlo", "mse_grr", "mse_per_item", "mse_raw",
           "mse_theory", "oue_ab", "project_simplex", "range_error", "range_error_empirical",
           "reported_counts"]


def _matrix(P) -> np.ndarray:
    P = np.asarray(getattr(P, "matrix", P), float)
    if P.ndim != 2 or P.shape[0] != P.shape[1] or P.shape[0] == 0:
        raise InputError(f"the mechanism must be a non-empty square matrix, got shape {P.shape}")
    return P


def _counts(c, m: int, name: str = "counts") -> np.ndarray:
    c = np.asarray(c, float).ravel()
    if c.shape != (m,):
        raise InputError(f"{name} have {c.size} entries, the domain has {m}")
    if not np.isfinite(c).all() or (c < 0).any():
        raise InputError(f"{name} must be finite and non-negative")
    return c


def _inverse_transpose(P: np.ndarray) -> np.ndarray:
    """Q = (Pᵀ)⁻¹, refusing a singular P (the estimator (15) needs P invertible)."""
    try:
        with warnings.catch_warnings():  # singularity is reported below as an InputError
            warnings.simplefilter("ignore", sla.LinAlgWarning)
            lu = sla.lu_factor(P.T, check_finite=False)
    except (ValueError, sla.LinAlgError):
        lu = None
    if lu is None or np.abs(np.diag(lu[0])).min() <= 1e-14 * np.abs(P).max():
        raise InputError("the mechanism matrix is singular, so the inversion estimator (15) is "
                         "undefined (e.g. LE with some p_kk = 0); use raw counts")
    return sla.lu_solve(lu, np.eye(P.shape[0]), check_finite=False)


def estimate_counts(P, counts, *, project: bool = False) -> np.ndarray:
    """ĉ = (Pᵀ)⁻¹ c (15); with ``project``, the Euclidean projection of ĉ onto {x ≥ 0, Σx = n}."""
    P = _matrix(P)
    c = _counts(counts, P.shape[0])
    est = _inverse_transpose(P) @ c
    return project_simplex(est, c.sum()) if project else est


def project_simplex(v, total: float = 1.0) -> np.ndarray:
    """Euclidean projection of v onto {x ≥ 0, Σx = total} (sort-based, Held–Wolfe–Crowder)."""
    v = np.asarray(v, float).ravel()
    if total < 0 or not math.isfinite(total):
        raise InputError(f"projection total must be finite and >= 0, got {total}")
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - total
    k = np.arange(1, v.size + 1)
    rho = np.nonzero(u - css / k > 0)[0][-1]
    return np.maximum(v - css[rho] / (rho + 1), 0.0)


def mse_per_item(P, cstar) -> np.ndarray:
    """(19): MSE_{ĉ_k} = Σ_j c*_j Σ_i q_ki² p_ji − c*_k, Q = (Pᵀ)⁻¹."""
    P = _matrix(P)
    c = _counts(cstar, P.shape[0], "true counts")
    Q = _inverse_transpose(P)
    return (Q**2) @ (P.T @ c) - c


def mse_theory(P, cstar) -> float:
    """(20): MSE_freq = Σ_k MSE_{ĉ_k} = c*ᵀ P d − n, d_i = Σ_k q_ki² (in counts; /n for the paper)."""
    return float(mse_per_item(P, cstar).sum())


def grr_ab(epsilon: float, m: int) -> tuple[float, float]:
    """GRR's (a, b) = (e^ε, 1)/(e^ε + m − 1): the corrected denominator (spec §6.1 item 1)."""
    eps = check_epsilon(epsilon)
    den = math.exp(eps) + m - 1
    return math.exp(eps) / den, 1.0 / den


def oue_ab(epsilon: float) -> tuple[float, float]:
    """OUE's bit probabilities (p, q) = (1/2, 1/(e^ε + 1)) (Wang et al. 2017)."""
    eps = check_epsilon(epsilon)
    return 0.5, 1.0 / (math.exp(eps) + 1.0)


def mse_grr(n: float, m: int, a: float, b: float) -> float:
    """(22): MSE_freq = n m b(1−b)/(a−b)² + n(1−a−b)/(a−b) for p_ii = a, p_ij = b (a ≠ b).

    With (a, b) = :func:`grr_ab` it is GRR's total MSE; with (a, b) = :func:`oue_ab` it is OUE's
    (spec §3.3: the per-bit variances sum to the same form).
    """
    if a == b:
        raise InputError("mse_grr needs a != b (otherwise the reports carry no information)")
    return n * m * b * (1 - b) / (a - b) ** 2 + n * (1 - a - b) / (a - b)


def mse_raw(P, cstar) -> float:
    """E Σ_k (c_k − c*_k)² for raw reported counts: Σ_k Σ_j c*_j p_jk(1−p_jk) + ‖Pᵀc* − c*‖²."""
    P = _matrix(P)
    c = _counts(cstar, P.shape[0], "true counts")
    return float(c @ (P * (1 - P)).sum(axis=1) + np.sum((P.T @ c - c) ** 2))


def _ball(metric, r: float) -> np.ndarray:
    if not (math.isfinite(r) and r >= 0):
        raise InputError(f"range radius r must be finite and >= 0, got {r}")
    return np.asarray(metric, float) <= r + 1e-9


def range_error(P, cstar, metric, r: float = 0.0) -> float:
    """(6): 1 − (1/n) Σ_x c*_x Σ_{k: d(k,x) ≤ r} p_xk; r is in the metric's units (cells)."""
    P = _matrix(P)
    c = _counts(cstar, P.shape[0], "true counts")
    inside = (P * _ball(metric, r)).sum(axis=1)
    return float(1.0 - c @ inside / c.sum())


def range_error_empirical(true_idx, reported_idx, metric, r: float = 0.0) -> float:
    """(5): the share of users t with d(y_t, x_t) > r."""
    x = np.asarray(true_idx, int)
    y = np.asarray(reported_idx, int)
    if x.shape != y.shape or x.size == 0:
        raise InputError("true and reported indices must be non-empty and of equal length")
    return float(np.mean(np.asarray(metric, float)[x, y] > r + 1e-9))


def reported_counts(P, cstar, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Perturb c*_i users at each i through row i of P: returns (per-input counts N (m×m), c).

    N[i, k] = number of users with true value i who reported k (multinomial); c = N.sum(0).
    """
    if not isinstance(rng, np.random.Generator):
        raise InputError("pass an explicit numpy.random.Generator (numpy.random.default_rng(seed))")
    P = _matrix(P)
    c = _counts(cstar, P.shape[0], "true counts")
    if (c != np.round(c)).any():
        raise InputError("true counts must be whole numbers of users")
    N = np.zeros_like(P)
    for i in np.flatnonzero(c):
        N[i] = rng.multinomial(int(c[i]), P[i] / P[i].sum())
    return N, N.sum(axis=0)


def monte_carlo(P, cstar, rng: np.random.Generator, *, reps: int = 100, metric=None,
                r: float = 0.0, estimator=None, project: bool = False) -> dict:
    """Monte Carlo of the frequency MSE and of Error_range (5) over ``reps`` draws of the reports.

    ``estimator(c) -> ĉ`` defaults to (15) (``"raw"`` uses ĉ = c). Returns mean and standard error
    of Σ_k (ĉ_k − c*_k)² (``mse``, ``mse_se``; counts, not /n) and, with ``metric``, of (5)
    (``range_error``, ``range_error_se``).
    """
    P = _matrix(P)
    c = _counts(cstar, P.shape[0], "true counts")
    if int(reps) != reps or reps < 2:
        raise InputError(f"reps must be an integer >= 2, got {reps}")
    if estimator is None:
        Q = _inverse_transpose(P)

        def estimator(counts):
            est = Q @ counts
            return project_simplex(est, counts.sum()) if project else est
    elif estimator == "raw":
        def estimator(counts):
            return counts
    inside = None if metric is None else _ball(metric, r)
    sq, err = np.empty(int(reps)), np.empty(int(reps))
    for t in range(int(reps)):
        N, counts = reported_counts(P, c, rng)
        sq[t] = np.sum((estimator(counts) - c) ** 2)
        if inside is not None:
            err[t] = 1.0 - (N * inside).sum() / c.sum()
    out = {"reps": int(reps), "mse": float(sq.mean()), "mse_se": float(sq.std(ddof=1) / math.sqrt(reps))}
    if inside is not None:
        out.update(range_error=float(err.mean()), range_error_se=float(err.std(ddof=1) / math.sqrt(reps)))
    return out
