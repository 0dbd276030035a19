"""SNAP check-in reader and gridding (lpmech.datasets, section "SNAP check-ins")."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np
import pytest

from lpmech.datasets import (
    GOWALLA_NY_BBOX,
    check_bbox,
    checkin_instance,
    grid_counts,
    read_checkins,
)
from lpmech.errors import InputError

DATA = Path(os.environ.get("LPMECH_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
GOWALLA = DATA / "gowalla" / "loc-gowalla_totalCheckins.sample.txt.gz"

LINES = [
    "7\t2010-10-12T00:21:28Z\t40.60\t-73.90\t11",
    "7\t2010-10-11T20:21:20Z\t40.70\t-73.80\t12",  # user 7's earliest
    "3\t2010-01-01T00:00:00Z\t51.50\t-0.10\t13",  # outside the NY box
    "3\t2010-05-01T00:00:00Z\t40.50\t-74.00\t14",
    "",
    "3\t2010-06-01T00:00:00Z\t40.55\t-74.10\t15",
]


def _write(tmp_path, lines, gz=False):
    text = "\n".join(lines) + "\n"
    if gz:
        p = tmp_path / "c.txt.gz"
        with gzip.open(p, "wt") as fh:
            fh.write(text)
    else:
        p = tmp_path / "c.txt"
        p.write_text(text)
    return p


@pytest.mark.parametrize("gz", [False, True])
def test_read_all_fields(tmp_path, gz):
    d = read_checkins(_write(tmp_path, LINES, gz))
    assert d["user"].tolist() == [7, 7, 3, 3, 3]
    assert d["location"].tolist() == [11, 12, 13, 14, 15]
    assert d["lat"].tolist() == [40.60, 40.70, 51.50, 40.50, 40.55]
    assert d["lon"].tolist() == [-73.90, -73.80, -0.10, -74.00, -74.10]
    assert d["time"].dtype == np.dtype("datetime64[s]")
    # 2010-10-12T00:21:28Z as seconds since the epoch, computed by hand
    assert d["time"][0].astype(np.int64) == (14894 * 86400 + 21 * 60 + 28)


def test_bbox_and_first_per_user(tmp_path):
    p = _write(tmp_path, LINES)
    d = read_checkins(p, bbox=GOWALLA_NY_BBOX)
    assert d["location"].tolist() == [11, 12, 14, 15]
    f = read_checkins(p, bbox=GOWALLA_NY_BBOX, first_per_user=True)
    # earliest by time inside the box: user 3 -> line 4 (May), user 7 -> line 2 (newest-first file)
    assert dict(zip(f["user"].tolist(), f["location"].tolist())) == {3: 14, 7: 12}
    g = read_checkins(p, first_per_user=True)  # without a box user 3's earliest is in London
    assert dict(zip(g["user"].tolist(), g["location"].tolist())) == {3: 13, 7: 12}


@pytest.mark.parametrize("bad, what", [
    ("7\t2010-10-12T00:21:28Z\t40.6\t-73.9", "5 tab-separated fields"),
    ("7\t2010-10-12T00:21:28Z\tnorth\t-73.9\t1", "non-numeric"),
    ("7\tyesterday\t40.6\t-73.9\t1", "bad check-in time"),
    ("7\t2010-10-12T00:21:28Z\t95.0\t-73.9\t1", "outside latitude"),
])
def test_bad_line_names_line_number(tmp_path, bad, what):
    p = _write(tmp_path, [*LINES, bad])
    with pytest.raises(InputError, match=rf"line 7\b.*{what}"):
        read_checkins(p)


def test_missing_file_and_bad_bbox(tmp_path):
    with pytest.raises(InputError, match="no such SNAP"):
        read_checkins(tmp_path / "nope.txt")
    with pytest.raises(InputError, match="lat_min < lat_max"):
        check_bbox((41, 40, -74, -73))
    with pytest.raises(InputError, match="four"):
        check_bbox((41, 40))


def test_grid_counts_against_loop():
    rng = np.random.default_rng(5)
    bbox = (10.0, 12.0, -3.0, 1.0)
    lat = rng.uniform(9.5, 12.5, 3000)
    lon = rng.uniform(-3.5, 1.5, 3000)
    lat[:3], lon[:3] = 12.0, 1.0  # the north-east corner belongs to the last cell
    W, H = 8, 5
    c = grid_counts(lat, lon, W, H, bbox)
    ref = np.zeros((H, W), int)
    for a, b in zip(lat, lon):
        if 10 <= a <= 12 and -3 <= b <= 1:
            r = min(int((a - 10) / 2 * H), H - 1)  # south -> north
            k = min(int((b + 3) / 4 * W), W - 1)  # west -> east
            ref[r, k] += 1
    assert c.shape == (H, W)
    np.testing.assert_array_equal(c, ref)
    assert c[H - 1, W - 1] >= 3
    assert c.sum() == ((lat >= 10) & (lat <= 12) & (lon >= -3) & (lon <= 1)).sum()


def test_checkin_instance_prior_and_metric():
    lat = np.array([10.1, 10.1, 11.9])  # two in the SW cell, one in the NE cell of a 2x2 grid
    lon = np.array([-2.9, -2.9, 0.9])
    inst = checkin_instance(lat, lon, 2, 2, (10.0, 12.0, -3.0, 1.0))
    np.testing.assert_allclose(inst.prior, [2 / 3, 0, 0, 1 / 3])
    assert inst.metric[0, 3] == pytest.approx(np.sqrt(2))
    man = checkin_instance(lat, lon, 2, 2, (10.0, 12.0, -3.0, 1.0), metric="manhattan")
    assert man.metric[0, 3] == 2
    with pytest.raises(InputError, match="no check-in"):
        checkin_instance(lat, lon, 2, 2, (0.0, 1.0, 0.0, 1.0))


@pytest.mark.skipif(not GOWALLA.is_file(), reason=f"Gowalla sample not found at {GOWALLA} "
                    "(set LPMECH_DATA to the shared data folder)")
def test_gowalla_sample_against_plain_python():
    with gzip.open(GOWALLA, "rt") as fh:
        rows = [ln.rstrip("\n").split("\t") for ln in fh if ln.strip()]
    d = read_checkins(GOWALLA, bbox=GOWALLA_NY_BBOX, first_per_user=True)
    first: dict[int, tuple[str, int]] = {}
    for u, t, _la, _lo, loc in rows:  # ISO 8601 strings sort like times; ties keep the first line
        if int(u) not in first or t < first[int(u)][0]:
            first[int(u)] = (t, int(loc))
    assert len(d["user"]) == len(first)
    assert dict(zip(d["user"].tolist(), d["location"].tolist())) == {u: v[1] for u, v in first.items()}
    c = grid_counts(d["lat"], d["lon"], 100, 100, GOWALLA_NY_BBOX)
    assert c.sum() == len(first)
