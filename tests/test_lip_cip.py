"""CIP ([001] §IV-D): the certifier against Bayes' rule over every database, the optimum against an
independent evaluation and the vertex method, [001] Thm 6 (LIP on S ⇒ CIP), the global-prior window;
and the exact LP pricing (any single-prior cone, rank-one task) against ray enumeration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from lpmech.errors import LpmechError
from lpmech.models import lip
from lpmech.models.lip import lip_cip
from lpmech.models.lip.lip_optimize import _SectionLP, cone_rays, price_rank1_lp


def _bayes_cip_epsilon(Q, p):
    """Realised CIP ε by Bayes' rule over all 2^N databases (independent of the Poisson-binomial T)."""
    N = len(p)
    joint1 = np.zeros((N, Q.shape[1]))  # Pr(D_i = 1, Y = y)
    lam = np.zeros(Q.shape[1])
    for bits in itertools.product((0, 1), repeat=N):
        b = np.array(bits)
        pr = float(np.prod(np.where(b == 1, p, 1 - p)))
        row = pr * Q[b.sum()]
        lam += row
        joint1 += b[:, None] * row[None, :]
    m = lam > 0
    sec = (p > 0) & (p < 1)  # a user of prior 0 or 1 has no secret
    post1 = joint1[sec][:, m] / lam[m]
    r1 = post1 / p[sec, None]
    r0 = (1 - post1) / (1 - p[sec])[:, None]
    return float(np.abs(np.log(np.r_[r1, r0])).max())


def _bayes_mse(Q, p):
    """E[(S − E[S | Y])²] by enumeration of the databases."""
    N = len(p)
    js = np.zeros(Q.shape[1])
    js2 = np.zeros(Q.shape[1])
    lam = np.zeros(Q.shape[1])
    for bits in itertools.product((0, 1), repeat=N):
        b = np.array(bits)
        pr = float(np.prod(np.where(b == 1, p, 1 - p)))
        s = b.sum()
        lam += pr * Q[s]
        js += pr * s * Q[s]
        js2 += pr * s * s * Q[s]
    m = lam > 0
    return float((js2[m] - js[m] ** 2 / lam[m]).sum())


@pytest.mark.parametrize("seed", range(3))
def test_cip_certifier_equals_bayes_rule(seed):
    rng = np.random.default_rng(seed)
    N = 4
    p = rng.uniform(0.05, 0.95, N)
    Q = rng.dirichlet(np.ones(3), size=N + 1)
    assert lip_cip.cip_epsilon(Q, p) == pytest.approx(_bayes_cip_epsilon(Q, p), rel=1e-10)
    PS = lip_cip.sum_distribution(p)
    brute = np.zeros(N + 1)
    for bits in itertools.product((0, 1), repeat=N):
        brute[sum(bits)] += np.prod([q if b else 1 - q for q, b in zip(p, bits, strict=True)])
    assert np.allclose(PS, brute, atol=1e-15)


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_cip_optimum_certified_and_equal_to_vertex_and_enumeration(eps):
    rng = np.random.default_rng(7)
    p = rng.uniform(0, 1, 5)
    v = lip_cip.solve(p, eps, method="vertex")
    e = lip_cip.solve(p, eps, method="exact")
    for r in (v, e):
        assert r.status == "optimal" and r.certificate.notion == "cip"
        assert _bayes_cip_epsilon(r.mechanism.matrix, p) <= eps * (1 + 1e-6)
        assert r.objective == pytest.approx(_bayes_mse(r.mechanism.matrix, p), rel=1e-8, abs=1e-12)
    assert e.objective == pytest.approx(v.objective, rel=1e-6)
    assert e.bound <= v.objective + 1e-9


def test_lip_on_the_sum_implies_cip_theorem_6():
    """[001] Thm 6: ε-LIP of the channel on S (prior of S) ⇒ CIP; so the CIP optimum is no worse."""
    rng = np.random.default_rng(1)
    p = rng.uniform(0.1, 0.9, 5)
    PS = lip_cip.sum_distribution(p)
    for eps in (0.5, 1.5):
        lipS = lip.solve(PS, eps, values=np.arange(6.0))
        assert lip_cip.cip_epsilon(lipS.mechanism.matrix, p) <= eps * (1 + 1e-9)
        assert _bayes_cip_epsilon(lipS.mechanism.matrix, p) <= eps * (1 + 1e-9)
        assert lip_cip.solve(p, eps).objective <= lipS.objective + 1e-9


def test_global_prior_cip_is_the_posterior_mean_window():
    N, q, eps = 6, 0.3, 1.0
    r = lip_cip.solve(np.full(N, q), eps)
    Q = r.mechanism.matrix
    PS = lip_cip.sum_distribution(np.full(N, q))
    lam = PS @ Q
    means = (np.arange(N + 1) * PS) @ Q / np.where(lam > 0, lam, 1)
    L, U = lip_cip.mean_window(N, q, eps)
    assert (means[lam > 1e-12] >= L - 1e-9).all() and (means[lam > 1e-12] <= U + 1e-9).all()
    # at p = 1/2 the printed one-sided window of Prop. 5 is the full one
    assert lip_cip.mean_window(10, 0.5, 1.0, printed=True) == pytest.approx(lip_cip.mean_window(10, 0.5, 1.0))
    hi = lip_cip.mean_window(10, 0.2, 1.0, printed=True)[1]
    assert hi > lip_cip.mean_window(10, 0.2, 1.0)[1]  # elsewhere it misses the binding side


def test_paper_mode_reports_cip_violation_for_heterogeneous_priors():
    p = np.array([0.02, 0.5, 0.97, 0.4, 0.6])
    r = lip_cip.solve(p, 1.0, mode="paper")
    assert r.status == "closed_form"
    real = _bayes_cip_epsilon(r.mechanism.matrix, p)
    assert r.certificate.realized_epsilon == pytest.approx(real, rel=1e-9)
    assert r.stats["paper_feasible"] is (real <= 1.0 * (1 + 1e-6))


@pytest.mark.parametrize("seed", range(4))
def test_lp_rank1_pricing_equals_ray_enumeration(seed):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(3, 7))
    P = rng.dirichlet(np.ones(d))
    if seed % 3 == 0:
        A = lip.ldp_rows(d, 1.2)
    elif seed % 3 == 1:  # latent-secret LIP: P a mixture of the rows of T
        T = rng.dirichlet(np.ones(d), size=3)
        P = rng.dirichlet(np.ones(3)) @ T
        A = lip.lip_rows(P, 0.8, T)
    else:  # CIP on the sum of d − 1 users
        p = rng.uniform(0.1, 0.9, d - 1)
        P = lip_cip.sum_distribution(p)
        A = lip_cip.cip_rows(p, 0.7)
    w, y = rng.normal(size=d) * P, rng.normal(size=d)
    R = cone_rays(A, d)
    C = R / (R @ P)[:, None]  # the section's vertices, normalised to P·c = 1
    brute = max((w @ c) ** 2 + y @ c for c in C)
    upper, _, gains, _ = price_rank1_lp(_SectionLP(A, P), w, y)
    assert gains.max() == pytest.approx(brute, rel=1e-7, abs=1e-9)
    assert upper >= brute - 1e-9 and upper <= brute + 1e-7 * max(1.0, abs(brute))


def test_exact_method_for_latent_ldp_di_equals_vertex():
    rng = np.random.default_rng(2)
    d = 6
    P = rng.dirichlet(np.ones(d))
    T = rng.dirichlet(np.ones(d), size=3)
    pg = rng.dirichlet(np.ones(3))
    Pl = pg @ T
    cases = [dict(prior=P, notion="ldp"), dict(prior=Pl, T=T),
             dict(prior=P, notion="di", epsilon=1.2 * math.log(P.max() / P.min()) + 0.1)]
    for kw in cases:
        eps = kw.pop("epsilon", 1.3)
        prior = kw.pop("prior")
        v = lip.solve(prior, eps, method="vertex", **kw)
        e = lip.solve(prior, eps, method="exact", **kw)
        assert e.status == "optimal" and e.stats["pricing"] == "rank1-lp"
        assert e.objective == pytest.approx(v.objective, rel=1e-6)
        assert e.bound <= v.objective + 1e-9


@pytest.mark.parametrize(("N", "p", "eps"), [(25, 0.3, 0.5), (30, 0.4, 1.0), (12, 0.5, 1.0)])
def test_censored_window_equals_the_lp_optimum_for_a_global_prior(N, p, eps):
    """The closed form (reveal the middle, pool each tail at its bound) against the CIP column
    generation on the users' rows (global prior: the window is exactly CIP), and against the LP of
    the paper's printed program; its channel's posterior means lie in the window, and its MSE is the
    MMSE evaluation of that channel."""
    f = lip_cip.sum_distribution(np.full(N, p))
    s = np.arange(N + 1.0)
    full = lip_cip.censored_window(f, *lip_cip.mean_window(N, p, eps))
    lp = lip_cip.solve(np.full(N, p), eps, method="exact")
    assert lp.status == "optimal"
    assert full["mse"] == pytest.approx(lp.objective, rel=1e-7)
    assert lp.bound <= full["mse"] * (1 + 1e-9) + 1e-15
    L, U = lip_cip.mean_window(N, p, eps, printed=True)
    printed = lip_cip.censored_window(f, L, U)
    Q = printed["Q"]
    lam = f @ Q
    means = (s * f) @ Q / lam
    assert means.min() >= L - 1e-9 and means.max() <= U + 1e-9
    assert np.allclose(Q.sum(axis=1), 1.0)
    assert printed["mse"] == pytest.approx(_bayes_free_mse(Q, f), rel=1e-9, abs=1e-15)
    paper_lp = lip_cip.solve(np.full(N, p), eps, mode="paper", method="exact")
    assert paper_lp.stats["method"] == "exact"
    assert printed["mse"] == pytest.approx(paper_lp.stats["mse"], rel=1e-6, abs=1e-12)
    auto = lip_cip.solve(np.full(N, p), eps, mode="paper")
    assert auto.stats["method"] == "censored window" and auto.gap == 0.0
    assert auto.objective == pytest.approx(printed["mse"], rel=1e-12)


def _bayes_free_mse(Q, f):
    """E[(S − E[S | Y])²] of a channel Q[s, y] on a pmf f, by the joint table."""
    s = np.arange(f.size, dtype=float)
    joint = f[:, None] * Q
    lam = joint.sum(axis=0)
    m = (s @ joint) / np.where(lam > 0, lam, 1.0)
    return float((joint * (s[:, None] - m[None, :]) ** 2).sum())


def test_censored_window_large_n_is_certified_by_its_convex_certificate():
    """N = 500 (the middle panel of [001] Fig. 8): the closed form's MSE equals E_f[s² − φ] for
    the convex certificate φ (chords of s² through the window ends and the boundary atoms), an
    evaluation that does not use the pools; and the paper solve returns it in seconds."""
    N, p, eps = 500, 0.45, 0.3
    f = lip_cip.sum_distribution(np.full(N, p))
    s = np.arange(N + 1.0)
    L, U = lip_cip.mean_window(N, p, eps, printed=True)
    cw = lip_cip.censored_window(f, L, U)
    k, ku = cw["k"], cw["k_up"]
    assert 0 < k < ku < N
    phi = s ** 2
    phi = np.where(s <= k, L * L + (L + k) * (s - L), phi)  # the chord through (L, L²), (k, k²)
    phi = np.where(s >= ku, U * U + (U + ku) * (s - U), phi)
    assert np.all(np.diff(phi, 2) >= -1e-9)  # convex
    # E_f[s² − φ], the MSE bound, without cancellation: s² − chord = (s − L)(s − k) below k
    gap = np.where(s <= k, (s - L) * (s - k), 0.0) + np.where(s >= ku, (s - U) * (s - ku), 0.0)
    value = float(f @ gap)
    assert cw["mse"] == pytest.approx(value, rel=1e-6, abs=1e-12)
    r = lip_cip.solve(np.full(N, p), eps, mode="paper")
    assert r.objective == pytest.approx(cw["mse"], rel=1e-12) and r.gap == 0.0


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
@pytest.mark.parametrize("eps", [0.2, 1.0, 3.0])
@pytest.mark.parametrize("N", [6, 10, 25])
def test_paper_mode_closed_form_equals_the_printed_lp_across_a_sweep(N, p, eps):
    """Paper mode's default (the closed form, or the LP where its pools would meet) against the
    printed program solved by the vertex method / column generation, across N, the prior and ε."""
    auto = lip_cip.solve(np.full(N, p), eps, mode="paper")
    try:
        lp = lip_cip.solve(np.full(N, p), eps, mode="paper", method="vertex" if N + 1 <= 8 else "exact")
    except LpmechError as exc:  # the LP gave up on the binomial tails: it must say so, not return
        lp = exc.result  # None when its master failed outright
        assert lp is None or lp.stats["stop"] != "optimal" or lp.gap > 1e-6
    if lp is not None:  # the closed form is never worse than any mechanism of the printed program
        assert auto.objective <= lp.objective * (1 + 1e-9) + 1e-12
    if lp is not None and lp.status == "closed_form":  # and equal to the certified one
        assert auto.objective == pytest.approx(lp.objective, rel=1e-6, abs=1e-9 * p * (1 - p) * N)
        assert auto.bound <= lp.objective * (1 + 1e-9) + 1e-12
    # its window holds: every posterior mean under Binomial(N, p) within the printed [L, U]
    f = lip_cip.sum_distribution(np.full(N, p))
    Q = auto.mechanism.matrix
    lam = f @ Q
    means = (np.arange(N + 1.0) * f) @ Q / lam
    L, U = lip_cip.mean_window(N, p, eps, printed=True)
    assert means[lam > 0].min() >= L * (1 - 1e-8) and means[lam > 0].max() <= U * (1 + 1e-8)


# --- verified mode beyond the column generation: the censored construction and its lower bound ---


def _exact_posteriors(Q, p):
    """Pr(D_i = 1 | Y = y) with exact rational arithmetic on the float priors (Fractions): the
    Poisson-binomial laws by exact convolution, independent of the float recursion; the channel is
    applied in floats afterwards."""
    from fractions import Fraction

    N = len(p)
    P = [Fraction(float(x)) for x in p]

    def law(ps):
        f = [Fraction(1)]
        for q in ps:
            g = [Fraction(0)] * (len(f) + 1)
            for k, v in enumerate(f):
                g[k] += v * (1 - q)
                g[k + 1] += v * q
            f = g
        return f

    fS = np.array([float(v) for v in law(P)])
    joint = np.zeros((N, N + 1))
    for i in range(N):
        rest = law(P[:i] + P[i + 1:])
        joint[i, 1:] = [float(P[i] * v) for v in rest]
    lam = fS @ Q
    return (joint @ Q) / lam, lam, fS


def _integer_pools(N, k1, k2):
    """Channel S → Y: {0..k1} into one output, k1+1..k2−1 revealed, {k2..N} into another."""
    cols = [np.r_[np.ones(k1 + 1), np.zeros(N - k1)]]
    cols += [np.eye(N + 1)[s] for s in range(k1 + 1, k2)]
    cols.append(np.r_[np.zeros(k2), np.ones(N + 1 - k2)])
    return np.column_stack(cols)


@pytest.mark.parametrize(("N", "seed"), [(6, 0), (9, 1), (9, 2)])
@pytest.mark.parametrize("eps", [0.7, 1.5, 3.0])
def test_censored_users_is_cip_by_bayes_rule(N, seed, eps):
    """The heterogeneous censored construction and solve(method="censored") (with its pair LP) are
    CIP by Bayes' rule over all 2^N databases, and their MSE is the MSE by enumeration."""
    p = np.random.default_rng(seed).uniform(0, 1, N)
    cu = lip_cip.censored_users(p, eps)
    if cu is None:  # "the pools meet" (small N and ε): checked by enumeration of the integer pools
        # the minimal pools (fractional share θ, θ' of their last atoms) lie inside any CIP pair of
        # integer pools {0..k1}, {k2..N} (k1 < k2, values between them revealed), so if the
        # construction does not exist, no such mechanism is CIP by Bayes' rule either
        with np.errstate(divide="ignore"):  # a revealed 0 or N: posterior 0 or 1, ε = ∞
            best = min(_bayes_cip_epsilon(_integer_pools(N, k1, k2), p)
                       for k1 in range(N + 1) for k2 in range(k1 + 1, N + 1))
        assert best > eps * (1 + 1e-9)
        with pytest.raises(LpmechError, match="pools meet"):
            lip_cip.solve(p, eps, method="censored")
        return
    Q = cu["Q"]
    assert _bayes_cip_epsilon(Q, p) <= eps * (1 + 1e-9)
    assert cu["mse"] == pytest.approx(_bayes_mse(Q, p), rel=1e-9, abs=1e-15)
    try:
        r = lip_cip.solve(p, eps, method="censored")
    except LpmechError as exc:  # at small N the bound is often too loose to certify: bracketed
        r = exc.result
    assert r.stats["method"].startswith("censored users")
    assert _bayes_cip_epsilon(r.mechanism.matrix, p) <= eps * (1 + 1e-6)
    assert r.objective == pytest.approx(_bayes_mse(r.mechanism.matrix, p), rel=1e-8, abs=1e-15)
    assert r.objective <= cu["mse"] * (1 + 1e-12)


@pytest.mark.parametrize("N", [12, 18, 25])
def test_censored_bound_brackets_the_column_generation_optimum(N):
    """Where the exact column generation runs: lower bound ≤ its certified optimum ≤ the censored
    mechanisms. One pool per tail is not optimal for distinct priors (the optimum pools single tail
    values with partners, across the tails too): the construction is strictly above the optimum in
    some cell; the pair LP closes part of that gap."""
    above = 0
    for seed in range(2):
        p = np.random.default_rng(40 + seed).uniform(0, 1, N)
        for eps in (0.7, 1.5, 3.0):
            try:
                opt = lip_cip.solve(p, eps, method="exact")
            except LpmechError:
                continue
            assert opt.status == "optimal"
            try:
                c = lip_cip.solve(p, eps, method="censored")
            except LpmechError as exc:
                c = exc.result
                if c is None:  # the pools meet
                    continue
            assert c.bound <= opt.objective * (1 + 1e-7) + 1e-12
            for j in range(3):  # every relaxation is a bound: single users with the mean window
                lb = lip_cip.cip_lower_bound(p, eps, users=[j])["bound"]
                assert lb <= opt.objective * (1 + 1e-7) + 1e-12
            assert opt.objective <= c.objective * (1 + 1e-7) + 1e-12
            assert c.objective <= c.stats["mse_construction"] * (1 + 1e-12)
            above += c.stats["mse_construction"] > opt.objective * 1.001
    assert above > 0


@pytest.mark.parametrize(("N", "q", "eps"), [(40, 0.3, 1.0), (100, 0.6, 0.5), (60, 0.1, 2.0)])
def test_censored_users_and_bound_for_a_global_prior_equal_the_closed_form(N, q, eps):
    """For a global prior every user's window is the window on the posterior mean (a_i(s) = s/N), so
    the construction is :func:`censored_window` and the bound, on a relaxation that is then exact,
    equals it (the closed form is certified by its own convex-order certificate above)."""
    p = np.full(N, q)
    f = lip_cip.sum_distribution(p)
    cw = lip_cip.censored_window(f, *lip_cip.mean_window(N, q, eps))
    cu = lip_cip.censored_users(p, eps)
    assert cu["mse"] == pytest.approx(cw["mse"], rel=1e-10)
    assert lip_cip.cip_lower_bound(p, eps, users=[0])["bound"] == pytest.approx(cw["mse"], rel=1e-9)


def test_verified_cip_beyond_the_column_generation_n60():
    """N = 60 (beyond the column generation, whose master fails from N ≈ 40): solve(mode="verified")
    picks the censored mechanism, certified here by a relative gap; its CIP and MSE are checked
    against exact rational Poisson-binomial laws."""
    N, eps = 60, 1.5
    p = np.random.default_rng(3).uniform(0, 1, N)
    r = lip_cip.solve(p, eps)
    assert r.status == "optimal" and r.stats["method"].startswith("censored users")
    assert r.stats["certified_by"] == "relative gap" and r.stats["gap_rel_true"] <= 1e-6
    assert 0 < r.bound <= r.objective
    post, lam, fS = _exact_posteriors(r.mechanism.matrix, p)
    m = lam > 0
    real = max(np.abs(np.log(post[:, m] / p[:, None])).max(),
               np.abs(np.log((1 - post[:, m]) / (1 - p)[:, None])).max())
    assert real <= eps * (1 + 1e-6)
    assert r.objective == pytest.approx(_bayes_free_mse(r.mechanism.matrix, fS), rel=1e-7)


@pytest.mark.slow
def test_verified_cip_n500_certified():
    """[001] Fig. 8's middle panel, verified mode: N = 500 users, priors ~ U[0, 1], ε = 3. Certified
    by a relative gap ≤ 1e-6 (not only by the absolute floor); MSE by the joint table."""
    N, eps = 500, 3.0
    p = np.random.default_rng(0).uniform(0, 1, N)
    r = lip_cip.solve(p, eps)
    assert r.status == "optimal" and r.stats["certified_by"] == "relative gap"
    assert 0 < r.bound <= r.objective and r.stats["gap_rel_true"] <= 1e-6
    assert r.certificate.realized_epsilon <= eps * (1 + 1e-6)
    f = lip_cip.sum_distribution(p)
    assert r.objective == pytest.approx(_bayes_free_mse(r.mechanism.matrix, f), rel=1e-9)


def test_censored_users_with_public_users_pools_from_the_support():
    """Users of prior 0 or 1 cut the support of S to [#(p = 1), N − #(p = 0)]: the pools start at its
    ends (a channel that revealed the first value of the support would expose every other user); CIP
    by Bayes' rule, bound ≤ the column generation's optimum ≤ the censored mechanism."""
    p = np.random.default_rng(6).uniform(0, 1, 9)
    p[0], p[1] = 1.0, 0.0
    for eps in (1.0, 2.0):
        cu = lip_cip.censored_users(p, eps)
        assert cu["lower"][0] == 0.0 and cu["lower"][1] == 1.0  # S ≥ 1: the pool starts at s = 1
        assert _bayes_cip_epsilon(cu["Q"], p) <= eps * (1 + 1e-9)
        opt = lip_cip.solve(p, eps, method="exact")
        try:
            c = lip_cip.solve(p, eps, method="censored")
        except LpmechError as exc:
            c = exc.result
        assert _bayes_cip_epsilon(c.mechanism.matrix, p) <= eps * (1 + 1e-6)
        assert c.bound <= opt.objective * (1 + 1e-7) <= c.objective * (1 + 1e-7) + 1e-12


@pytest.mark.parametrize("N,seed", [(200, 1), (500, 2)])
def test_tilted_posteriors_equal_exact_laws(N, seed):
    """The tilted DFT posteriors a_i(s), b_i(s) = 1 − a_i(s) of every user equal the exact
    leave-one-out laws (convolution, :func:`lip_cip.cip_correlation`) from the far tails (Pr(S = s)
    down to ~1e-100) to the middle; b on its own keeps its relative precision where a ≈ 1."""
    p = np.random.default_rng(seed).uniform(0, 1, N)
    PS, T = lip_cip.cip_correlation(p)
    q = np.unique(p)
    for s in (3, N // 10, N // 2, N - N // 10, N - 3):
        qq, a, b = lip_cip.tilted_posteriors(p, s)
        assert np.array_equal(qq, q)
        a_ex = q * T[1::2, s] / PS[s]  # Pr(D_i = 1, S = s)/Pr(S = s)
        b_ex = (1 - q) * T[0::2, s] / PS[s]
        assert np.allclose(a, a_ex, rtol=1e-10, atol=0)
        assert np.allclose(b, b_ex, rtol=1e-10, atol=0)


@pytest.mark.parametrize("eps", [2.0, 3.0, 5.0])
def test_tilted_construction_certificate_against_bayes_rule_n500(eps):
    """The large-N construction run at N = 500 (method="tilted", its pools far out): the channel is
    CIP by the package's Bayes-rule certifier over the exact laws, whose ε lies below the
    construction's interval bound ≤ the target; its MSE by the joint table lies below the bound it
    reports, which is under the absolute floor (so certified by it, bound 0)."""
    N = 500
    p = np.random.default_rng(0).uniform(0, 1, N)
    r = lip_cip.solve(p, eps, method="tilted")
    st = r.stats
    assert r.status == "optimal" and st["method"] == "tilted" and st["certified_by"] == "absolute floor"
    Q = r.mechanism.matrix
    assert Q.shape == (N + 1, st["k_up"] - st["k"] + 3)
    exact = lip_cip.cip_epsilon(Q, p)
    assert exact <= r.certificate.realized_epsilon <= eps
    f = lip_cip.sum_distribution(p)
    s = np.arange(N + 1.0)
    mse = 0.0  # revealed values add nothing; each pool its within variance (the joint table's
    for pool in (s < st["k"], s > st["k_up"]):  # round-off on the revealed means is ~1e-29 here)
        m = f[pool] @ s[pool] / f[pool].sum()
        mse += float(f[pool] @ (s[pool] - m) ** 2)
    assert 0 < mse <= r.objective < 1e-8 * st["var_s"]
    assert r.objective <= 100 * mse  # the geometric-tail bound is not loose by orders of magnitude
    assert r.bound == 0.0
    # the channel reveals [k, k_up]: every revealed value has its own output, the pools are whole
    assert Q[st["k"] - 1, 0] == 1.0 and Q[st["k_up"] + 1, -1] == 1.0 and Q[st["k"], 1] == 1.0
    # the sparse form is the same channel
    assert np.array_equal(lip_cip.tail_pooling_channel(N, st["k"], st["k_up"]).toarray(), Q)


def test_tilted_construction_with_public_users_and_auto_dispatch():
    """Users of prior 0 and 1 (S shifted and cut): CIP by Bayes' rule over the exact laws; and
    ``solve`` picks the tilted construction by itself above TILTED_MIN_N with no dense channel
    when it would not fit, its pools below the absolute floor."""
    p = np.random.default_rng(4).uniform(0, 1, 400)
    p[:5], p[5:9] = 1.0, 0.0
    r = lip_cip.solve(p, 3.0, method="tilted")
    assert lip_cip.cip_epsilon(r.mechanism.matrix, p) <= r.certificate.realized_epsilon <= 3.0
    assert r.stats["k"] > 5 and r.stats["k_up"] < 396
    N = lip_cip.TILTED_MIN_N + 1
    p = np.random.default_rng(5).uniform(0, 1, N)
    big = lip_cip.solve(p, 4.0)
    assert big.stats["method"] == "tilted" and big.status == "optimal"
    assert big.mechanism is None and big.certificate.realized_epsilon <= 4.0
    assert big.stats["mse_log10_upper"] < math.log10(1e-8 * big.stats["var_s"])
    # the revealed edges: every user's point posterior there is inside its window (independent of
    # the pool bounds: the DFT posteriors at k and k_up against the windows)
    _, L, U = lip_cip.user_windows(p, 4.0)
    for s in (big.stats["k"], big.stats["k_up"]):
        _, a, b = lip_cip.tilted_posteriors(p, s)
        assert (a >= L).all() and (a <= U).all() and (b >= 1 - U).all() and (b <= 1 - L).all()


def test_tilted_posteriors_do_not_depend_on_the_tilt_at_large_n():
    """N = 20000 (no exact laws): the posteriors are invariant under the exponential tilt, so the
    DFT at tilts centred 25 values either side gives the same a_i(s), b_i(s) to round-off; in the
    far tails (Pr(S = s) ≈ 10^−100 and below) and in the middle."""
    N = 20000
    p = np.random.default_rng(7).uniform(0, 1, N)
    q = np.unique(p)
    mu, sd = p.sum(), math.sqrt((p * (1 - p)).sum())
    for s in (int(mu - 40 * sd), int(mu), int(mu + 40 * sd)):
        ab = []
        for c in (s, s - 25, s + 25):
            d = lip_cip._dft_laws(p, s, users=q, centre=c)
            ab.append(np.r_[d["pt"] * d["g"][:, 0], d["pc"] * d["g"][:, 1]] / d["f"][1])
        assert np.allclose(ab[1], ab[0], rtol=1e-11, atol=0)
        assert np.allclose(ab[2], ab[0], rtol=1e-11, atol=0)
        assert np.allclose(ab[0][:q.size] + ab[0][q.size:], 1.0, rtol=0, atol=1e-12)
