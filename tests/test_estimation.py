"""Estimation (seed 000 §V): theory vs closed forms vs Monte Carlo within confidence intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lpmech import estimation as est
from lpmech.errors import InputError
from lpmech.instance import grid, line
from lpmech.models import baselines
from lpmech.models import le as L


def sparse_counts(m, n, rng, share=0.2):
    """n users on a random 20% of the domain (spec §6.2 item 1)."""
    c = np.zeros(m)
    support = rng.choice(m, max(1, math.ceil(share * m)), replace=False)
    c[support] = rng.multinomial(n, np.full(support.size, 1 / support.size))
    return c


def test_estimator_is_unbiased_exactly():
    # E[c] = P^T c*, so (15) maps the expected counts back to c* (Prop. 2, (16))
    P = baselines.exponential(grid(4, 3), 1.0).matrix
    cstar = np.arange(12.0)
    np.testing.assert_allclose(est.estimate_counts(P, P.T @ cstar), cstar, atol=1e-10)


@pytest.mark.parametrize("make", ["le_line", "em_grid"])
def test_mse_and_range_error_theory_vs_monte_carlo(make):
    rng = np.random.default_rng(2024)
    if make == "le_line":
        inst = line(30)
        P = L.le(inst, 1.5).matrix
    else:
        inst = grid(5, 5)
        P = baselines.exponential(inst, 1.5).matrix
    cstar = sparse_counts(inst.K, 10 * inst.K, rng)
    mc = est.monte_carlo(P, cstar, rng, reps=300, metric=inst.metric, r=1.0)
    theory = est.mse_theory(P, cstar)
    assert abs(mc["mse"] - theory) <= 4 * mc["mse_se"]
    err = est.range_error(P, cstar, inst.metric, r=1.0)
    assert abs(mc["range_error"] - err) <= 4 * mc["range_error_se"]


def test_per_item_mse_matches_direct_variance():
    # (19) against Var(ĉ_k) computed from the multinomial covariance of the counts
    P = L.le(line(6), 0.8).matrix
    cstar = np.array([3.0, 0, 5, 1, 0, 2])
    Q = np.linalg.inv(P.T)
    cov = sum(c * (np.diag(P[i]) - np.outer(P[i], P[i])) for i, c in enumerate(cstar))
    np.testing.assert_allclose(est.mse_per_item(P, cstar), np.diag(Q @ cov @ Q.T), atol=1e-9)


@pytest.mark.parametrize("m, eps", [(5, 0.5), (40, 2.0)])
def test_grr_closed_form_22_equals_20(m, eps):
    n = 10 * m
    P = baselines.randomized_response(m, eps).matrix
    a, b = est.grr_ab(eps, m)
    cstar = np.random.default_rng(0).multinomial(n, np.ones(m) / m).astype(float)
    assert est.mse_theory(P, cstar) == pytest.approx(est.mse_grr(n, m, a, b), rel=1e-10)
    # (21): the inversion estimator is (c_k - n b)/(a - b)
    c = np.arange(m, dtype=float)
    np.testing.assert_allclose(est.estimate_counts(P, c), (c - c.sum() * b) / (a - b), atol=1e-9)


def test_oue_total_mse_is_22():
    # per-bit variance [c*_k p(1-p) + (n-c*_k) q(1-q)]/(p-q)^2 summed (spec §3.3) == (22) at (1/2, q)
    eps, m, n = 1.0, 20, 200
    p, q = est.oue_ab(eps)
    cstar = np.random.default_rng(1).multinomial(n, np.ones(m) / m)
    direct = np.sum(cstar * p * (1 - p) + (n - cstar) * q * (1 - q)) / (p - q) ** 2
    assert est.mse_grr(n, m, p, q) == pytest.approx(direct, rel=1e-12)


def test_raw_counts_mse_vs_monte_carlo():
    rng = np.random.default_rng(7)
    inst = line(20)
    P = L.le(inst, 1.0).matrix
    cstar = sparse_counts(20, 200, rng, share=0.1)
    mc = est.monte_carlo(P, cstar, rng, reps=400, estimator="raw")
    assert abs(mc["mse"] - est.mse_raw(P, cstar)) <= 4 * mc["mse_se"]


def test_range_error_empirical_definition():
    d = line(5).metric
    x = np.array([0, 1, 2, 3])
    y = np.array([0, 3, 2, 1])  # distances 0, 2, 0, 2
    assert est.range_error_empirical(x, y, d, r=0) == 0.5
    assert est.range_error_empirical(x, y, d, r=2) == 0.0
    assert est.range_error_empirical(x, y, d, r=1.5) == 0.5


def test_project_simplex_against_bisection():
    rng = np.random.default_rng(11)
    for _ in range(5):
        v = rng.normal(size=15) * 10
        total = 20.0
        x = est.project_simplex(v, total)
        lo, hi = v.min() - total, v.max()  # find tau with sum(max(v - tau, 0)) = total
        for _ in range(200):
            tau = 0.5 * (lo + hi)
            lo, hi = (tau, hi) if np.maximum(v - tau, 0).sum() > total else (lo, tau)
        np.testing.assert_allclose(x, np.maximum(v - tau, 0), atol=1e-9)


def test_projection_never_increases_error():
    rng = np.random.default_rng(5)
    P = L.le(line(20), 0.5).matrix
    cstar = sparse_counts(20, 200, rng)
    raw = est.monte_carlo(P, cstar, np.random.default_rng(9), reps=50)
    proj = est.monte_carlo(P, cstar, np.random.default_rng(9), reps=50, project=True)
    assert proj["mse"] <= raw["mse"]


def test_bad_inputs():
    P = np.eye(3)
    with pytest.raises(InputError, match="Generator"):
        est.reported_counts(P, [1, 1, 1], rng=np.random)
    with pytest.raises(InputError, match="singular"):
        est.estimate_counts(np.full((3, 3), 1 / 3), [1, 1, 1])
    with pytest.raises(InputError, match="entries"):
        est.mse_theory(P, [1, 1])
    with pytest.raises(InputError, match="a != b"):
        est.mse_grr(10, 3, 0.2, 0.2)
