"""LE's grid scale path (:class:`lpmech.models.le.GridLE`) against dense references.

The Euclidean solve is preconditioned conjugate gradients with FFT products on an (H+R)×(W+R)
torus (the kernel cut at radius R where its dropped mass is ≤ 1e-16); every check here forms E
explicitly (m ≤ 1,200) and compares with ``numpy.linalg.solve`` or a brute pairwise computation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from lpmech.models import le as L


def dense_E(W: int, H: int, eps: float, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """E = e^{−ε d} and d on a W×H unit grid, cells row·W + col, formed pairwise."""
    ys, xs = np.divmod(np.arange(W * H), W)
    dx, dy = xs[:, None] - xs[None, :], ys[:, None] - ys[None, :]
    d = np.abs(dx) + np.abs(dy) if metric == "manhattan" else np.hypot(dx, dy)
    return np.exp(-eps * d), d


def rel_err(x, ref) -> float:
    return float(np.linalg.norm(x - ref) / np.linalg.norm(ref))


@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
@pytest.mark.parametrize("eps", [0.05, 0.3, 1.0, 5.0])
@pytest.mark.parametrize("W,H", [(6, 7), (12, 9)])
def test_grid_solve_matches_dense_solve(W, H, eps, metric):
    g = L.GridLE(W, H, eps, metric=metric, check=False)  # Euclidean ε < 0.66: p has negative entries
    E, _ = dense_E(W, H, eps, metric)
    rng = np.random.default_rng(W * 100 + H)
    for b in (np.ones(W * H), rng.standard_normal(W * H), rng.choice([-1.0, 1.0], W * H)):
        ref = np.linalg.solve(E, b)
        assert rel_err(g.solve(b), ref) <= 1e-8
    assert rel_err(g.p, np.linalg.solve(E, np.ones(W * H))) <= 1e-8
    assert g.stats["residual"] == pytest.approx(np.abs(E @ g.p - 1).max(), abs=1e-13)
    if metric == "euclidean":
        assert g.stats["preconditioner"] == "torus"


@pytest.mark.parametrize("eps", [2.0, 5.0])
def test_truncated_kernel_solve_and_product_match_dense(eps):
    """A grid wider than the truncation radius: the CG product cuts the kernel, the residual
    check (``matvec``) does not; both agree with the dense E."""
    W, H = 40, 30
    g = L.GridLE(W, H, eps)
    R = g.stats["truncation_radius"]
    assert R < H - 1 and g.stats["truncation_mass"] <= L.TRUNCATION_TOL
    assert g._fshape[0] < 2 * H - 1  # a smaller torus than the zero-padded (2H−1)×(2W−1)
    E, d = dense_E(W, H, eps, "euclidean")
    # the dropped entries' row sums are the stated bound
    assert np.where(d > R, E, 0.0).sum(axis=1).max() <= g.stats["truncation_mass"] + 1e-30
    x = np.random.default_rng(1).standard_normal(W * H)
    assert np.abs(g._apply(x.reshape(H, W)).ravel() - E @ x).max() <= 1e-13
    assert np.abs(g.matvec(x) - E @ x).max() <= 1e-13
    assert rel_err(g.solve(x), np.linalg.solve(E, x)) <= 1e-8
    assert rel_err(g.p, np.linalg.solve(E, np.ones(W * H))) <= 1e-10
    assert g.stats["residual"] == pytest.approx(np.abs(E @ g.p - 1).max(), abs=1e-13)


def test_preconditioner_falls_back_where_the_periodised_symbol_is_unresolved():
    """At ε = 1e-4 on 6×7 the periodised kernel (8 images) is not resolved: T. Chan's circulant
    preconditions, and the solve still agrees with the dense one."""
    W, H, eps = 6, 7, 1e-4
    g = L.GridLE(W, H, eps, check=False)
    assert g.stats["preconditioner"] == "chan"
    E, _ = dense_E(W, H, eps, "euclidean")
    b = np.random.default_rng(2).standard_normal(W * H)
    ref = np.linalg.solve(E, b)
    # E's condition number here is ~1e9: the dense reference itself is good to ~1e-7
    assert rel_err(g.solve(b), ref) <= 1e-5
    assert np.abs(E @ g.solve(b) - b).max() <= 1e-9


@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
def test_grid_realised_epsilon_against_brute_pairwise(metric):
    """The analytic certificate (realised ε = ε by Prop. 1) against max_{i≠j,k} ln(P_ik/P_jk)/d_ij
    over every triple of the explicitly formed P = E·diag(p)."""
    W, H, eps = 6, 5, 1.0
    g = L.GridLE(W, H, eps, metric=metric)
    E, d = dense_E(W, H, eps, metric)
    P = E * g.p[None, :]
    assert np.abs(P.sum(axis=1) - 1).max() <= 1e-12
    off = ~np.eye(W * H, dtype=bool)
    lr = np.log(P)[:, None, :] - np.log(P)[None, :, :]  # [i, j, k] = ln(P_ik / P_jk)
    brute = float((lr[off] / d[off][:, None]).max())
    assert brute == pytest.approx(eps, rel=1e-12)
    assert g.certificate.realized_epsilon == pytest.approx(brute, rel=1e-12)
    assert g.certificate.satisfied


def test_estimator_and_range_error_against_dense():
    W, H, eps = 12, 9, 0.8
    g = L.GridLE(W, H, eps)
    E, d = dense_E(W, H, eps, "euclidean")
    P = E * g.p[None, :]
    rng = np.random.default_rng(4)
    cstar = rng.integers(0, 50, W * H).astype(float)
    reports = P.T @ cstar
    assert rel_err(g.estimate(reports), cstar) <= 1e-9
    for r in (0.0, 1.0, math.sqrt(2), 2.5, 30.0):  # 2.5: a 2-cell torus margin, 30: all cells
        inside = (np.where(d <= r + 1e-9, P, 0.0)).sum(axis=1)
        assert g.range_error(cstar, r) == pytest.approx(1 - cstar @ inside / cstar.sum(), abs=1e-12)


def test_hutchinson_probe_tolerance_is_below_the_estimates_error():
    """mse_theory's probes solved to 1e-8 give the estimate of probes solved to 1e-12 to far
    below its standard error, and both agree with the exact (dense) value."""
    W, H = 14, 11
    g = L.GridLE(W, H, 1.0)
    cstar = np.full(W * H, 3.0)
    exact = g.mse_theory(cstar)[0]
    g.dense_max = 0
    loose, se = g.mse_theory(cstar, rng=np.random.default_rng(5), probes=64)
    tight, se2 = g.mse_theory(cstar, rng=np.random.default_rng(5), probes=64, probe_rtol=1e-12)
    assert abs(loose - tight) <= 1e-6 * abs(tight) and abs(loose - tight) <= 1e-3 * se
    assert se == pytest.approx(se2, rel=1e-5)
    assert abs(loose - exact) <= 4 * se
