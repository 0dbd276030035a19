"""The ``lpmech`` command line and ``lpmech.io``.

Every number the CLI prints is checked against one computed another way: the library called
directly (builder + ``omg.solve``), the peer library qif, an independent distance formula, or the
certifier run on the saved matrix. Commands run in-process through ``main([...])``, except for two
subprocess runs of the installed script and of ``python -m lpmech``.
"""

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from scipy.spatial.distance import cdist

from lpmech import instance as li
from lpmech import io as lpio
from lpmech.cli import main
from lpmech.errors import InputError
from lpmech.mechanism import realized_epsilon
from lpmech.models import omg

qif_dp = pytest.importorskip("qif.mechanism").d_privacy

RTOL = 1e-6


# ------------------------------------------------------------------------------------- helpers


def run(capsys, *argv):
    """Run ``lpmech argv`` in-process: (exit code, stdout, stderr)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv):
    """Run with ``--json``: stdout must be exactly one JSON object (strict JSON, one line)."""
    code, out, err = run(capsys, *argv, "--json")
    assert out.endswith("\n") and out.count("\n") == 1, out
    return code, json.loads(out, parse_constant=_reject), err


def _reject(name):
    raise AssertionError(f"non-standard JSON constant {name}")


def error_line(err: str) -> str:
    """The one stderr line of a failed run, without its ``lpmech: error: `` prefix."""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("lpmech: error: "), err
    assert "Traceback" not in err
    return lines[0].removeprefix("lpmech: error: ")


def qif_optimum(inst, eps):
    """Optimal expected loss of (ε, ∞)-Geo-Ind from qif on the same metric, prior and loss."""
    d, L, p = inst.metric, inst.loss, inst.prior
    C = qif_dp.min_loss_given_d(p, inst.K, lambda i, j: eps * d[i, j], lambda i, j: L[i, j])
    return float((p[:, None] * L * np.asarray(C)).sum())


def great_circle_km(a, b):
    """Spherical law of cosines (not the Haversine formula the package uses), in km."""
    (la1, lo1), (la2, lo2) = np.radians(a), np.radians(b)
    c = math.sin(la1) * math.sin(la2) + math.cos(la1) * math.cos(la2) * math.cos(lo2 - lo1)
    return li.EARTH_RADIUS_KM * math.acos(min(1.0, max(-1.0, c)))


@pytest.fixture(scope="module")
def grid3():
    """The 3×3 grid at ε = 1, solved by the library: (instance, result)."""
    inst = li.grid(3, 3)
    return inst, omg.solve(inst, 1.0)


@pytest.fixture
def saved(tmp_path, capsys):
    """A mechanism saved by ``lpmech omg --grid 3x3 --epsilon 1 --out``."""
    path = tmp_path / "m.npz"
    code, _, _ = run(capsys, "omg", "--grid", "3x3", "--out", path)
    assert code == 0
    return path


def resave(path, **changes):
    """Rewrite a saved .npz with some arrays replaced (simulates tampering)."""
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    arrays.update(changes)
    np.savez(path, **arrays)


# ----------------------------------------------------------------------------------- omg: values


def test_grid_json_equals_library_and_qif(capsys, grid3):
    inst, res = grid3
    code, out, err = run_json(capsys, "omg", "--grid", "3x3")
    assert code == 0 and err == ""
    assert out["status"] == "optimal"
    assert out["K"] == inst.K
    assert out["objective"] == pytest.approx(res.objective, rel=RTOL)
    assert out["objective"] == pytest.approx(qif_optimum(inst, 1.0), rel=RTOL)
    assert out["bound"] <= out["objective"] + 1e-12
    assert out["gap"] == pytest.approx((out["objective"] - out["bound"]) / out["objective"],
                                       abs=1e-12)
    assert out["realized_epsilon"] == pytest.approx(
        realized_epsilon(res.mechanism.matrix, inst.metric), rel=RTOL)
    assert out["epsilon"] == 1.0 and out["gamma"] == "inf"
    assert out["time_s"] > 0


def test_default_instance_is_6x6_grid(capsys):
    code, out, _ = run_json(capsys, "omg", "--epsilon", "2")
    inst = li.grid(6, 6, cell=1.0)
    assert code == 0
    assert out["K"] == inst.K
    assert out["objective"] == pytest.approx(omg.solve(inst, 2.0).objective, rel=RTOL)


def test_human_report_shows_the_computed_numbers(capsys, grid3):
    inst, res = grid3
    code, out, err = run(capsys, "omg", "--grid", "3x3")
    assert code == 0 and err == ""
    fields = {line.split()[0]: line.split()[1] for line in out.splitlines()[1:]}
    assert float(fields["objective"]) == pytest.approx(res.objective, rel=1e-9)
    assert float(fields["bound"]) == pytest.approx(res.bound, rel=1e-9)
    assert f"K={inst.K}" in out.splitlines()[0]


def test_cell_gamma_and_random_prior_equal_library_and_qif(capsys):
    seed = 7
    p = np.random.default_rng(seed).dirichlet(np.ones(9))
    inst = li.grid(3, 3, cell=0.5).with_prior(p)
    code, out, _ = run_json(capsys, "omg", "--grid", "3x3", "--cell", "0.5", "--epsilon", "2",
                            "--prior", f"random:{seed}")
    assert code == 0
    assert out["objective"] == pytest.approx(omg.solve(inst, 2.0).objective, rel=RTOL)
    assert out["objective"] == pytest.approx(qif_optimum(inst, 2.0), rel=RTOL)

    with_gamma = li.grid(3, 3).with_gamma(1.5)
    code, out, _ = run_json(capsys, "omg", "--grid", "3x3", "--gamma", "1.5")
    assert code == 0
    assert out["objective"] == pytest.approx(omg.solve(with_gamma, 1.0).objective, rel=RTOL)
    assert out["gamma"] == 1.5


@pytest.mark.parametrize("kind", ["npy", "csv", "counts"])
def test_prior_files(capsys, tmp_path, kind):
    counts = np.array([5.0, 1, 1, 2, 9, 1, 3, 1, 4])
    p = counts / counts.sum()
    if kind == "npy":
        np.save(tmp_path / "p.npy", p)
        spec = tmp_path / "p.npy"
    elif kind == "csv":
        (tmp_path / "p.csv").write_text("prob\n" + "\n".join(repr(float(v)) for v in p) + "\n")
        spec = tmp_path / "p.csv"
    else:
        (tmp_path / "c.csv").write_text("\n".join(f"{v:g}" for v in counts) + "\n")
        spec = f"counts:{tmp_path / 'c.csv'}"
    code, out, _ = run_json(capsys, "omg", "--grid", "3x3", "--prior", spec)
    inst = li.grid(3, 3).with_prior(p)
    assert code == 0
    assert out["objective"] == pytest.approx(omg.solve(inst, 1.0).objective, rel=RTOL)
    assert out["objective"] == pytest.approx(qif_optimum(inst, 1.0), rel=RTOL)


@pytest.mark.parametrize("solver", ["pyomo", "highs-ipm", "highs-choose"])
def test_solvers_agree_with_highs(capsys, solver):
    argv = ["omg", "--grid", "3x3", "--prior", "random:3", "--epsilon", "0.8"]
    code_h, highs, _ = run_json(capsys, *argv, "--solver", "highs")
    code_o, other, _ = run_json(capsys, *argv, "--solver", solver)
    assert code_h == code_o == 0
    assert other["objective"] == pytest.approx(highs["objective"], rel=RTOL)
    assert other["realized_epsilon"] <= 0.8 * (1 + 1e-6)
    assert other["path"] == ("pyomo" if solver == "pyomo" else "fast")


# --------------------------------------------------------------------------- omg: input formats


def test_points_csv(capsys, tmp_path):
    xy = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [1.5, 1.5], [3.0, 0.5]])
    f = tmp_path / "pts.csv"
    f.write_text("x,y\n" + "\n".join(f"{x},{y}" for x, y in xy) + "\n")
    out_file = tmp_path / "m.npz"
    code, out, _ = run_json(capsys, "omg", "--points", f, "--epsilon", "0.9", "--out", out_file)
    assert code == 0
    assert out["objective"] == pytest.approx(omg.solve(li.points(xy), 0.9).objective, rel=RTOL)
    np.testing.assert_allclose(lpio.load_mechanism(out_file).metric, cdist(xy, xy), atol=1e-12)


def test_latlon_csv_uses_great_circle_km(capsys, tmp_path):
    cities = np.array([[41.9028, 12.4964], [41.8902, 12.4922], [41.9109, 12.4818],
                       [41.8986, 12.4769]])  # central Rome, lat/lon in degrees
    f = tmp_path / "rome.csv"
    f.write_text("lat,lon\n" + "\n".join(f"{a},{b}" for a, b in cities) + "\n")
    out_file = tmp_path / "m.npz"
    code, out, _ = run_json(capsys, "omg", "--points", f, "--latlon", "--epsilon", "3",
                            "--out", out_file)
    assert code == 0
    expected = omg.solve(li.latlon(cities), 3.0).objective
    assert out["objective"] == pytest.approx(expected, rel=RTOL)
    metric = lpio.load_mechanism(out_file).metric
    for i in range(4):
        for j in range(4):
            assert metric[i, j] == pytest.approx(great_circle_km(cities[i], cities[j]),
                                                 rel=1e-6, abs=1e-9)


def test_graph_edges_csv(capsys, tmp_path):
    edges = [("a", "b", 1.0), ("b", "c", 2.0), ("a", "c", 4.0), ("c", "d", 0.5), ("d", "e", 1.5)]
    f = tmp_path / "edges.csv"
    f.write_text("u,v,weight\n" + "\n".join(f"{u},{v},{w}" for u, v, w in edges) + "\n")
    out_file = tmp_path / "m.npz"
    code, out, _ = run_json(capsys, "omg", "--graph", f, "--out", out_file)
    g = nx.Graph()
    g.add_weighted_edges_from(edges)
    assert code == 0
    assert out["objective"] == pytest.approx(omg.solve(li.from_graph(g), 1.0).objective, rel=RTOL)
    paths = dict(nx.all_pairs_dijkstra_path_length(g))
    nodes = sorted(g.nodes)
    expected = np.array([[paths[u][v] for v in nodes] for u in nodes])
    np.testing.assert_allclose(lpio.load_mechanism(out_file).metric, expected)
    assert expected[0, 2] == 3.0  # a-b-c beats the direct edge a-c


@pytest.mark.parametrize("fmt", ["npy", "npz"])
def test_distances_file(capsys, tmp_path, fmt):
    x = np.array([0.0, 1.0, 2.5, 4.0, 4.5])
    d = np.abs(x[:, None] - x[None, :])
    p = np.array([0.1, 0.4, 0.2, 0.2, 0.1])
    if fmt == "npy":
        f, inst = tmp_path / "d.npy", li.from_matrix(d)
        np.save(f, d)
    else:  # an .npz may carry its own prior, used unless --prior is given
        f, inst = tmp_path / "d.npz", li.from_matrix(d, prior=p)
        np.savez(f, distances=d, prior=p)
    code, out, _ = run_json(capsys, "omg", "--distances", f, "--epsilon", "1.2")
    assert code == 0
    assert out["objective"] == pytest.approx(omg.solve(inst, 1.2).objective, rel=RTOL)
    assert out["objective"] == pytest.approx(qif_optimum(inst, 1.2), rel=RTOL)


def test_allow_nonmetric(capsys, tmp_path):
    d = np.array([[0.0, 1.0, 3.0], [1.0, 0.0, 1.0], [3.0, 1.0, 0.0]])  # 3 > 1 + 1
    np.save(tmp_path / "d.npy", d)
    code, _, err = run(capsys, "omg", "--distances", tmp_path / "d.npy")
    assert code == 2 and "triangle inequality" in error_line(err)
    code, out, _ = run_json(capsys, "omg", "--distances", tmp_path / "d.npy",
                            "--allow-nonmetric")
    inst = li.from_matrix(d, allow_nonmetric=True)
    assert code == 0
    assert out["objective"] == pytest.approx(omg.solve(inst, 1.0).objective, rel=RTOL)


# ------------------------------------------------------------------------------ --out and certify


def test_saved_npz_recertifies(capsys, tmp_path):
    path = tmp_path / "m.npz"
    code, out, _ = run_json(capsys, "omg", "--grid", "3x3", "--epsilon", "0.7", "--gamma", "1.5",
                            "--out", path)
    assert code == 0
    assert sorted(os.listdir(tmp_path)) == ["m.npz"]  # no temporary file left behind
    inst = li.grid(3, 3).with_gamma(1.5)
    m = lpio.load_mechanism(path)
    z = m.matrix
    np.testing.assert_allclose(z.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(m.metric, inst.metric)
    np.testing.assert_array_equal(m.prior, inst.prior)
    assert (m.epsilon, m.gamma) == (0.7, 1.5)
    loss = float(inst.prior @ (inst.loss * z).sum(axis=1))
    assert loss == pytest.approx(omg.solve(inst, 0.7).objective, rel=RTOL)
    assert m.summary["objective"] == pytest.approx(loss, rel=1e-12)
    real = realized_epsilon(z, inst.metric, 1.5)
    assert out["realized_epsilon"] == pytest.approx(real, rel=1e-12)

    code, cert, err = run_json(capsys, "certify", path)
    assert code == 0 and err == ""
    assert cert["certified"] is True
    assert cert["realized_epsilon"] == pytest.approx(real, rel=1e-12)
    assert cert["epsilon"] == 0.7 and cert["gamma"] == 1.5
    assert cert["realized_epsilon"] <= 0.7 * (1 + 1e-6)
    assert cert["n_constraints"] == int(inst.neighbours().sum()) * inst.K


def test_certify_at_smaller_epsilon_exits_5(capsys, saved):
    z, d = lpio.load_mechanism(saved).matrix, li.grid(3, 3).metric
    real = realized_epsilon(z, d)
    code, out, err = run_json(capsys, "certify", saved, "--epsilon", "0.5")
    assert code == 5
    assert out["certified"] is False
    assert out["realized_epsilon"] == pytest.approx(real, rel=1e-12)
    worst = max(z[i, k] - math.exp(0.5 * d[i, j]) * z[j, k]
                for i in range(9) for j in range(9) if i != j for k in range(9))
    assert out["worst_violation"] == pytest.approx(worst, rel=1e-9)
    msg = error_line(err)
    assert "is not certified" in msg and f"{real:.6g}" in msg


def test_certify_tampered_matrix_exits_5(capsys, saved):
    z = lpio.load_mechanism(saved).matrix.copy()
    z[4] = 0.5 * z[4] + 0.5 * np.eye(9)[4]  # still row-stochastic, no longer 1-Geo-Ind
    resave(saved, matrix=z)
    real = realized_epsilon(z, li.grid(3, 3).metric)
    assert real > 1.0 * (1 + 1e-6)
    code, out, err = run(capsys, "certify", saved)
    assert code == 5
    assert "certified           NO" in out
    msg = error_line(err)
    assert f"realised epsilon {real:.9g} > 1*(1+1e-06)" in msg


def test_failed_run_writes_no_file(capsys, tmp_path, grid3):
    _, res = grid3
    path = tmp_path / "m.npz"
    code, _, err = run(capsys, "omg", "--grid", "3x3", "--max-loss", 0.9 * res.objective,
                       "--out", path)
    assert code == 3
    assert "is below the least expected loss" in error_line(err)
    assert os.listdir(tmp_path) == []
    path.write_bytes(b"previous content")  # a failed run leaves an existing file alone
    code, _, _ = run(capsys, "omg", "--grid", "3x3", "--epsilon", "-1", "--out", path)
    assert code == 2
    assert path.read_bytes() == b"previous content"
    assert os.listdir(tmp_path) == ["m.npz"]


def test_failure_while_saving_leaves_nothing(capsys, tmp_path, monkeypatch):
    def half_write(f, **arrays):
        f.write(b"PK\x03\x04 half an archive")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(lpio.np, "savez_compressed", half_write)
    code, _, err = run(capsys, "omg", "--grid", "2x2", "--out", tmp_path / "m.npz")
    assert code == 2
    assert "No space left on device" in error_line(err)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("exc", [RuntimeError("boom"), KeyboardInterrupt()])
def test_atomic_write_keeps_old_content_on_error(tmp_path, exc):
    target = tmp_path / "f.bin"
    target.write_bytes(b"old")

    def write(f):
        f.write(b"new but incomplete")
        raise exc

    with pytest.raises(type(exc)):
        lpio.atomic_write(target, write)
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["f.bin"]
    lpio.atomic_write(target, lambda f: f.write(b"new"))
    assert target.read_bytes() == b"new"
    assert os.listdir(tmp_path) == ["f.bin"]


def test_load_mechanism_rejects_bad_files(tmp_path, saved):
    with pytest.raises(InputError, match="no such file"):
        lpio.load_mechanism(tmp_path / "nope.npz")
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(InputError, match="cannot read"):
        lpio.load_mechanism(tmp_path / "junk.npz")
    np.save(tmp_path / "a.npy", np.eye(2))
    with pytest.raises(InputError, match=r"not an \.npz archive"):
        lpio.load_mechanism(tmp_path / "a.npy")
    np.savez(tmp_path / "part.npz", matrix=np.eye(2))
    with pytest.raises(InputError, match=r"missing array.*metric"):
        lpio.load_mechanism(tmp_path / "part.npz")
    z = lpio.load_mechanism(saved).matrix.copy()
    z[0, 0] += 0.25  # row 0 sums to 1.25
    resave(saved, matrix=z)
    with pytest.raises(InputError, match=re.escape(f"row 0 sums to {z[0].sum():.12g}")):
        lpio.load_mechanism(saved)
    with pytest.raises(InputError, match=r"must end in \.npz"):
        lpio.save_result(tmp_path / "m.txt", None, li.grid(2, 2))


# --------------------------------------------------------------------------------- exit codes


def _nonsymmetric(tmp_path):
    d = np.array([[0.0, 1.0, 2.0], [1.5, 0.0, 1.0], [2.0, 1.0, 0.0]])
    np.save(tmp_path / "d.npy", d)
    return ["omg", "--distances", tmp_path / "d.npy"], "is not symmetric: d[0, 1] = 1 but d[1, 0] = 1.5"


def _bad_prior(tmp_path):
    p = np.array([0.3, 0.3, 0.3])  # sums to 0.9
    (tmp_path / "p.csv").write_text("\n".join(map(str, p)))
    return (["omg", "--grid", "3x1", "--prior", tmp_path / "p.csv"],
            f"prior sums to {p.sum():.9g}, not 1")


def _bad_counts_len(tmp_path):
    (tmp_path / "c.csv").write_text("1\n2\n")
    return (["omg", "--grid", "3x1", "--prior", f"counts:{tmp_path / 'c.csv'}"],
            "counts have shape (2,), but the domain has K = 3")


def _corrupt_npz(tmp_path):
    (tmp_path / "m.npz").write_bytes(b"PK\x03\x04 truncated")
    return ["certify", tmp_path / "m.npz"], "cannot read"


@pytest.mark.parametrize("case", [
    lambda t: (["omg", "--grid", "2x2", "--epsilon", "-1"],
               "epsilon must be a positive finite number, got -1"),
    _nonsymmetric,
    _bad_prior,
    _bad_counts_len,
    lambda t: (["omg", "--points", t / "missing.csv"], f"no such file: {t / 'missing.csv'}"),
    lambda t: (["omg", "--grid", "3by3"], "bad --grid '3by3': expected WxH"),
    lambda t: (["omg", "--grid", "0x3"], "grid size must be positive integers, got 0x3"),
    lambda t: (["omg", "--grid", "2x2", "--out", t / "no" / "m.npz"],
               f"directory {t / 'no'} does not exist"),
    lambda t: (["omg", "--grid", "2x2", "--out", t / "m.csv"], "must end in .npz"),
    lambda t: (["omg", "--grid", "2x2", "--latlon"], "--latlon applies only to --points"),
    lambda t: (["omg", "--grid", "2x2", "--prior", "random:x"], "the seed must be"),
    lambda t: (["omg", "--grid", "2x2", "--time-limit", "nan"],
               "time limit must be positive, got nan"),
    lambda t: (["omg", "--grid", "2x2", "--max-loss", "inf"],
               "max_loss must be a finite number, got inf"),
    _corrupt_npz,
    lambda t: (["certify", t / "nope.npz"], "no such file"),
], ids=["epsilon", "nonsymmetric", "prior-sum", "counts-len", "missing-file", "grid-spec",
        "grid-zero", "out-dir", "out-suffix", "latlon-alone", "random-seed", "time-limit-nan",
         "max-loss-inf", "corrupt-npz",
        "certify-missing"])
def test_bad_input_exits_2(capsys, tmp_path, case):
    argv, message = case(tmp_path)
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert message in error_line(err)


def test_usage_error_exits_2(capsys):
    assert main(["omg", "--solver", "cplex"]) == 2
    assert "invalid choice: 'cplex'" in capsys.readouterr().err


def test_max_loss_below_optimum_exits_3(capsys, grid3):
    _, res = grid3
    code, out, err = run_json(capsys, "omg", "--grid", "3x3", "--max-loss", 0.99 * res.objective)
    assert code == 3
    assert out["status"] == "infeasible" and out["exit_code"] == 3
    assert f"--max-loss {0.99 * res.objective:g} is below" in error_line(err)
    # just above the optimum the requirement is feasible and does not change the optimum
    code, out, _ = run_json(capsys, "omg", "--grid", "3x3", "--max-loss", 1.001 * res.objective)
    assert code == 0
    assert out["objective"] == pytest.approx(res.objective, rel=RTOL)


def test_time_limit_exits_4(capsys):
    limit = 0.3  # the 7x7 OMG LP (115k rows) needs ~100x longer with dual simplex
    code, out, err = run_json(capsys, "omg", "--grid", "7x7", "--method", "full",
                              "--time-limit", limit)
    assert code == 4
    assert out["status"] == "time_limit"
    # HiGHS' own limit (counted from its start) or the command's deadline (from the call) first
    assert out["highs_status"] in ("Time limit reached", "Interrupted by user")
    assert out["solve_s"] < limit + 5
    assert "time limit reached" in error_line(err)


# ------------------------------------------------------------------------------ verbose, scripts


@pytest.mark.parametrize("solver", ["highs", "pyomo"])
def test_verbose_keeps_stdout_for_json(capfd, solver, grid3):
    _, res = grid3
    code = main(["omg", "--grid", "3x3", "--json", "-v", "--solver", solver])
    out, err = capfd.readouterr()
    assert code == 0
    assert json.loads(out)["objective"] == pytest.approx(res.objective, rel=RTOL)
    assert "LP has" in err  # the solver log ("LP has N rows; ..."), on stderr
    assert f"OMG K={res.mechanism.shape[0]} eps=1" in err  # the package's INFO log


def _script(name):
    path = Path(sys.executable).with_name(name)
    return str(path) if path.exists() else shutil.which(name)


def test_installed_script_and_module(tmp_path):
    exe = _script("lpmech")
    assert exe is not None, "the lpmech console script is not installed"
    proc = subprocess.run([exe, "omg", "--grid", "2x2", "--json"], capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    expected = omg.solve(li.grid(2, 2), 1.0).objective
    assert json.loads(proc.stdout)["objective"] == pytest.approx(expected, rel=RTOL)

    proc = subprocess.run([sys.executable, "-m", "lpmech", "certify", str(tmp_path / "x.npz")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2
    assert error_line(proc.stderr) == f"no such file: {tmp_path / 'x.npz'}"
