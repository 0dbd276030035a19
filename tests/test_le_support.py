"""LP (8) by support generation (lpmech.models.le.le_support) against the full LP and brute checks."""

import itertools
import sys

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from lpmech.errors import InputError
from lpmech.instance import grid, points
from lpmech.mechanism import realized_epsilon
from lpmech.models import le as L
from lpmech.models.le.le_support import (
    _PricingLP,
    blocked_points,
    envelope_pairs,
    envelopes,
    extend_columns,
    solve_support,
)


def _instance(kind: str, seed: int, alpha: float):
    rng = np.random.default_rng(seed)
    if kind == "grid":
        inst = grid(6, 6)
    else:  # scattered points in the plane, unit spacing on average
        inst = points(rng.uniform(0, 6, size=(36, 2)))
    return inst.with_prior(rng.dirichlet(np.full(inst.K, alpha)))


@settings(max_examples=12, deadline=None)
@given(kind=st.sampled_from(["grid", "points"]), seed=st.integers(0, 10_000),
       eps=st.sampled_from([0.3, 0.7, 1.0, 2.0, 4.0]), alpha=st.sampled_from([0.2, 1.0]))
def test_support_generation_equals_the_full_lp(kind, seed, eps, alpha):
    """The certified optimum of support generation = the full LP (8) of the design engine (every
    row, HiGHS), on grids and scattered points, skewed and flat weights; its bound is valid and
    the mechanism is d-private on every pair by a brute check."""
    inst = _instance(kind, seed, alpha)
    sup = L.solve(inst, eps, path="lp", lp_method="support")
    full = L.solve(inst, eps, path="lp", lp_method="full")
    assert sup.stats["engine_method"] == "support" and full.stats["engine_method"] == "full"
    assert sup.status == "optimal" and sup.gap <= 1e-6
    assert sup.objective == pytest.approx(full.objective, rel=1e-6, abs=1e-9)
    assert sup.bound <= full.objective + 1e-9
    Z = sup.mechanism.matrix
    assert np.abs(Z.sum(axis=1) - 1).max() <= 1e-9 and Z.min() >= 0
    assert realized_epsilon(Z, inst.metric) <= eps * (1 + 1e-6)
    assert 1 - inst.prior @ np.diag(Z) == pytest.approx(sup.objective, abs=1e-12)


def test_every_rounds_bound_is_valid():
    """Each round's Lagrangian bound (multipliers only on the core's points, priced through the
    McShane extension) lies under the full LP's optimum, from the first round on."""
    inst = _instance("points", 3, 0.3)
    full = L.solve(inst, 1.0, path="lp", lp_method="full")
    res = solve_support(inst, 1.0, start=[int(np.argmax(inst.prior))], add_per_round=2)
    bounds = [t["bound"] for t in res.stats["trace"]]
    assert len(bounds) >= 3
    assert max(bounds) <= full.objective + 1e-9
    assert res.status == "optimal" and res.optimality.objective == pytest.approx(full.objective, abs=1e-7)
    cut = solve_support(inst, 1.0, start=[int(np.argmax(inst.prior))], add_per_round=2, max_rounds=1)
    assert cut.status == "iteration_limit"
    assert cut.stats["bound"] == cut.stats["trace"][0]["bound"]  # kept at the stop
    if cut.x is not None:  # the incumbent kept at the stop: a d-private mechanism, bracketing
        Z = cut.x.reshape(inst.K, inst.K)
        assert np.allclose(Z.sum(axis=1), 1.0, atol=1e-7) and Z.min() >= -1e-12
        assert realized_epsilon(np.clip(Z, 0, None), inst.metric) <= 1.0 + 1e-6
        assert cut.optimality.bound <= full.objective + 1e-9 <= cut.optimality.objective + 2e-9


@pytest.mark.parametrize("eps", [0.7, 2.0])
def test_empty_cells_priced_without_an_lp_keep_every_bound_valid(eps):
    """Real counts leave cells empty (w_k = 0): their prices come from V_0 with no LP. Every
    round's bound stays under the full LP's optimum and the certified optimum equals it."""
    rng = np.random.default_rng(7)
    inst = grid(6, 6)
    counts = rng.poisson(3.0, inst.K) * (rng.random(inst.K) < 0.5)
    inst = inst.with_prior(counts / counts.sum())
    assert (inst.prior == 0).sum() >= 12
    full = L.solve(inst, eps, path="lp", lp_method="full")
    res = solve_support(inst, eps, add_per_round=4)
    assert res.status == "optimal"
    assert max(t["bound"] for t in res.stats["trace"]) <= full.objective + 1e-9
    assert res.optimality.objective == pytest.approx(full.objective, abs=1e-7)


@pytest.mark.parametrize("eps", [0.5, 1.0])
def test_idle_outputs_leave_the_core_and_the_optimum_is_unchanged(eps):
    """Outputs started on a wide set of heavy cells that the optimum leaves empty leave A (once),
    and the certified optimum still equals the full LP's; every round's bound stays under it."""
    rng = np.random.default_rng(11)
    inst = grid(7, 7).with_prior(rng.dirichlet(np.full(49, 0.3)))
    full = L.solve(inst, eps, path="lp", lp_method="full")
    res = solve_support(inst, eps, start=np.argsort(-inst.prior)[:20], add_per_round=4)
    assert sum(t.get("idle_outputs", 0) for t in res.stats["trace"]) > 0
    assert res.status == "optimal"
    assert max(t["bound"] for t in res.stats["trace"]) <= full.objective + 1e-9
    assert res.optimality.objective == pytest.approx(full.objective, abs=1e-7)


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_extension_keeps_the_core_and_is_d_private(eps):
    """extend_columns: rows sum to 1, entries on T unchanged, every pair of every column within
    e^{ε d} (brute check), or the points it could not place are reported."""
    rng = np.random.default_rng(7)
    inst = grid(7, 7)
    E = np.exp(-eps * inst.metric)
    T = np.sort(rng.choice(inst.K, 12, replace=False))
    # core columns: the exponential mechanism at ε/2 over three outputs (ε-d-private: the row
    # normalisers differ by at most e^{ε d/2})
    centres = T[:3]
    ZT = np.stack([np.sqrt(E[T, c]) for c in centres], axis=1)
    ZT = ZT / ZT.sum(axis=1, keepdims=True)
    assert realized_epsilon(np.column_stack([ZT, np.zeros((12, 1))]), inst.metric[np.ix_(T, T)]) \
        <= eps * (1 + 1e-12)
    Z, fails = extend_columns(E, T, ZT, max_fail=inst.K)
    assert np.array_equal(Z[T], ZT)
    placed = np.setdiff1d(np.arange(inst.K), np.asarray(fails, dtype=int))
    assert np.abs(Z[placed].sum(axis=1) - 1).max() <= 1e-12
    if not fails:
        assert realized_epsilon(Z, inst.metric) <= eps * (1 + 1e-12)
    else:
        sub = np.ix_(placed, np.arange(3))
        assert realized_epsilon(Z[sub], inst.metric[np.ix_(placed, placed)]) <= eps * (1 + 1e-12)


def _spread_core(eps: float):
    """A 9×9 grid, T every third point, columns on T: each T point reports itself 0.9 e^{3ε}
    times as often as any other (d-private on T at ε, spacing 3): sharp steps between T points."""
    inst = grid(9, 9)
    xy = np.array([(i, j) for i in range(9) for j in range(9)])
    T = np.nonzero((xy % 3 == 1).all(axis=1))[0]
    ratio = 0.9 * np.exp(3 * eps)
    ZT = np.full((T.size, T.size), 1 / (ratio + T.size - 1))
    np.fill_diagonal(ZT, ratio / (ratio + T.size - 1))
    assert realized_epsilon(ZT, inst.metric[np.ix_(T, T)]) <= eps
    return inst, T, ZT


@pytest.mark.parametrize("eps", [1.0, 3.0])
def test_envelopes_bound_every_extension_and_are_d_private(eps):
    """lo and hi equal the columns on T, are d-private on every pair (brute check), and hold
    every extension between them: the greedy extension's placed rows lie inside."""
    inst, T, ZT = _spread_core(eps)
    E = np.exp(-eps * inst.metric)
    lo, hi = envelopes(E, T, ZT)
    assert np.allclose(lo[T], ZT, rtol=0, atol=1e-15) and np.allclose(hi[T], ZT, rtol=0, atol=1e-15)
    for V in (lo, hi):
        assert realized_epsilon(V, inst.metric) <= eps * (1 + 1e-12)
    Z, fails = extend_columns(E, T, ZT, max_fail=inst.K)
    placed = np.setdiff1d(np.arange(inst.K), np.asarray(fails, dtype=int))
    assert (Z[placed] >= lo[placed] - 1e-15).all() and (Z[placed] <= hi[placed] + 1e-15).all()


@pytest.mark.parametrize("depth", [1, 2])
def test_envelope_pairs_are_the_rows_that_set_each_envelope(depth):
    """The rows a new point starts with in a core column: for each point j outside T, the
    ``depth`` points s of T with the largest z_s e^{−ε d_sj} (rows (s, j)) and the smallest
    z_s e^{ε d_sj} (rows (j, s)), by a brute sort; at depth 1 they attain the envelopes."""
    eps = 3.0
    inst, T, ZT = _spread_core(eps)
    E = np.exp(-eps * inst.metric)
    J = np.setdiff1d(np.arange(inst.K), T)
    lo, hi = envelopes(E, T, ZT)
    for b in range(ZT.shape[1]):
        i, j = envelope_pairs(E, T, ZT[:, b], J, depth)
        assert i.size == j.size == 2 * depth * J.size
        for p in J:
            low = {int(s): ZT[t, b] * E[s, p] for t, s in enumerate(T)}
            high = {int(s): ZT[t, b] / E[s, p] for t, s in enumerate(T)}
            got_lo = {int(s) for s, q in zip(i, j) if q == p}
            got_hi = {int(s) for q, s in zip(i, j) if q == p}
            assert sorted(low[s] for s in got_lo) == sorted(low.values())[-depth:]
            assert sorted(high[s] for s in got_hi) == sorted(high.values())[:depth]
            if depth == 1:
                assert low[got_lo.pop()] == lo[p, b]
                assert min(1.0, high[got_hi.pop()]) == hi[p, b]


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), eps=st.sampled_from([0.3, 0.7, 1.5, 4.0]),
       near=st.sampled_from([1, 4]))
def test_lazy_pricing_lp_equals_the_lp_with_every_row(seed, eps, near):
    """A pricing LP with lazy rows, asked for several costs in turn (the rows it gained stay), gives
    the maximum of the LP with all s(s−1) rows by scipy's HiGHS, to 1e-10: its bound is never
    below it, its maximiser is feasible on every row and attains it, and the reported active rows
    are rows of the model."""
    rng = np.random.default_rng(seed)
    s = 20
    D = points(rng.uniform(0, 4, size=(s, 2))).metric
    F = np.exp(-eps * D)
    lp = _PricingLP.near(F, near)
    i, j = np.nonzero(~np.eye(s, dtype=bool))
    rows = np.zeros((i.size, s))
    rows[np.arange(i.size), i] = F[i, j]
    rows[np.arange(i.size), j] = -1.0
    for _ in range(4):
        g = rng.normal(size=s) * rng.uniform(0, 1, size=s) ** 3  # mostly small, some large
        full = linprog(-g, A_ub=rows, b_ub=np.zeros(i.size), bounds=(0, 1), method="highs")
        bound, (ai, aj), v = lp.max_value(g)
        assert bound >= -full.fun - 1e-11 * (1 + abs(full.fun))
        assert bound <= -full.fun + 1e-10 * (1 + abs(full.fun))
        assert g @ v == pytest.approx(-full.fun, abs=1e-10)
        assert (F * v[:, None] - v[None, :]).max() <= 1e-12 and v.min() >= 0 and v.max() <= 1
        assert lp.has[ai, aj].all()
    assert lp.has.sum() < i.size  # it did leave rows out


def test_blocked_points_are_those_no_row_can_fill():
    """A point is blocked exactly when no row at it, d-private against the columns on T, sums to
    1: checked point by point with an independent LP (scipy). The picked points are the worst,
    spread apart."""
    eps = 3.0
    inst, T, ZT = _spread_core(eps)
    D = inst.metric
    E = np.exp(-eps * D)
    lo, hi = envelopes(E, T, ZT)
    every = blocked_points(D, T, lo, hi, inst.K, 0.0)
    a = ZT.shape[1]
    fits = {}
    for j in np.setdiff1d(np.arange(inst.K), T):
        # v_b ≥ z_sb e^{−ε d_sj} and v_b ≤ z_sb e^{ε d_sj} for every s in T, Σ_b v_b = 1
        rows = [np.eye(a)[b] for b in range(a) for _ in T]
        A_ub = np.vstack([-np.array(rows), np.array(rows)])
        b_ub = np.concatenate([-(ZT * E[T, j][:, None]).T.ravel(), (ZT / E[T, j][:, None]).T.ravel()])
        r = linprog(np.zeros(a), A_ub=A_ub, b_ub=b_ub, A_eq=np.ones((1, a)), b_eq=[1.0],
                    bounds=(0, 1), method="highs")
        fits[int(j)] = r.status == 0
    assert set(every) == {j for j, ok in fits.items() if not ok}
    assert 0 < len(every) < len(fits)  # the check sees both kinds
    some = blocked_points(D, T, lo, hi, 4, 2.5)
    assert len(some) >= 2 and set(some) <= set(every)
    assert all(D[i, j] >= 2.5 for i in some for j in some if i != j)
    short = np.maximum(lo.sum(axis=1) - 1, 1 - hi.sum(axis=1))
    assert short[some[0]] == short[every].max()


def test_bad_start_is_refused():
    inst = grid(3, 3)
    with pytest.raises(InputError, match="start points"):
        solve_support(inst, 1.0, start=[9])


def test_auto_keeps_support_generation_on_a_wide_support():
    """lp_method="auto" above 64 cells stays on support generation where its support passes half
    the points (large ε: it used to hand over to output generation there, which ran past 900 s
    on Gowalla 12×12 at ε = 4); its certified optimum equals the engine's full LP's."""
    inst = grid(9, 9).with_prior(np.random.default_rng(4).dirichlet(np.full(81, 0.3)))
    auto = L.solve(inst, 4.0, path="lp")
    assert auto.stats["engine_method"] == "support" and auto.stats["points"] > 81 // 2
    full = L.solve(inst, 4.0, path="lp", lp_method="full")
    assert auto.gap <= 1e-6 and full.gap <= 1e-6
    assert auto.objective == pytest.approx(full.objective, rel=1e-6)
    stopped = solve_support(inst, 1.0, max_points=12)
    assert stopped.status == "iteration_limit" and stopped.stats["stop"] == "max_points"


def test_auto_retries_only_a_failed_full_lp(monkeypatch):
    """``auto``'s full LP (m ≤ 64) that ends unproved is solved again by support generation, to
    the optimum output generation finds; a failure of any other path (here output generation,
    auto's path for coincident points above 64) is raised, not retried by the same path."""
    import lpmech.design as design
    from lpmech.errors import NotOptimalError

    engine, calls = design.solve, []

    def failing_full(*args, method, **kw):
        calls.append(method)
        if method in ("full", "outputs") and len(calls) == 1:
            raise NotOptimalError("stub: optimality not proved")
        return engine(*args, method=method, **kw)

    inst = grid(5, 5).with_prior(np.random.default_rng(2).dirichlet(np.full(25, 0.5)))
    reference = L.solve(inst, 1.0, path="lp", lp_method="outputs")
    monkeypatch.setattr(design, "solve", failing_full)
    res = L.solve(inst, 1.0, path="lp")
    assert calls == ["full"] and res.stats["engine_method"] == "support"
    assert "stub" in res.stats["full_lp_failed"] and res.gap <= 1e-6
    assert res.objective == pytest.approx(reference.objective, rel=1e-6)
    calls.clear()
    cells = np.array(list(itertools.product(range(9), range(9))), float)
    twins = points(np.vstack([cells, cells[:1]]))  # 82 points, two at (0, 0): auto → outputs
    with pytest.raises(NotOptimalError, match="stub"):
        L.solve(twins, 1.0, path="lp")
    assert calls == ["outputs"]


def test_lagging_interior_multipliers_get_one_vertex_core(monkeypatch):
    """With Clarabel's tolerance loosened 1e5-fold the core's interior multipliers leave the bound
    lagging although no output outside A prices out: the same core is solved once more by a
    vertex (HiGHS with crossover), and the optimum is still certified and equals the full LP."""
    import lpmech.solvers.cutting_planes as cpm
    from lpmech.solvers import race

    monkeypatch.setattr(cpm, "CLARABEL_TOL", 1e-4)
    monkeypatch.setattr(race, "SOLVERS", ("clarabel", "ipx"))  # (PIQP's multipliers stay exact)
    inst = _instance("grid", 5, 0.3)
    full = L.solve(inst, 2.0, path="lp", lp_method="full")
    res = solve_support(inst, 2.0)
    assert res.stats["vertex_core"]
    # its tolerance, 1e-7 (measured: 1.7e-8; without the vertex core 4.2e-7)
    assert res.status == "optimal" and res.optimality.gap_rel <= 1e-7
    assert res.optimality.objective == pytest.approx(full.objective, abs=1e-7)


@pytest.mark.parametrize("knobs", [{"CORE_ONCE": True},
                                   {"CORE_ONCE": False, "CORE_FEW": 10**9},
                                   {"CORE_ONCE": False, "CORE_FEW_FRAC": 1.0}])
@pytest.mark.parametrize("kind,seed,eps", [("grid", 3, 1.0), ("points", 8, 0.7), ("grid", 2, 1.0),
                                           ("points", 1, 0.5)])
def test_partial_cores_end_on_an_exact_or_repaired_core(monkeypatch, kind, seed, eps, knobs):
    """Cores solved once (``CORE_ONCE``), or with ``CORE_FEW`` huge or ``CORE_FEW_FRAC`` = 1: every
    core but the last stops after one lazy round that finds rows (partial), so the blocked points
    and prices come from inexact cores. The loop must still end on a core solved to its last row,
    or on a partial one whose violated rows :func:`_repair` re-solved within tol of the bound:
    the full LP's optimum, certified."""
    from lpmech.models.le import le_support

    for knob, value in knobs.items():
        monkeypatch.setattr(le_support, knob, value)
    inst = _instance(kind, seed, 0.3)
    full = L.solve(inst, eps, path="lp", lp_method="full")
    res = solve_support(inst, eps)
    trace = res.stats["trace"]
    assert any(r["partial"] for r in trace)
    assert not trace[-1]["partial"] or "repaired_cost" in trace[-1]  # a partial end is a repair
    assert res.status == "optimal" and res.optimality.gap_rel <= 1e-7
    assert res.optimality.objective == pytest.approx(full.objective, abs=1e-7)


def test_runs_that_end_on_a_repaired_core():
    """Instances whose last core is partial and repaired (measured: skewed weights on a grid at
    ε = 1 and on points at ε = 0.5): the end through :func:`_repair` is exercised, and there the
    repaired mechanism's cost is the full LP's optimum (every row, HiGHS) to 1e-7."""
    ended = 0
    for kind, seed, eps in [("grid", 2, 1.0), ("points", 1, 0.5)]:
        inst = _instance(kind, seed, 0.3)
        last = solve_support(inst, eps).stats["trace"][-1]
        if "repaired_cost" in last:
            ended += 1
            full = L.solve(inst, eps, path="lp", lp_method="full")
            assert last["repaired_cost"] == pytest.approx(full.objective, abs=1e-7)
    assert ended >= 1


@settings(max_examples=8, deadline=None)
@given(kind=st.sampled_from(["grid", "points"]), seed=st.integers(0, 10_000),
       eps=st.sampled_from([0.5, 1.0, 2.0]))
def test_repair_makes_a_partial_core_d_private_and_no_better_than_the_exact_core(kind, seed, eps):
    """:func:`_repair` on a core stopped after its first lazy round: the columns it returns sum
    to 1 on every point of T and are d-private on every pair of T (brute check), so their gain
    cannot exceed the exact core's optimum, which in turn cannot exceed the partial core's."""
    from lpmech.models.le import le_support as S

    inst = _instance(kind, seed, 0.3)
    D, w = np.asarray(inst.metric, float), np.asarray(inst.prior, float)
    E = np.exp(-eps * D)
    T = np.argsort(-w, kind="stable")[:12]
    T.sort()
    A = T[:6]
    part = S._core(D, eps, w, T, A, S._Pairs(), None, few=sys.maxsize)
    exact = S._core(D, eps, w, T, A, S._Pairs(), None, few=0)
    ET = E[np.ix_(T, T)]
    Zr = S._repair(E, ET, w, T, A, part[1], S._Pairs(), None)
    assume(Zr is not None)
    assert np.abs(Zr.sum(axis=1) - 1).max() <= 1e-7
    worst = max(float((ET * Zr[:, b, None] - Zr[None, :, b]).max()) for b in range(A.size))
    assert worst <= 1e-7
    gain = float(w[A] @ Zr[np.searchsorted(T, A), np.arange(A.size)])
    assert gain <= exact[3] + 1e-8 and exact[3] <= part[3] + 1e-8


@settings(max_examples=6, deadline=None)
@given(kind=st.sampled_from(["grid", "points"]), seed=st.integers(0, 10_000),
       eps=st.sampled_from([0.5, 1.0, 2.0]), growth=st.sampled_from([0.3, 1.0]))
def test_steps_that_grow_with_the_core_reach_the_full_lp(kind, seed, eps, growth):
    """Rounds that add a share of |T| points and of |A| outputs (``POINT_GROWTH``,
    ``OUTPUT_GROWTH``; blocked points side by side, ``SPREAD`` = 0) overshoot the support the
    optimum needs: the certified optimum must still be the full LP's, and no round may add more
    than its caps allow."""
    from lpmech.models.le import le_support

    inst = _instance(kind, seed, 0.3)
    full = L.solve(inst, eps, path="lp", lp_method="full")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(le_support, "POINT_GROWTH", growth)
        mp.setattr(le_support, "OUTPUT_GROWTH", growth)
        mp.setattr(le_support, "SPREAD", 0.0)
        res = solve_support(inst, eps, add_per_round=1, add_outputs=1)
    assert res.status == "optimal" and res.optimality.gap_rel <= 1e-7
    assert res.optimality.objective == pytest.approx(full.objective, abs=1e-7)
    trace = res.stats["trace"]
    pairs = list(itertools.pairwise(trace))
    for a, b in pairs:  # a round adds blocked/failed points and new outputs, each within its cap
        cap = max(1, int(growth * a["points"])) + max(1, int(growth * a["outputs"]))
        assert b["points"] - a["points"] <= cap
