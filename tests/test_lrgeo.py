"""LR-Geo: structure (11)–(12), (18), (25), (31); CLR-Geo by Benders vs the monolithic LP vs Pyomo;
Thm 4.5, Prop. 4.4 (property tests), Thm 4.7/4.8 orderings, certification, bad input."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lpmech import datasets as ds
from lpmech.errors import InputError
from lpmech.models import lrgeo
from lpmech.solvers.benders import solve_benders, solve_monolithic

GRID = ds.synthetic_road_grid(6, 6, rng=np.random.default_rng(1))
# a small instance where the exponential ties bind (small ε, small r_exp)
P = lrgeo.LRGeoParams(epsilon=3.0, gamma=1.0, Gamma=3.0, r_obf=1.0, r_exp=0.7, lr_cap=4, table_cell=1.0)
USERS = [0, 14, 28]


@pytest.fixture(scope="module")
def structure():
    return lrgeo.build_structure(GRID, USERS, P)


def test_structure_sets(structure):
    D = lrgeo.path_distances(GRID.metric, P.gamma, USERS)
    for m, u in enumerate(structure.users):
        assert u.N[0] == USERS[m]
        assert (D[m, u.N] <= P.Gamma).all()  # (11)
        assert u.n == min(P.lr_cap, int((D[m] <= P.Gamma).sum()))
        # nearest selection: nobody outside N is strictly closer than the farthest in N
        out = np.setdiff1d(np.flatnonzero(D[m] <= P.Gamma), u.N)
        assert out.size == 0 or D[m, out].min() >= D[m, u.N].max() - 1e-12
        assert set(u.O) == set(np.flatnonzero(GRID.metric[u.user] <= P.r_obf))  # (12)
        d = GRID.metric[np.ix_(u.N, u.cols)]
        assert np.array_equal(u.q, d > P.r_exp)
        # exponential coefficient (18), truncated form, rescaled by e^{ε r_exp/2}
        assert np.allclose(u.a, np.exp(-P.epsilon * (np.minimum(d, P.r_obf) - P.r_exp) / 2))
        # Geo-Ind pairs: every ordered pair within γ, factor e^{−ε d}
        dn = GRID.metric[np.ix_(u.N, u.N)]
        assert u.pair_i.size == int(((dn <= P.gamma) & ~np.eye(u.n, dtype=bool)).sum())
        assert np.allclose(u.factor, np.exp(-P.epsilon * dn[u.pair_i, u.pair_j]))


def test_path_distance_is_dijkstra_on_geo_ind_graph():
    import networkx as nx

    G = nx.Graph()
    d = GRID.metric
    for i in range(GRID.K):
        for j in range(i + 1, GRID.K):
            if d[i, j] <= P.gamma:
                G.add_edge(i, j, w=d[i, j])
    ref = nx.single_source_dijkstra_path_length(G, 5, weight="w")
    D = lrgeo.path_distances(d, P.gamma, [5])[0]
    assert np.allclose([D[k] for k in ref], list(ref.values()))
    assert (D >= d[5] - 1e-12).all()  # Thm 3.2 setting: path ≥ direct distance


def test_cost_coefficients_and_bounds(structure):
    """c (5) against a brute-force triple loop; ĉ ≥ c ≥ c̃ entrywise (Lemmas B.1, B.2)."""
    tc, q = GRID.travel_cost, structure.targets
    u = structure.users[1]
    i, t = 2, 3
    brute = u.p[i] * sum(q[ll] * abs(tc[u.N[i], ll] - tc[u.cols[t], ll]) for ll in range(GRID.K))
    assert u.cost["true"][i, t] == pytest.approx(brute, rel=1e-12)
    for u in structure.users:
        assert (u.cost["upper"] >= u.cost["true"] - 1e-12).all()
        assert (u.cost["true"] >= u.cost["lower"] - 1e-12).all()
    assert any((u.cost["upper"] > u.cost["true"] + 1e-9).any() for u in structure.users)
    exact = lrgeo.build_structure(GRID, USERS, P.replace(table_cell=None))
    for u in exact.users:  # a table at full resolution is exact
        assert np.allclose(u.cost["upper"], u.cost["true"]) and np.allclose(u.cost["lower"], u.cost["true"])


def test_benders_equals_monolithic_and_bounds(structure):
    clr = lrgeo.clr_problem(structure)
    mono = solve_monolithic(clr.problem)
    bd = solve_benders(clr.problem, executor="serial", abs_tol=1e-7, rel_tol=0, max_iter=300)
    assert bd.status == "optimal"
    assert bd.objective == pytest.approx(mono.objective, abs=1e-6)
    lbs = [t["lower_bound"] for t in bd.stats["trace"]]
    ubs = [t["upper_bound"] for t in bd.stats["trace"]]
    assert all(b >= a - 1e-12 for a, b in itertools.pairwise(lbs))
    assert all(u >= lb - 1e-7 for lb, u in zip(lbs, ubs))
    assert clr.y_index.size > 0 and np.any(bd.x[:clr.y_index.size] > 1e-9)  # the ties are active
    # relaxed (29)–(30) ≤ CLR-Geo under the same costs; with c̃ ≤ CLR-Geo under c ≤ under ĉ
    true = solve_monolithic(lrgeo.clr_problem(structure, costs="true").problem).objective
    assert lrgeo.solve_relaxed(structure, costs="upper") <= mono.objective + 1e-9
    assert lrgeo.solve_relaxed(structure, costs="true") <= true + 1e-9
    assert lrgeo.solve_relaxed(structure) <= true + 1e-9 <= mono.objective + 2e-9


def test_pyomo_equals_sparse(structure):
    import pyomo.environ as pyo

    from lpmech.solvers.pyomo import solve_pyomo

    for exponential in (True, False):
        clr = lrgeo.clr_problem(structure, exponential=exponential)
        sparse = solve_monolithic(clr.problem)
        model = lrgeo.build_pyomo(structure, exponential=exponential)
        res = solve_pyomo(model)
        assert res.status == "optimal"
        assert pyo.value(model.total) == pytest.approx(sparse.objective, abs=1e-7)
        mats = lrgeo.pyomo_matrices(model, structure)
        assert clr.cost_of(mats) == pytest.approx(sparse.objective, abs=1e-7)
    # the same constraint counts: Geo-Ind rows of the relaxed problem = Σ pairs × |O|
    n_geo = sum(len(model.user[m].geo_ind) for m in model.M)
    assert n_geo == sum(u.pair_i.size * u.O.size for u in structure.users)


def test_stop_without_certified_optimum_raises_with_the_cap_named(structure):
    """One iteration cannot certify this binding instance (the full run needs more, and its optimum
    is the monolithic one): the API raises IterationLimitError naming the cap, result attached."""
    from lpmech.errors import IterationLimitError, TimeLimitError

    full = lrgeo.solve(GRID, USERS, P, executor="serial", abs_tol=0, rel_tol=1e-7, max_iter=300,
                       relaxed_bound=False)
    mono = solve_monolithic(lrgeo.clr_problem(structure).problem)
    assert full.status == "optimal" and full.stats["iterations"] > 1
    assert full.stats["upper_bound"] == pytest.approx(mono.objective, rel=1e-6)
    with pytest.raises(IterationLimitError, match=r"iteration cap \(1\)") as err:
        lrgeo.solve(GRID, USERS, P, executor="serial", abs_tol=0, rel_tol=1e-7, max_iter=1,
                    relaxed_bound=False)
    assert err.value.result is not None and err.value.result.status == "iteration_limit"
    with pytest.raises(TimeLimitError) as err:
        lrgeo.solve(GRID, USERS, P, executor="serial", abs_tol=0, rel_tol=1e-7, max_iter=300,
                    time_limit=1e-3, relaxed_bound=False)
    assert err.value.result.status == "time_limit"


def test_solve_certified_result():
    res = lrgeo.solve(GRID, USERS, P, executor="serial", abs_tol=1e-7, rel_tol=0, max_iter=400)
    s = res.stats
    assert res.status == "optimal"
    assert res.certificate.satisfied and res.certificate.realized_epsilon <= P.epsilon * (1 + 1e-6)
    mono = lrgeo.solve(GRID, USERS, P, method="monolithic")
    assert s["cost"] == pytest.approx(mono.stats["cost"], abs=1e-5)
    assert s["relaxed_bound"] <= s["cost"] + 1e-9
    assert s["lower_bound"] <= s["cost"] + 1e-6
    rows = lrgeo.user_rows(res)
    assert rows.shape == (len(USERS), GRID.K) and np.allclose(rows.sum(1), 1)
    # own-row cost recomputed from the travel costs directly
    tc = GRID.travel_cost
    L0 = np.array([np.mean(np.abs(tc[USERS[0]] - tc[k])) for k in range(GRID.K)])
    assert s["own_row_costs"][0] == pytest.approx(float(L0 @ rows[0]), rel=1e-9)
    # GV ratio (32) by brute force over all rows of all users
    Z = res.mechanism.matrix
    N = np.concatenate([u.N for u in lrgeo.build_structure(GRID, USERS, P).users])
    d = GRID.metric[np.ix_(N, N)]
    bad = tot = bad_d = tot_d = 0
    for i in range(len(N)):
        for j in range(len(N)):
            if i != j and d[i, j] <= P.gamma:
                hits = int((Z[i] - math.exp(P.epsilon * d[i, j]) * Z[j] > 1e-12).sum())
                tot, bad = tot + GRID.K, bad + hits
                if d[i, j] > 0:
                    tot_d, bad_d = tot_d + GRID.K, bad_d + hits
    assert s["gv_ratio"] == pytest.approx(bad / tot)
    assert s["gv_ratio_distinct"] == pytest.approx(bad_d / tot_d)
    assert s["choices"]["exp_form"] == "truncated"


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), r_exp=st.floats(0.0, 1.0))
def test_theorem_4_5_exponential_entries_cross_users(seed, r_exp):
    """Any two users' exponential entries (q = 1) satisfy (26) for random y ≥ 0 (truncated form)."""
    rng = np.random.default_rng(seed)
    users = rng.choice(GRID.K, 3, replace=False)
    s = lrgeo.build_structure(GRID, users, P.replace(r_exp=r_exp, outside="exp"))
    y = rng.exponential(1.0, GRID.K)
    rows, locs = [], []
    for u in s.users:
        Z = np.full((u.n, GRID.K), np.nan)
        Z[:, u.cols] = np.where(u.q, u.a * y[u.cols], np.nan)
        rows.append(Z)
        locs.append(u.N)
    Z, N = np.vstack(rows), np.concatenate(locs)
    d = GRID.metric[np.ix_(N, N)]
    for i in range(len(N)):
        both = ~np.isnan(Z[i])[None, :] & ~np.isnan(Z)
        lhs = np.where(both, Z[i][None, :] - np.exp(P.epsilon * d[i])[:, None] * Z, -1)
        assert (lhs <= 1e-9 * np.nanmax(Z)).all()


def test_paper_exponential_form_can_violate_theorem_4_5():
    """The literal (18) with a per-user 𝒪_m breaks (26) across users (spec §6 remark 3)."""
    def worst_violation(exp_form, users):
        s = lrgeo.build_structure(GRID, users, P.replace(exp_form=exp_form, outside="exp", r_exp=0.2))
        worst = -1.0
        for un in s.users:
            for um in s.users:
                d = GRID.metric[np.ix_(un.N, um.N)]
                both = un.q[:, None, :] & um.q[None, :, :]
                v = un.a[:, None, :] - np.exp(P.epsilon * d)[:, :, None] * um.a[None, :, :]
                worst = max(worst, float(v[both].max(initial=-1)))
        return worst

    found = next((v for v in range(1, GRID.K) if worst_violation("paper", [0, v]) > 1e-9), None)
    assert found is not None
    assert worst_violation("truncated", [0, found]) <= 1e-12



@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), Gamma=st.floats(0.5, 4.0), cap=st.integers(1, 12))
def test_proposition_4_4_request_circle_covers(seed, Gamma, cap):
    rng = np.random.default_rng(seed)
    users = rng.choice(GRID.K, 2, replace=False)
    s = lrgeo.build_structure(GRID, users, P.replace(Gamma=Gamma, lr_cap=cap, lr_select="random"),
                              rng=rng)
    for m, u in enumerate(s.users):
        a, radius = lrgeo.request_circle(s, m, rng)
        assert a in u.N
        cover = np.union1d(u.N, u.O)
        assert (GRID.metric[a, cover] <= radius + 1e-9).all()


def test_bad_input():
    with pytest.raises(InputError, match="outside the domain"):
        lrgeo.build_structure(GRID, [GRID.K + 3], P)
    with pytest.raises(InputError, match="r_exp"):
        P.replace(r_exp=2.0)
    with pytest.raises(InputError, match="lr_cap"):
        P.replace(lr_cap=0)
    with pytest.raises(InputError, match="connected components"):
        lrgeo.build_structure(GRID, [0], P.replace(gamma=0.05))
    with pytest.raises(InputError, match="at least one user"):
        lrgeo.build_structure(GRID, [], P)
    with pytest.raises(InputError, match="rng"):
        lrgeo.build_structure(GRID, [0], P.replace(lr_select="random"))
    with pytest.raises(InputError):
        P.replace(epsilon=-1)
    with pytest.raises(InputError, match="method"):
        lrgeo.solve(GRID, [0], P, method="magic")
    with pytest.raises(InputError, match="HiGHS method"):  # checked before any work, whatever the method
        lrgeo.solve(GRID, [0], P, lp_method="magic")


def test_monolithic_lp_method_ipm_equals_simplex():
    """The monolithic LP by interior point (with crossover) and by dual simplex: one optimum, each
    certified by its own duals, and the same certified mechanism cost."""
    simplex = lrgeo.solve(GRID, USERS, P, method="monolithic", relaxed_bound=False)
    ipm = lrgeo.solve(GRID, USERS, P, method="monolithic", lp_method="ipm", relaxed_bound=False)
    assert ipm.status == simplex.status == "optimal"
    assert ipm.stats["cost"] == pytest.approx(simplex.stats["cost"], rel=1e-7, abs=1e-9)
    assert ipm.bound <= simplex.objective + 1e-9 and simplex.bound <= ipm.objective + 1e-9
    assert ipm.certificate.realized_epsilon <= P.epsilon * (1 + 1e-6)


CLI_ARGS = ["lrgeo", "--synthetic", "6x6", "--seed", "1", "--user-cells", "0,14,28", "--epsilon", "3",
            "--gamma", "1", "--Gamma", "3", "--r-obf", "1.0", "--r-exp", "0.7", "--lr-cap", "4",
            "--workers", "0", "--abs-tol", "1e-7", "--max-iter", "400", "--table-cell", "1"]


def test_cli_json_matches_monolithic(capsys, tmp_path):
    import json

    from lpmech.cli import main

    out_file = tmp_path / "m.npz"
    assert main([*CLI_ARGS, "--json", "--out", str(out_file)]) == 0
    out = json.loads(capsys.readouterr().out)
    for key in ("status", "users", "K", "cost", "lower_bound", "upper_bound", "gap", "iterations",
                "relaxed_bound", "gv_ratio", "time_s"):
        assert key in out
    mono = lrgeo.solve(GRID, USERS, P, method="monolithic")  # GRID is the same seeded grid
    assert out["K"] == GRID.K and out["users"] == USERS
    assert out["cost"] == pytest.approx(mono.stats["cost"], abs=1e-5)
    assert out["lower_bound"] <= out["cost"] + 1e-6 and out["gap"] <= 1e-6
    assert out["relaxed_bound"] == pytest.approx(mono.stats["relaxed_bound"], abs=1e-9)
    with np.load(out_file) as z:
        assert z["matrix"].shape == (sum(mono.stats["lr_sizes"]), GRID.K)
        assert np.allclose(z["matrix"].sum(axis=1), 1)


def test_cli_monolithic_ipm_matches_api_simplex(capsys):
    """--method monolithic --lp-method ipm: the same certified cost as the API's dual simplex."""
    import json

    from lpmech.cli import main

    assert main([*CLI_ARGS, "--json", "--method", "monolithic", "--lp-method", "ipm"]) == 0
    out = json.loads(capsys.readouterr().out)
    mono = lrgeo.solve(GRID, USERS, P, method="monolithic")
    assert out["status"] == "optimal"
    assert out["cost"] == pytest.approx(mono.stats["cost"], rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("extra, msg", [
    (["--r-exp", "5"], "r_exp"),
    (["--user-cells", "9999"], "outside the domain"),
    (["--gamma", "0.05"], "connected components"),
    (["--rome-dir", "/nonexistent/rome"], "missing Rome data file"),
    (["--retain-after", "0"], "--retain-after"),
])
def test_cli_bad_input(capsys, extra, msg):
    from lpmech.cli import main

    assert main([*CLI_ARGS, *extra]) == 2
    assert msg in capsys.readouterr().err


def test_cli_retain_after_never_is_cuts_only(capsys):
    """--retain-after never: Benders by cuts alone, same optimum as the monolithic LP, more passes
    than the default (which takes the whole LP after one block pass on this small instance)."""
    import json

    from lpmech.cli import main

    assert main([*CLI_ARGS, "--json", "--no-relaxed-bound", "--retain-after", "never"]) == 0
    never = json.loads(capsys.readouterr().out)
    assert main([*CLI_ARGS, "--json", "--no-relaxed-bound"]) == 0
    auto = json.loads(capsys.readouterr().out)
    mono = lrgeo.solve(GRID, USERS, P, method="monolithic", relaxed_bound=False)
    for out in (never, auto):
        assert out["cost"] == pytest.approx(mono.stats["cost"], abs=1e-5)
    assert never["iterations"] > auto["iterations"]


def test_constopt_without_exponential_entries_is_the_full_omg():
    from lpmech.models import omg

    g = ds.synthetic_road_grid(4, 4, rng=np.random.default_rng(2))  # 16 cells: full OMG is small
    p = P.replace(r_obf=50.0, r_exp=50.0)  # no entry is exponential: ConstOPT = OMG
    c = lrgeo.constopt(g, p)
    o = omg.solve(g.instance(gamma=p.gamma), p.epsilon)
    uniform = np.full(g.K, 1 / g.K)
    assert c.mechanism.expected_loss(uniform, g.instance().loss) == pytest.approx(o.objective, abs=1e-7)
    # with exponential entries the LP is more constrained: cost cannot go down
    c2 = lrgeo.constopt(g, P)
    assert c2.mechanism.expected_loss(uniform, g.instance().loss) >= o.objective - 1e-9
    assert c2.certificate.satisfied


def test_laplace_rows_against_closed_form():
    """Two cells a distance D apart on the equator: the noisy point snaps to the other cell iff its
    x-offset exceeds D/2; P(X > a) = ∫_a^∞ (ε²/π) x K₁(εx) dx (marginal of planar Laplace)."""
    from scipy import integrate, special

    from lpmech.instance import EARTH_RADIUS_KM

    D, eps, n = 0.3, 5.0, 40_000
    grid = ds.RoadGrid(np.array([[0.0, 0.0], [0.0, np.degrees(D / EARTH_RADIUS_KM)]]), np.zeros((2, 2)),
                       np.zeros((2, 2)), [0, 1])
    z = lrgeo.laplace_rows(grid, [0], eps, np.random.default_rng(7), n_samples=n)
    exact = integrate.quad(lambda x: eps**2 / np.pi * x * special.k1(eps * x), D / 2, np.inf)[0]
    se = math.sqrt(exact * (1 - exact) / n)
    assert abs(z[0, 1] - exact) < 4 * se
    assert z[0].sum() == pytest.approx(1.0)
