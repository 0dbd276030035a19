"""``lpmech lip`` exit codes, statuses and messages (issue 11): each asserted against what the
status means, and the README's latent example against the vertex method."""

from __future__ import annotations

import json

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


def test_readme_latent_example_runs_and_is_optimal(capsys):
    code, out = run(capsys, "--prior", "0.45,0.45,0.1", "--correlation", "0.8,0.1,0.1;0.1,0.8,0.1",
                    "--json")
    d = json.loads(out.out)
    assert code == 0 and d["status"] == "optimal"
    T = [[0.8, 0.1, 0.1], [0.1, 0.8, 0.1]]
    assert lip.lip_epsilon(d["matrix"], [0.45, 0.45, 0.1], T) <= 1.0 + 1e-6
    # the inconsistent prior of the old README example is an input error naming the cause
    code, out = run(capsys, "--prior", "0.2,0.3,0.5", "--correlation", "0.8,0.1,0.1;0.1,0.8,0.1")
    assert code == 2 and "inconsistent with the prior" in out.err
