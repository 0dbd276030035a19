"""Seed 000 baselines appended to lpmech.models.baselines: OUE, RR under d-privacy, sampled PL."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from lpmech import estimation as est
from lpmech.errors import CertificationError, InputError
from lpmech.instance import grid, line
from lpmech.mechanism import realized_epsilon
from lpmech.models import baselines


def test_oue_certificate_by_enumeration():
    eps, m = 0.9, 3
    o = baselines.oue(eps, m)
    # brute force: probability of every bit vector for every input, worst ratio over outputs
    probs = np.array([[np.prod([(o.p if j == x else o.q) if bit else (1 - (o.p if j == x else o.q))
                                for j, bit in enumerate(y)])
                       for y in itertools.product([0, 1], repeat=m)] for x in range(m)])
    worst = max(np.log(probs[a] / probs[b]).max() for a in range(m) for b in range(m))
    assert o.certificate.realized_epsilon == pytest.approx(worst, rel=1e-12)
    assert worst == pytest.approx(eps, rel=1e-12) and o.certificate.satisfied


def test_oue_estimator_unbiased_and_mse_monte_carlo():
    rng = np.random.default_rng(42)
    eps, m, n = 1.0, 30, 300
    o = baselines.oue(eps, m)
    cstar = rng.multinomial(n, np.ones(m) / m)
    sq, total = [], np.zeros(m)
    reps = 400
    for _ in range(reps):
        chat = o.estimate(o.sample_counts(cstar, rng), n)
        sq.append(np.sum((chat - cstar) ** 2))
        total += chat
    sq = np.array(sq)
    se = sq.std(ddof=1) / math.sqrt(reps)
    assert abs(sq.mean() - o.mse(n)) <= 4 * se
    assert o.mse(n) == pytest.approx(est.mse_grr(n, m, *est.oue_ab(eps)), rel=1e-12)
    # spec §5.6: OU MSE/n at m = 100, eps = 1 is 369.3
    assert baselines.oue(1.0, 100).mse(1000) / 1000 == pytest.approx(369.3, rel=1e-4)


def test_rr_certified_under_d_privacy():
    eps = 1.2
    mech = baselines.randomized_response_dprivate(grid(3, 3), eps)
    assert mech.certificate.notion == "geo-ind"
    # d_min = 1: realised d-privacy epsilon equals the LDP epsilon, computed by brute force
    assert mech.certificate.realized_epsilon == pytest.approx(
        realized_epsilon(baselines.randomized_response(9, eps).matrix, grid(3, 3).metric), rel=1e-12)
    assert mech.certificate.realized_epsilon == pytest.approx(eps, rel=1e-9)
    with pytest.raises(CertificationError, match="normalise"):
        baselines.randomized_response_dprivate(grid(3, 3, cell=0.5), eps)


def test_em_half_epsilon_leaks_less():
    # spec §4 item 4: EM(eps/2) on 1-D m=100 at eps=1 realises only 0.714
    mech = baselines.exponential(line(100), 1.0)
    assert mech.certificate.realized_epsilon == pytest.approx(0.714, abs=1e-3)


def test_planar_laplace_sample_matches_exact_matrix():
    W, H, eps = 5, 5, 1.0
    exact = baselines.planar_laplace(grid(W, H), eps).matrix
    rng = np.random.default_rng(8)
    n = 40_000
    true = 7  # (row 1, col 2)
    r, c = baselines.planar_laplace_sample(np.full(n, true // W), np.full(n, true % W), W, H, eps, rng)
    freq = np.bincount(r * W + c, minlength=W * H) / n
    se = np.sqrt(exact[true] * (1 - exact[true]) / n)
    assert np.all(np.abs(freq - exact[true]) <= 5 * se + 1e-12)


def test_oue_bad_inputs():
    with pytest.raises(InputError):
        baselines.oue(1.0, 0)
    with pytest.raises(InputError, match="Generator"):
        baselines.oue(1.0, 3).sample_counts([1, 2, 3], rng=None)
