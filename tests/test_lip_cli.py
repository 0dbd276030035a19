"""``lpmech lip`` through lpmech.cli.main: JSON keys and values checked against independent forms."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from lpmech.cli import main
from lpmech.models.lip import lip_closed_forms as cf
from lpmech.models.lip.lip_estimation import mmse_mse


def run(capsys, *argv):
    code = main(["lip", *argv])
    out = capsys.readouterr()
    return code, out


def test_verified_json_matches_binary_kink(capsys):
    code, out = run(capsys, "--prior", "0.93,0.07", "--values", "0,1", "--epsilon", "1", "--json")
    assert code == 0
    d = json.loads(out.out)
    for key in ("status", "mode", "mse", "realized_epsilon", "bound", "gap", "paper_feasible",
                "time_s"):
        assert key in d
    kink = cf.binary_optimal([(0.07, 0.0, 1.0)], 1.0)
    assert d["mse"] == pytest.approx(mmse_mse(kink, [0.93, 0.07], [0, 1]), abs=1e-12)
    assert d["status"] == "optimal" and d["mode"] == "verified"
    assert d["realized_epsilon"] <= 1 + 1e-6 and d["gap"] <= 1e-6
    assert np.array(d["matrix"]) == pytest.approx(kink, abs=1e-9)


def test_paper_mode_flags_infeasible_closed_form(capsys):
    code, out = run(capsys, "--prior", "0.93,0.07", "--epsilon", "1", "--mode", "paper", "--json")
    assert code == 0
    d = json.loads(out.out)
    assert d["paper_feasible"] is False  # 0.07 < 1/(1+e)
    assert d["realized_epsilon"] > 1
    # [001] eq. (21): P1(1−P1)(2e^−ε − e^−2ε)
    assert d["mse"] == pytest.approx(0.93 * 0.07 * (2 * math.exp(-1) - math.exp(-2)), rel=1e-10)
    assert "NOT 1-LIP" in out.err
    code, out = run(capsys, "--prior", "0.6,0.4", "--epsilon", "1", "--mode", "paper", "--json")
    assert json.loads(out.out)["paper_feasible"] is True


def test_bounded_prior_set_and_box(capsys):
    code, out = run(capsys, "--prior-set", "0.95,0.05;0.85,0.15", "--epsilon", "1", "--json")
    assert code == 0
    d = json.loads(out.out)
    kink = cf.binary_optimal([(0.05, 0, 1), (0.15, 0, 1)], 1.0)
    assert np.array(d["matrix"]) == pytest.approx(kink, abs=1e-9)
    worst = max(mmse_mse(kink, p, [0, 1]) for p in ([0.95, 0.05], [0.85, 0.15]))
    assert d["mse"] == pytest.approx(worst, abs=1e-12)
    code, out = run(capsys, "--prior-lo", "0.05,0.85", "--prior-hi", "0.15,0.95", "--epsilon", "1",
                    "--json")
    assert code == 0
    assert json.loads(out.out)["mse"] == pytest.approx(worst, abs=1e-12)


def test_text_report_and_errors(capsys):
    code, out = run(capsys, "--prior", "0.2,0.3,0.5", "--task", "hist")
    assert code == 0 and "realised epsilon" in out.out
    code, out = run(capsys, "--prior", "0.5,0.6", "--json")
    assert code == 2
    assert json.loads(out.out)["error_type"] == "InputError"
    code, out = run(capsys, "--prior", "0.5,x")
    assert code == 2 and "comma-separated" in out.err
    code, out = run(capsys, "--prior-lo", "0.1,0.1")
    assert code == 2 and "--prior-hi" in out.err


def test_cip_users_json_checked_by_enumerating_databases(capsys):
    import itertools

    p = np.array([0.2, 0.5, 0.9])
    code, out = run(capsys, "--cip-users", "0.2,0.5,0.9", "--epsilon", "1", "--json")
    assert code == 0
    d = json.loads(out.out)
    assert d["notion"] == "cip" and d["status"] == "optimal" and d["d"] == 4
    Q = np.array(d["matrix"])
    joint1, lam = np.zeros((3, Q.shape[1])), np.zeros(Q.shape[1])
    js, js2 = np.zeros(Q.shape[1]), np.zeros(Q.shape[1])
    for bits in itertools.product((0, 1), repeat=3):
        b = np.array(bits)
        pr = float(np.prod(np.where(b == 1, p, 1 - p)))
        row = pr * Q[b.sum()]
        lam += row
        joint1 += b[:, None] * row[None, :]
        js += b.sum() * row
        js2 += b.sum() ** 2 * row
    m = lam > 1e-15
    post = joint1[:, m] / lam[m]
    real = np.abs(np.log(np.r_[post / p[:, None], (1 - post) / (1 - p)[:, None]])).max()
    assert real <= 1.0 * (1 + 1e-6)
    assert d["realized_epsilon"] == pytest.approx(real, rel=1e-8)
    assert d["mse"] == pytest.approx(float((js2[m] - js[m] ** 2 / lam[m]).sum()), rel=1e-8)
    assert d["bound"] <= d["mse"] + 1e-12


def test_cip_many_users_channel_not_held_and_paper_mode_refused(capsys):
    """6000 users: the tilted construction (no dense channel) in text and JSON; its MSE bound holds
    against the exact pooled variance of the revealed window from the Poisson-binomial law of S;
    paper mode (an O(N³) check of the users' laws) is refused with exit 2 instead of hanging."""
    from lpmech.models.lip import lip_cip

    p = np.random.default_rng(0).uniform(0.05, 0.95, 6000)
    users = ",".join(f"{x:.4f}" for x in p)
    code, out = run(capsys, "--cip-users", users, "--epsilon", "1", "--json")
    assert code == 0
    d = json.loads(out.out)
    assert d["matrix"] is None and d["status"] == "optimal" and d["certified_by"] == "absolute floor"
    k, ku = d["revealed"]
    f = lip_cip.sum_distribution(np.round(p, 4))
    s = np.arange(f.size, dtype=float)
    exact = 0.0
    for part in (slice(0, k), slice(ku + 1, f.size)):
        m = f[part]
        if m.sum() > 0:
            exact += float(m @ (s[part] - (m @ s[part]) / m.sum()) ** 2)
    assert 0 < exact <= d["mse"] * (1 + 1e-9)
    code, out = run(capsys, "--cip-users", users, "--epsilon", "1")
    assert code == 0 and f"reveals S in [{k}, {ku}]" in out.out
    code, out = run(capsys, "--cip-users", users, "--epsilon", "1", "--mode", "paper")
    assert code == 2 and "O(N³)" in out.err
