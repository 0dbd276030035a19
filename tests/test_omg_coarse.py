"""Coarse-to-fine starting columns of the OMG decomposition, and its lazy (cubic-free) set-up."""

import logging

import numpy as np
import pytest

from lpmech import instance as li
from lpmech.models import omg
from lpmech.models.omg import omg_large
from tests.test_omg import check_certified, random_prior


def _brute_excess(d, V, eps):
    """max over pairs (i, j) and columns of V_i − e^{ε d_ij} V_j, by a plain loop over pairs."""
    worst = -np.inf
    K = d.shape[0]
    for i in range(K):
        for j in range(K):
            if i != j:
                worst = max(worst, float(np.max(V[i] - np.exp(eps * d[i, j]) * V[j])))
    return worst


@pytest.mark.parametrize("kind", ["grid", "points", "graph"])
def test_lifted_columns_lie_in_the_cone_of_every_pair(kind):
    rng = np.random.default_rng(3)
    if kind == "grid":
        inst = li.grid(6, 5, cell=0.6)
    elif kind == "points":
        inst = li.points(rng.uniform(0, 4, size=(25, 2)))
    else:
        import networkx as nx

        G = nx.connected_watts_strogatz_graph(24, 4, 0.3, seed=2)
        inst = li.from_graph(G)
    S = omg_large.coarse_points(inst)
    assert 1 < S.size < inst.K
    U = rng.uniform(0, 1, size=(S.size, 7))  # arbitrary columns: not even Geo-Ind on S
    eps = 0.9
    V = omg_large.lift_columns(inst.metric, S, U, eps)
    assert V.min() >= 0 and V.max() <= 1
    assert _brute_excess(inst.metric, V, eps) <= 1e-12
    assert np.all(V[S] <= U + 1e-15)  # never above the coarse values where they are given


def test_lift_of_a_geo_ind_column_keeps_its_values_on_the_coarse_points():
    inst = li.grid(6, 6)
    S = omg_large.coarse_points(inst)
    eps = 0.7
    # a column that is Geo-Ind on S (a tent around one coarse point): the extension is exact there
    u = np.exp(-eps * inst.metric[S][:, S[3]])[:, None]
    V = omg_large.lift_columns(inst.metric, S, u, eps)
    assert np.allclose(V[S, 0], u[:, 0], rtol=1e-13, atol=0)


def test_coarse_points_of_a_grid_are_every_other_cell():
    inst = li.grid(7, 6, cell=1.5)
    S = omg_large.coarse_points(inst)
    xy = np.rint(inst.coords[S] / 1.5).astype(int)
    expected = {(x, y) for x in range(0, 7, 2) for y in range(0, 6, 2)}
    assert set(map(tuple, xy.tolist())) == expected


def test_coarse_instance_moves_the_prior_and_averages_the_loss():
    rng = np.random.default_rng(1)
    inst = li.points(rng.uniform(0, 3, size=(20, 2)), prior=random_prior(20, 2))
    S = omg_large.coarse_points(inst, 6)
    coarse, label = omg_large.coarse_instance(inst, S)
    assert coarse.K == S.size
    for t in range(S.size):  # brute loops: nearest coarse point, prior sum, weighted mean loss
        members = [i for i in range(inst.K)
                   if i == S[t] or (i not in S and np.argmin(inst.metric[i, S]) == t)]
        assert set(np.nonzero(label == t)[0].tolist()) == set(members)
        assert coarse.prior[t] == pytest.approx(sum(inst.prior[i] for i in members), rel=1e-12)
        for s in range(S.size):
            mean = sum(inst.prior[i] * inst.loss[i, S[s]] for i in members) / sum(
                inst.prior[i] for i in members)
            assert coarse.loss[t, s] == pytest.approx(mean, rel=1e-12)
    assert np.array_equal(coarse.metric, inst.metric[np.ix_(S, S)])


def test_lifted_duals_share_each_coarse_multiplier_by_prior_mass():
    """μ_i = μ_c p_i / p_c by a brute loop over groups, |group| shares where a group has no mass;
    each group's lifted multipliers add up to its coarse one."""
    prior = np.array([0.1, 0.3, 0.0, 0.2, 0.0, 0.0, 0.4])
    label = np.array([0, 0, 0, 1, 2, 2, 1])
    mu = np.array([2.0, -1.5, 0.7])
    got = omg_large.lift_duals(prior, label, mu)
    for c in range(3):
        members = [i for i in range(7) if label[i] == c]
        mass = sum(prior[i] for i in members)
        for i in members:
            want = mu[c] * (prior[i] / mass if mass > 0 else 1 / len(members))
            assert got[i] == pytest.approx(want, rel=1e-15)
        assert sum(got[i] for i in members) == pytest.approx(mu[c], rel=1e-14)


@pytest.mark.parametrize("cell, eps, first", [(1.0, 0.5, True), (1.0, 1.0, False), (1.0, 2.0, False),
                                               (2.0, 0.45, True), (2.0, 0.55, False),
                                               (0.25, 3.0, True), (0.25, 4.5, False)])
def test_coarse_duals_come_first_where_neighbouring_tents_overlap(cell, eps, first, monkeypatch):
    """``"auto"``: the coarse duals are the first pricing point exactly when ε × the grid's cell
    (its nearest-neighbour distance, by construction) is below 1; True and False force it."""
    inst = li.grid(17, 19, cell=cell)
    assert omg_large.coarse_duals_first(inst, eps) is first
    for forced in (True, False):
        monkeypatch.setattr(omg_large, "COARSE_DUAL_START", forced)
        assert omg_large.coarse_duals_first(inst, eps) is forced


@pytest.mark.parametrize("dual_start", [False, True])
@pytest.mark.parametrize("kind", ["grid", "points"])
def test_decomposition_from_coarse_columns_equals_the_full_lp(kind, dual_start, monkeypatch):
    monkeypatch.setattr(omg_large, "COARSE_MIN_K", 20)
    monkeypatch.setattr(omg_large, "COARSE_DUAL_START", dual_start)
    rng = np.random.default_rng(4)
    if kind == "grid":
        inst = li.grid(7, 6, prior=random_prior(42, 5))
    else:
        inst = li.points(rng.uniform(0, 5, size=(36, 2)), prior=random_prior(36, 6))
    eps = 0.8
    calls = []
    real = omg_large.coarse_start

    def spy(*a, **kw):
        cols, duals = real(*a, **kw)
        calls.append((len(cols), duals))
        return cols, duals

    monkeypatch.setattr(omg_large, "coarse_start", spy)
    res = omg.solve(inst, eps, method="decomposition")
    assert calls and calls[-1][0] > 0  # the (outermost) coarse solve ran and gave columns
    assert calls[-1][1] is not None and calls[-1][1].shape == (inst.K,)  # and lifted duals
    check_certified(res, inst, eps)
    full = omg.solve(inst, eps, method="full", reduce=False)
    assert res.objective == pytest.approx(full.objective, rel=1e-6)
    assert res.bound <= full.objective * (1 + 1e-9)


def test_progress_opens_before_any_cubic_work(monkeypatch, caplog):
    """The first progress line comes before the rows are built (no O(K³) row reduction runs)."""
    seen = []
    real = omg_large.factor_matrix

    def spy(instance, eps, *, reduce=True):
        seen.append(([r.getMessage() for r in caplog.records], reduce))
        return real(instance, eps, reduce=reduce)

    monkeypatch.setattr(omg_large, "factor_matrix", spy)
    monkeypatch.setattr(omg, "implied_pairs", lambda *a, **k: pytest.fail("implied_pairs ran"))
    inst = li.grid(5, 5, prior=random_prior(25, 1))
    with caplog.at_level(logging.INFO, logger="lpmech"):
        res = omg.solve(inst, 1.0, method="decomposition")
    messages, reduce = seen[0]
    assert any("started" in m for m in messages) and reduce is False
    full = omg.solve(inst, 1.0, method="full", reduce=False)
    assert res.objective == pytest.approx(full.objective, rel=1e-6)
