"""The design engine (lpmech.design): every path against an independent reference.

References: the models' current public functions (OMG, LE LP (8), LIP linear utilities), closed forms
(LE under a uniform prior, GRR for ε-LDP + Hamming), and a plain scipy ``linprog`` LP written here
from the definitions (unscaled rows z_ik ≤ e^{ε d_ij} z_jk over *all* pairs, no implied-row reduction).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from lpmech import instance as li
from lpmech.design import (
    LDP,
    LIP,
    DPrivacy,
    Exclusion,
    Factor,
    Problem,
    Rows,
    loss_cap,
    solve,
    truth_floor,
)
from lpmech.design.engine import certify_matrix, choose_method, covering_rows
from lpmech.errors import CertificationError, InfeasibleError, InputError
from lpmech.mechanism import realized_epsilon
from lpmech.models import le, lip, omg

# ------------------------------------------------------------------ independent reference LP


def ref_lp(C, column_rows, *, zeros=None, extra=(), options=None):
    """min Σ C z over K×n row-stochastic Z with ``column_rows`` (dense r×K, rows a·z_k ≤ 0) on every
    output, forced zeros (K×n bool) and extra rows (A, lo, hi): scipy linprog (HiGHS, ``options``),
    all dense."""
    K, n = C.shape
    A_ub = [np.kron(column_rows, np.eye(n))] if column_rows.size else []
    b_ub = [np.zeros(column_rows.shape[0] * n)] if column_rows.size else []
    for A, lo, hi in extra:
        if math.isfinite(hi):
            A_ub.append(A.reshape(1, -1))
            b_ub.append([hi])
        if math.isfinite(lo):
            A_ub.append(-A.reshape(1, -1))
            b_ub.append([-lo])
    A_eq = np.kron(np.eye(K), np.ones((1, n)))
    bounds = [(0, 0 if zeros is not None and zeros[i, k] else 1) for i in range(K) for k in range(n)]
    r = linprog(C.ravel(), A_ub=np.vstack(A_ub) if A_ub else None,
                b_ub=np.concatenate(b_ub) if b_ub else None, A_eq=A_eq, b_eq=np.ones(K),
                bounds=bounds, method="highs", options=options)
    return r


def dprivacy_rows(d, eps, gamma=math.inf):
    """z_i − e^{ε d_ij} z_j ≤ 0 for every ordered pair i ≠ j with d_ij ≤ γ (the definition)."""
    K = d.shape[0]
    rows = []
    for i in range(K):
        for j in range(K):
            if i != j and d[i, j] <= gamma:
                a = np.zeros(K)
                a[i] += 1.0
                a[j] -= math.exp(eps * d[i, j])
                rows.append(a)
    return np.array(rows).reshape(-1, K)


def lip_def_rows(P, eps):
    """Pr(Y|X=x)/Pr(Y) within [e^{−ε}, e^{ε}] for P_x > 0: P·z − e^{ε} z_x ≤ 0, z_x − e^{ε} P·z ≤ 0."""
    rows = []
    for x in np.nonzero(P > 0)[0]:
        e = np.zeros(P.size)
        e[x] = 1.0
        rows += [P - math.exp(eps) * e, e - math.exp(eps) * P]
    return np.array(rows)


def random_instance(rng, K):
    pts = rng.uniform(0, 3, size=(K, 2))
    return li.points(pts, prior=rng.dirichlet(np.ones(K)))


# ------------------------------------------------------------------ clients: OMG, LE LP, LIP


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), K=st.integers(3, 7), eps=st.floats(0.2, 3.0))
def test_omg_through_engine_equals_omg_and_the_definition(seed, K, eps):
    rng = np.random.default_rng(seed)
    inst = random_instance(rng, K)
    res = solve(DPrivacy(inst, eps), prior=inst.prior, loss=inst.loss)
    assert res.status == "optimal" and res.stats["method"] == "full"
    ref = omg.solve(inst, eps, method="full")
    assert res.objective == pytest.approx(ref.objective, rel=1e-7, abs=1e-9)
    lp = ref_lp(inst.prior[:, None] * inst.loss, dprivacy_rows(inst.metric, eps))
    assert res.objective == pytest.approx(lp.fun, rel=1e-7, abs=1e-9)
    assert realized_epsilon(res.mechanism.matrix, inst.metric) <= eps * (1 + 1e-6)
    assert res.bound <= res.objective + 1e-12


def test_omg_gamma_through_engine_equals_omg():
    rng = np.random.default_rng(3)
    inst = li.grid(4, 3).with_prior(rng.dirichlet(np.ones(12))).with_gamma(1.5)
    res = solve(DPrivacy(inst, 0.8), prior=inst.prior, loss=inst.loss)
    ref = omg.solve(inst, 0.8, method="full")
    assert res.stats["certificates"][0]["notion"] == "geo-ind"
    assert res.objective == pytest.approx(ref.objective, rel=1e-8)
    lp = ref_lp(inst.prior[:, None] * inst.loss, dprivacy_rows(inst.metric, 0.8, 1.5))
    assert res.objective == pytest.approx(lp.fun, rel=1e-7)


@pytest.mark.parametrize("eps", [0.8, 2.0])
def test_le_lp_through_engine(eps):
    rng = np.random.default_rng(1)
    inst = li.grid(4, 4, 1.0, unit="cell").with_prior(rng.dirichlet(np.ones(16) * 0.5))
    loss = le.range_loss(inst.metric)
    res = solve(DPrivacy(inst.metric, eps), prior=inst.prior, loss=loss)
    ref = le.solve(inst, eps, path="lp")
    assert res.objective == pytest.approx(ref.objective, rel=1e-8, abs=1e-10)
    # uniform prior: LE is optimal (Theorem 1), so the engine reproduces LE's closed-form objective
    uni = inst.with_prior("uniform")
    res_u = solve(DPrivacy(uni.metric, eps), prior=uni.prior, loss=loss)
    p = le.le_diagonal(uni.metric, eps)
    assert res_u.objective == pytest.approx(1 - uni.prior @ p, rel=1e-8)


@pytest.mark.parametrize("eps", [0.5, 1.5])
def test_lip_linear_through_engine(eps):
    rng = np.random.default_rng(2)
    d = 5
    P = rng.dirichlet(np.ones(d))
    ham = 1.0 - np.eye(d)
    res = solve(LIP(P, eps), prior=P, loss=ham)
    ref = lip.solve(P, eps, objective="hamming")
    assert res.objective == pytest.approx(ref.objective, rel=1e-7)
    assert lip.lip_epsilon(res.mechanism.matrix, P) <= eps * (1 + 1e-6)
    lp = ref_lp(P[:, None] * ham, lip_def_rows(P, eps))
    assert res.objective == pytest.approx(lp.fun, rel=1e-7)


def test_ldp_hamming_uniform_is_grr():
    K, eps = 6, 1.2
    res = solve(LDP(K, eps), prior=np.full(K, 1 / K), loss=1.0 - np.eye(K))
    assert res.objective == pytest.approx((K - 1) / (math.exp(eps) + K - 1), rel=1e-9)
    assert res.stats["realized[ldp]"] <= eps * (1 + 1e-6)


# ------------------------------------------------------------------ user and composed notions


def test_user_factor_notion_equals_definition_lp():
    rng = np.random.default_rng(4)
    K = 6
    F = rng.uniform(0.2, 0.9, size=(K, K)) * (rng.random((K, K)) < 0.6)
    C = rng.random((K, K))
    res = solve(Factor(F, name="my-notion"), C)
    rows = [np.eye(K)[i] * F[i, j] - np.eye(K)[j] for i, j in zip(*np.nonzero(F)) if i != j]
    lp = ref_lp(C, np.array(rows))
    assert res.objective == pytest.approx(lp.fun, rel=1e-8, abs=1e-10)
    cert = res.stats["certificates"][0]
    assert cert["notion"] == "my-notion" and cert["satisfied"] and cert["realized"] <= 1 + 1e-9
    Z = res.mechanism.matrix
    assert (F[:, :, None] * Z[:, None, :] - Z[None, :, :]).max() <= 1e-12


def test_user_rows_notion_and_pyomo_path():
    rng = np.random.default_rng(5)
    K = 5
    # user rows on each column: v_0 ≥ v_1 ≥ ... (monotone reporting) and v_i ≤ 3 v_0
    e = np.eye(K)
    A = np.vstack([e[i + 1] - e[i] for i in range(K - 1)] + [e[K - 1] - 3 * e[0]])
    C = rng.random((K, K))
    full = solve(Rows(A, name="monotone"), C, method="full")
    pyo = solve(Rows(A, name="monotone"), C, method="pyomo")
    lp = ref_lp(C, A)
    assert full.objective == pytest.approx(lp.fun, rel=1e-8, abs=1e-10)
    assert pyo.objective == pytest.approx(lp.fun, rel=1e-7, abs=1e-9)
    assert full.stats["certificates"][0]["satisfied"]


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 10_000), eps=st.floats(0.3, 2.0), eps_lip=st.floats(0.3, 2.0))
def test_composed_geoind_and_lip_equals_definition_lp(seed, eps, eps_lip):
    rng = np.random.default_rng(seed)
    inst = random_instance(rng, 5)
    notion = DPrivacy(inst, eps) & LIP(inst.prior, eps_lip)
    res = solve(notion, prior=inst.prior, loss=inst.loss)
    rows = np.vstack([dprivacy_rows(inst.metric, eps), lip_def_rows(inst.prior, eps_lip)])
    lp = ref_lp(inst.prior[:, None] * inst.loss, rows)
    assert res.objective == pytest.approx(lp.fun, rel=1e-7, abs=1e-9)
    certs = {c["notion"]: c for c in res.stats["certificates"]}
    assert set(certs) == {"d-privacy", "lip"}
    assert certs["d-privacy"]["realized"] <= eps * (1 + 1e-6)
    assert lip.lip_epsilon(res.mechanism.matrix, inst.prior) <= eps_lip * (1 + 1e-6)
    # the price of the second notion is never negative
    alone = solve(DPrivacy(inst, eps), prior=inst.prior, loss=inst.loss)
    assert res.objective >= alone.objective - 1e-9


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 10_000), eps=st.floats(0.3, 2.0), eps_lip=st.floats(0.5, 3.0))
def test_geoind_and_lip_by_the_covering_decomposition_equals_definition_lp(seed, eps, eps_lip):
    """The decomposition of Geo-Ind ∧ LIP starts with the unit rows as Σ ≥ 1 (the engine's rule)
    and ends on the definition LP's optimum by scipy, as it does with Σ = 1 throughout."""
    rng = np.random.default_rng(seed)
    inst = li.grid(3, 3).with_prior(rng.dirichlet(np.ones(9)))
    notion = DPrivacy(inst, eps) & LIP(inst.prior, eps_lip)
    assert covering_rows(Problem.make(notion, prior=inst.prior, loss=inst.loss))
    rows = np.vstack([dprivacy_rows(inst.metric, eps), lip_def_rows(inst.prior, eps_lip)])
    lp = ref_lp(inst.prior[:, None] * inst.loss, rows)
    on = solve(notion, prior=inst.prior, loss=inst.loss, method="decomposition", workers=1)
    off = solve(notion, prior=inst.prior, loss=inst.loss, method="decomposition", workers=1,
                cover=False)
    for res in (on, off):
        assert res.status == "optimal"
        assert res.objective == pytest.approx(lp.fun, rel=1e-6, abs=1e-9)
        assert res.bound <= lp.fun + 1e-9
        assert lip.lip_epsilon(res.mechanism.matrix, inst.prior) <= eps_lip * (1 + 1e-6)
    assert any(t["covering"] for t in on.stats["trace"])
    assert not any(t["covering"] for t in off.stats["trace"])


def test_engine_covers_the_rows_only_where_it_was_measured_to_pay():
    """``covering_rows``: Geo-Ind ∧ LIP yes; not with a negative cost, an extra row, two locations
    within ε·d = 1e-3, or LIP alone; Geo-Ind alone where the tents overlap (ε × spacing < 1)."""
    inst = li.grid(4, 4).with_prior(np.random.default_rng(1).dirichlet(np.ones(16)))
    both = DPrivacy(inst, 1.0) & LIP(inst.prior, 2.0)
    C = inst.prior[:, None] * inst.loss
    assert covering_rows(Problem.make(both, C))
    assert not covering_rows(Problem.make(both, C - 0.5 * C.max()))
    assert not covering_rows(Problem.make(both, C, extra_rows=[loss_cap(inst.prior, inst.loss, 9)]))
    assert not covering_rows(Problem.make(LIP(inst.prior, 2.0), C))
    assert covering_rows(Problem.make(DPrivacy(inst, 0.5), C))
    assert not covering_rows(Problem.make(DPrivacy(inst, 1.0), C))
    pts = li.points(np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0 + 1e-4], [1.0, 1.0]]))
    P = np.full(5, 0.2)
    near = DPrivacy(pts, 1.0) & LIP(P, 2.0)
    assert not covering_rows(Problem.make(near, P[:, None] * pts.loss))


def test_extra_rows_loss_cap_and_truth_floor():
    rng = np.random.default_rng(6)
    inst = random_instance(rng, 5)
    eps = 0.7
    rows = dprivacy_rows(inst.metric, eps)
    top = ref_lp(-np.diag(inst.prior), rows)
    best_truth = -top.fun  # the largest Pr[report = truth]
    loss_at_top = float(inst.prior @ (inst.loss * top.x.reshape(5, 5)).sum(axis=1))
    best_loss = ref_lp(inst.prior[:, None] * inst.loss, rows).fun  # the smallest expected loss
    # minimise the expected distance with a floor on Pr[report = truth] ...
    floor = truth_floor(inst.prior, 0.8 * best_truth)
    res = solve(DPrivacy(inst, eps), prior=inst.prior, loss=inst.loss, extra_rows=[floor])
    lp = ref_lp(inst.prior[:, None] * inst.loss, dprivacy_rows(inst.metric, eps), extra=[floor])
    assert res.objective == pytest.approx(lp.fun, rel=1e-7)
    assert res.objective > best_loss + 1e-6  # the floor binds
    assert float((inst.prior * np.diag(res.mechanism.matrix)).sum()) >= 0.8 * best_truth - 1e-7
    # ... and maximise Pr[report = truth] under an expected-loss cap (costs = −p_i on the diagonal)
    C = -np.diag(inst.prior)
    cap_value = 0.5 * (best_loss + loss_at_top)
    cap = loss_cap(inst.prior, inst.loss, cap_value)
    res2 = solve(DPrivacy(inst, eps), C, extra_rows=[cap])
    lp2 = ref_lp(C, dprivacy_rows(inst.metric, eps), extra=[cap])
    assert res2.objective == pytest.approx(lp2.fun, rel=1e-7)
    assert -res2.objective < best_truth - 1e-6  # the cap binds
    assert res2.mechanism.expected_loss(inst.prior, inst.loss) <= cap_value + 1e-7
    # the declarative model gives the same optimum with the same extra row
    res3 = solve(DPrivacy(inst, eps), C, extra_rows=[cap], method="pyomo")
    assert res3.objective == pytest.approx(lp2.fun, rel=1e-7)
    # a missing side may be None (one validation for the engine and the decomposition)
    A_cap, _, hi_cap = cap
    res4 = solve(DPrivacy(inst, eps), C, extra_rows=[(sp.csr_matrix(A_cap), None, hi_cap)])
    assert res4.objective == pytest.approx(lp2.fun, rel=1e-7)
    for bad in [(A_cap, 1.0, 0.0), (A_cap[:, :2], None, 1.0), (A_cap,)]:
        with pytest.raises(InputError, match="extra row 0"):
            solve(DPrivacy(inst, eps), C, extra_rows=[bad])


def test_pyomo_model_extended_by_the_user_equals_extra_row():
    import pyomo.environ as pyo

    from lpmech.design.pyomo import build_pyomo, solve_model

    rng = np.random.default_rng(7)
    inst = random_instance(rng, 4)
    eps = 1.0
    model = build_pyomo(DPrivacy(inst, eps), prior=inst.prior, loss=inst.loss)
    model.mine = pyo.Constraint(expr=sum(model.z[i, 0] for i in model.I) >= 1.2)  # output 0 used
    res = solve_model(model)
    A = np.zeros((4, 4))
    A[:, 0] = 1.0
    lp = ref_lp(inst.prior[:, None] * inst.loss, dprivacy_rows(inst.metric, eps),
                extra=[(A, 1.2, math.inf)])
    assert res.objective == pytest.approx(lp.fun, rel=1e-7)


def test_exclusion_zone():
    rng = np.random.default_rng(8)
    K = 5
    d = li.line(K).metric
    C = rng.random((K, K))
    # with ε-LDP a zero entry forces its column to zero: "never report the truth" is infeasible
    with pytest.raises(InfeasibleError):
        solve(LDP(K, 1.0) & Exclusion(d, 0.0), C)
    assert ref_lp(C, np.zeros((0, K)), zeros=d <= 0).status == 0  # feasible without LDP ...
    e = np.eye(K)
    ldp_rows = np.array([e[i] - math.exp(1.0) * e[j] for i in range(K) for j in range(K) if i != j])
    assert ref_lp(C, ldp_rows, zeros=d <= 0).status == 2  # ... and infeasible with it
    # with a factor notion that links only inputs 0 and 4, an exclusion of r = 1 is feasible
    F = np.zeros((K, K))
    F[0, 4] = F[4, 0] = 0.5
    res = solve(Factor(F) & Exclusion(d, 1.0), C)
    zone = d <= 1.0
    assert res.mechanism.matrix[zone].max() == 0.0
    rows = [np.eye(K)[i] * F[i, j] - np.eye(K)[j] for i, j in zip(*np.nonzero(F))]
    assert res.objective == pytest.approx(ref_lp(C, np.array(rows), zeros=zone).fun, rel=1e-8)


# ------------------------------------------------------------------ certification


def test_repair_of_solver_noise_and_failed_certificate():
    rng = np.random.default_rng(9)
    inst = random_instance(rng, 6)
    eps = 1.0
    notion = DPrivacy(inst, eps) & LIP(inst.prior, 1.5)
    res = solve(notion, prior=inst.prior, loss=inst.loss)
    problem = Problem.make(notion, prior=inst.prior, loss=inst.loss)
    noisy = res.mechanism.matrix + rng.uniform(-1e-10, 1e-10, size=(6, 6))
    Z, certs, _ = certify_matrix(problem, noisy)
    assert all(c.satisfied for c in certs)
    assert realized_epsilon(Z, inst.metric) <= eps * (1 + 1e-6)
    assert lip.lip_epsilon(Z, inst.prior) <= 1.5 * (1 + 1e-6)
    assert abs(float((problem.C * Z).sum()) - res.objective) < 1e-8
    # a matrix far from its notion fails its certificate: the identity under v_0 ≥ v_1 (column 1
    # has v_1 = 1 > v_0 = 0, and no shift fixes a row that is tight at the all-ones column)
    A = np.zeros((1, 6))
    A[0, :2] = [-1.0, 1.0]
    with pytest.raises(CertificationError, match="certificate"):
        certify_matrix(Problem.make(Rows(A), np.eye(6)), np.eye(6))
    with pytest.raises(CertificationError):
        certify_matrix(Problem.make(LDP(6, 1.0), np.ones((6, 6))), np.eye(6) + 0.01)


def test_bad_input():
    with pytest.raises(InputError):
        solve(LDP(3, 1.0), np.ones((4, 3)))
    with pytest.raises(InputError):
        solve(LDP(3, 1.0), np.ones((3, 3)), prior=np.ones(3) / 3)
    with pytest.raises(InputError):
        Factor(np.full((3, 3), 2.0))
    with pytest.raises(InputError):
        solve(LDP(3, 1.0), np.ones((3, 3)), method="simplex-please")
    with pytest.raises(InputError):
        DPrivacy(np.ones((3, 3)), 1.0) & LDP(4, 1.0)
    assert isinstance(LIP(np.ones(3) / 3, 1.0).rows(), sp.csr_matrix)


# ------------------------------------------------------------------ decomposition vs full LP


@pytest.mark.parametrize("which", ["factor", "composed", "rows", "rows & lip"])
def test_decomposition_equals_full(which):
    """User-defined notions (a factor matrix, raw rows) and composed ones through the decomposition:
    the same optimum as the engine's full LP and as the dense linprog of the definition."""
    rng = np.random.default_rng(10)
    inst = li.grid(4, 3).with_prior(rng.dirichlet(np.ones(12)))
    K, d = inst.K, inst.metric
    e = np.eye(K)
    # user rows: a column may not drop by more than half from a cell to its right neighbour,
    # nor rise by more than 2x from any cell to the cell 0 (rows a·v ≤ 0 on every column)
    A = np.array([0.5 * e[i] - e[i + 1] for i in range(K - 1) if (i + 1) % 4] +
                 [e[i] - 2.0 * e[0] for i in range(1, K)])
    if which == "factor":
        F = np.exp(-0.9 * d) * (d <= 1.5)
        np.fill_diagonal(F, 0.0)
        notion = Factor(F, name="near-factor")
        ref_rows = np.array([e[i] * F[i, j] - e[j] for i, j in zip(*np.nonzero(F))])
    elif which == "composed":
        notion = DPrivacy(inst, 1.0) & LIP(inst.prior, 1.0)
        ref_rows = np.vstack([dprivacy_rows(d, 1.0), lip_def_rows(inst.prior, 1.0)])
    elif which == "rows":
        notion, ref_rows = Rows(A, name="smooth"), A
    else:
        notion = Rows(A, name="smooth") & LIP(inst.prior, 1.5)
        ref_rows = np.vstack([A, lip_def_rows(inst.prior, 1.5)])
    full = solve(notion, prior=inst.prior, loss=inst.loss, method="full")
    dec = solve(notion, prior=inst.prior, loss=inst.loss, method="decomposition", workers=1)
    lp = ref_lp(inst.prior[:, None] * inst.loss, ref_rows)
    assert dec.stats["method"] == "decomposition" and dec.status == "optimal"
    assert dec.objective == pytest.approx(full.objective, rel=1e-6)
    assert dec.objective == pytest.approx(lp.fun, rel=1e-6)
    assert dec.bound <= lp.fun + 1e-9
    assert all(c["satisfied"] for c in dec.stats["certificates"])
    Z = dec.mechanism.matrix  # every user row holds on every column (a certificate of our own)
    assert (ref_rows @ Z).max() <= 1e-9


@pytest.mark.parametrize("lp", ["simplex", "ipm", "clarabel"])
@pytest.mark.parametrize("which", ["le", "composed"])
def test_output_generation_equals_full(which, lp):
    rng = np.random.default_rng(11)
    inst = li.grid(4, 3, 1.0, unit="cell")
    w = rng.dirichlet(np.ones(12) * 0.3)  # a skewed prior: the optimum uses few outputs
    if which == "le":
        notion, C = DPrivacy(inst.metric, 1.0, n_near=4), w[:, None] * le.range_loss(inst.metric)
    else:
        notion, C = DPrivacy(inst.metric, 0.7) & LIP(w, 1.0), w[:, None] * inst.metric
    full = solve(notion, C, method="full")
    out = solve(notion, C, method="outputs", workers=1, lp=lp)
    assert out.stats["method"] == "outputs" and out.stats["lp"] == lp
    assert out.objective == pytest.approx(full.objective, rel=1e-6, abs=1e-9)
    assert out.bound <= full.objective + 1e-9
    assert all(c["satisfied"] for c in out.stats["certificates"])
    if which == "le":  # the LE LP (8) through the fast OMG path agrees too
        ref = le.solve(inst.with_prior(w), 1.0, path="lp")
        assert out.objective == pytest.approx(ref.objective, rel=1e-6)


@pytest.mark.parametrize("lp", ["ipm", "clarabel"])
@pytest.mark.parametrize("eps", [0.3, 1.0, 3.0, 6.0])
@pytest.mark.parametrize("seed", [0, 1])
def test_output_generation_interior_point_equals_full_lp_across_eps(eps, seed, lp):
    """The restricted LP by interior point without crossover (no vertex: HiGHS' or Clarabel's)
    still ends at the LP (8) optimum of an independent solve (:func:`ref_lp` on every d-privacy
    row), across ε and priors."""
    rng = np.random.default_rng(seed)
    inst = li.grid(4, 4, 1.0, unit="cell")
    w = rng.dirichlet(np.ones(16) * 0.3)
    C = w[:, None] * le.range_loss(inst.metric)
    out = solve(DPrivacy(inst.metric, eps, n_near=0), C, method="outputs", workers=1, lp=lp)
    ref = ref_lp(C, dprivacy_rows(inst.metric, eps),
                 options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    # (at the default 1e-7 the reference itself sits 3e-6 below the optimum at ε = 6: rows with
    # factors e^{−6 d} violated by its tolerance)
    assert out.objective == pytest.approx(ref.fun, rel=1e-6, abs=1e-9)
    assert out.bound <= ref.fun + 1e-9
    assert out.certificate.satisfied and out.certificate.realized_epsilon <= eps * (1 + 1e-6)


def test_output_generation_stopped_short_keeps_its_mechanism_and_lagrangian_bound():
    """Output generation stopped at its round cap hands over the last restricted optimum, certified,
    and its best Lagrangian bound (not the trivial Σ_i min_k C_ik): the bound lies below the full
    LP's optimum, the objective is the returned matrix's loss, and both bracket the optimum."""
    from lpmech.certificate import trivial_bound
    from lpmech.errors import IterationLimitError

    rng = np.random.default_rng(3)
    inst = li.grid(5, 4, 1.0, unit="cell")
    w = rng.dirichlet(np.ones(20))
    notion, C = DPrivacy(inst.metric, 1.5) & LIP(w, 2.0), w[:, None] * inst.metric
    full = solve(notion, C, method="full")
    with pytest.raises(IterationLimitError) as err:
        solve(notion, C, method="outputs", workers=1, max_rounds=1)
    res = err.value.result
    Z = res.mechanism.matrix
    assert res.certificate.satisfied
    assert res.objective == pytest.approx(float((C * Z).sum()), rel=1e-9)
    assert res.objective > full.objective * (1 + 1e-6)  # round 1 is not the optimum
    assert trivial_bound(C) + 1e-6 < res.bound <= full.objective + 1e-9
    assert res.bound == pytest.approx(res.stats["trace"][0]["lower"], rel=1e-9)
    assert res.gap == pytest.approx((res.objective - res.bound) / res.objective, rel=1e-9)


def test_output_generation_rejects_an_unknown_lp_method():
    inst = li.grid(3, 3, 1.0, unit="cell")
    with pytest.raises(InputError, match="restricted-LP method"):
        solve(DPrivacy(inst.metric, 1.0), inst.prior[:, None] * inst.metric, method="outputs",
              lp="barrier")


# ------------------------------------------------------------------ merged outputs


@pytest.mark.parametrize("method", ["full", "outputs", "decomposition"])
def test_interchangeable_outputs_merge_without_changing_the_optimum(method):
    """LE's LP (8) with empty cells (w_k = 0): their cost columns are all w, so they merge into one
    output; the optimum equals the unmerged full LP and the dense linprog of the definition."""
    rng = np.random.default_rng(13)
    inst = li.grid(4, 3, 1.0, unit="cell")
    w = rng.dirichlet(np.ones(12))
    w[[1, 4, 6, 11]] = 0.0
    w /= w.sum()
    eps = 0.8
    C = w[:, None] * le.range_loss(inst.metric)
    res = solve(DPrivacy(inst.metric, eps), C, method=method, workers=1)
    assert res.stats["merged_outputs"] == 3  # four empty cells, one output left
    plain = solve(DPrivacy(inst.metric, eps), C, method="full", merge=False)
    assert "merged_outputs" not in plain.stats
    lp = ref_lp(C, dprivacy_rows(inst.metric, eps))
    assert res.objective == pytest.approx(lp.fun, rel=1e-7, abs=1e-10)
    assert plain.objective == pytest.approx(lp.fun, rel=1e-7, abs=1e-10)
    Z = res.mechanism.matrix
    assert Z[:, [4, 6, 11]].max() == 0.0  # the merged mass sits on the first empty output (1)
    assert realized_epsilon(Z, inst.metric) <= eps * (1 + 1e-6)
    assert res.bound <= lp.fun + 1e-9


def test_outputs_with_different_forced_zeros_do_not_merge():
    K = 4
    d = li.line(K).metric
    C = np.ones((K, K))  # every cost column equal ...
    F = np.zeros((K, K))
    F[0, 3] = F[3, 0] = 0.5
    res = solve(Factor(F) & Exclusion(d, 0.0), C, method="full")
    assert "merged_outputs" not in res.stats
    assert np.diag(res.mechanism.matrix).max() == 0.0  # ... but each has its own zero: kept apart
    lp = ref_lp(C, np.array([np.eye(K)[i] * F[i, j] - np.eye(K)[j] for i, j in zip(*np.nonzero(F))]),
                zeros=d <= 0)
    assert res.objective == pytest.approx(lp.fun, rel=1e-9)


# ------------------------------------------------------------------ auxiliary variables (sparse LIP)


def lip_latent_rows(P, T, eps):
    """Pr(Y|G=g)/Pr(Y) within [e^{−ε}, e^{ε}]: T_g·z − e^{ε} P·z ≤ 0 and P·z − e^{ε} T_g·z ≤ 0."""
    return np.array([r for g in T for r in (g - math.exp(eps) * P, P - math.exp(eps) * g)])


def test_lip_rows_are_sparse_on_the_auxiliary_variable():
    """ε-LIP's 2·K ratio rows all hold P·v: written on s = P·v they have two entries each (the
    dense pair defining s is the only dense one), and on the extended column [v; P·v] they agree
    with the definition rows."""
    rng = np.random.default_rng(20)
    K, eps = 30, 0.8
    P = rng.dirichlet(np.ones(K))
    notion = LIP(P, eps)
    R = notion.rows()
    assert notion.n_aux == 1 and R.shape == (2 + 2 * K, K + 1)
    assert R.nnz <= 2 * (K + 1) + 4 * K  # not 2·K² as dense rows
    v = rng.random(K)
    u = np.append(v, P @ v)
    ratio = (R @ u)[2:]  # f·v_x − s and f·s − v_x, against the definition: Pr ratios in [e^-ε, e^ε]
    ok_def = (lip_def_rows(P, eps) @ v <= 0).reshape(K, 2).all(axis=1)
    ok_aux = (ratio <= 0).reshape(2, K).all(axis=0)
    np.testing.assert_array_equal(ok_def, ok_aux)


@pytest.mark.parametrize("method", ["full", "decomposition", "outputs", "pyomo"])
def test_latent_lip_and_two_auxiliary_notions_equal_definition_lp(method):
    """A latent-secret LIP (auxiliary s = P·v and s_g = T_g·v) intersected with a plain LIP (its own
    s = P·v) and Geo-Ind: every path lays the auxiliary variables of both parts side by side, and
    reaches the dense linprog of the definitions, each notion certified."""
    rng = np.random.default_rng(21)
    inst = li.grid(3, 3).with_prior(rng.dirichlet(np.ones(9)))
    P = inst.prior
    T = rng.dirichlet(np.ones(9), size=3)
    notion = DPrivacy(inst, 1.2) & LIP(P, 0.9, T=T) & LIP(P, 1.6)
    assert notion.n_aux == 1 + 3 + 1
    res = solve(notion, prior=P, loss=inst.loss, method=method, workers=1)
    rows = np.vstack([dprivacy_rows(inst.metric, 1.2), lip_latent_rows(P, T, 0.9),
                      lip_def_rows(P, 1.6)])
    lp = ref_lp(P[:, None] * inst.loss, rows)
    assert res.objective == pytest.approx(lp.fun, rel=1e-6)
    assert res.bound <= lp.fun + 1e-9
    assert len(res.stats["certificates"]) == 3 and all(c["satisfied"] for c in res.stats["certificates"])
    Z = res.mechanism.matrix
    assert (rows @ Z).max() <= 1e-9 * np.abs(rows).max()


def test_rows_of_the_wrong_width_for_auxiliary_variables_are_refused():
    from lpmech.design.notion import Notion, start_rows

    class Bad(Notion):
        name = "bad"

        def aux_map(self):
            return sp.csr_matrix(np.ones((1, 3)) / 3)

        def initial_rows(self, k=None):
            return sp.csr_matrix(np.eye(3)[:1])  # K columns, not K + 1

    with pytest.raises(InputError, match="K \\+ a = 4"):
        start_rows(Bad(3), 0)


def test_auto_solves_lip_compositions_by_output_generation():
    """Above the full LP's size, "auto" picks output generation for a notion holding a tight ε-LIP
    (few outputs carry the optimum; a loose one goes to the decomposition) and reaches the full
    LP's optimum, both notions met (realised ε computed by the models' own functions)."""
    rng = np.random.default_rng(22)
    inst = li.grid(8, 7, 1.0, unit="cell").with_prior(rng.dirichlet(np.ones(56)))
    notion = DPrivacy(inst, 1.0) & LIP(inst.prior, 1.0)
    auto = solve(notion, prior=inst.prior, loss=inst.loss, workers=1)
    full = solve(notion, prior=inst.prior, loss=inst.loss, method="full")
    assert auto.stats["method"] == "outputs"
    assert auto.objective == pytest.approx(full.objective, rel=1e-7)
    assert auto.stats["outputs_used"] < inst.K / 2
    assert lip.lip_epsilon(auto.mechanism.matrix, inst.prior) <= 1.0 * (1 + 1e-6)
    assert realized_epsilon(auto.mechanism.matrix, inst.metric) <= 1.0 * (1 + 1e-6)
    flat = np.full(inst.K, 1.0 / inst.K)  # participation ratio K: the decomposition above ε = 1
    loose = Problem.make(DPrivacy(inst, 1.0) & LIP(flat, 1.5), prior=flat, loss=inst.loss)
    assert choose_method(loose) == "decomposition"


def test_auto_weighs_the_prior_against_lip_epsilon(monkeypatch):
    """Above ε_LIP = 1, "auto" picks output generation while the prior's participation ratio
    1/Σp² is at most K/ε² or 0.08K. A prior uniform on m of the K = 56 cells has 1/Σp² = m, so the
    thresholds are 24.9 (ε = 1.5), 14 (2), 6.2 (3) and 4.5 (the floor, ε = 5) cells, either side
    of which the choice must flip; at ε_LIP = 3 on a skewed prior it reaches the full LP's optimum."""
    from lpmech.design import engine

    inst = li.grid(8, 7, 1.0, unit="cell")
    for m, e, want in [(24, 1.5, "outputs"), (26, 1.5, "decomposition"), (14, 2.0, "outputs"),
                       (15, 2.0, "decomposition"), (6, 3.0, "outputs"), (7, 3.0, "decomposition"),
                       (4, 5.0, "outputs"), (5, 5.0, "decomposition"), (56, 1.0, "outputs"),
                       (56, 1.05, "decomposition")]:
        p = np.zeros(inst.K)
        p[np.random.default_rng(m).choice(inst.K, m, replace=False)] = 1.0 / m
        problem = Problem.make(DPrivacy(inst, 1.0) & LIP(p, e), prior=p, loss=inst.loss)
        assert choose_method(problem) == want, (m, e)
    rng = np.random.default_rng(5)
    monkeypatch.setattr(engine, "AUTO_FULL_MAX", 100)  # a 6×5 grid above the full LP's size
    inst = li.grid(6, 5, 1.0, unit="cell")
    p = rng.dirichlet(np.full(inst.K, 0.05))
    assert 1.0 / (p @ p) <= inst.K / 9  # below the threshold at ε_LIP = 3
    notion = DPrivacy(inst, 1.0) & LIP(p, 3.0)
    auto = solve(notion, prior=p, loss=inst.loss, workers=1)
    full = solve(notion, prior=p, loss=inst.loss, method="full")
    assert auto.stats["method"] == "outputs"
    assert auto.objective == pytest.approx(full.objective, rel=1e-7)
    assert lip.lip_epsilon(auto.mechanism.matrix, p) <= 3.0 * (1 + 1e-6)
    assert realized_epsilon(auto.mechanism.matrix, inst.metric) <= 1.0 * (1 + 1e-6)
