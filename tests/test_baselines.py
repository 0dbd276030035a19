"""Baseline mechanisms: each value is checked against a second, independent computation."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from qif.mechanism import d_privacy
from scipy import integrate, stats

from lpmech import instance as inst_mod
from lpmech.errors import CertificationError, InputError
from lpmech.models import baselines, omg

# ------------------------------------------------------------------------------------- helpers


def assert_certified(mech, eps, notion="geo-ind"):
    z = mech.matrix
    assert (z >= 0).all()
    np.testing.assert_allclose(z.sum(axis=1), 1.0, rtol=0, atol=1e-9)
    cert = mech.certificate
    assert cert.notion == notion
    assert cert.realized_epsilon <= eps * (1 + 1e-6)
    assert cert.satisfied


def laplace_density(eps):
    return lambda y, x: eps * eps / (2 * math.pi) * math.exp(-eps * math.hypot(x, y))


def cell_bounds(index, n, cell):
    """Snapping interval of cell ``index`` of n cells centred at 0, cell, 2·cell, ..."""
    lo = -math.inf if index == 0 else (index - 0.5) * cell
    hi = math.inf if index == n - 1 else (index + 0.5) * cell
    return lo, hi


def split_at(lo, hi, at):
    """[lo, hi] cut at ``at`` (so the density's cusp lies on a boundary of the pieces)."""
    return [(lo, at), (at, hi)] if lo < at < hi else [(lo, hi)]


def cell_probability_dblquad(eps, centre, xs, ys):
    """P(centre + planar Laplace noise ∈ xs × ys) by direct 2-D integration of the density."""
    f = laplace_density(eps)
    total = 0.0
    for x0, x1 in split_at(*xs, centre[0]):
        for y0, y1 in split_at(*ys, centre[1]):
            v, _ = integrate.dblquad(f, x0 - centre[0], x1 - centre[0], y0 - centre[1],
                                     y1 - centre[1], epsabs=0, epsrel=1e-11)
            total += v
    return total


# ------------------------------------------------------------------------ peer library (qif)


@pytest.mark.parametrize(("m", "cell", "eps"), [(2, 1.0, 0.9), (7, 0.5, 1.3), (12, 2.0, 0.2)])
def test_geometric_matches_qif(m, cell, eps):
    mech = baselines.geometric(inst_mod.line(m, cell), eps)
    np.testing.assert_allclose(mech.matrix, d_privacy.geometric(m, eps * cell), rtol=1e-12)


def test_exponential_matches_qif_on_grid_and_graph():
    # qif's exponential(n, d) is z ∝ exp(−d/2), so ε·d gives our exp(−ε d / 2)
    g = nx.cycle_graph(6)
    nx.set_edge_attributes(g, {e: 1.0 + 0.3 * k for k, e in enumerate(g.edges)}, "weight")
    for inst, eps in [(inst_mod.grid(3, 4, 0.7), 1.1), (inst_mod.from_graph(g), 0.6)]:
        d = inst.metric
        ref = d_privacy.exponential(inst.K, lambda i, j, d=d, eps=eps: eps * d[i, j])
        mech = baselines.exponential(inst, eps)
        np.testing.assert_allclose(mech.matrix, ref, rtol=1e-12)
        assert_certified(mech, eps)


@pytest.mark.parametrize(("K", "eps"), [(1, 1.0), (2, 0.3), (5, 1.0), (9, 2.5)])
def test_randomized_response_matches_qif(K, eps):
    mech = baselines.randomized_response(K, eps)
    np.testing.assert_allclose(mech.matrix, d_privacy.randomized_response(K, eps), rtol=1e-12)
    assert_certified(mech, eps, notion="ldp")
    if K > 1:
        assert mech.certificate.realized_epsilon == pytest.approx(eps, rel=1e-12)


# ------------------------------------------------------------------------------- closed forms


def test_geometric_single_point_and_two_points():
    np.testing.assert_array_equal(baselines.geometric(inst_mod.line(1), 1.0).matrix, [[1.0]])
    alpha = math.exp(-0.4)  # two points: each end column collects its half-line, 1/(1+α) vs α/(1+α)
    z = baselines.geometric(inst_mod.line(2, 2.0), 0.2).matrix
    np.testing.assert_allclose(z, np.array([[1, alpha], [alpha, 1]]) / (1 + alpha), rtol=1e-14)


def test_geometric_is_clamped_two_sided_geometric_noise():
    """z_ik = P(clamp(i + N) = k) for N two-sided geometric, summed term by term."""
    m, cell, eps = 6, 0.8, 0.7
    alpha = math.exp(-eps * cell)
    n = np.arange(-400, 401)
    pn = (1 - alpha) / (1 + alpha) * alpha ** np.abs(n)
    ref = np.zeros((m, m))
    for i in range(m):
        np.add.at(ref[i], np.clip(i + n, 0, m - 1), pn)
    mech = baselines.geometric(inst_mod.line(m, cell), eps)
    np.testing.assert_allclose(mech.matrix, ref, rtol=1e-12)
    assert_certified(mech, eps)
    assert mech.certificate.realized_epsilon == pytest.approx(eps, rel=1e-9)  # tight


def test_randomized_response_entries_from_its_defining_ratio():
    """Diagonal = e^ε · off-diagonal and rows sum to 1 determine GRR; also via an Instance."""
    K, eps = 4, 0.8
    off = 1.0 / (math.exp(eps) + K - 1)
    mech = baselines.randomized_response(inst_mod.grid(2, 2), eps)
    z = mech.matrix
    np.testing.assert_allclose(np.diag(z), math.exp(eps) * off, rtol=1e-13)
    np.testing.assert_allclose(z[~np.eye(K, dtype=bool)], off, rtol=1e-13)
    assert_certified(mech, eps, notion="ldp")


# ------------------------------------------------------------------------------ planar Laplace


def test_planar_laplace_cells_match_direct_2d_integration():
    W, H, cell, eps = 3, 2, 0.7, 1.3
    inst = inst_mod.grid(W, H, cell)
    mech = baselines.planar_laplace(inst, eps)
    for i, centre in enumerate(inst.coords):
        for k in range(inst.K):
            xs = cell_bounds(k % W, W, cell)
            ys = cell_bounds(k // W, H, cell)
            ref = cell_probability_dblquad(eps, centre, xs, ys)
            assert mech.matrix[i, k] == pytest.approx(ref, rel=1e-8), (i, k)
    assert_certified(mech, eps)


def test_planar_laplace_tiny_far_cells_keep_relative_accuracy():
    W, H, cell, eps = 6, 5, 1.0, 6.0
    inst = inst_mod.grid(W, H, cell)
    mech = baselines.planar_laplace(inst, eps)
    for i, k in [(0, inst.K - 1), (0, inst.K - 2), (7, 23), (inst.K - 1, W - 1)]:
        centre = inst.coords[i]
        ref = cell_probability_dblquad(eps, centre, cell_bounds(k % W, W, cell),
                                       cell_bounds(k // W, H, cell))
        assert ref < 1e-8  # really far away
        assert mech.matrix[i, k] == pytest.approx(ref, rel=1e-8), (i, k)
    assert_certified(mech, eps)


def test_planar_laplace_matches_monte_carlo_sampling():
    W, H, cell, eps = 4, 3, 1.0, 0.9
    inst = inst_mod.grid(W, H, cell)
    mech = baselines.planar_laplace(inst, eps)
    rng = np.random.default_rng(20240611)
    n = 200_000
    for i in (0, 5):
        angle = rng.uniform(0, 2 * np.pi, n)
        radius = rng.gamma(2.0, 1.0 / eps, n)
        pts = inst.coords[i] + np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])
        nearest = np.argmin(((pts[:, None, :] - inst.coords[None, :, :]) ** 2).sum(-1), axis=1)
        counts = np.bincount(nearest, minlength=inst.K)
        p = mech.matrix[i]
        sd = np.sqrt(n * p * (1 - p))
        assert (np.abs(counts - n * p) <= 5 * sd + 1).all(), (i, counts, n * p)


@pytest.mark.parametrize(("W", "H", "cell", "eps"), [(1, 1, 1.0, 1.0), (1, 4, 0.5, 2.0),
                                                     (5, 5, 1.0, 1e-6), (4, 4, 1.0, 30.0),
                                                     (6, 3, 0.25, 0.4)])
def test_planar_laplace_certified_across_scales(W, H, cell, eps):
    mech = baselines.planar_laplace(inst_mod.grid(W, H, cell), eps)
    assert_certified(mech, eps)
    # mirror symmetry of the grid: flipping columns and rows maps the matrix onto itself
    z = mech.matrix.reshape(H, W, H, W)
    np.testing.assert_allclose(z, z[:, ::-1, :, ::-1], rtol=1e-10, atol=0)
    np.testing.assert_allclose(z, z[::-1, :, ::-1, :], rtol=1e-10, atol=0)


def test_planar_laplace_same_cells_under_manhattan_metric():
    """The nearest cell is the same under L1 and L2; d_L1 ≥ d_L2 keeps the certificate."""
    eucl = baselines.planar_laplace(inst_mod.grid(3, 3), 0.8)
    manh = baselines.planar_laplace(inst_mod.grid(3, 3, metric="manhattan"), 0.8)
    np.testing.assert_array_equal(eucl.matrix, manh.matrix)
    assert_certified(manh, 0.8)
    assert manh.certificate.realized_epsilon <= eucl.certificate.realized_epsilon


def test_planar_laplace_on_a_line_is_snapped_1d_laplace():
    m, cell, eps = 5, 0.6, 1.7
    inst = inst_mod.line(m, cell)
    mech = baselines.planar_laplace(inst, eps)
    x = inst.coords[:, 0]
    for i in range(m):
        noise = stats.laplace(loc=x[i], scale=1 / eps)
        edges = np.concatenate([[-np.inf], (x[:-1] + x[1:]) / 2, [np.inf]])
        np.testing.assert_allclose(mech.matrix[i], np.diff(noise.cdf(edges)), rtol=1e-12)
    assert_certified(mech, eps)


# ---------------------------------------------------------------------- certificates and γ


@pytest.mark.parametrize("make", [
    lambda: inst_mod.grid(4, 3, 0.5),
    lambda: inst_mod.grid(3, 3, 2.0, metric="manhattan").with_gamma(2.5),
    lambda: inst_mod.line(8, 0.3),
])
@pytest.mark.parametrize("eps", [0.2, 1.5])
def test_every_baseline_is_certified(make, eps):
    inst = make()
    mechs = [baselines.exponential(inst, eps), baselines.planar_laplace(inst, eps)]
    if inst.kind == "line":
        mechs.append(baselines.geometric(inst, eps))
    for mech in mechs:
        assert_certified(mech, eps)
        assert mech.certificate.gamma == inst.gamma
    assert_certified(baselines.randomized_response(inst, eps), eps, notion="ldp")


# ----------------------------------------------------------------- feasible points of the OMG LP


@pytest.mark.parametrize(("W", "H", "eps", "seed"), [(3, 3, 0.7, 1), (4, 4, 1.2, 2), (5, 5, 0.5, 3),
                                                     (5, 2, 2.0, 4)])
def test_grid_baselines_cost_at_least_the_omg_optimum(W, H, eps, seed):
    rng = np.random.default_rng(seed)
    inst = inst_mod.grid(W, H, 1.0).with_prior(rng.dirichlet(np.ones(W * H)))
    best = omg.solve(inst, eps).objective
    for mech in (baselines.exponential(inst, eps), baselines.planar_laplace(inst, eps)):
        assert mech.expected_loss(inst.prior, inst.loss) >= best - 1e-9


def test_line_baselines_cost_at_least_the_omg_optimum():
    rng = np.random.default_rng(7)
    inst = inst_mod.line(9, 0.5).with_prior(rng.dirichlet(np.ones(9)))
    eps = 1.1
    best = omg.solve(inst, eps).objective
    for f in (baselines.exponential, baselines.planar_laplace, baselines.geometric):
        assert f(inst, eps).expected_loss(inst.prior, inst.loss) >= best - 1e-9


# ---------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("f", [baselines.exponential, baselines.planar_laplace,
                               baselines.geometric, baselines.randomized_response])
@pytest.mark.parametrize("eps", [0, -1.0, float("nan"), float("inf"), "x"])
def test_bad_epsilon(f, eps):
    with pytest.raises(InputError, match="epsilon must be"):
        f(inst_mod.line(3), eps)


def test_geometric_needs_a_line():
    with pytest.raises(InputError, match=r"geometric mechanism needs a line instance.*grid"):
        baselines.geometric(inst_mod.grid(3, 1), 1.0)


def test_planar_laplace_refuses_points_and_non_planar_instances():
    with pytest.raises(InputError, match=r"only on a grid.*Voronoi"):
        baselines.planar_laplace(inst_mod.points([[0, 0], [1, 0], [0, 2]]), 1.0)
    others = [inst_mod.latlon([[41.9, 12.5], [41.8, 12.4]]), inst_mod.from_graph(nx.path_graph(3)),
              inst_mod.from_matrix([[0, 1], [1, 0]])]
    for inst in others:
        with pytest.raises(InputError, match=f"needs locations in a plane.*{inst.kind} instance"):
            baselines.planar_laplace(inst, 1.0)


@pytest.mark.parametrize("bad", [0, -3, True, 2.5, "4", None])
def test_randomized_response_bad_domain(bad):
    with pytest.raises(InputError, match="randomized_response"):
        baselines.randomized_response(bad, 1.0)


def test_underflowing_probabilities_are_refused():
    with pytest.raises(InputError, match=r"underflows float64.*smaller epsilon"):
        baselines.exponential(inst_mod.line(10), 500.0)
    with pytest.raises(InputError, match="underflows float64"):
        baselines.geometric(inst_mod.line(10), 100.0)


def test_exponential_on_a_non_metric_fails_its_certificate():
    d = [[0, 0.1, 10], [0.1, 0, 1], [10, 1, 0]]  # d_02 > d_01 + d_12
    inst = inst_mod.from_matrix(d, allow_nonmetric=True)
    with pytest.raises(CertificationError, match=r"exponential: realised epsilon .* only for a metric"):
        baselines.exponential(inst, 1.0)


def test_public_names():
    assert sorted(baselines.__all__) == sorted([
        "UnaryEncoding", "exponential", "geometric", "oue", "planar_laplace", "planar_laplace_sample",
        "randomized_response", "randomized_response_dprivate"])
    assert all(callable(getattr(baselines, name)) for name in baselines.__all__)
