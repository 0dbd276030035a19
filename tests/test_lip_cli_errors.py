"""``lpmech lip`` exit codes, statuses and messages (issue 11): each asserted against what the
status means, and the README's latent example (run by the vertex method) against SCIP and
Bayes' rule."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from lpmech.cli import main
from lpmech.models import lip


def run(capsys, *argv):
    code = main(["lip", *argv])
    return code, capsys.readouterr()


@pytest.mark.parametrize("eps", ["1e6", "1e-300"])
def test_epsilon_out_of_range_is_input_error(capsys, eps):
    code, out = run(capsys, "--prior", "0.2,0.3,0.5", "--epsilon", eps)
    assert code == 2
    line = out.err.strip().splitlines()[-1]
    assert "usable range" in line and "1e-09 <= epsilon <= 12" in line
    assert "report" not in out.err


def test_local_solve_is_feasible_not_optimal_exit_4(capsys):
    code, out = run(capsys, "--prior", "0.1,0.2,0.3,0.4", "--method", "local", "--json")
    d = json.loads(out.out)
    assert code == 4 and d["status"] == "feasible" and d["bound"] is None
    v = lip.solve([0.1, 0.2, 0.3, 0.4], 1.0, method="vertex")
    assert d["mse"] >= v.objective - 1e-9  # a certified feasible channel, never below the optimum
    assert "not proved" in out.err


def test_scip_time_limit_exits_4(capsys):
    code, out = run(capsys, "--prior", "0.1,0.15,0.2,0.25,0.3", "--task", "hist", "--method", "scip",
                    "--time-limit", "0.05", "--json")
    d = json.loads(out.out)
    assert code == 4 and d["status"] == "time_limit"
    if d.get("mse") is not None:  # SCIP had a first channel: certified, never below the optimum
        v = lip.solve([0.1, 0.15, 0.2, 0.25, 0.3], 1.0, task="hist", method="vertex")
        assert d["mse"] >= v.objective - 1e-9
    assert "time limit" in out.err


def test_help_describes_every_option_and_exit_codes(capsys):
    with pytest.raises(SystemExit):
        main(["lip", "--help"])
    text = capsys.readouterr().out
    assert "exit codes:" in text and "4 no certified optimum" in text
    assert "privacy notion of the design constraint" in text  # --notion
    assert "what the channel minimises" in text  # --objective


def _mmse_by_bayes(Q, P, values):
    """E[(v(X) − E[v(X) | Y])²] by Bayes' rule, one output at a time (loops)."""
    total = 0.0
    for y in range(len(Q[0])):
        py = sum(P[x] * Q[x][y] for x in range(len(P)))
        if py <= 0:
            continue
        mean = sum(P[x] * Q[x][y] * values[x] for x in range(len(P))) / py
        total += sum(P[x] * Q[x][y] * (values[x] - mean) ** 2 for x in range(len(P)))
    return total


def _latent_epsilon_by_bayes(Q, P, T):
    """max |log Pr(G=g | Y=y) / Pr(G=g)| from the joint Pr(G=g, X=x) = Pr(G=g)·T[g][x] (loops);
    Pr(G) is the solution of Σ_g Pr(G=g) T[g][x] = P_x (least squares: consistent here)."""
    pg = np.linalg.lstsq(np.asarray(T).T, np.asarray(P), rcond=None)[0]
    worst = 0.0
    for y in range(len(Q[0])):
        py = sum(P[x] * Q[x][y] for x in range(len(P)))
        if py <= 0:
            continue
        for g in range(len(T)):
            pgy = sum(pg[g] * T[g][x] * Q[x][y] for x in range(len(P)))
            worst = max(worst, abs(math.log(pgy / py / pg[g])))
    return worst


def test_readme_latent_example_runs_and_is_optimal(capsys):
    P, T = [0.45, 0.45, 0.1], [[0.8, 0.1, 0.1], [0.1, 0.8, 0.1]]
    code, out = run(capsys, "--prior", "0.45,0.45,0.1", "--correlation", "0.8,0.1,0.1;0.1,0.8,0.1",
                    "--json")
    d = json.loads(out.out)
    assert code == 0 and d["status"] == "optimal"
    # the channel printed is ε-LIP for G by Bayes' rule, and its MSE is the one reported
    assert _latent_epsilon_by_bayes(d["matrix"], P, T) <= 1.0 * (1 + 1e-6)
    assert d["mse"] == pytest.approx(_mmse_by_bayes(d["matrix"], P, [0, 1, 2]), rel=1e-9)
    # optimal: the CLI ran the vertex method; SCIP (spatial branch and bound on the Pyomo model)
    # reaches the same optimum and its dual bound is not above the CLI's MSE
    assert d["method"] == "vertex"
    scip = lip.solve(P, 1.0, T=T, method="scip")
    assert d["mse"] == pytest.approx(scip.objective, rel=1e-6)
    assert scip.bound <= d["mse"] * (1 + 1e-6)
    # the inconsistent prior of the old README example is an input error naming the cause
    code, out = run(capsys, "--prior", "0.2,0.3,0.5", "--correlation", "0.8,0.1,0.1;0.1,0.8,0.1")
    assert code == 2 and "inconsistent with the prior" in out.err
