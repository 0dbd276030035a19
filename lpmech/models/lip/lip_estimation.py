"""Estimators and exact per-user MSE for LIP data aggregation (Jiang, Li & Tandon's LIP papers).

Every task is a *value matrix* V (d × r): user i contributes f(X_i) = V[X_i] ∈ R^r to the aggregate.

* survey ([001] §III-A):           V = 1{x = v}, r = 1 (binary: values (0, 1))
* summation / weighted summation:  V = c·a + b, r = 1 ([001] §III-A; [004] Remark 2)
* histogram ([001] eq. (12)):      V = I_d, r = d (the MSE is the squared L2 norm, summed over bins)

The MSE decomposes per user ([001] Prop. 2; [004] Thm 1). With a channel Q (d × f, Q[m, k] =
Pr(Y=k | X=m)), λ = Pᵀ Q and s_k = Σ_m V_m P_m q_mk, the MMSE (posterior-mean) estimator is
X̂(k) = s_k / λ_k ([001] eq. (16), (27), (30); [004] eq. (20), (23), (38)) and its exact MSE is

    E‖V_X − X̂‖² = E‖V_X‖² − Σ_k ‖s_k‖²/λ_k      (law of total variance, [001] eq. (14), (28), (55))

Σ_k ‖s_k‖²/λ_k is a sum of perspectives of squares, one per output column: a convex, positively
homogeneous ("sublinear") function of each column, :func:`column_utility`. :func:`estimator_mse`
computes the MSE of *any* per-output estimator table directly (Σ_m P_m Σ_k q_mk ‖V_m − T_k‖²), a
second, independent route used by the tests; :func:`monte_carlo_mse` is the third.

Context-free ("unbiased") estimators invert the channel: T = Q⁻¹ V, so E[T_Y | X = m] = V_m
([001] eq. (41); [004] eq. (40); Wang et al., USENIX Security 2017 for GRR/OUE/OLH).
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import InputError

__all__ = [
    "column_utility", "estimator_mse", "grr_count_variance", "mmse_estimator", "mmse_mse",
    "monte_carlo_mse", "olh_count_variance", "oue_count_variance", "posterior",
    "rr_context_free_mse", "second_moment", "unbiased_estimator", "unbiased_mse", "value_matrix",
]

TASKS = ("sum", "hist", "survey")


def value_matrix(task: str, d: int, values=None, *, weight: float = 1.0, offset: float = 0.0,
                 target: int = 1) -> np.ndarray:
    """The d × r value matrix V of a task.

    ``"sum"``: V = weight·values + offset (values default 0..d−1, [001] Fig. 6a); ``"hist"``: the
    identity; ``"survey"``: the indicator of value index ``target``.
    """
    if task == "hist":
        return np.eye(d)
    if task == "survey":
        if not 0 <= target < d:
            raise InputError(f"survey target index {target} is outside 0..{d - 1}")
        return (np.arange(d) == target).astype(float)[:, None]
    if task != "sum":
        raise InputError(f"unknown task {task!r}: use one of {TASKS}")
    a = np.arange(d, dtype=float) if values is None else np.asarray(values, dtype=float).ravel()
    if a.shape != (d,) or not np.isfinite(a).all():
        raise InputError(f"values must be {d} finite numbers (one per input value), got {values!r}")
    return (weight * a + offset)[:, None]


def _as_v(V, d: int) -> np.ndarray:
    V = np.asarray(V, dtype=float)
    if V.ndim == 1:
        V = V[:, None]
    if V.shape[0] != d:
        raise InputError(f"value matrix has {V.shape[0]} rows for a domain of {d} values")
    return V


def second_moment(prior, V) -> float:
    """E‖V_X‖² under ``prior``."""
    P = np.asarray(prior, float)
    return float(P @ (_as_v(V, P.size) ** 2).sum(axis=1))


def column_utility(C, prior, V) -> np.ndarray:
    """φ(c_k) = ‖Σ_m V_m P_m c_mk‖² / Σ_m P_m c_mk for each column of C (0 where λ_k = 0)."""
    C = np.asarray(C, float)
    P = np.asarray(prior, float)
    V = _as_v(V, P.size)
    lam = P @ C
    s = V.T @ (P[:, None] * C)  # r × f
    num = (s ** 2).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(lam > 0, num / np.where(lam > 0, lam, 1.0), 0.0)


def mmse_mse(Q, prior, V) -> float:
    """Exact per-user MSE of the MMSE estimator: E‖V_X‖² − Σ_k φ(q_k) ([001] eq. (14), (28), (55))."""
    return max(0.0, second_moment(prior, V) - float(column_utility(Q, prior, V).sum()))


def posterior(Q, prior) -> np.ndarray:
    """Pr(X = m | Y = k) as a d × f matrix; an output never produced (λ_k = 0) gets the prior."""
    Q, P = np.asarray(Q, float), np.asarray(prior, float)
    joint = P[:, None] * Q
    lam = joint.sum(axis=0)
    out = np.tile(P[:, None], (1, Q.shape[1]))
    pos = lam > 0
    out[:, pos] = joint[:, pos] / lam[pos]
    return out


def mmse_estimator(Q, prior, V) -> np.ndarray:
    """The MMSE estimate per output, an f × r table T_k = Σ_m V_m Pr(X=m | Y=k) ([001] eq. (27))."""
    P = np.asarray(prior, float)
    return posterior(Q, P).T @ _as_v(V, P.size)


def unbiased_estimator(Q, V) -> np.ndarray:
    """The context-free unbiased estimator T = Q⁻¹ V (E[T_Y | X = m] = V_m for every m).

    Needs a square invertible channel ([001] eq. (41), [004] eq. (40) for RR/GRR).
    """
    Q = np.asarray(Q, float)
    if Q.shape[0] != Q.shape[1]:
        raise InputError(f"the unbiased estimator needs a square channel, got shape {Q.shape}")
    V = _as_v(V, Q.shape[0])
    if np.linalg.cond(Q) > 1e12:
        raise InputError("the channel is (nearly) singular: no unbiased estimator exists; "
                         "use the MMSE estimator")
    return np.linalg.solve(Q, V)


def estimator_mse(Q, prior, V, table) -> float:
    """E‖V_X − T_Y‖² = Σ_m P_m Σ_k q_mk ‖V_m − T_k‖² for any per-output estimator table T (f × r)."""
    Q, P = np.asarray(Q, float), np.asarray(prior, float)
    V, T = _as_v(V, P.size), np.asarray(table, float)
    if T.ndim == 1:
        T = T[:, None]
    dist = ((V[:, None, :] - T[None, :, :]) ** 2).sum(axis=2)  # d × f
    return float(P @ (Q * dist).sum(axis=1))


def unbiased_mse(Q, prior, V) -> float:
    """Exact per-user MSE of the context-free estimator :func:`unbiased_estimator`."""
    return estimator_mse(Q, prior, V, unbiased_estimator(Q, V))


def monte_carlo_mse(Q, prior, V, table, n: int, rng: np.random.Generator) -> tuple[float, float]:
    """Monte-Carlo per-user MSE of estimator ``table`` over ``n`` users: (mean, standard error).

    Draws X ~ prior and Y ~ Q[X] with the explicit ``rng``.
    """
    if not isinstance(rng, np.random.Generator):
        raise InputError("monte_carlo_mse needs an explicit numpy.random.Generator")
    Q, P = np.asarray(Q, float), np.asarray(prior, float)
    V, T = _as_v(V, P.size), np.asarray(table, float)
    if T.ndim == 1:
        T = T[:, None]
    x = rng.choice(P.size, size=n, p=P / P.sum())
    cdf = np.cumsum(Q[x], axis=1)
    y = np.minimum((cdf < rng.random(n)[:, None] * cdf[:, -1:]).sum(axis=1), Q.shape[1] - 1)
    err = ((V[x] - T[y]) ** 2).sum(axis=1)
    return float(err.mean()), float(err.std(ddof=1) / math.sqrt(n))


# ------------------------------------------------------------ context-free LDP variances ([15])


def rr_context_free_mse(epsilon: float) -> float:
    """Binary RR with the unbiased count estimator: e^ε/(e^ε − 1)² per user ([001] eq. (42))."""
    E = math.exp(epsilon)
    return E / (E - 1) ** 2


def grr_count_variance(d: int, epsilon: float, freq: float = 0.0) -> float:
    """Per-user variance of GRR's unbiased count of one value with true frequency ``freq``:
    q(1−q)/(p−q)² + freq·(1−p−q)/(p−q) (Wang et al. 2017); ``freq=0`` gives [004] eq. (41)."""
    E = math.exp(epsilon)
    p, q = E / (E + d - 1), 1 / (E + d - 1)
    return q * (1 - q) / (p - q) ** 2 + freq * (1 - p - q) / (p - q)


def oue_count_variance(epsilon: float) -> float:
    """OUE's per-user count variance 4e^ε/(e^ε − 1)² ([001] §V-A3; Wang et al. 2017)."""
    E = math.exp(epsilon)
    return 4 * E / (E - 1) ** 2


def olh_count_variance(epsilon: float, g: int | None = None) -> float:
    """OLH's per-user count variance q'(1−q')/(p'−q')², p' = e^ε/(e^ε+g−1), q' = 1/g
    (Wang et al. 2017; g = round(e^ε + 1) by default, giving ≈ 4e^ε/(e^ε−1)²)."""
    E = math.exp(epsilon)
    g = max(2, round(E + 1)) if g is None else int(g)
    p, q = E / (E + g - 1), 1 / g
    return q * (1 - q) / (p - q) ** 2
