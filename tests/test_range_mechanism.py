"""E_{L¹}-LDP range mechanism and quantiles (seed 003 §4): checked against explicit matrices,
brute-force enumeration, Monte Carlo and the spec's worked numbers."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from lpmech.errors import InputError
from lpmech.models.matrix import range_mechanism as rm


def _cells(sizes):
    """0-based cells in ind order (dimension 1 fastest), built independently of the module."""
    return [c[::-1] for c in itertools.product(*[range(s) for s in reversed(sizes)])]


def _reports(bits, sizes, eps=1.0):
    return rm.Reports(tuple(np.asarray(b, np.int8) for b in bits), tuple(sizes), eps)


def test_worked_example_observations():
    # §4.1: n = 2, D = 2, m = 3; R_i rows are dimensions
    R1, R2 = [[1, -1, 1], [-1, -1, -1]], [[1, 1, -1], [1, -1, -1]]
    rep = _reports([[R1[0], R2[0]], [R1[1], R2[1]]], (3, 3))
    assert rm.observations(rep).tolist() == [0, 2, -2, -2, 0, 0, -2, 0, 0]


@pytest.mark.parametrize("sizes", [(1,), (2,), (3,), (5,), (3, 3), (2, 3, 4), (1, 3)])
def test_transform_inverse_lemma2_and_entry_formula(sizes):
    B, Bi = rm.transform(sizes), rm.inverse(sizes)
    assert np.allclose(B @ Bi, np.eye(len(B)))
    assert np.allclose(Bi, np.linalg.inv(B))
    cells = _cells(sizes)
    for i, x in enumerate(cells):  # B[x, x'] = (−1)^{#{d: x'[d] > x[d]}}
        for j, y in enumerate(cells):
            assert B[i, j] == (-1) ** sum(b > a for a, b in zip(x, y))
    if min(sizes) >= 2:
        nz = np.abs(Bi[np.abs(Bi) > 1e-12])
        assert (np.count_nonzero(np.abs(Bi) > 1e-12, axis=1) == 2 ** len(sizes)).all()
        assert np.allclose(nz, 2.0 ** -len(sizes))


def test_expected_observations_are_q_to_the_D_times_B_c():
    # noiseless bits: Σ_i ⊗ b_{i,d} must equal B c exactly (Eq. 5 with q = 1)
    sizes = (3, 4, 2)
    rng = np.random.default_rng(0)
    X = np.stack([rng.integers(0, m, 25) for m in sizes], axis=1)
    o = rm.observations(_reports(rm.threshold_bits(X, sizes), sizes))
    idx = X[:, 0] + 3 * X[:, 1] + 12 * X[:, 2]
    assert np.array_equal(o, rm.transform(sizes) @ np.bincount(idx, minlength=24))


@pytest.mark.parametrize("sizes", [(4,), (3, 3), (2, 3, 4)])
def test_estimators_equal_explicit_matrix_inversion(sizes):
    rng = np.random.default_rng(1)
    X = np.stack([rng.integers(0, m, 40) for m in sizes], axis=1)
    rep = rm.encode(X, sizes, 0.8, rng)
    explicit = rm.kappa(0.8) ** len(sizes) * np.linalg.solve(rm.transform(sizes), rm.observations(rep))
    assert np.allclose(rm.frequencies(rep), explicit)
    assert np.allclose(rm.frequencies_explicit(rep), explicit)
    cells = np.array(_cells(sizes))
    for _ in range(15):  # Eq. 8 factorised == Σ over the cells of R of the explicit ĉ
        lo = np.array([rng.integers(0, m) for m in sizes])
        hi = np.array([rng.integers(a, m) for a, m in zip(lo, sizes)])
        inside = ((cells >= lo) & (cells <= hi)).all(axis=1)
        est = rm.range_query(rep, np.stack([lo, hi], axis=1))
        assert est[0] == pytest.approx(explicit[inside].sum(), abs=1e-9)


def test_range_vectors_are_row_sums_of_the_inverse():
    m = 6
    Bi = rm.base_inverse(m)
    for lo in range(m):
        for hi in range(lo, m):
            g = rm.range_vector(lo, hi, m)
            assert np.allclose(g, Bi[lo:hi + 1].sum(axis=0))
            assert np.count_nonzero(g) == (1 if (lo, hi) == (0, m - 1) else 2)


def test_proposition4_exact_likelihood_ratio_by_enumeration():
    sizes, eps = (3, 2), 0.7
    pf = rm.flip_probability(eps)
    n_bits = sum(sizes)
    outputs = np.array(list(itertools.product([-1, 1], repeat=n_bits)))
    cells = _cells(sizes)

    def probs(x):
        b = np.concatenate(rm.threshold_bits(np.array([x]), sizes), axis=1)[0]
        same = (outputs == b).sum(axis=1)
        return (1 - pf) ** same * pf ** (n_bits - same)

    P = {x: probs(x) for x in cells}
    for x, y in itertools.product(cells, repeat=2):
        worst = np.log(P[x] / P[y]).max()
        assert worst == pytest.approx(eps * sum(abs(a - b) for a, b in zip(x, y)), abs=1e-12)


def test_unbiased_and_exact_variance_match_monte_carlo_and_paper_bound_fails():
    sizes, eps, n, reps = (4, 4), 1.0, 50, 2500
    X = np.tile([1, 2], (n, 1))  # everyone in one cell: the concentrated case of spec §3.2
    ranges = np.array([[[1, 1], [2, 2]], [[0, 2], [1, 3]], [[0, 3], [1, 2]], [[0, 3], [0, 3]],
                       [[0, 0], [3, 3]]])
    rng = np.random.default_rng(11)
    est = np.array([rm.range_query(rm.encode(X, sizes, eps, rng), ranges) for _ in range(reps)])
    truth = rm.true_counts(X, ranges, sizes)
    var = rm.range_variance(X, ranges, sizes, eps)
    assert (np.abs(est.mean(axis=0) - truth) <= 4.5 * np.sqrt(var / reps)).all()
    emp = est.var(axis=0, ddof=1)
    # the sample variance of a sum of many bounded terms: relative s.e. ≈ sqrt(2/reps) (plus kurtosis)
    assert np.allclose(emp, var, rtol=0.15)
    assert var[3] == pytest.approx(n * (rm.kappa(eps) ** 4 - 1))  # whole domain: n(κ^{2D} − 1)
    assert var[3] == pytest.approx(1046.4, abs=0.05)  # spec §3.2 table
    bound = rm.paper_bound(2, rm.nontrivial_dims(ranges, sizes), eps, n)
    assert bound[0] == pytest.approx(261.6, abs=0.05)
    assert emp[0] > 1.1 * bound[0] and emp[1] > 1.1 * bound[1]  # the paper's "bound" is exceeded
    assert (var <= rm.valid_bound(2, rm.nontrivial_dims(ranges, sizes), eps, n) * (1 + 1e-12)).all()


def test_average_cell_variance_and_fig2_numbers():
    sizes, eps = (3, 4), 1.3
    rng = np.random.default_rng(2)
    X = np.stack([rng.integers(0, m, 17) for m in sizes], axis=1)
    cells = np.array(_cells(sizes))
    singles = np.stack([cells, cells], axis=2)
    avg = rm.range_variance(X, singles, sizes, eps).mean()
    assert avg == pytest.approx(rm.average_cell_variance(sizes, eps, 17))
    # spec §4.2 prediction for Fig. 2(b): D = 6, m = 10, n = 1000, ε = 1
    assert rm.average_cell_variance((10,) * 6, 1.0, 1000) == pytest.approx(5.353e4, rel=1e-3)
    assert rm.paper_bound(6, 6, 1.0, 1000) == pytest.approx(1.647e5, rel=1e-3)


def test_dummy_value_padding_makes_every_dimension_nontrivial():
    sizes, eps, n = (3, 3), 1.0, 20
    X = np.zeros((n, 2), int)
    whole = np.array([[[0, 2], [0, 2]]])
    assert rm.nontrivial_dims(whole, sizes)[0] == 0
    assert rm.nontrivial_dims(whole, (4, 4))[0] == 2
    q2, k = rm.bias(eps) ** 2, rm.kappa(eps)
    padded = rm.range_variance(X, whole, (4, 4), eps)[0]
    assert padded == pytest.approx(n * (k ** 4 * ((1 + q2) / 2) ** 2 - 1))
    assert padded < rm.range_variance(X, whole, sizes, eps)[0] == pytest.approx(n * (k ** 4 - 1))
    rep = rm.encode(X, sizes, eps, np.random.default_rng(0), pad=True)
    assert rep.sizes == (4, 4)
    # the dummy value's bit is +1 for every real value: it carries no information
    assert all((b[:, 3] == 1).all() for b in rm.threshold_bits(np.array(_cells(sizes)), (4, 4)))


def test_weighted_queries_public_and_private():
    sizes, eps, n = (5, 3), 1.0, 60
    rng = np.random.default_rng(4)
    X = np.stack([rng.integers(0, m, n) for m in sizes], axis=1)
    w = rng.choice([0.5, 2.0, 3.0], n)
    ranges = np.array([[[1, 3], [0, 1]], [[0, 4], [2, 2]]])
    rep = rm.encode(X, sizes, eps, rng)
    grouped = sum(v * rm.range_query(
        rm.Reports(tuple(b[w == v] for b in rep.bits), rep.sizes, eps), ranges) for v in np.unique(w))
    assert np.allclose(rm.range_query(rep, ranges, weights=w), grouped)
    assert np.allclose(rm.range_variance(X, ranges, sizes, eps, weights=w),
                       sum(v ** 2 * rm.range_variance(X[w == v], ranges, sizes, eps) for v in np.unique(w)))
    # private weights in [0, Δ]: unbiased, variance as derived
    delta, reps = 3.0, 2500
    wc = rng.uniform(0, delta, n)
    est = np.array([rm.private_weighted_query(rm.encode_private_weights(X, wc, delta, sizes, eps, rng),
                                              ranges, delta) for _ in range(reps)])
    truth = rm.true_counts(X, ranges, sizes, weights=wc)
    var = rm.private_weighted_variance(X, wc, delta, ranges, sizes, eps)
    assert (np.abs(est.mean(axis=0) - truth) <= 4.5 * np.sqrt(var / reps)).all()
    assert np.allclose(est.var(axis=0, ddof=1), var, rtol=0.15)


def test_quantile_search_and_bounds():
    assert rm.quantile_error_bound(1.0, 100_000, 1024, 0.05, kind="paper") == pytest.approx(0.0474, abs=5e-5)
    assert rm.lemma1_bound(1.0, 100_000, 0.05, two_sided=False) == pytest.approx(0.0167, abs=5e-5)
    assert rm.quantile_error_bound(1.0, 10_000, 100, 0.05, kind="paper") == pytest.approx(0.145, abs=5e-4)
    rng = np.random.default_rng(5)
    m, n = 64, 3000
    x = np.minimum(rng.geometric(0.05, n) - 1, m - 1)[:, None]
    rep = rm.encode(x, (m,), 1.0, rng)
    sig = rm.percentiles_hat(rep)
    ranges = np.array([[[0, j - 1]] for j in range(1, m)])
    assert np.allclose(sig[1:m], rm.range_query(rep, ranges) / n)
    # nearly noiseless (ε = 40): the search returns the exact p-quantile
    exact = rm.encode(x, (m,), 40.0, rng)
    for p in (0.1, 0.5, 0.9, 1.0):
        assert rm.quantile(exact, p) == int(np.sort(x[:, 0])[math.ceil(p * n) - 1])
    # the proved bound holds with probability ≥ 1 − δ (it is conservative: expect no failure)
    delta, eps = 0.1, 1.0
    bound = rm.quantile_error_bound(eps, n, m, delta)
    errs = [rm.quantile_error(x, rm.quantile(rm.encode(x, (m,), eps, rng), 0.5), 0.5) for _ in range(100)]
    assert np.mean(np.array(errs) > bound) <= delta


def test_input_errors():
    with pytest.raises(InputError, match="out of the domain"):
        rm.encode(np.array([[3]]), (3,), 1.0, np.random.default_rng(0))
    with pytest.raises(InputError, match="epsilon"):
        rm.encode(np.array([[1]]), (3,), -1.0, np.random.default_rng(0))
    rep = rm.encode(np.array([[1, 1]]), (3, 3), 1.0, np.random.default_rng(0))
    with pytest.raises(InputError, match="ranges must satisfy"):
        rm.range_query(rep, [[2, 1], [0, 2]])
    with pytest.raises(InputError, match="weights must lie"):
        rm.encode_private_weights(np.array([[1]]), [5.0], 2.0, (3,), 1.0, np.random.default_rng(0))
    with pytest.raises(InputError, match="one-dimensional"):
        rm.quantile(rep, 0.5)


def test_fig2_hh_oue_baseline_variance_matches_monte_carlo():
    # the eps-LDP comparator of benchmarks/mm_fig2.py: its derived exact variance against simulation
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "mm_fig2.py"
    spec = importlib.util.spec_from_file_location("mm_fig2", path)
    fig2 = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fig2)
    m, eps, n, reps = 10, 1.0, 40, 6000
    rng = np.random.default_rng(9)
    x = rng.integers(0, m, n)
    lo, hi = 2, 7
    # binary tree over 16 ≥ 10: non-root levels of node sizes 1, 2, 4, 8 (T = 4); [2,7] = [2,3]∪[4,7]
    nodes = [(2, 2), (4, 4)]  # (start, size)
    T, p, q = 4, 0.5, 1 / (math.exp(eps) + 1)
    level = {1: 0, 2: 1, 4: 2, 8: 3}
    est = np.zeros(reps)
    L = rng.integers(0, T, (reps, n))
    for start, size in nodes:
        own = (x >= start) & (x < start + size)
        y = rng.random((reps, n)) < np.where(own, p, q)
        est += T * ((y - q) * (L == level[size])).sum(axis=1) / (p - q)
    c = int(((x >= lo) & (x <= hi)).sum())
    assert fig2._decompose(lo, hi, m, 2) == len(nodes)
    var = fig2.hh_oue_variance(1, m, eps, n, np.array([[[lo, hi]]]), [c], b=2)
    assert abs(est.mean() - c) <= 4.5 * math.sqrt(var / reps)
    assert est.var(ddof=1) == pytest.approx(var, rel=0.1)


def test_usable_epsilon_range_keeps_every_variance_finite():
    for D, n in ((1, 1), (3, 1000), (6, 10**6)):
        lo, hi = rm.usable_epsilon_range(D, n)
        assert math.isfinite(n * rm.kappa(lo) ** (2 * D)) and n * rm.kappa(lo) ** (2 * D) <= 1.01e300
        assert n * (2 / (lo / 4)) ** (2 * D) > 1e300  # a quarter of it would overflow
        assert rm.check_range_epsilon(lo * 1.001, D, n) == lo * 1.001 and hi == 700
        with pytest.raises(InputError, match="usable range"):
            rm.check_range_epsilon(lo / 4, D, n)
    with pytest.raises(InputError, match=r"epsilon 1e\+155 is outside the usable range"):
        rm.check_range_epsilon(1e155)
    # no overflow near the top: p = e^{-ε}/(1 + e^{-ε}) > 0
    assert rm.flip_probability(700.0) == pytest.approx(math.exp(-700.0), rel=1e-12)
    assert rm.flip_probability(1.0) == pytest.approx(1 / (math.e + 1), rel=1e-15)


def test_zipf_sample_and_random_ranges_follow_their_laws():
    rng = np.random.default_rng(4)
    X = rm.zipf_values(60_000, (5, 3), rng, 1.1)
    for d, m in enumerate((5, 3)):
        pmf = np.arange(1, m + 1) ** -1.1
        pmf /= pmf.sum()
        freq = np.bincount(X[:, d], minlength=m) / len(X)
        assert np.all(np.abs(freq - pmf) <= 5 * np.sqrt(pmf * (1 - pmf) / len(X)))
    R = rm.random_ranges(30_000, (4,), rng)[:, 0]
    pairs = [(lo, hi) for lo in range(4) for hi in range(lo, 4)]  # the 10 intervals, uniform
    counts = np.array([np.sum((R[:, 0] == lo) & (R[:, 1] == hi)) for lo, hi in pairs])
    assert counts.sum() == 30_000
    assert np.all(np.abs(counts - 3000) <= 5 * math.sqrt(3000 * 0.9))


def test_true_quantile_is_the_smallest_value_reaching_p():
    from fractions import Fraction

    rng = np.random.default_rng(5)
    for x in (np.arange(10), rng.integers(0, 7, 37), np.array([3, 3, 3])):
        for p in (0.1, 0.3, 0.5, 0.9, 1.0):
            fp = Fraction(p).limit_denominator(1000)
            want = min(v for v in set(x.tolist()) if Fraction(int((x <= v).sum()), len(x)) >= fp)
            assert rm.true_quantile(x, p) == want


def test_sampled_bit_sums_have_the_encoders_distribution():
    # o_k = Σ_i r_i[k]: mean q Σ_i b_i[k], variance n(1 − q²), independent columns; the O(m) sampler
    # against those moments and against the encoder's own column sums
    rng = np.random.default_rng(8)
    m, eps, reps = 6, 0.9, 4000
    x = rng.integers(0, m, 50)
    b = np.where(np.arange(m)[None, :] < x[:, None], -1.0, 1.0).sum(axis=0)
    q = math.tanh(eps / 2)
    S = np.array([rm.sample_bit_sums(x, m, eps, rng).o for _ in range(reps)])
    E = np.array([rm.encode(x[:, None], (m,), eps, rng).bits[0].sum(axis=0) for _ in range(reps)])
    var = len(x) * (1 - q * q)
    for sums in (S, E):
        assert np.all(np.abs(sums.mean(0) - q * b) <= 4.5 * math.sqrt(var / reps))
        assert np.all(np.abs(sums.var(0, ddof=1) / var - 1) <= 4.5 * math.sqrt(2 / reps))
        C = np.corrcoef(sums[:, :-1].T)  # the last column is constant before flips, still random
        assert np.all(np.abs(C[np.triu_indices(m - 1, 1)]) <= 4.5 / math.sqrt(reps))
    rep = rm.encode(x[:, None], (m,), eps, rng)
    for p in (0.2, 0.5, 0.8):
        assert rm.quantile(rep, p) == rm.quantile(rm.bit_sums(rep), p)
