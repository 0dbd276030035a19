"""Rome road-grid reader (real data, skipped when absent) and the synthetic road grid."""

from __future__ import annotations

import os
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from lpmech import datasets as ds
from lpmech.errors import InputError
from lpmech.instance import haversine

DATA = Path(os.environ.get("LPMECH_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
ROME = DATA / "rome"
needs_rome = pytest.mark.skipif(not (ROME / ds.ROME_NODES).is_file(),
                                reason=f"Rome data not found in {ROME} (set LPMECH_DATA)")


@pytest.fixture(scope="module")
def rome():
    return ds.read_rome(ROME)


@needs_rome
def test_rome_shape_and_metric(rome):
    assert rome.K == 1331  # the paper's "40x40" grid as published (data README)
    assert rome.coords[:, 0].min() > 41.78 and rome.coords[:, 0].max() < 41.97
    i, j = np.random.default_rng(0).choice(rome.K, 2, replace=False)
    (la1, lo1), (la2, lo2) = np.radians(rome.coords[i]), np.radians(rome.coords[j])
    h = 2 * 6371.0088 * np.arcsin(np.sqrt(np.sin((la2 - la1) / 2) ** 2
                                          + np.cos(la1) * np.cos(la2) * np.sin((lo2 - lo1) / 2) ** 2))
    assert rome.metric[i, j] == pytest.approx(h, rel=1e-12)


@needs_rome
def test_rome_travel_cost_matches_networkx(rome):
    import csv

    G = nx.Graph()
    pos = {g: k for k, g in enumerate(rome.grid_index.tolist())}
    with open(ROME / ds.ROME_EDGES) as f:
        for r in csv.DictReader(f):
            u, v, w = pos[int(r["u_index"])], pos[int(r["v_index"])], float(r["length"])
            if not G.has_edge(u, v) or G[u][v]["length"] > w:
                G.add_edge(u, v, length=w)
    for s in (0, 500, 1330):
        dist = nx.single_source_dijkstra_path_length(G, s, weight="length")
        got = rome.travel_cost[s, list(dist)]
        assert np.allclose(got, list(dist.values()), atol=1e-9)
    assert np.allclose(rome.travel_cost, rome.travel_cost.T)


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(InputError, match="missing Rome data file"):
        ds.read_rome(tmp_path)
    (tmp_path / ds.ROME_NODES).write_text("osmid,grid_index,y,x\n1,10,41.9,12.5\n2,11,41.9,12.51\n"
                                          "3,12,41.9,12.52\n")
    (tmp_path / ds.ROME_EDGES).write_text("u_index,u,v_index,v,length\n10,1,11,2,0.9\n")
    with pytest.raises(InputError, match="connected components"):
        ds.read_rome(tmp_path)
    (tmp_path / ds.ROME_EDGES).write_text("u_index,u,v_index,v,length\n10,1,11,2,x\n")
    with pytest.raises(InputError, match="non-numeric"):
        ds.read_rome(tmp_path)
    (tmp_path / ds.ROME_EDGES).write_text("u_index,u,v_index,v,length\n10,1,11,2,0.9\n11,2,12,3,0.8\n")
    g = ds.read_rome(tmp_path)
    assert g.travel_cost[0, 2] == pytest.approx(1.7)  # path through the middle cell


def test_synthetic_grid_shape_and_reproducible():
    a = ds.synthetic_road_grid(rng=np.random.default_rng(3))
    b = ds.synthetic_road_grid(rng=np.random.default_rng(3))
    assert np.array_equal(a.coords, b.coords) and np.array_equal(a.travel_cost, b.travel_cost)
    assert 1200 <= a.K <= 1450  # ~1,331 like the Rome default (39x39, 87.5% kept)
    nn = np.sort(a.metric, axis=1)[:, 1]
    assert 0.3 < np.median(nn) < 0.6  # ~0.49 km cells like Rome
    assert np.allclose(a.metric, haversine(a.coords))
    # road distances are at least the straight line (detour ≥ 1) and finite (connected)
    assert np.isfinite(a.travel_cost).all()
    assert (a.travel_cost >= a.metric - 1e-9).all()


def test_synthetic_small_matches_networkx_and_subset():
    g = ds.synthetic_road_grid(5, 4, rng=np.random.default_rng(1), keep=1.0)
    assert g.K == 20
    # rebuild the road graph from the grid neighbours and check Dijkstra independently
    H = nx.Graph()
    for i in range(g.K):
        for j in range(g.K):
            if i < j and g.travel_cost[i, j] > 0:
                ri, ci = divmod(int(g.grid_index[i]), 5)
                rj, cj = divmod(int(g.grid_index[j]), 5)
                if max(abs(ri - rj), abs(ci - cj)) == 1:
                    H.add_edge(i, j)
    assert nx.is_connected(H)
    sub = g.subset([3, 1, 7])
    assert sub.travel_cost[0, 1] == g.travel_cost[3, 1]
    inst = sub.instance()
    assert inst.K == 3 and inst.loss[0, 0] == 0
    s2 = g.sample(6, np.random.default_rng(0))
    assert s2.K == 6
    with pytest.raises(InputError):
        g.sample(100, np.random.default_rng(0))
    with pytest.raises(InputError):
        ds.synthetic_road_grid(1, 5, rng=np.random.default_rng(0))


@needs_rome
def test_lrgeo_on_rome_benders_equals_monolithic(rome):
    """Paper parameters (ε = 10/km, Γ = 20 km, r_obf = 4 km) on the 150 cells nearest the centre."""
    from lpmech.models import lrgeo

    centre = int(np.argmin(np.linalg.norm(rome.coords - rome.coords.mean(0), axis=1)))
    sub = rome.subset(np.sort(np.argsort(rome.metric[centre], kind="stable")[:150]))
    users = [3, 70, 140]
    bd = lrgeo.solve(sub, users, executor="serial")
    mono = lrgeo.solve(sub, users, method="monolithic", relaxed_bound=False)
    assert bd.status == "optimal" and bd.certificate.satisfied
    assert abs(bd.stats["cost"] - mono.stats["cost"]) <= 0.01 + 1e-9  # the paper's stopping gap
    assert bd.stats["relaxed_bound"] <= bd.stats["cost"] + 1e-9
    assert bd.stats["lower_bound"] <= mono.stats["cost"] + 1e-7
