"""lpmech.io.write_csv: an atomic CSV writer read back by the standard csv module."""

import csv

import pytest

from lpmech import io as lpio


def test_write_csv_round_trip_with_ragged_rows(tmp_path):
    rows = [{"K": 16, "time_s": 0.5}, {"K": 25, "gap": 1e-9}, {"time_s": None, "K": 36}]
    path = lpio.write_csv(tmp_path / "out.csv", rows)
    with open(path, newline="") as f:
        back = list(csv.DictReader(f))
    assert list(back[0]) == ["K", "time_s", "gap"]  # keys in order of first appearance
    assert [r["K"] for r in back] == ["16", "25", "36"]
    assert back[1]["time_s"] == "" and float(back[1]["gap"]) == pytest.approx(1e-9)
    assert not list(tmp_path.glob("*.tmp*"))  # nothing half-written left behind
