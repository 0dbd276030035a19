"""Estimators and MSE formulas of lpmech.models.lip.lip_estimation, checked three ways: the closed-form
MSE, the direct estimator-table MSE, and Monte Carlo (within 4.5 standard errors), plus the papers'
context-free formulas ([001] eq. (42), [004] eq. (41), Wang et al. 2017)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lpmech.errors import InputError
from lpmech.models import lip
from lpmech.models.lip import lip_closed_forms as cf
from lpmech.models.lip import lip_estimation as est


@pytest.mark.parametrize("task", ["sum", "hist", "survey"])
def test_mmse_formula_equals_table_and_monte_carlo(task):
    rng = np.random.default_rng(12)
    P = np.array([0.05, 0.15, 0.3, 0.5])
    V = est.value_matrix(task, 4, [0, 1, 3, 7])
    Q = lip.solve(P, 0.9, V=V).mechanism.matrix
    table = est.mmse_estimator(Q, P, V)
    exact = est.mmse_mse(Q, P, V)
    assert est.estimator_mse(Q, P, V, table) == pytest.approx(exact, rel=1e-10)
    mc, se = est.monte_carlo_mse(Q, P, V, table, 200_000, rng)
    assert abs(mc - exact) <= 4.5 * se
    # the MMSE estimator is Bayes-unbiased: E[X̂] = E[V_X] ([001] §III-C)
    lam = P @ Q
    assert lam @ table == pytest.approx(P @ V, abs=1e-12)


def test_binary_context_free_matches_paper_formula_and_mc():
    rng = np.random.default_rng(1)
    for eps in (0.5, 1.0, 3.0):
        Q = cf.binary_rr(eps)
        P = [0.7, 0.3]
        # [001] eq. (42): N e^ε/(e^ε − 1)², whatever the prior
        assert est.unbiased_mse(Q, P, [0, 1]) == pytest.approx(est.rr_context_free_mse(eps), rel=1e-10)
    assert est.rr_context_free_mse(1.0) == pytest.approx(0.920674, abs=1e-6)  # spec §12.1
    Q = cf.binary_rr(1.0)
    T = est.unbiased_estimator(Q, [0, 1])
    mc, se = est.monte_carlo_mse(Q, [0.6, 0.4], [0, 1], T, 200_000, rng)
    assert abs(mc - 0.920674) <= 4.5 * se


def test_grr_unbiased_count_variance_matches_wang_formula():
    d, eps = 5, 1.0
    Q = cf.randomized_response(d, eps).matrix
    P = np.array([0.1, 0.2, 0.3, 0.25, 0.15])
    T = est.unbiased_estimator(Q, np.eye(d))  # per-output unbiased indicator estimates
    for v in range(d):  # per-value count variance
        mse_v = est.estimator_mse(Q, P, np.eye(d)[:, [v]], T[:, [v]])
        assert mse_v == pytest.approx(est.grr_count_variance(d, eps, P[v]), rel=1e-10)
    assert est.grr_count_variance(5, 1.0) == pytest.approx(1.936764, abs=1e-6)  # spec §12.1


def test_oue_and_olh_variances():
    assert est.oue_count_variance(1.0) == pytest.approx(3.682694, abs=1e-6)  # spec §12.1
    # OUE per-bit unbiased estimator of a zero-frequency value: q(1−q)/(p−q)² with p = 1/2
    q01, q10 = cf.oue_ldp(1.0)
    Qb = cf.binary_channel(q01, q10)
    T = est.unbiased_estimator(Qb, [0, 1])
    assert est.estimator_mse(Qb, [1.0, 0.0], [0, 1], T) == pytest.approx(
        est.oue_count_variance(1.0), rel=1e-10)
    # OLH with g = e^ε + 1 (not rounded) is exactly OUE's variance (Wang et al. 2017)
    E = math.e
    p, q = E / (E + E), 1 / (E + 1)
    assert q * (1 - q) / (p - q) ** 2 == pytest.approx(est.oue_count_variance(1.0), rel=1e-12)
    assert est.olh_count_variance(1.0, 4) > est.oue_count_variance(1.0)


def test_weighted_sum_scales_and_shift_invariance():
    P = np.array([0.2, 0.3, 0.5])
    Q = lip.solve(P, 1.0).mechanism.matrix
    base = est.mmse_mse(Q, P, est.value_matrix("sum", 3))
    w = est.mmse_mse(Q, P, est.value_matrix("sum", 3, weight=2.5, offset=-7.0))
    assert w == pytest.approx(2.5 ** 2 * base, rel=1e-10)


def test_bad_inputs():
    with pytest.raises(InputError):
        est.value_matrix("median", 3)
    with pytest.raises(InputError):
        est.value_matrix("sum", 3, [0, 1])
    with pytest.raises(InputError, match="singular"):
        est.unbiased_estimator(np.full((2, 2), 0.5), [0, 1])
    with pytest.raises(InputError, match="Generator"):
        est.monte_carlo_mse(np.eye(2), [0.5, 0.5], [0, 1], [[0], [1]], 10, 0)
