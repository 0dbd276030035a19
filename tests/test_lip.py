"""LIP (seeds 001/004): constraint families, certifiers, optimum, closed forms.

Every expected value is computed a second way: the spec's golden numbers (spec §12.1, computed by
its author with separate scripts), brute-force Bayes posteriors, grid search, SCIP's branch and
bound, closed-form identities, or the papers' own formulas.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from lpmech.errors import InputError, TimeLimitError
from lpmech.mechanism import ldp_epsilon
from lpmech.models import lip
from lpmech.models.lip import lip_closed_forms as cf
from lpmech.models.lip import lip_optimize as lipo
from lpmech.models.lip.lip_estimation import mmse_mse, value_matrix

B = np.array([0.0, 1.0])


def posterior_ratio_eps(Q, P):
    """Realised LIP ε from Bayes' rule directly: max |log Pr(X=x | Y=y)/Pr(X=x)|."""
    Q, P = np.asarray(Q, float), np.asarray(P, float)
    worst = 0.0
    for y in range(Q.shape[1]):
        py = sum(P[x] * Q[x, y] for x in range(P.size))
        if py <= 0:
            continue
        for x in range(P.size):
            if P[x] > 0:
                post = P[x] * Q[x, y] / py
                worst = max(worst, math.inf if post == 0 else abs(math.log(post / P[x])))
    return worst


# ------------------------------------------------------------------------------ golden values

GOLDEN = [  # P1, eps, paper MSE, paper feasible, verified (q0, q1), verified MSE, LDP RR + MMSE
    (0.5, 1, 0.150106, True, (0.183940, 0.183940), 0.150106, 0.196612),
    (0.3, 1, 0.126089, True, (0.110364, 0.257516), 0.126089, 0.170997),
    (0.1, 1, 0.054038, False, (0.217595, 0.268941), 0.079138, 0.081986),
    (0.1, 3, 0.008739, True, (0.004979, 0.044808), 0.008739, 0.034192),
    (0.01, 1, 0.005944, False, (0.264274, 0.268941), 0.009791, 0.009795),
    (0.99, 5, 0.000133, True, (0.006671, 0.000067), 0.000133, 0.004042),
]


@pytest.mark.parametrize("P1, eps, paper_mse, feas, qv, ver_mse, ldp_mse", GOLDEN)
def test_binary_golden_table(P1, eps, paper_mse, feas, qv, ver_mse, ldp_mse):
    P = [1 - P1, P1]
    paper = lip.solve(P, eps, values=B, mode="paper")
    assert paper.stats["mse"] == pytest.approx(paper_mse, abs=2e-6)
    assert paper.stats["paper_feasible"] is feas
    ver = lip.solve(P, eps, values=B)
    assert ver.objective == pytest.approx(ver_mse, abs=2e-6)
    Qk = cf.binary_optimal([(P1, 0.0, 1.0)], eps)
    assert (Qk[0, 1], Qk[1, 0]) == pytest.approx(qv, abs=2e-6)
    assert mmse_mse(cf.binary_rr(eps), P, B) == pytest.approx(ldp_mse, abs=2e-6)


def test_thm3_example_is_not_lip_and_matches_spec():
    Q = cf.rr_lip_paper([0.1, 0.2, 0.7], 1.0)
    assert np.diag(Q) == pytest.approx([0.668909, 0.705696, 0.889636], abs=1e-6)
    assert Q[1, 0] == pytest.approx(0.036788, abs=1e-6)
    assert Q[0, 0] / 0.1 == pytest.approx(6.689, abs=1e-3)  # posterior/prior of the rare value
    assert lip.lip_epsilon(Q, [0.1, 0.2, 0.7]) > 1.0
    # at eps = ln 9 the rare value sits exactly on the validity boundary
    Q9 = cf.rr_lip_paper([0.1, 0.2, 0.7], math.log(9))
    assert lip.lip_epsilon(Q9, [0.1, 0.2, 0.7]) == pytest.approx(math.log(9), rel=1e-9)


def test_mary_golden_numbers():
    # spec §5.4 table: true optimum / GRR
    r = lip.solve([0.1, 0.2, 0.7], 1.0, values=[0, 1, 2])
    assert 0.44 - r.objective == pytest.approx(0.14953, abs=1e-5)
    h = lip.solve([0.1, 0.2, 0.7], 1.0, task="hist")
    assert (1 - 0.54) - h.objective == pytest.approx(0.13124, abs=1e-5)
    u = lip.solve(np.full(5, 0.2), 1.0)
    assert u.objective == pytest.approx(1.2770, abs=1e-4)
    ldp = lip.solve(np.full(5, 0.2), 1.0, notion="ldp")
    assert 2 - ldp.objective == pytest.approx(0.31016, abs=1e-5)  # numerical LDP optimum
    grr = cf.randomized_response(5, 1.0).matrix
    assert mmse_mse(grr, np.full(5, 0.2), np.arange(5.0)) == pytest.approx(1.8692, abs=1e-4)


# ------------------------------------------------------------------ paper feasibility flag


def test_paper_flag_exactly_when_min_prior_below_threshold():
    rng = np.random.default_rng(7)
    seen = {True: 0, False: 0}
    for _ in range(150):
        d = int(rng.integers(2, 6))
        P = rng.dirichlet(np.full(d, 0.7))
        eps = float(rng.uniform(0.2, 4))
        thr = 1 / (1 + math.exp(eps))
        if abs(P.min() - thr) < 1e-7:
            continue
        res = lip.solve(P, eps, mode="paper")
        expect = P.min() >= thr
        assert res.stats["paper_feasible"] is bool(expect)
        assert (posterior_ratio_eps(res.mechanism.matrix, P) <= eps * (1 + 1e-6)) is bool(expect)
        seen[bool(expect)] += 1
    assert min(seen.values()) > 10


# --------------------------------------------------------------- verified mode is certified


def _random_problem(rng):
    d = int(rng.integers(2, 6))
    P = rng.dirichlet(np.ones(d))
    return d, P, float(rng.uniform(0.3, 3))


@pytest.mark.parametrize("seed", range(6))
def test_verified_is_certified_lip(seed):
    rng = np.random.default_rng(seed)
    d, P, eps = _random_problem(rng)
    for task in ("sum", "hist"):
        r = lip.solve(P, eps, task=task)
        Q = r.mechanism.matrix
        assert posterior_ratio_eps(Q, P) <= eps * (1 + 1e-6)
        assert r.certificate.satisfied and r.gap <= 1e-6
    # bounded prior set: certified for every prior of the set
    Ps = rng.dirichlet(np.ones(d), size=3)
    r = lip.solve(priors=Ps, epsilon=eps)
    assert max(posterior_ratio_eps(r.mechanism.matrix, p) for p in Ps) <= eps * (1 + 1e-6)


def test_latent_lip_certified_by_brute_force():
    rng = np.random.default_rng(3)
    P = rng.dirichlet(np.ones(4))
    # G with 3 values and a joint consistent with P: T[g] = Pr(X | G=g), Pr(G) chosen freely
    pg = np.array([0.2, 0.3, 0.5])
    joint = rng.dirichlet(np.ones(12)).reshape(3, 4)
    joint = joint / joint.sum(axis=0, keepdims=True) * P  # columns sum to P
    T = joint / joint.sum(axis=1, keepdims=True)
    pg = joint.sum(axis=1)
    r = lip.solve(P, 1.0, T=T)
    Q = r.mechanism.matrix
    # Pr(G=g | Y=y) / Pr(G=g) by Bayes over the joint
    pgy = joint @ Q  # Pr(G=g, Y=y)
    ratio = pgy / pgy.sum(axis=0) / pg[:, None]
    used = Q.sum(axis=0) > 0
    assert np.abs(np.log(ratio[:, used])).max() <= 1.0 * (1 + 1e-6)
    # protecting G enlarges the feasible region: latent optimum ≤ X-protecting optimum ([004] (18))
    assert r.objective <= lip.solve(P, 1.0).objective + 1e-9


# ------------------------------------------------------------------ binary optimum == global


def test_binary_kink_equals_global_and_beats_grid():
    rng = np.random.default_rng(11)
    grid = np.linspace(0, 1, 201)
    q0, q1 = np.meshgrid(grid, grid, indexing="ij")
    for _ in range(8):
        P1, eps = float(rng.uniform(0.02, 0.98)), float(rng.uniform(0.3, 3))
        P = [1 - P1, P1]
        kink = cf.binary_optimal([(P1, 0, 1)], eps)
        glob = lip.solve(P, eps, values=B)
        assert mmse_mse(kink, P, B) == pytest.approx(glob.objective, abs=1e-10)
        # brute-force grid over (q0, q1): no feasible grid point beats the optimum
        lam1 = (1 - P1) * q0 + P1 * (1 - q1)
        lam0 = 1 - lam1
        E = math.exp(eps)
        ok = np.ones_like(q0, bool)
        for qa, la in (((1 - q0), lam0), (q0, lam1), (q1, lam0), ((1 - q1), lam1)):
            ok &= (qa <= E * la + 1e-12) & (la <= E * qa + 1e-12)
        with np.errstate(divide="ignore", invalid="ignore"):
            var_hat = np.where((lam0 > 0) & (lam1 > 0),
                               (P1 * (1 - P1) * (1 - q0 - q1)) ** 2 / (lam0 * lam1), 0.0)
        best_grid = P1 * (1 - P1) - var_hat[ok].max()
        assert glob.objective <= best_grid + 1e-12


def test_binary_latent_and_bounded_prior_kink_equals_global():
    rng = np.random.default_rng(5)
    for _ in range(6):
        P1, eps = float(rng.uniform(0.1, 0.9)), float(rng.uniform(0.3, 3))
        tl, th = sorted(rng.uniform(0, 1, 2))
        # a G with two values and Pr(X=1|G) = tl, th consistent with P1 needs tl ≤ P1 ≤ th
        if not tl < P1 < th:
            continue
        T = np.array([[1 - tl, tl], [1 - th, th]])
        glob = lip.solve([1 - P1, P1], eps, values=B, T=T)
        kink = cf.binary_optimal([(P1, tl, th)], eps)
        assert mmse_mse(kink, [1 - P1, P1], B) == pytest.approx(glob.objective, abs=1e-10)
        paper = cf.latent_binary_paper(P1, tl, th, eps)
        assert mmse_mse(paper, [1 - P1, P1], B) >= glob.objective - 1e-10
    # spec §5.3 example (inputs rounded there): [004] Thm 2 feasible but clearly suboptimal
    P1, tl, th, eps = 0.539, 0.003, 0.716, 2.35
    T = np.array([[1 - tl, tl], [1 - th, th]])
    paper, kink = cf.latent_binary_paper(P1, tl, th, eps), cf.binary_optimal([(P1, tl, th)], eps)
    assert paper[0, 1] == pytest.approx(0.0828, abs=1e-3) and paper[1, 0] == 0
    assert kink[0, 1] == pytest.approx(0.0510, abs=1e-3) and kink[1, 0] == 0
    assert lip.lip_epsilon(paper, [1 - P1, P1], T) <= eps
    assert mmse_mse(paper, [1 - P1, P1], B) > mmse_mse(kink, [1 - P1, P1], B) + 0.005
    # bounded prior [0.05, 0.15] (spec §12.1): Prop. 2 infeasible, kink = global minimax
    a, b, eps = 0.05, 0.15, 1.0
    prop2 = cf.bp_binary_paper(a, b, eps)
    assert (prop2[0, 1], prop2[1, 0]) == pytest.approx((0.053224, 0.337085), abs=1e-6)
    assert lip.lip_epsilon(prop2, priors=[[1 - a, a], [1 - b, b]]) > eps
    glob = lip.solve(priors=[[1 - a, a], [1 - b, b]], epsilon=eps, values=B)
    assert glob.mechanism.matrix[0, 1] == pytest.approx(0.244619, abs=1e-6)
    assert glob.mechanism.matrix[1, 0] == pytest.approx(0.268941, abs=1e-6)


# ------------------------------------------------------------ global ≥ local ≥ closed forms


@pytest.mark.parametrize("seed", range(4))
def test_global_beats_local_and_closed_forms(seed):
    rng = np.random.default_rng(100 + seed)
    d = int(rng.integers(3, 6))
    P = rng.dirichlet(np.ones(d))
    eps = float(rng.uniform(0.5, 3))
    glob = lip.solve(P, eps)
    loc = lip.solve(P, eps, method="local", rng=np.random.default_rng(seed), starts=3)
    assert glob.objective <= loc.objective + 1e-9
    V = value_matrix("sum", d)
    for Q in cf.warm_starts(lip._scenarios(P), eps):  # every certified closed form
        assert glob.objective <= mmse_mse(Q, P, V) + 1e-9
    paper = cf.rr_lip_paper(P, eps)
    if cf.paper_feasible(P, eps):  # Thm 3 is optimal where it is feasible (spec §5.4)
        assert mmse_mse(paper, P, V) == pytest.approx(glob.objective, abs=1e-9)
    else:  # and below the true optimum (so not achievable) where it is not
        assert mmse_mse(paper, P, V) < glob.objective


def test_scip_brackets_the_vertex_optimum():
    for P, vals, tl in (([0.4, 0.6], [0, 1], 20), ([0.1, 0.2, 0.7], [0, 1, 2], 2)):
        vert = lip.solve(P, 1.0, values=vals)
        scen = lip._scenarios(P)
        V = value_matrix("sum", len(P), vals)
        model = lipo.build_pyomo(scen, V, lip.family_rows("lip", scen, 1.0))
        Q, primal, dual, _ = lipo.solve_pyomo_scip(model, time_limit=tl)
        assert -primal == pytest.approx(mmse_mse(Q, P, V), abs=1e-6)  # SCIP objective = MSE
        # SCIP's dual bound on t = −MSE: a lower bound on the MSE, the vertex optimum lies above
        assert -dual <= vert.objective + 1e-7
        Qc = lip.repair_columns(Q, lip.family_rows("lip", scen, 1.0))
        assert vert.objective <= mmse_mse(Qc, P, V) + 1e-7  # SCIP is feasible to ~1e-9


def test_pyomo_model_matches_fast_path():
    import pyomo.environ as pyo

    P, eps = np.array([0.1, 0.3, 0.6]), 0.8
    scen = lip._scenarios(P)
    V = value_matrix("sum", 3, [0, 2, 5])
    A = lip.family_rows("lip", scen, eps)
    m = lipo.build_pyomo(scen, V, A)
    assert len(m.privacy) == A.shape[0] * 3
    Q = lip.solve(P, eps, values=[0, 2, 5]).mechanism.matrix
    for (i, k), v in m.q.items():
        v.set_value(Q[i, k])
    for k in range(3):
        lam = P @ Q[:, k]
        s = (V[:, 0] * P) @ Q[:, k]
        m.lam[0, k].set_value(lam)
        m.s[0, k, 0].set_value(s)
        m.u[0, k].set_value(s * s / lam if lam > 0 else 0.0)
    m.t.set_value(sum(m.u[0, k].value for k in range(3)) - float(P @ V[:, 0] ** 2))
    assert -pyo.value(m.obj) == pytest.approx(mmse_mse(Q, P, V), abs=1e-12)
    for c in m.privacy.values():  # the model's rows hold at the fast path's optimum
        assert pyo.value(c.body) <= 1e-10


# ------------------------------------------------------------------------- LIP versus LDP


def test_lip_mse_not_above_ldp_and_relations():
    rng = np.random.default_rng(21)
    for _ in range(6):
        d, P, eps = _random_problem(rng)
        lipr = lip.solve(P, eps)
        ldpr = lip.solve(P, eps, notion="ldp")
        assert lipr.objective <= ldpr.objective + 1e-10  # [004] Prop. 4
        grr = cf.randomized_response(d, eps).matrix
        assert ldpr.objective <= mmse_mse(grr, P, value_matrix("sum", d)) + 1e-10
        assert ldp_epsilon(ldpr.mechanism.matrix[:, ldpr.mechanism.matrix.sum(0) > 0]) <= eps * (1 + 1e-6)
        # ε-LDP ⇒ ε-LIP ⇒ 2ε-LDP ([001] Thm 1); ε-LIP ⇒ ε-MIP, ε-MIL ([001] Prop. 1, [004] §2.2.3)
        Q = lipr.mechanism.matrix
        used = Q.sum(axis=0) > 0
        assert lip.lip_epsilon(grr, P) <= eps * (1 + 1e-9)
        assert ldp_epsilon(Q[:, used]) <= 2 * eps * (1 + 1e-6)
        assert lip.mutual_information(Q, P) <= eps * (1 + 1e-6)
        assert lip.max_information_leakage(Q) <= eps * (1 + 1e-6)


def test_pufferfish_with_identity_is_ldp():
    P = np.array([0.2, 0.3, 0.5])
    puf = lip.solve(P, 1.0, notion="pufferfish", pufferfish_T=[np.eye(3)])
    ldp = lip.solve(P, 1.0, notion="ldp")
    assert puf.objective == pytest.approx(ldp.objective, abs=1e-10)
    Q = np.random.default_rng(0).dirichlet(np.ones(3), size=3)
    assert lip.pufferfish_epsilon(Q, [np.eye(3)]) == pytest.approx(ldp_epsilon(Q), rel=1e-12)


def test_bounded_prior_minimax_brackets():
    rng = np.random.default_rng(9)
    Ps = rng.dirichlet(np.full(3, 3.0), size=4)
    eps = 1.0
    bp = lip.solve(priors=Ps, epsilon=eps)
    V = value_matrix("sum", 3)
    # minimax ≥ every prior's own optimum (fewer constraints, own objective)
    for p in Ps:
        assert bp.objective >= lip.solve(p, eps).objective - 1e-10
    # ≤ the worst-case MSE of a closed form feasible for the whole set
    Qs = cf.structured_correction(Ps, eps)
    assert lip.lip_epsilon(Qs, priors=Ps) <= eps * (1 + 1e-9)
    assert bp.objective <= max(mmse_mse(Qs, p, V) for p in Ps) + 1e-10
    assert bp.objective == pytest.approx(max(mmse_mse(bp.mechanism.matrix, p, V) for p in Ps))


def test_direct_release_threshold_rho_mixture():
    # spec §5.6: t_gx = ρ 1{x=g} + (1−ρ) P_x; zero MSE iff ε ≥ max(ln(ρ/Pmin + 1 − ρ), −ln(1−ρ))
    P, rho = np.array([0.2, 0.3, 0.5]), 0.3
    T = rho * np.eye(3) + (1 - rho) * P[None, :]
    thr = max(math.log(rho / P.min() + 1 - rho), -math.log(1 - rho))
    assert lip.solve(P, thr * 1.001, T=T).objective == pytest.approx(0.0, abs=1e-9)
    assert lip.solve(P, thr * 0.95, T=T).objective > 1e-4


# ------------------------------------------------------------------------- vertex enumeration


def test_cone_rays_match_box_enumeration():
    # G = X LIP: normalised by P·c = 1 the section is the box [e^-ε, e^ε]^d ∩ {P·c = 1}
    P, eps = np.array([0.1, 0.2, 0.3, 0.4]), 0.7
    R = lipo.cone_rays(lip.lip_rows(P, eps), 4)
    got = {tuple(np.round(r / (P @ r), 8)) for r in R}
    lo, hi = math.exp(-eps), math.exp(eps)
    want = set()
    for free in range(4):
        rest = [m for m in range(4) if m != free]
        for mask in range(8):
            c = np.empty(4)
            for b, m in enumerate(rest):
                c[m] = hi if mask >> b & 1 else lo
            c[free] = (1 - P[rest] @ c[rest]) / P[free]
            if lo - 1e-12 <= c[free] <= hi + 1e-12:
                want.add(tuple(np.round(c, 8)))
    assert got == want


def test_box_prior_vertices_example():
    V = lip.box_prior_vertices([0.1] * 3, [0.6] * 3)
    want = {(0.6, 0.3, 0.1), (0.6, 0.1, 0.3), (0.3, 0.6, 0.1), (0.1, 0.6, 0.3), (0.3, 0.1, 0.6),
            (0.1, 0.3, 0.6)}
    assert {tuple(np.round(v, 10)) for v in V} == want


# ------------------------------------------------------------------------------ linear utilities


def test_hamming_lp_equals_best_triangle_vertex():
    # binary LIP feasible set (q0 + q1 ≤ 1 side) is the triangle (1,0), (0,1), kink (spec §5.2);
    # a linear objective is minimised at a vertex of the full polytope (both mirror triangles)
    for P1, eps in ((0.3, 1.0), (0.1, 0.5), (0.6, 2.0)):
        k = cf.binary_optimal([(P1, 0, 1)], eps)
        q0, q1 = k[0, 1], k[1, 0]
        verts = [(q0, q1), (1 - q0, 1 - q1), (1, 0), (0, 1)]
        best = min((1 - P1) * a + P1 * b for a, b in verts)
        r = lip.solve([1 - P1, P1], eps, values=B, objective="hamming")
        assert r.objective == pytest.approx(best, abs=1e-9)
        assert r.gap <= 1e-6


# ------------------------------------------------------------------------------ closed forms


def test_thm3_mse_identity_any_values():
    rng = np.random.default_rng(2)
    for _ in range(5):
        d = int(rng.integers(2, 7))
        P, a, eps = rng.dirichlet(np.ones(d)), rng.normal(size=d), float(rng.uniform(0.2, 4))
        var = P @ a ** 2 - (P @ a) ** 2
        factor = 2 * math.exp(-eps) - math.exp(-2 * eps)
        assert mmse_mse(cf.rr_lip_paper(P, eps), P, a) == pytest.approx(var * factor, rel=1e-10)
        assert mmse_mse(cf.rr_lip_paper(P, eps), P, np.eye(d)) == pytest.approx(
            (1 - P @ P) * factor, rel=1e-10)


def test_ue_privacy_reduction_and_optimum():
    rng = np.random.default_rng(4)
    for _ in range(4):
        d = int(rng.integers(2, 7))
        P, eps = rng.dirichlet(np.ones(d)), float(rng.uniform(0.3, 3))
        q01, q10 = cf.ue_lip_paper(P, eps)
        full = cf.ue_channel(d, q01, q10)
        brute = lip.lip_epsilon(full, P)
        assert cf.ue_lip_epsilon(P, q01, q10) == pytest.approx(brute, rel=1e-9)
        assert brute == pytest.approx(eps, rel=1e-9)  # Thm 4 is tight
        qo, po = cf.ue_lip_optimal(P, eps)
        assert lip.lip_epsilon(cf.ue_channel(d, qo, po), P) <= eps * (1 + 1e-6)
        assert cf.ue_mse(P, qo, po) <= cf.ue_mse(P, q01, q10) + 1e-12
    # spec §5.9 table: (0.1,0.2,0.3,0.4), ε = 1: objective 0.03654 (Thm 4) vs 0.03762 (optimal)
    P = np.array([0.1, 0.2, 0.3, 0.4])
    base = float((P * (1 - P)).sum())
    assert base - cf.ue_mse(P, *cf.ue_lip_paper(P, 1.0)) == pytest.approx(0.03654, abs=1e-5)
    assert base - cf.ue_mse(P, *cf.ue_lip_optimal(P, 1.0)) == pytest.approx(0.03762, abs=1e-5)
    # [004] eq. (35): UE-LIP minus OUE-LDP q01 at ε = 1
    diffs = [cf.ue_lip_paper([pm, 1 - pm], 1.0)[0] - cf.oue_ldp(1.0)[0] for pm in (0.05, 0.1, 0.2)]
    assert diffs == pytest.approx([-0.0063859, -0.0131347, -0.0278528], abs=1e-7)


def test_lh_prop3_identity_and_verified():
    rng = np.random.default_rng(8)
    d, eps = 8, 1.5
    P = rng.dirichlet(np.ones(d))
    a = np.arange(d, dtype=float)
    h = rng.integers(0, 3, size=d)
    Q, mse = lip.lh_lip(P, h, eps, a, paper=True)
    # spec §5.8: MSE = Var(X) − (1 − e^{−ε})² Var(E[X | h(X)])
    H = cf.hash_matrix(h)
    Ph = H.T @ P
    cm = (H.T @ (P * a))[Ph > 0] / Ph[Ph > 0]
    var = P @ a ** 2 - (P @ a) ** 2
    var_cm = Ph[Ph > 0] @ cm ** 2 - (P @ a) ** 2
    assert mse == pytest.approx(var - (1 - math.exp(-eps)) ** 2 * var_cm, rel=1e-10)
    assert mmse_mse(Q, P, a) == pytest.approx(mse, rel=1e-12)
    Qv, msev = lip.lh_lip(P, h, eps, a)
    assert posterior_ratio_eps(Qv, P) <= eps * (1 + 1e-6)
    # a hash cannot do better than the unhashed optimum (post-processing of X)
    assert msev >= lip.solve(P, eps, values=a).objective - 1e-9


def test_input_errors():
    with pytest.raises(InputError, match="sums to"):
        lip.solve([0.5, 0.6], 1.0)
    with pytest.raises(InputError, match="positive"):
        lip.solve([0.5, 0.5], 0.0)
    with pytest.raises(InputError, match="mode"):
        lip.solve([0.5, 0.5], 1.0, mode="fast")
    with pytest.raises(InputError, match="rng"):
        lip.solve([0.5, 0.5], 1.0, method="local")
    with pytest.raises(InputError, match="no closed form"):
        lip.solve(priors=[[0.2, 0.3, 0.5], [0.3, 0.3, 0.4]], epsilon=1.0, mode="paper")


def test_pufferfish_general_correlation_certified():
    P = np.array([0.2, 0.3, 0.5])
    Ts = [0.6 * np.eye(3) + 0.4 * P[None, :], 0.3 * np.eye(3) + 0.7 * P[None, :]]
    eps = 0.7
    puf = lip.solve(P, eps, notion="pufferfish", pufferfish_T=Ts)
    Q = puf.mechanism.matrix
    for T in Ts:  # brute force: Pr(Y=y | G=g) / Pr(Y=y | G=g') ≤ e^ε for every pair and output
        Y = T @ Q
        used = Q.sum(axis=0) > 0
        r = Y[:, None, used] / Y[None, :, used]
        assert r.max() <= math.exp(eps) * (1 + 1e-6)
    # LDP ⇒ Pufferfish (each Pr(Y | g) mixes rows of Q): the Pufferfish optimum is not worse
    assert puf.objective <= lip.solve(P, eps, notion="ldp").objective + 1e-10


def test_d6_global_certified_gap():
    rng = np.random.default_rng(60)
    P = rng.dirichlet(np.ones(6))
    for task in ("sum", "hist"):
        r = lip.solve(P, 1.0, task=task)
        assert r.gap <= 1e-6 and r.certificate.satisfied
        # the ray-LP optimum is at least as good as a local solve and the structured closed form
        V = value_matrix(task, 6)
        assert r.objective <= mmse_mse(cf.structured_correction(P, 1.0), P, V) + 1e-12
        assert r.objective <= lip.solve(P, 1.0, task=task, method="local",
                                        rng=np.random.default_rng(0), starts=2).objective + 1e-9


@pytest.mark.slow
def test_d50_local_certified_and_beats_closed_forms():
    rng = np.random.default_rng(50)
    P = rng.dirichlet(np.ones(50))
    r = lip.solve(P, 1.0, task="hist", method="local", rng=np.random.default_rng(1), starts=3)
    assert posterior_ratio_eps(r.mechanism.matrix, P) <= 1.0 * (1 + 1e-6)
    V = np.eye(50)
    for Q in cf.warm_starts(lip._scenarios(P), 1.0):
        assert r.objective <= mmse_mse(Q, P, V) + 1e-12
    # RR-LIP closed form is not LIP here and claims a lower (unachievable) MSE
    assert not cf.paper_feasible(P, 1.0)
    assert mmse_mse(cf.rr_lip_paper(P, 1.0), P, V) < r.objective


def test_inconsistent_correlation_rejected():
    with pytest.raises(InputError, match="inconsistent"):
        lip.solve([0.2, 0.3, 0.5], 1.0, T=[[0.8, 0.1, 0.1]])
    # a T built from a joint is accepted (Pr(G) = joint row sums)
    joint = np.array([[0.15, 0.05, 0.1], [0.05, 0.25, 0.4]])
    T = joint / joint.sum(axis=1, keepdims=True)
    assert lip.solve(joint.sum(axis=0), 1.0, T=T).certificate.satisfied


def test_di_relations_lemma3():
    # [004] Lemma 3: ε-LIP ⇒ (2ε + D∞)-DI and ε-DI ⇒ (ε + D∞)-LIP, D∞ = max log(P_x / P_x')
    rng = np.random.default_rng(33)
    for _ in range(6):
        d, P, eps = _random_problem(rng)
        Dinf = math.log(P.max() / P.min())
        Q = lip.solve(P, eps).mechanism.matrix
        assert lip.di_epsilon(Q, P) <= 2 * eps + Dinf + 1e-9
        R = rng.dirichlet(np.ones(d), size=d)  # any channel
        assert lip.lip_epsilon(R, P) <= lip.di_epsilon(R, P) + Dinf + 1e-9
    # brute force on one channel: the largest posterior ratio
    P = np.array([0.2, 0.3, 0.5])
    Q = np.array([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3], [0.2, 0.2, 0.6]])
    post = P[:, None] * Q / (P @ Q)
    want = max(math.log(post[a, y] / post[b, y]) for y in range(3) for a in range(3) for b in range(3))
    assert lip.di_epsilon(Q, P) == pytest.approx(want, rel=1e-12)


def test_scip_through_solve_reports_status_and_valid_bound():
    P = [0.1, 0.2, 0.7]
    vert = lip.solve(P, 1.0, values=[0, 1, 2])
    try:
        r = lip.solve(P, 1.0, values=[0, 1, 2], method="scip", time_limit=1.0)
    except TimeLimitError as exc:  # the API raises on a stop without a certified optimum
        r = exc.result
        assert r.status == "time_limit"
    assert r.status in ("optimal", "time_limit") and r.certificate.satisfied
    assert r.bound <= vert.objective + 1e-7 <= r.objective + 2e-7  # SCIP's bound brackets it


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("eps", [1.0, 2.0, 8.0])
def test_priors_with_zero_entries_certify_and_methods_agree(seed, eps):
    """Inputs the prior never produces leave their channel rows free under ε-LIP. The vertex
    solve gave such a row a column of its own, (1, 0, 9e-17) at prior (0, 0.25, 0.75) and ε = 2,
    which certified ε = inf (a CertificationError); those rows now report from the output
    marginal. Vertex and exact column generation agree, and a loop over the support checks ε."""
    from lpmech.models.lip import lip_solve

    rng = np.random.default_rng(seed)
    d = 3 + seed % 4
    p = rng.dirichlet(np.ones(d))
    p[rng.choice(d, 1 + seed % 2, replace=False)] = 0.0
    p /= p.sum()
    res = {m: lip_solve.solve(p, eps, task="sum", method=m) for m in ("vertex", "exact")}
    for r in res.values():
        assert r.status == "optimal"
        Q = r.mechanism.matrix
        marginal = p @ Q
        worst = max(abs(math.log(Q[x, y] / marginal[y])) if Q[x, y] > 0 else math.inf
                    for x in range(d) if p[x] > 0 for y in range(d) if marginal[y] > 0)
        assert worst <= eps * (1 + 1e-6)
    assert res["vertex"].objective == pytest.approx(res["exact"].objective, rel=1e-6, abs=1e-12)


@pytest.mark.parametrize("p", [(0.0, 0.3, 0.7), (0.2, 0.0, 0.5, 0.3), (0.0, 0.25, 0.25, 0.5)])
def test_di_with_a_zero_prior_entry_is_certified_by_a_loop(p):
    """DI ([004] Def. 4) reads posteriors of inputs with P_x > 0 on outputs the prior can produce;
    di_epsilon picked outputs by Q's column sums, so a column only a zero-prior input used gave
    log 0 − log 0 = nan and the vertex solve a CertificationError. Checked by a loop."""
    from lpmech.models.lip import lip_solve

    p = np.asarray(p)
    res = lip_solve.solve(p, 2.0, task="sum", notion="di", method="vertex")
    assert res.status == "optimal" and res.bound <= res.objective + 1e-12
    Q = res.mechanism.matrix
    worst = 0.0
    for y in range(Q.shape[1]):
        post = [p[x] * Q[x, y] for x in range(p.size) if p[x] > 0]
        if sum(post) > 0:
            worst = max(worst, math.inf if min(post) == 0 else math.log(max(post) / min(post)))
    assert worst <= 2.0 * (1 + 1e-6)
    assert lip.di_epsilon(Q, p) == pytest.approx(worst, rel=1e-12, abs=1e-12)
    # a column that only the zero-prior input uses carries no posterior: not a nan
    Z = np.zeros((p.size, p.size + 1))
    Z[:, :p.size] = Q
    Z[p == 0] = 0.0
    Z[p == 0, -1] = 1.0
    assert lip.di_epsilon(Z, p) == pytest.approx(worst, rel=1e-12, abs=1e-12)
