"""The fast triangle-inequality check (lpmech._triangle, used by validate_metric) against a
brute-force loop over every triple, on random metrics and near-metrics, with both backends (the
numba kernel where numba is installed, and the numpy blocks), with blocks and k-chunks small enough
that the instances span several of them; the message names a triple that really violates; the CLI
refuses a file with the triple in its one-line error; program (2) on a small explicit metric
read from a file equals an independent SLSQP solve."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.sparse.csgraph import shortest_path

from lpmech import _triangle as tri
from lpmech.cli import main
from lpmech.errors import InputError
from lpmech.instance import METRIC_TOL, validate_metric
from lpmech.models.matrix import matrix_mechanism as mm


def brute_violations(d) -> list[tuple[int, int, int, float]]:
    """Every (i, k, j, excess) with d_ij − (d_ik + d_kj) > atol, atol = METRIC_TOL·max d: plain
    Python over all K³ triples (the definition, with the tolerance of validate_metric)."""
    rows = [list(map(float, r)) for r in d]
    K = len(rows)
    atol = METRIC_TOL * max(max(max(r) for r in rows), 1e-300)
    out = []
    for i in range(K):
        for j in range(K):
            for k in range(K):
                e = rows[i][j] - (rows[i][k] + rows[k][j])
                if e > atol:
                    out.append((i, k, j, e))
    return out


def euclid(rng, m):
    xy = rng.random((m, 2)) * rng.uniform(0.1, 100)
    return np.sqrt(((xy[:, None] - xy[None]) ** 2).sum(-1))


def graph(rng, m):
    W = rng.random((m, m)) * (rng.random((m, m)) < 0.4)
    W = np.triu(W, 1) + 0.01
    W = W + W.T
    np.fill_diagonal(W, 0)
    return shortest_path(W, method="D")


@pytest.fixture(params=["default", "numpy"])
def backend(request, monkeypatch):
    """Small blocks and k-chunks (several per instance, with ragged edges); the numba kernel when
    installed ("default"), and the numpy blocks."""
    monkeypatch.setattr(tri, "BLOCK", 4)
    monkeypatch.setattr(tri, "K_CHUNK", 5)
    if request.param == "numpy":
        monkeypatch.setattr(tri, "_numba", None)
    return request.param


def check(d):
    """(refused, message) of validate_metric."""
    try:
        validate_metric(d)
    except InputError as exc:
        return True, str(exc)
    return False, ""


def named_triple(msg):
    i, k, j = map(int, re.search(r"the triple \(i, k, j\) = \((\d+), (\d+), (\d+)\)", msg).groups())
    return i, k, j


@pytest.mark.parametrize("seed", range(6))
def test_random_metrics_are_accepted_like_the_brute_check(backend, seed):
    rng = np.random.default_rng(seed)
    for make in (euclid, graph):
        m = int(rng.integers(3, 26))
        d = make(rng, m)
        assert brute_violations(d) == []
        assert check(d) == (False, "")


@pytest.mark.parametrize("seed", range(8))
def test_near_metrics_just_above_and_below_the_tolerance(backend, seed):
    """One entry raised to its tightest detour plus 0.5 (accepted) or 2 (refused) tolerances."""
    rng = np.random.default_rng(100 + seed)
    d = (euclid if seed % 2 else graph)(rng, int(rng.integers(5, 26)))
    m = len(d)
    i, j = rng.choice(m, 2, replace=False)
    detour = min(d[i, k] + d[k, j] for k in range(m) if k not in (i, j))
    rest = np.delete(np.delete(d, [i, j], 0), [i, j], 1).max(initial=0.0)
    rest = max(rest, np.delete(d[[i, j]], [i, j], 1).max())  # the largest entry off (i, j)
    for factor, refused in ((0.5, False), (2.0, True)):
        # detour + factor·atol with atol = METRIC_TOL·(largest entry after the change)
        v = detour + factor * METRIC_TOL * rest
        if v > rest:
            v = detour / (1 - factor * METRIC_TOL)
        e = d.copy()
        e[i, j] = e[j, i] = v
        atol = METRIC_TOL * e.max()
        viol = brute_violations(e)
        assert bool(viol) == refused
        got, msg = check(e)
        assert got == refused
        if refused:
            a, k, b = named_triple(msg)
            assert e[a, b] - (e[a, k] + e[k, b]) > atol
            # the worst triple of its block: no violation is larger
            assert e[a, b] - (e[a, k] + e[k, b]) == pytest.approx(max(v[3] for v in viol))
            assert f"d[{a}, {b}] = {e[a, b]:.17g}" in msg


def test_many_violations_and_a_lowered_entry(backend):
    rng = np.random.default_rng(7)
    d = euclid(rng, 23)
    e = d.copy()
    e[3, 17] = e[17, 3] = 0.0  # lowering one distance breaks triangles through it
    viol = brute_violations(e)
    assert viol
    got, msg = check(e)
    assert got
    a, k, b = named_triple(msg)
    assert (a, k, b) in {(v[0], v[1], v[2]) for v in viol}


def test_block_excess_equals_the_definition(backend):
    rng = np.random.default_rng(1)
    d = euclid(rng, 19)
    d[2, 9] = d[9, 2] = d[2, 9] * 3
    nb = -(-19 // tri.BLOCK)
    bi, bj = np.triu_indices(nb)
    got = tri.block_excess(d, bi, bj)
    b = tri.BLOCK
    for p, (x, y) in enumerate(zip(bi, bj)):
        rows, cols = range(x * b, min(x * b + b, 19)), range(y * b, min(y * b + b, 19))
        want = max(d[i, j] - min(d[i, k] + d[k, j] for k in range(19)) for i in rows
                   for j in cols)
        assert got[p] == want  # exact: the same additions, min and subtraction


def test_cli_refuses_with_the_triple(tmp_path, capsys):
    rng = np.random.default_rng(5)
    d = euclid(rng, 12)
    d[4, 9] = d[9, 4] = d[4, 9] + 1.0
    np.save(tmp_path / "D.npy", d)
    code = main(["mm", "--metric", "matrix", "--distances", str(tmp_path / "D.npy"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 2 and out["status"] == "input_error"
    a, k, b = named_triple(out["error"])
    assert {a, b} == {4, 9}
    assert d[a, b] - (d[a, k] + d[k, b]) == max(v[3] for v in brute_violations(d)) > 0.1
    assert "--allow-nonmetric" in out["error"]


def test_program2_on_a_file_metric_equals_slsqp(tmp_path, capsys):
    """Program (2) from an .npy file (read in place, checked once) against SLSQP in u = 1/s."""
    rng = np.random.default_rng(11)
    m = 7
    d = euclid(rng, m)
    np.save(tmp_path / "D.npy", d)
    code = main(["mm", "--metric", "matrix", "--distances", str(tmp_path / "D.npy"),
                 "--epsilon", "2", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["status"] == "optimal"
    E = 2 * d
    iu = np.triu_indices(m, 1)
    cons = {"type": "ineq", "fun": lambda u: E[iu] - (u[iu[0]] + u[iu[1]])}
    u0 = np.full(m, 0.45 * E[iu].min())
    sol = minimize(lambda u: 2 * np.sum(u ** -2.0), u0, jac=lambda u: -4 * u ** -3.0,
                   constraints=[cons], bounds=[(1e-9, None)] * m, method="SLSQP",
                   options={"ftol": 1e-12, "maxiter": 2000})
    assert sol.success and cons["fun"](sol.x).min() >= -1e-9 and np.abs(sol.x - u0).max() > 1e-3
    assert out["objective"] == pytest.approx(sol.fun, rel=1e-5)
    assert out["realized_epsilon"] <= 2 * (1 + 1e-9)
    # the library path on the same matrix: same optimum, and the certificate over all pairs
    res = mm.solve_frequency(mm.metric_from_matrix(E, 2.0))
    assert res.objective == pytest.approx(out["objective"], rel=1e-9)
    assert res.certificate.n_constraints == m * (m - 1) // 2


def test_validate_metric_in_place_and_read_only():
    d = np.array([[0.0, 1.0, 2.0], [1.0 + 1e-12, 0.0, 1.5], [2.0, 1.5, 0.0]])
    out = validate_metric(d, copy=False)
    assert out is d and not out.flags.writeable and out[0, 1] == out[1, 0] == 0.5 * (2.0 + 1e-12)
    d2 = np.array([[0.0, 1.0], [1.0, 0.0]])
    out2 = validate_metric(d2)
    assert out2 is not d2 and d2.flags.writeable
