"""Tests of lpmech.mechanism: validation, the privacy certifiers against brute-force loops and
closed forms, clean-up / Geo-Ind closure, sampling and expected loss."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from scipy.stats import binom

from lpmech.errors import CertificationError, InputError
from lpmech.mechanism import (
    EPS_RTOL,
    Mechanism,
    certify,
    clean,
    geo_ind_closure,
    ldp_epsilon,
    realized_epsilon,
)

# ------------------------------------------------------------------------- brute-force references


def brute_epsilon(z, d, gamma=math.inf):
    """Smallest ε with z[i,k] ≤ e^{ε d_ij} z[j,k] over neighbours (d_ij ≤ γ, i ≠ j), by loops."""
    K, n = z.shape
    worst = 0.0
    for i in range(K):
        for j in range(K):
            if i == j or d[i, j] > gamma:
                continue
            for k in range(n):
                a, b = z[i, k], z[j, k]
                if a <= b:
                    continue  # ratio ≤ 1: fine for every ε ≥ 0
                if b == 0 or d[i, j] == 0:
                    return math.inf
                worst = max(worst, math.log(a / b) / d[i, j])
    return worst


def brute_ldp(z):
    worst = 0.0
    for k in range(z.shape[1]):
        for i in range(z.shape[0]):
            for j in range(z.shape[0]):
                if z[i, k] > z[j, k]:
                    worst = max(worst, math.inf if z[j, k] == 0 else math.log(z[i, k] / z[j, k]))
    return worst


def brute_violations(z, d, eps, gamma=math.inf, tol=1e-12):
    """(worst, count violated, sum of violations, count of constraints) of eqs. (32)–(33)."""
    worst, n_bad, total, n = -math.inf, 0, 0.0, 0
    for i in range(z.shape[0]):
        for j in range(z.shape[0]):
            if i == j or d[i, j] > gamma:
                continue
            for k in range(z.shape[1]):
                if z[j, k] == 0:
                    v = z[i, k]  # e^{ε d}·0 = 0 however large ε d is
                else:  # e^{ε d} z_jk through logs, so that it never overflows to inf·0
                    t = eps * d[i, j] + math.log(z[j, k])
                    v = z[i, k] - math.exp(t) if t < 700 else -math.inf
                n += 1
                worst = max(worst, v)
                if v > tol:
                    n_bad += 1
                    total += v
    return worst, n_bad, total, n


def random_metric(rng, K, kind):
    if kind == "euclid":
        xy = rng.random((K, 2)) * 3
        return cdist(xy, xy)
    if kind == "pseudo":  # repeated points: zero off-diagonal distances
        xy = rng.random((K, 2))
        xy[1] = xy[0]
        return cdist(xy, xy)
    # shortest paths of a random complete weighted graph (Floyd–Warshall by hand)
    w = rng.uniform(0.2, 2.0, (K, K))
    d = np.minimum(w, w.T)
    np.fill_diagonal(d, 0.0)
    for m in range(K):
        d = np.minimum(d, d[:, m, None] + d[None, m, :])
    return d


def exponential_mechanism(d, eps):
    z = np.exp(-eps * d / 2)
    return z / z.sum(axis=1, keepdims=True)


def truncated_geometric(m, eps):
    """Ghosh et al.'s truncated geometric mechanism on {0..m-1}: every adjacent ratio is e^{±ε}."""
    a = math.exp(-eps)
    z = np.empty((m, m))
    for i in range(m):
        for k in range(m):
            if k == 0:
                z[i, k] = a**i / (1 + a)
            elif k == m - 1:
                z[i, k] = a ** (m - 1 - i) / (1 + a)
            else:
                z[i, k] = (1 - a) / (1 + a) * a ** abs(i - k)
    return z


def line_metric(m, cell=1.0):
    x = np.arange(m) * cell
    return np.abs(x[:, None] - x[None, :])


def randomized_response(K, eps):
    e = math.exp(eps)
    return (np.full((K, K), 1.0) + (e - 1) * np.eye(K)) / (e + K - 1)


# ---------------------------------------------------------------------------------- validation


def test_mechanism_negative_entry():
    with pytest.raises(InputError, match=r"mechanism entry \(1, 0\) is negative \(-0.1\)"):
        Mechanism([[0.5, 0.5], [-0.1, 1.1]])


def test_mechanism_row_not_summing_to_one():
    with pytest.raises(InputError, match=r"mechanism row 1 sums to 0.9, not 1"):
        Mechanism([[0.5, 0.5], [0.4, 0.5]])


def test_mechanism_nan():
    with pytest.raises(InputError, match="non-finite entry"):
        Mechanism([[0.5, np.nan], [0.5, 0.5]])


@pytest.mark.parametrize("bad", [[0.5, 0.5], np.ones((1, 1, 1)), np.zeros((0, 3))])
def test_mechanism_not_2d(bad):
    with pytest.raises(InputError, match=r"non-empty 2-D matrix, got shape"):
        Mechanism(bad)


def test_mechanism_matrix_read_only_copy():
    src = randomized_response(3, 1.0)
    mech = Mechanism(src)
    src[0, 0] = 5.0
    assert mech.matrix[0, 0] == pytest.approx(math.e / (math.e + 2))
    with pytest.raises(ValueError, match="read-only"):
        mech.matrix[0, 0] = 0.0


# ---------------------------------------------------------------------------- realised epsilon


@pytest.mark.parametrize("kind", ["euclid", "pseudo", "graph"])
@pytest.mark.parametrize("seed", range(4))
def test_realized_epsilon_matches_brute_force(kind, seed):
    rng = np.random.default_rng(seed)
    K, n = 6, 5
    d = random_metric(rng, K, kind)
    z = rng.random((K, n)) + 0.05
    if kind == "pseudo":  # make the rows of the two coincident points equal, else ε = inf
        z[1] = z[0]
    z /= z.sum(axis=1, keepdims=True)
    for gamma in (math.inf, float(np.median(d[d > 0])), 1e-3):
        got = realized_epsilon(z, d, gamma)
        exp = brute_epsilon(z, d, gamma)
        assert got == pytest.approx(exp, rel=1e-12, abs=1e-14)
    # with γ tiny only the coincident points (d = 0, equal rows) are neighbours: ε = 0, not nan
    assert realized_epsilon(z, d, 1e-3) == 0.0


def test_realized_epsilon_zero_entries_give_inf():
    rng = np.random.default_rng(11)
    d = random_metric(rng, 5, "euclid")
    z = rng.random((5, 4))
    z[2, 1] = 0.0  # z[i,1] > 0 = z[2,1] for every other neighbour i
    z /= z.sum(axis=1, keepdims=True)
    assert brute_epsilon(z, d) == math.inf
    assert realized_epsilon(z, d) == math.inf
    # with γ below every distance there are no neighbour pairs, hence no constraint
    assert realized_epsilon(z, d, gamma=float(d[d > 0].min()) / 2) == 0.0
    # a whole zero column is no constraint at all
    z2 = rng.random((5, 4))
    z2[:, 3] = 0.0
    z2 /= z2.sum(axis=1, keepdims=True)
    assert realized_epsilon(z2, d) == pytest.approx(brute_epsilon(z2, d), rel=1e-12)
    assert math.isfinite(realized_epsilon(z2, d))
    # distinct rows at distance 0 are infinitely distinguishable
    d0 = d.copy()
    d0[0, 1] = d0[1, 0] = 0.0
    assert realized_epsilon(z2, d0) == math.inf


def test_realized_epsilon_sparse_random_with_gamma():
    for seed in range(6):
        rng = np.random.default_rng(100 + seed)
        K = 7
        d = random_metric(rng, K, "graph")
        z = rng.random((K, 6)) * (rng.random((K, 6)) > 0.3)
        z[:, 0] += 0.01
        z /= z.sum(axis=1, keepdims=True)
        for gamma in (math.inf, 0.9, 0.5):
            got, exp = realized_epsilon(z, d, gamma), brute_epsilon(z, d, gamma)
            assert got == exp or got == pytest.approx(exp, rel=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_exponential_mechanism_is_eps_private(seed):
    rng = np.random.default_rng(seed)
    d = random_metric(rng, 8, "graph")
    eps = 1.3
    z = exponential_mechanism(d, eps)
    real = realized_epsilon(z, d)
    assert real == pytest.approx(brute_epsilon(z, d), rel=1e-12)
    assert real <= eps * (1 + 1e-12)


@pytest.mark.parametrize(("m", "eps"), [(2, 1.0), (5, 0.8), (9, 2.0), (30, 0.3)])
def test_exponential_mechanism_on_line_closed_form(m, eps):
    """Derivation. On {1..m} with d = |i − j|, let a = e^{−ε/2} and N_i = Σ_k a^{|i−k|}. For i < j
    the largest ratio z_ik / z_jk is at k ≤ i: a^{−(j−i)} N_j / N_i, so the pair needs
    ε/2 + |log N_j − log N_i| / (j − i). N_i = (1 + a − a^i − a^{m+1−i}) / (1 − a) is concave in i,
    so log N is concave and its steepest chord is the end step (1, 2): the realised ε is
    ε/2 + log(N_2 / N_1), with N_1 = (1 − a^m)/(1 − a), N_2 = a + (1 − a^{m−1})/(1 − a);
    strictly below ε for every finite m (it is ε/2 on the infinite line)."""
    d = line_metric(m)
    z = exponential_mechanism(d, eps)
    a = math.exp(-eps / 2)
    n1 = (1 - a**m) / (1 - a)
    n2 = a + (1 - a ** (m - 1)) / (1 - a)
    expected = eps / 2 + math.log(n2 / n1)
    assert realized_epsilon(z, d) == pytest.approx(expected, rel=1e-12)
    assert expected < eps


@pytest.mark.parametrize(("m", "eps", "cell"), [(2, 0.5, 1.0), (6, 1.0, 0.5), (12, 3.0, 2.0)])
def test_truncated_geometric_on_line_realises_exactly_eps(m, eps, cell):
    # adjacent rows differ by exactly e^{±ε·cell} in every column (and that ratio is the maximum
    # over all pairs, since for |i − j| = t every ratio is e^{±ε·cell·t} or smaller)
    z = truncated_geometric(m, eps * cell)
    d = line_metric(m, cell)
    Mechanism(z)  # row-stochastic
    assert realized_epsilon(z, d) == pytest.approx(eps, rel=1e-12)
    assert brute_epsilon(z, d) == pytest.approx(eps, rel=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_ldp_epsilon_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    z = rng.random((5, 4)) + 0.01
    z /= z.sum(axis=1, keepdims=True)
    assert ldp_epsilon(z) == pytest.approx(brute_ldp(z), rel=1e-12)
    # LDP is d-privacy for the discrete metric
    assert ldp_epsilon(z) == pytest.approx(realized_epsilon(z, 1 - np.eye(5)), rel=1e-12)
    z[3, 2] = 0.0
    z /= z.sum(axis=1, keepdims=True)
    assert ldp_epsilon(z) == brute_ldp(z) == math.inf


@pytest.mark.parametrize(("K", "eps"), [(2, 0.5), (4, 1.0), (10, 2.5)])
def test_ldp_epsilon_randomized_response(K, eps):
    z = randomized_response(K, eps)
    assert ldp_epsilon(z) == pytest.approx(eps, rel=1e-12)
    assert certify(z, None, eps, notion="ldp").realized_epsilon == pytest.approx(eps, rel=1e-12)


# ------------------------------------------------------------------------------------- certify


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("gamma", [math.inf, 1.0])
def test_certify_violations_match_brute_force(seed, gamma):
    rng = np.random.default_rng(seed)
    m, eps = 7, 0.9
    d = line_metric(m, 0.5)
    z = truncated_geometric(m, eps * 0.5)  # tight at ε: perturbations violate
    z = z * (1 + 0.05 * rng.standard_normal(z.shape) * (rng.random(z.shape) < 0.4))
    z /= z.sum(axis=1, keepdims=True)
    cert = certify(z, d, eps, gamma)
    worst, n_bad, total, n = brute_violations(z, d, eps, gamma)
    assert n_bad > 0  # the perturbation did violate something
    assert cert.n_constraints == n
    n_pairs = sum(1 for i in range(m) for j in range(m) if i != j and d[i, j] <= gamma)
    assert n == n_pairs * m
    assert cert.worst_violation == pytest.approx(worst, rel=1e-12)
    assert cert.violation_ratio == pytest.approx(n_bad / n, rel=1e-12)
    assert cert.violation_magnitude == pytest.approx(total / n_bad, rel=1e-10)
    assert cert.realized_epsilon == pytest.approx(brute_epsilon(z, d, gamma), rel=1e-12)
    assert cert.satisfied == (brute_epsilon(z, d, gamma) <= eps * (1 + EPS_RTOL))


@pytest.mark.parametrize("seed", range(3))
def test_certify_with_unused_outputs_matches_brute_force(seed):
    """A mechanism from an LP uses few outputs: the certifiers skip the columns of zeros, and
    every figure (worst violation 0 from those columns, counts over all columns, realised ε) still
    equals the brute loops; so do the separation's violated entries (output indices kept)."""
    from lpmech.design.geoind import most_violated

    rng = np.random.default_rng(seed)
    m, eps = 8, 0.7
    d = random_metric(rng, m, "euclid")
    z = np.zeros((m, m))
    used = rng.choice(m, 3, replace=False)
    z[:, used] = rng.uniform(0.2, 1.0, (m, 3))
    z /= z.sum(axis=1, keepdims=True)
    cert = certify(z, d, eps)
    worst, n_bad, total, n = brute_violations(z, d, eps)
    assert cert.n_constraints == n == m * (m - 1) * m
    assert cert.worst_violation == pytest.approx(worst, rel=1e-12, abs=0.0)
    assert cert.violation_ratio == pytest.approx(n_bad / n, rel=1e-12)
    assert cert.violation_magnitude == pytest.approx(total / max(n_bad, 1), rel=1e-10)
    assert cert.realized_epsilon == pytest.approx(brute_epsilon(z, d), rel=1e-12)
    F = np.exp(-eps * d)
    np.fill_diagonal(F, 0.0)
    i, j, k, v = most_violated(F, z, tol=1e-12)
    brute = {}
    for kk in range(m):
        for jj in range(m):
            vals = F[:, jj] * z[:, kk] - z[jj, kk]
            if vals.max() > 1e-12:
                brute[(jj, kk)] = (int(vals.argmax()), vals.max())
    assert brute and n_bad > 0  # the check sees violations
    assert {(int(a), int(b)) for a, b in zip(j, k)} == set(brute)
    for a, b, c, val in zip(i, j, k, v):
        assert brute[(int(b), int(c))] == (int(a), pytest.approx(val, rel=1e-12))


def test_certify_feasible_matrix_has_no_violation():
    rng = np.random.default_rng(2)
    d = random_metric(rng, 6, "euclid")
    z = exponential_mechanism(d, 1.0)
    cert = certify(z, d, 1.0)
    worst, n_bad, _, n = brute_violations(z, d, 1.0)
    assert n_bad == 0 and cert.violation_ratio == 0.0 and cert.violation_magnitude == 0.0
    assert cert.worst_violation == pytest.approx(worst, rel=1e-12) and worst < 0
    assert cert.n_constraints == n == 6 * 5 * 6
    assert cert.satisfied


@pytest.mark.parametrize(("delta", "ok"), [(0.0, True), (0.9e-6, True), (1.1e-6, False),
                                           (-0.5, True)])
def test_certify_satisfied_at_relative_tolerance(delta, ok):
    eps = 1.7
    r = eps * (1 + delta)  # 2×2 randomised response realises exactly r (both ratios e^r)
    z = randomized_response(2, r)
    d = 1 - np.eye(2)
    assert brute_epsilon(z, d) == pytest.approx(r, rel=1e-13)
    cert = certify(z, d, eps)
    assert cert.realized_epsilon == pytest.approx(r, rel=1e-13)
    assert cert.satisfied is ok
    assert certify(z, d, eps, notion="ldp").satisfied is ok


@pytest.mark.parametrize("eps", [0.0, -1.0, math.inf, math.nan])
def test_certify_bad_epsilon(eps):
    with pytest.raises(InputError, match="epsilon must be a positive finite number"):
        certify(np.eye(2), 1 - np.eye(2), eps)


@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_certify_large_eps_times_distance():
    d = np.array([[0.0, 100.0], [100.0, 0.0]])
    z = np.eye(2)  # z[0,0] = 1 > e^{1000}·z[1,0] = 0: violated by 1 (both pairs)
    worst, n_bad, total, n = brute_violations(z, d, 10.0)
    assert (worst, n_bad, total, n) == (1.0, 2, 2.0, 4)
    cert = certify(z, d, 10.0)
    assert cert.worst_violation == 1.0
    assert cert.violation_ratio == 0.5


# ----------------------------------------------------------------------------- clean / closure


def closure_by_fixpoint(z, d, eps, gamma=math.inf):
    """Least W ≥ Z with W[i,k] ≥ e^{−ε d_ij} W[j,k] for neighbours: raise entries until stable."""
    w = z.copy()
    K = z.shape[0]
    changed = True
    while changed:
        changed = False
        for i in range(K):
            for j in range(K):
                if i != j and d[i, j] <= gamma:
                    need = math.exp(-eps * d[i, j]) * w[j]
                    if (need > w[i] * (1 + 1e-15)).any():
                        w[i] = np.maximum(w[i], need)
                        changed = True
    return w


@pytest.mark.parametrize("gamma", [math.inf, 1.0])
def test_clean_repairs_solver_noise(gamma):
    rng = np.random.default_rng(21)
    m, eps = 8, 0.7
    d = line_metric(m)
    g = truncated_geometric(m, eps)
    z = np.column_stack([g, np.zeros(m)])  # an output never used: an all-zero column is feasible
    assert brute_epsilon(z, d, gamma) == pytest.approx(eps, rel=1e-12)
    raw = z + 1e-10 * rng.standard_normal(z.shape)
    raw[:, -1] = 0.0
    raw[3, -1] = 2e-10  # a tiny positive entry whose neighbours are exactly 0 (ε = inf)
    raw[5, -1] = -3e-10  # a tiny negative
    assert brute_epsilon(np.clip(raw, 0, None), d, gamma) == math.inf
    out = clean(raw, d, eps, gamma)
    assert (out >= 0).all()
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=0, atol=1e-14)
    assert brute_epsilon(out, d, gamma) <= eps * (1 + 1e-6)
    assert np.abs(out - z).max() < 1e-8
    Mechanism(out)
    assert certify(out, d, eps, gamma).satisfied


def test_clean_clips_tiny_negatives_without_metric():
    rng = np.random.default_rng(22)
    z = rng.random((4, 5))
    z[1, 2] = 0.0
    z /= z.sum(axis=1, keepdims=True)
    raw = z.copy()
    raw[1, 2] = -5e-7
    out = clean(raw)
    assert out[1, 2] == 0.0
    np.testing.assert_allclose(out, z, rtol=1e-14, atol=1e-16)


def test_clean_leaves_feasible_matrix_alone():
    d = line_metric(6, 0.5)
    z = truncated_geometric(6, 0.5)
    np.testing.assert_allclose(clean(z, d, 1.0), z, rtol=1e-14)


def test_clean_rejects_large_negative():
    z = np.array([[0.5, 0.5 + 2e-6, -2e-6], [0.3, 0.3, 0.4]])
    with pytest.raises(CertificationError, match="negative entry -2e-06 beyond noise"):
        clean(z, 1 - np.eye(2), 1.0)
    with pytest.raises(CertificationError, match="non-finite"):
        clean(np.array([[np.nan, 1.0]]))


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("gamma", [math.inf, 1.2, 0.6])
def test_geo_ind_closure_is_the_least_closed_matrix(seed, gamma):
    rng = np.random.default_rng(seed)
    K, n, eps = 6, 5, 0.8
    d = random_metric(rng, K, "euclid" if seed % 2 else "graph")
    z = rng.random((K, n)) * (rng.random((K, n)) > 0.4)
    w = geo_ind_closure(z, d, eps, gamma)
    ref = closure_by_fixpoint(z, d, eps, gamma)
    np.testing.assert_allclose(w, ref, rtol=1e-12, atol=1e-300)
    # defining property: w ≥ z, and every neighbour constraint holds
    assert (w >= z).all()
    for i in range(K):
        for j in range(K):
            if i != j and d[i, j] <= gamma:
                assert (w[i] >= math.exp(-eps * d[i, j]) * w[j] * (1 - 1e-12)).all()
    # minimal: every raised entry is forced by some neighbour's entry (tight)
    for i in range(K):
        for k in range(n):
            if w[i, k] > z[i, k]:
                forced = max(math.exp(-eps * d[i, j]) * w[j, k] for j in range(K)
                             if j != i and d[i, j] <= gamma)
                assert w[i, k] == pytest.approx(forced, rel=1e-12)


def test_geo_ind_closure_nonmetric():
    d = np.array([[0.0, 1.0, 5.0], [1.0, 0.0, 1.0], [5.0, 1.0, 0.0]])  # d02 > d01 + d12
    z = np.eye(3)
    w = geo_ind_closure(z, d, 1.0)
    np.testing.assert_allclose(w, closure_by_fixpoint(z, d, 1.0), rtol=1e-12)
    assert brute_epsilon(w, d) <= 1.0 + 1e-12


# ------------------------------------------------------------------------------ sampling, loss


def test_sample_frequencies_match_rows():
    z = np.array([[0.5, 0.3, 0.2, 0.0], [0.05, 0.0, 0.15, 0.8], [0.25, 0.25, 0.25, 0.25]])
    mech = Mechanism(z)
    rng = np.random.default_rng(1234)
    N = 60_000
    idx = np.repeat(np.arange(3), N)
    rng.shuffle(idx)
    out = mech.sample(idx, np.random.default_rng(99))
    assert out.shape == idx.shape and out.dtype.kind in "iu"
    for i in range(3):
        counts = np.bincount(out[idx == i], minlength=4)
        for k in range(4):
            lo, hi = binom.interval(1 - 1e-6, N, z[i, k])
            assert lo <= counts[k] <= hi, (i, k, counts[k], lo, hi)
    # a 2-D index array keeps its shape; a scalar gives an int
    assert mech.sample(np.zeros((3, 2), dtype=int), np.random.default_rng(0)).shape == (3, 2)
    s = mech.sample(1, np.random.default_rng(0))
    assert isinstance(s, int) and s in (0, 2, 3)


def test_sample_seed_reproducible():
    mech = Mechanism(randomized_response(5, 1.0))
    idx = np.arange(5).repeat(200)
    a = mech.sample(idx, np.random.default_rng(7))
    b = mech.sample(idx, np.random.default_rng(7))
    c = mech.sample(idx, np.random.default_rng(8))
    np.testing.assert_array_equal(a, b)
    assert (a != c).any()


@pytest.mark.parametrize("rng", [None, 7, np.random.RandomState(0)])
def test_sample_needs_generator(rng):
    mech = Mechanism(randomized_response(3, 1.0))
    with pytest.raises(InputError, match=r"explicit numpy\.random\.Generator"):
        mech.sample([0, 1], rng)


@pytest.mark.parametrize("idx", [[0, 3], [-1], [0.5]])
def test_sample_bad_index(idx):
    mech = Mechanism(randomized_response(3, 1.0))
    with pytest.raises(InputError, match=r"integers in \[0, 3\)"):
        mech.sample(np.array(idx), np.random.default_rng(0))


def test_expected_loss_matches_double_loop():
    rng = np.random.default_rng(31)
    K, n = 5, 7
    z = rng.random((K, n))
    z /= z.sum(axis=1, keepdims=True)
    p = rng.random(K)
    p /= p.sum()
    L = rng.uniform(0, 4, (K, n))
    exp = sum(p[i] * L[i, k] * z[i, k] for i in range(K) for k in range(n))
    assert Mechanism(z).expected_loss(p, L) == pytest.approx(exp, rel=1e-13)
    with pytest.raises(InputError, match="do not fit"):
        Mechanism(z).expected_loss(p[:-1], L)
