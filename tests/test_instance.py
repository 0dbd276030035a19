"""Tests of lpmech.instance: builders against independent distance computations, every validation
rule (one test each, message asserted), the file readers, and immutability."""

from __future__ import annotations

import dataclasses
import math

import networkx as nx
import numpy as np
import pytest
from scipy.spatial.distance import cdist

from lpmech.errors import InputError, LpmechError
from lpmech.instance import (
    EARTH_RADIUS_KM,
    from_graph,
    from_matrix,
    grid,
    latlon,
    line,
    points,
    read_distances,
    read_edges,
    read_points,
    travel_cost_loss,
)

# ------------------------------------------------------------------------------------ helpers


def _great_circle_vectors(a_deg, b_deg, radius=EARTH_RADIUS_KM):
    """Great-circle distance via 3-D unit vectors and atan2(|p×q|, p·q) (not Haversine)."""
    def unit(latlon_deg):
        lat, lon = math.radians(latlon_deg[0]), math.radians(latlon_deg[1])
        return np.array([math.cos(lat) * math.cos(lon), math.cos(lat) * math.sin(lon),
                         math.sin(lat)])

    p, q = unit(a_deg), unit(b_deg)
    return radius * math.atan2(np.linalg.norm(np.cross(p, q)), float(p @ q))


def _law_of_cosines(a_deg, b_deg, radius=EARTH_RADIUS_KM):
    la, oa, lb, ob = map(math.radians, (*a_deg, *b_deg))
    c = math.sin(la) * math.sin(lb) + math.cos(la) * math.cos(lb) * math.cos(ob - oa)
    return radius * math.acos(max(-1.0, min(1.0, c)))



# ------------------------------------------------------------------------------------ builders


@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
def test_grid_distances_match_double_loop(metric):
    W, H, cell = 4, 3, 0.5
    inst = grid(W, H, cell, metric=metric)
    assert inst.K == W * H
    assert inst.shape == (W, H) and inst.cell == cell and inst.kind == "grid"
    for a in range(W * H):
        ra, ca = divmod(a, W)  # row-major: index = row·W + col
        assert inst.coords[a, 0] == pytest.approx(ca * cell)
        assert inst.coords[a, 1] == pytest.approx(ra * cell)
        for b in range(W * H):
            rb, cb = divmod(b, W)
            dx, dy = (ca - cb) * cell, (ra - rb) * cell
            expected = math.hypot(dx, dy) if metric == "euclidean" else abs(dx) + abs(dy)
            assert inst.metric[a, b] == pytest.approx(expected, abs=1e-12)
    np.testing.assert_array_equal(inst.loss, inst.metric)
    np.testing.assert_allclose(inst.prior, np.full(W * H, 1 / (W * H)))


def test_grid_row_major_neighbours():
    # index 1 is (col 1, row 0): one cell right of 0; index W is one cell below 0
    inst = grid(5, 2, 2.0)
    assert inst.metric[0, 1] == pytest.approx(2.0)
    assert inst.metric[0, 5] == pytest.approx(2.0)
    assert inst.metric[0, 6] == pytest.approx(2.0 * math.sqrt(2))
    assert inst.metric[4, 5] == pytest.approx(2.0 * math.hypot(4, 1))


def test_line_distances():
    inst = line(6, 0.25)
    for i in range(6):
        for j in range(6):
            assert inst.metric[i, j] == pytest.approx(0.25 * abs(i - j), abs=1e-15)
    assert inst.kind == "line" and inst.K == 6


def test_points_euclidean_matches_cdist():
    rng = np.random.default_rng(3)
    xy = rng.normal(size=(9, 2)) * 7
    inst = points(xy)
    np.testing.assert_allclose(inst.metric, cdist(xy, xy), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(inst.coords, xy)


def test_latlon_haversine_matches_independent_formulas():
    rng = np.random.default_rng(4)
    pts = np.column_stack([rng.uniform(-89, 89, 12), rng.uniform(-180, 180, 12)])
    pts = np.vstack([pts, [[10.0, 20.0], [-10.0, -160.0]]])  # an antipodal pair
    inst = latlon(pts)
    assert inst.unit == "km" and inst.kind == "latlon"
    for a in range(len(pts)):
        for b in range(len(pts)):
            exp = _great_circle_vectors(pts[a], pts[b])
            # Haversine's arcsin is ill-conditioned near antipodes: allow 1 m absolute
            assert inst.metric[a, b] == pytest.approx(exp, rel=1e-9, abs=1e-3)
            if exp > 10:  # the law of cosines is ill-conditioned only for tiny distances
                assert inst.metric[a, b] == pytest.approx(_law_of_cosines(pts[a], pts[b]),
                                                          rel=1e-8)
    assert inst.metric[-2, -1] == pytest.approx(math.pi * EARTH_RADIUS_KM, abs=1e-3)


def test_latlon_known_city_distance():
    # Paris (48.8566 N, 2.3522 E) to London (51.5074 N, 0.1278 W): about 343.5 km great-circle
    inst = latlon([[48.8566, 2.3522], [51.5074, -0.1278]])
    assert inst.metric[0, 1] == pytest.approx(343.5, abs=1.5)


def test_from_graph_matches_dijkstra():
    rng = np.random.default_rng(5)
    g = nx.connected_watts_strogatz_graph(14, 4, 0.3, seed=5)
    for u, v in g.edges:
        g[u][v]["length"] = float(rng.uniform(0.1, 5.0))
    inst = from_graph(g, weight="length")
    assert inst.labels == tuple(sorted(g.nodes))
    for a, u in enumerate(inst.labels):
        dist = nx.single_source_dijkstra_path_length(g, u, weight="length")
        for b, v in enumerate(inst.labels):
            assert inst.metric[a, b] == pytest.approx(dist[v], rel=1e-12, abs=1e-12)


def test_from_graph_node_order_and_default_weight():
    g = nx.Graph()
    g.add_edge("c", "a", weight=2.0)
    g.add_edge("a", "b")  # no weight: counts 1
    inst = from_graph(g)
    assert inst.labels == ("a", "b", "c")
    assert inst.metric[1, 2] == pytest.approx(3.0)  # b -> a -> c
    assert inst.metric[0, 1] == pytest.approx(1.0)
    # labels that do not sort keep insertion order
    h = nx.Graph()
    h.add_edge("x", 1, weight=4.0)
    h.add_edge(1, "y", weight=0.5)
    inst2 = from_graph(h)
    assert inst2.labels == ("x", 1, "y")
    assert inst2.metric[0, 2] == pytest.approx(4.5)


def test_from_matrix_keeps_values():
    rng = np.random.default_rng(6)
    xy = rng.random((7, 2))
    d = cdist(xy, xy)
    p = rng.random(7)
    p /= p.sum()
    inst = from_matrix(d, prior=p, gamma=0.4, unit="km")
    np.testing.assert_array_equal(inst.metric, d)
    np.testing.assert_allclose(inst.prior, p, rtol=1e-15)
    assert inst.gamma == 0.4 and inst.unit == "km"
    mask = inst.neighbours()
    for i in range(7):
        for j in range(7):
            assert mask[i, j] == (i != j and d[i, j] <= 0.4)


def test_with_counts_normalises():
    inst = line(4).with_counts([1, 0, 3, 4])
    np.testing.assert_allclose(inst.prior, [1 / 8, 0, 3 / 8, 4 / 8], rtol=1e-15)


def test_travel_cost_loss_matches_triple_loop():
    rng = np.random.default_rng(7)
    K = 6
    tc = rng.uniform(0, 10, (K, K))  # need not be symmetric
    q = rng.random(K)
    q /= q.sum()
    for targets in (None, q):
        L = travel_cost_loss(tc, targets)
        qq = np.full(K, 1 / K) if targets is None else q
        for i in range(K):
            for k in range(K):
                exp = sum(qq[ll] * abs(tc[i, ll] - tc[k, ll]) for ll in range(K))
                assert L[i, k] == pytest.approx(exp, rel=1e-12, abs=1e-12)


# ---------------------------------------------------------------------------------- validation

_D3 = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.5], [2.0, 1.5, 0.0]])


def test_input_error_types():
    assert issubclass(InputError, ValueError)
    assert issubclass(InputError, LpmechError)
    with pytest.raises(ValueError):
        from_matrix([[0.0, -1.0], [-1.0, 0.0]])


def test_not_square():
    with pytest.raises(InputError, match=r"must be square, got shape \(2, 3\)"):
        from_matrix(np.zeros((2, 3)))


def test_empty():
    with pytest.raises(InputError, match="is empty"):
        from_matrix(np.zeros((0, 0)))


def test_nan():
    d = _D3.copy()
    d[0, 2] = np.nan
    with pytest.raises(InputError, match=r"non-finite entry nan at \(0, 2\)"):
        from_matrix(d)


def test_inf():
    d = _D3.copy()
    d[1, 2] = d[2, 1] = np.inf
    with pytest.raises(InputError, match=r"non-finite entry inf at \(1, 2\)"):
        from_matrix(d)


def test_negative():
    d = _D3.copy()
    d[0, 1] = d[1, 0] = -1.0
    with pytest.raises(InputError, match=r"negative entry -1 at \(0, 1\)"):
        from_matrix(d)


def test_nonzero_diagonal():
    d = _D3.copy()
    d[1, 1] = 0.5
    with pytest.raises(InputError, match=r"zero diagonal, but d\[1, 1\] = 0.5"):
        from_matrix(d)


def test_asymmetric():
    d = _D3.copy()
    d[0, 2] = 2.5
    with pytest.raises(InputError, match="not symmetric"):
        from_matrix(d)


def test_triangle_violated_and_allow_nonmetric():
    d = _D3.copy()
    d[0, 2] = d[2, 0] = 3.0  # 3 > d01 + d12 = 2.5
    with pytest.raises(InputError, match=r"triangle inequality: d\[0, 2\] = 3 > d\[0, 1\] \+ "
                                         r"d\[1, 2\] = 2.5.*allow_nonmetric=True"):
        from_matrix(d)
    inst = from_matrix(d, allow_nonmetric=True)
    assert not inst.is_metric
    np.testing.assert_array_equal(inst.metric, d)
    # the other rules still apply with allow_nonmetric
    asym = d.copy()
    asym[0, 1] = 1.2
    with pytest.raises(InputError, match="not symmetric"):
        from_matrix(asym, allow_nonmetric=True)
    diag = d.copy()
    diag[2, 2] = 1.0
    with pytest.raises(InputError, match="zero diagonal"):
        from_matrix(diag, allow_nonmetric=True)
    neg = d.copy()
    neg[1, 2] = neg[2, 1] = -0.1
    with pytest.raises(InputError, match="negative entry"):
        from_matrix(neg, allow_nonmetric=True)


def test_triangle_within_tolerance_accepted():
    d = _D3.copy()
    d[0, 2] = d[2, 0] = 2.5 * (1 + 1e-12)  # violates d02 ≤ d01 + d12 by 2.5e-12 (tol 1e-9 × 2.5)
    inst = from_matrix(d)
    assert inst.is_metric and inst.metric[0, 2] == d[0, 2]
    d[0, 2] = d[2, 0] = 2.5 + 1e-6  # beyond the tolerance
    with pytest.raises(InputError, match="triangle inequality"):
        from_matrix(d)


def test_prior_not_summing_to_one():
    with pytest.raises(InputError, match=r"prior sums to 0.9, not 1"):
        from_matrix(_D3, prior=[0.3, 0.3, 0.3])


def test_prior_wrong_length():
    with pytest.raises(InputError, match=r"prior has shape \(2,\), but the domain has K = 3"):
        from_matrix(_D3, prior=[0.5, 0.5])


def test_negative_prior():
    with pytest.raises(InputError, match=r"negative entry -0.2 at index 1"):
        from_matrix(_D3, prior=[0.6, -0.2, 0.6])


def test_counts_all_zero():
    with pytest.raises(InputError, match="counts are all zero"):
        from_matrix(_D3).with_counts([0, 0, 0])


def test_loss_wrong_shape():
    with pytest.raises(InputError, match=r"loss matrix has shape \(3, 2\), but the domain needs "
                                         r"\(3, 3\)"):
        from_matrix(_D3, loss=np.zeros((3, 2)))


@pytest.mark.parametrize("gamma", [0.0, -1.0, float("nan")])
def test_gamma_not_positive(gamma):
    with pytest.raises(InputError, match=r"gamma .* must be > 0"):
        from_matrix(_D3, gamma=gamma)


@pytest.mark.parametrize(("w", "h"), [(0, 3), (3, -1), (2.5, 2)])
def test_bad_grid_size(w, h):
    with pytest.raises(InputError, match="grid size must be positive integers"):
        grid(w, h)


@pytest.mark.parametrize("cell", [0.0, -1.0, float("inf")])
def test_bad_cell_size(cell):
    with pytest.raises(InputError, match="cell size must be a positive finite number"):
        grid(2, 2, cell)


@pytest.mark.parametrize("pt", [[91.0, 0.0], [-90.5, 10.0], [10.0, 181.0]])
def test_latitude_out_of_range(pt):
    with pytest.raises(InputError, match=r"latitude must lie in \[-90, 90\]"):
        latlon([[0.0, 0.0], pt])


def test_disconnected_graph():
    g = nx.Graph([(0, 1), (2, 3)])
    with pytest.raises(InputError, match="2 connected components"):
        from_graph(g)


def test_directed_graph():
    with pytest.raises(InputError, match="must be undirected"):
        from_graph(nx.DiGraph([(0, 1), (1, 0)]))


def test_negative_edge_weight():
    g = nx.Graph()
    g.add_edge(0, 1, weight=1.0)
    g.add_edge(1, 2, weight=-0.5)
    with pytest.raises(InputError, match=r"edge \(1, 2\) has weight -0.5"):
        from_graph(g)


# --------------------------------------------------------------------------------------- files


def test_read_distances_npy(tmp_path):
    rng = np.random.default_rng(8)
    xy = rng.random((5, 2))
    d = cdist(xy, xy)
    np.save(tmp_path / "d.npy", d)
    inst = read_distances(tmp_path / "d.npy")
    np.testing.assert_array_equal(inst.metric, d)
    np.testing.assert_allclose(inst.prior, np.full(5, 0.2))


def test_read_distances_npz_with_prior(tmp_path):
    rng = np.random.default_rng(9)
    xy = rng.random((4, 2))
    d = cdist(xy, xy)
    p = np.array([0.1, 0.2, 0.3, 0.4])
    np.savez(tmp_path / "inst.npz", other=np.ones(3), distances=d, prior=p)
    inst = read_distances(tmp_path / "inst.npz")
    np.testing.assert_array_equal(inst.metric, d)
    np.testing.assert_allclose(inst.prior, p, rtol=1e-15)
    # a single unnamed array is taken as the matrix
    np.savez(tmp_path / "one.npz", d)
    np.testing.assert_array_equal(read_distances(tmp_path / "one.npz").metric, d)


def test_read_distances_wrong_extension(tmp_path):
    f = tmp_path / "d.csv"
    f.write_text("0,1\n1,0\n")
    with pytest.raises(InputError, match=r"read from .npy or .npz"):
        read_distances(f)


def test_read_distances_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_distances(tmp_path / "absent.npy")


def test_read_distances_npz_without_matrix(tmp_path):
    np.savez(tmp_path / "x.npz", a=np.zeros((2, 2)), b=np.zeros(2))
    with pytest.raises(InputError, match=r"no array named 'distances' \(found \['a', 'b'\]\)"):
        read_distances(tmp_path / "x.npz")


def test_read_points_with_and_without_header(tmp_path):
    xy = np.array([[0.0, 0.0], [3.0, 4.0], [-1.5, 2.0]])
    (tmp_path / "h.csv").write_text("y,x\n" + "".join(f"{b},{a}\n" for a, b in xy))
    (tmp_path / "n.csv").write_text("".join(f"{a},{b}\n" for a, b in xy))
    for name in ("h.csv", "n.csv"):
        inst = read_points(tmp_path / name)
        np.testing.assert_array_equal(inst.coords, xy)
        np.testing.assert_allclose(inst.metric, cdist(xy, xy), rtol=1e-14)
    assert read_points(tmp_path / "n.csv").metric[0, 1] == pytest.approx(5.0)


def test_read_points_latlon_column_order(tmp_path):
    ll = np.array([[41.9, 12.5], [45.46, 9.19], [40.85, 14.27]])  # Rome, Milan, Naples
    (tmp_path / "a.csv").write_text("lat,lon\n" + "".join(f"{a},{b}\n" for a, b in ll))
    (tmp_path / "b.csv").write_text("lon,lat\n" + "".join(f"{b},{a}\n" for a, b in ll))
    for name in ("a.csv", "b.csv"):
        inst = read_points(tmp_path / name, latlon=True)
        np.testing.assert_array_equal(inst.coords, ll)
        for i in range(3):
            for j in range(3):
                assert inst.metric[i, j] == pytest.approx(_great_circle_vectors(ll[i], ll[j]),
                                                          rel=1e-9, abs=1e-9)
    # Rome–Milan is about 477 km as the crow flies
    assert inst.metric[0, 1] == pytest.approx(477, abs=5)


def test_read_points_non_numeric_row_names_line(tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("x,y\n1,2\n3,4\nfive,6\n")
    with pytest.raises(InputError, match=r"p.csv, line 4: expected two numeric columns"):
        read_points(f)


def test_read_points_line_number_counts_blank_lines(tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("x,y\n1,2\n\n3,abc\n")  # the bad row is on line 4 of the file
    with pytest.raises(InputError, match=r"line 4:"):
        read_points(f)


def _shortest_kept_graph(edges):
    g = nx.Graph()
    for u, v, w in edges:
        if g.has_edge(u, v):
            w = min(w, g[u][v]["w"])
        g.add_edge(u, v, w=w)
    return g


@pytest.mark.parametrize("header", ["u,v,length\n", ""])
def test_read_edges(tmp_path, header):
    text = header + "1,2,2.5\n2,3,1.0\n3,1,10\n3,4,0.5\n2,1,1.5\n4,5\n"
    f = tmp_path / "e.csv"
    f.write_text(text)
    inst = read_edges(f)
    # independent: the same edges with duplicates kept shortest and missing weight 1
    g = _shortest_kept_graph([(1, 2, 2.5), (2, 3, 1.0), (3, 1, 10.0), (3, 4, 0.5),
                                    (2, 1, 1.5), (4, 5, 1.0)])
    assert inst.labels == (1, 2, 3, 4, 5)
    for a, u in enumerate(inst.labels):
        dist = nx.single_source_dijkstra_path_length(g, u, weight="w")
        for b, v in enumerate(inst.labels):
            assert inst.metric[a, b] == pytest.approx(dist[v], abs=1e-12)
    assert inst.metric[0, 1] == pytest.approx(1.5)
    assert inst.metric[0, 4] == pytest.approx(1.5 + 1.0 + 0.5 + 1.0)


def test_read_edges_string_labels_without_header(tmp_path):
    f = tmp_path / "e.csv"
    f.write_text("A,B,2\nB,C,3\nC,D,1\n")
    inst = read_edges(f)
    assert inst.labels == ("A", "B", "C", "D")
    assert inst.metric[0, 3] == pytest.approx(6.0)


# ----------------------------------------------------------------------------------- immutability


def test_instance_is_immutable():
    inst = grid(3, 2, metric="manhattan", prior=np.arange(1, 7) / 21,
                loss=np.ones((6, 6)) - np.eye(6))
    for arr in (inst.metric, inst.prior, inst.loss, inst.coords):
        assert not arr.flags.writeable
        with pytest.raises(ValueError, match="read-only"):
            arr[0] = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        inst.gamma = 2.0
    # the builders copy: changing the caller's array later does not change the instance
    d = _D3.copy()
    inst2 = from_matrix(d)
    d[0, 1] = d[1, 0] = 9.0
    assert inst2.metric[0, 1] == 1.0
    for new in (inst.with_prior("uniform"), inst.with_loss(np.zeros((6, 6))),
                inst.with_counts(np.ones(6))):
        assert not new.prior.flags.writeable and not new.loss.flags.writeable
