"""The interior-point LP paths (lpmech.solvers.clarabel_lp and .piqp_lp, LazyLP(method="clarabel"))
and the race of PIQP against HiGHS' interior point (lpmech.solvers.race) against HiGHS through
SciPy: the same
optimum, and multipliers in HiGHS' sign convention (their Lagrangian bound, computed by our
certificate code, meets the optimum from below)."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from lpmech.certificate import lagrangian_bound
from lpmech.solvers import clarabel_lp, piqp_lp, race
from lpmech.solvers.cutting_planes import LazyLP


def _random_lp(seed: int, n: int, m: int):
    """Rows of every kind (equality, ≤, ≥, ranged, free) around a feasible point x0."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(m, n)) * (rng.random((m, n)) < 0.6)
    x0 = rng.random(n)
    ax = A @ x0
    kind = rng.integers(0, 5, m)
    lo = np.where(np.isin(kind, [0, 2, 3]), ax - rng.random(m) * (kind != 0), -np.inf)
    hi = np.where(np.isin(kind, [0, 1, 3]), ax + rng.random(m) * (kind != 0), np.inf)
    col_hi = np.where(rng.random(n) < 0.2, np.inf, 1.0 + rng.random(n))
    c = rng.normal(size=n)
    c[~np.isfinite(col_hi)] = np.abs(c[~np.isfinite(col_hi)]) + 0.1  # bounded below
    return c, A, lo, hi, np.zeros(n), col_hi


def _scipy(c, A, lo, hi, col_lo, col_hi):
    eq = lo == hi
    ub = np.vstack([A[~eq & np.isfinite(hi)], -A[~eq & np.isfinite(lo)]])
    bub = np.concatenate([hi[~eq & np.isfinite(hi)], -lo[~eq & np.isfinite(lo)]])
    return linprog(c, A_ub=ub if ub.size else None, b_ub=bub if ub.size else None,
                   A_eq=A[eq] if eq.any() else None, b_eq=hi[eq] if eq.any() else None,
                   bounds=list(zip(col_lo, [None if not np.isfinite(u) else u for u in col_hi])),
                   method="highs")


@pytest.mark.parametrize("solve", [clarabel_lp.solve_lp, piqp_lp.solve_lp], ids=["clarabel", "piqp"])
@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 12), m=st.integers(1, 15))
def test_solve_lp_matches_highs_and_its_multipliers_bound_the_optimum(solve, seed, n, m):
    c, A, lo, hi, col_lo, col_hi = _random_lp(seed, n, m)
    ref = _scipy(c, A, lo, hi, col_lo, col_hi)
    assert ref.status == 0
    status, x, y = solve(c, sp.csr_matrix(A), lo, hi, col_lo, col_hi)
    assert status == "optimal"
    scale = 1.0 + abs(ref.fun)
    assert c @ x == pytest.approx(ref.fun, abs=1e-6 * scale)
    ax = A @ x  # the point is feasible to the interior point's tolerance
    assert (ax <= hi + 1e-6).all() and (ax >= lo - 1e-6).all()
    assert (x >= -1e-7).all() and (x <= col_hi + 1e-7).all()
    bound = lagrangian_bound(c, A, lo, hi, col_lo, col_hi, y)
    assert bound <= ref.fun + 1e-9 * scale  # weak duality: right signs can only give this
    assert bound >= ref.fun - 1e-6 * scale  # and the multipliers are the optimal ones


@pytest.mark.parametrize("solve", [clarabel_lp.solve_lp, piqp_lp.solve_lp], ids=["clarabel", "piqp"])
def test_solve_lp_reports_infeasible(solve):
    A = sp.csr_matrix(np.ones((1, 3)))
    status, x, y = solve(np.ones(3), A, [-np.inf], [-1.0], np.zeros(3), np.ones(3))
    assert status == "infeasible" and x is None and y is None


def test_lazy_lp_by_clarabel_equals_simplex():
    """Rows revealed by an oracle: both backends end at the optimum of the LP on every row."""
    rng = np.random.default_rng(3)
    n, pool = 30, 400
    P = rng.normal(size=(pool, n))
    b = P @ rng.random(n) + rng.random(pool)
    c = rng.normal(size=n)

    def make_oracle():
        def separate(x):
            viol = np.nonzero(P @ x - b > 1e-9)[0]
            if viol.size == 0:
                return None
            viol = viol[np.argsort(-(P[viol] @ x - b[viol]))][:10]
            return sp.csr_matrix(P[viol]), np.full(viol.size, -np.inf), b[viol]
        return separate

    ref = linprog(c, A_ub=P, b_ub=b, bounds=(0, 2), method="highs")
    out = {}
    for method in ("simplex", "clarabel", "race"):
        lazy = LazyLP(c, np.zeros(n), np.full(n, 2.0), make_oracle(), method=method)
        out[method] = lazy.solve()
        assert out[method].status == "optimal"
        assert out[method].objective == pytest.approx(ref.fun, abs=1e-6 * (1 + abs(ref.fun)))
        assert out[method].bound <= ref.fun + 1e-9
        assert out[method].bound >= ref.fun - 1e-6 * (1 + abs(ref.fun))
    assert out["clarabel"].rounds >= 2  # the oracle was used
    # few: stop at the first round that finds rows; the bound stays valid, and solving again
    # from the rows it added ends at the same optimum
    lazy = LazyLP(c, np.zeros(n), np.full(n, 2.0), make_oracle(), method="clarabel")
    part = lazy.solve(few=10**9)
    assert part.partial and part.rounds == 1 and part.bound <= ref.fun + 1e-9
    rest = lazy.solve()
    assert not rest.partial and rest.objective == pytest.approx(ref.fun, abs=1e-6 * (1 + abs(ref.fun)))
    assert out["race"].trace[-1]["solver"] in race.SOLVERS + race.FALLBACK


@pytest.mark.parametrize("racers", [("piqp",), ("clarabel",), ("ipx",), ("piqp", "ipx")])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_race_matches_highs_and_its_multipliers_bound_the_optimum(monkeypatch, racers, seed):
    """Each racer alone, and both, give scipy's optimum and multipliers in HiGHS' convention."""
    monkeypatch.setattr(race, "SOLVERS", racers)
    monkeypatch.setattr(race, "MIN_VARIABLES", 0)
    c, A, lo, hi, col_lo, col_hi = _random_lp(seed, 10, 12)
    ref = _scipy(c, A, lo, hi, col_lo, col_hi)
    assert ref.status == 0
    status, x, y, who = race.solve_lp(c, sp.csr_matrix(A), lo, hi, col_lo, col_hi)
    assert status == "optimal" and who in racers
    scale = 1.0 + abs(ref.fun)
    assert c @ x == pytest.approx(ref.fun, abs=1e-6 * scale)
    bound = lagrangian_bound(c, A, lo, hi, col_lo, col_hi, y)
    assert ref.fun - 1e-6 * scale <= bound <= ref.fun + 1e-9 * scale


@pytest.mark.parametrize("in_process", [False, True])
def test_race_survives_a_failing_racer(monkeypatch, in_process):
    """A racer that raises (or dies) loses: the other's answer comes back, from the same race or
    from the fallback; all failing gives the failure, not a hang."""
    real = race._solve

    def broken(which, *args):
        if which == "piqp":
            raise RuntimeError("boom")
        return real(which, *args)

    monkeypatch.setattr(race, "_solve", broken)
    monkeypatch.setattr(race, "MIN_VARIABLES", 10**9 if in_process else 0)
    c, A, lo, hi, col_lo, col_hi = _random_lp(5, 8, 10)
    ref = _scipy(c, A, lo, hi, col_lo, col_hi)
    for solvers, fallback, winner in ((("piqp", "ipx"), (), "ipx"), (("piqp",), ("clarabel",), "clarabel")):
        monkeypatch.setattr(race, "SOLVERS", solvers)
        monkeypatch.setattr(race, "FALLBACK", fallback)
        if in_process and len(solvers) > 1:
            monkeypatch.setattr(race, "SOLVERS", solvers[:1])
            monkeypatch.setattr(race, "FALLBACK", solvers[1:])
        status, x, _, who = race.solve_lp(c, sp.csr_matrix(A), lo, hi, col_lo, col_hi)
        assert status == "optimal" and who == winner
        assert c @ x == pytest.approx(ref.fun, abs=1e-6 * (1 + abs(ref.fun)))
    monkeypatch.setattr(race, "_solve", lambda *a: (_ for _ in ()).throw(RuntimeError("both")))
    status, x, _, who = race.solve_lp(c, sp.csr_matrix(A), lo, hi, col_lo, col_hi)
    assert status == "error" and x is None


def test_race_stops_a_racer_without_a_time_limit_at_the_deadline(monkeypatch):
    """PIQP has no time limit: the child running it is stopped at the deadline (and a second's
    grace), status ``time_limit``, and the fallback gets no time."""
    import time

    real = race._solve

    def slow(which, *args):
        if which == "piqp":
            time.sleep(30)
        return real(which, *args)

    monkeypatch.setattr(race, "_solve", slow)
    monkeypatch.setattr(race, "MIN_VARIABLES", 0)
    monkeypatch.setattr(race, "SOLVERS", ("piqp",))
    c, A, lo, hi, col_lo, col_hi = _random_lp(5, 8, 10)
    t0 = time.perf_counter()
    status, x, _, _ = race.solve_lp(c, sp.csr_matrix(A), lo, hi, col_lo, col_hi, time_limit=1.0)
    assert status == "time_limit" and x is None
    assert time.perf_counter() - t0 < 5.0
