"""Issue 11 §2–4: every failure is one line, the right exit code and a JSON status that says what
happened; nothing ends in a traceback. Each test asserts exit code, status and the message, and
where the message carries a number (a usable range, a memory estimate, an ε threshold, a bound) it
is recomputed here independently."""

import json
import math
import os
import re
import subprocess
import sys
import tracemalloc
import zipfile

import numpy as np
import pytest

from lpmech import instance as li
from lpmech import progress, resources
from lpmech.cli import build_parser, main
from lpmech.errors import CertificationError, InputError
from lpmech.models import le, omg
from lpmech.models.common import raise_for_status
from lpmech.solvers.result import EXIT_CODES, Result

GB = 16e9  # the available memory the memory tests pretend to have


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("lpmech: error: "), err
    assert "Traceback" not in err
    return lines[0].removeprefix("lpmech: error: ")


def run_error(capsys, *argv):
    """Run with --json: (exit code, the JSON object, the one stderr line)."""
    code, out, err = run(capsys, *argv, "--json")
    assert out.count("\n") == 1, out
    return code, json.loads(out), one_line(err)


@pytest.fixture
def memory(monkeypatch):
    monkeypatch.setattr(resources, "available_bytes", lambda: int(GB))


# ----------------------------------------------------------------------- §2 statuses and exit codes


def test_certification_error_json_status_is_the_errors(capsys, monkeypatch):
    """An exit-5 JSON says certification_failed, even when the partial result said optimal."""
    def failing(inst, eps, **kw):
        raise CertificationError("OMG: realised epsilon 1.5 exceeds the target 1·(1+1e-06)",
                                 result=Result("optimal", stats={"time_s": 0.1}))

    monkeypatch.setattr(omg, "solve", failing)
    code, obj, msg = run_error(capsys, "omg", "--grid", "2x2")
    assert code == 5 == obj["exit_code"]
    assert obj["status"] == "certification_failed" and obj["result_status"] == "optimal"
    assert obj["error_type"] == "CertificationError" and msg == obj["error"]
    assert msg.startswith("OMG: realised epsilon 1.5 exceeds")


def test_certify_json_has_a_status(capsys, tmp_path):
    out = tmp_path / "m.npz"
    assert run(capsys, "omg", "--grid", "2x2", "--out", out)[0] == 0
    code, o, _ = run(capsys, "certify", out, "--json")
    assert code == 0 and json.loads(o)["status"] == "certified"
    code, o, err = run(capsys, "certify", out, "--epsilon", "0.5", "--json")
    obj = json.loads(o)
    assert code == 5 and obj["status"] == "certification_failed" and not obj["certified"]
    assert "is not certified" in one_line(err)


def test_iteration_cap_is_its_own_status_exit_4(capsys, monkeypatch):
    """A round/iteration cap gives status iteration_limit, exit 4, and a message naming the cap
    (not "time limit")."""
    def capped(inst, eps, **kw):
        raise_for_status(Result("iteration_limit", stats={"max_rounds": 5000, "time_s": 48.0}), "OMG")

    monkeypatch.setattr(omg, "solve", capped)
    code, obj, msg = run_error(capsys, "omg", "--grid", "2x2")
    assert code == 4 == EXIT_CODES["iteration_limit"]
    assert obj["status"] == "iteration_limit" and obj["error_type"] == "IterationLimitError"
    assert "iteration cap (5000) reached" in msg and "time limit" not in msg


def test_spanner_is_feasible_exit_4_not_optimal(capsys):
    """The δ-spanner is certified private but not proved optimal: its gap to the exact optimum
    (the full LP, solved here independently) is real, so its status is feasible and the CLI exits
    4, with the gap it has."""
    code, out, err = run(capsys, "omg", "--grid", "5x5", "--prior", "random:0", "--method", "spanner",
                         "--delta", "1.5", "--json")
    obj = json.loads(out)
    assert "status feasible" in one_line(err)
    inst = li.grid(5, 5).with_prior(np.random.default_rng(0).dirichlet(np.ones(25)))
    exact = omg.solve(inst, 1.0, method="full").objective
    assert obj["objective"] > exact * (1 + 1e-4)  # the approximation's price is visible
    assert code == 4 == EXIT_CODES["feasible"] and obj["status"] == "feasible"
    assert obj["bound"] <= exact * (1 + 1e-9) and obj["gap"] > 1e-6
    assert obj["realized_epsilon"] <= 1.0 * (1 + 1e-6)


def test_le_non_uniform_prior_solves_the_lp_by_default(capsys):
    """LE is optimal only for uniform-like priors: the default now solves the LP (8), whose optimum
    equals the declarative Pyomo model of the same LP."""
    code, out, _ = run(capsys, "le", "--grid", "4x4", "--prior", "random:1", "--json")
    obj = json.loads(out)
    inst = li.grid(4, 4).with_prior(np.random.default_rng(1).dirichlet(np.ones(16)))
    ref = le.solve_pyomo_model(le.build_pyomo(inst, 1.0)).objective
    assert code == 0 and obj["status"] == "optimal" and obj["path"] == "lp"
    assert obj["objective"] == pytest.approx(ref, abs=1e-8)
    assert obj["gap"] < 1e-6 and obj["lp_dual_test"] is False


def test_le_closed_form_not_proved_optimal_is_feasible_with_a_valid_bound(capsys, monkeypatch):
    """Beyond the LP size, LE is reported with status feasible (exit 4) and a bound that is valid
    (≤ the LP optimum, computed by the Pyomo model) and better than the old KKT bound (-8.6)."""
    import lpmech.commands.le as cle

    inst = li.grid(4, 4).with_prior(np.random.default_rng(1).dirichlet(np.ones(16)))
    lp_opt = le.solve_pyomo_model(le.build_pyomo(inst, 1.0)).objective
    monkeypatch.setattr(cle, "MAX_LP_CELLS", 0)
    code, out, err = run(capsys, "le", "--grid", "4x4", "--prior", "random:1", "--json")
    obj = json.loads(out)
    assert code == 4 and obj["status"] == "feasible" and obj["path"] == "closed"
    assert "status feasible" in one_line(err) and "not proved" in one_line(err)
    kkt_bound = 1 + le.kkt(inst, 1.0, inst.prior).bound
    assert kkt_bound < -1  # the Lagrangian bound alone is useless here
    assert max(kkt_bound, 0.0) < obj["bound"] <= lp_opt + 1e-9 <= obj["objective"] + 1e-9
    # the knapsack bound by hand: Σ p_kk ≤ S = Σ (E^-1 1)_k (Theorem 1), p_kk ≤ 1
    S = le.le_diagonal(inst.metric, 1.0).sum()
    w = np.sort(inst.prior)[::-1]
    f = math.floor(S)
    assert obj["bound"] == pytest.approx(1 - (w[:f].sum() + w[f] * (S - f)), rel=1e-6)


def test_le_grid_path_infeasible_json_equals_the_dense_one(capsys, monkeypatch):
    """Same error, same JSON: the FFT/CG grid path reports status infeasible and the threshold that
    the dense path finds by an independent dense solve."""
    import lpmech.commands.le as cle

    code_d, dense, msg_d = run_error(capsys, "le", "--grid", "5x5", "--epsilon", "0.3")
    monkeypatch.setattr(cle, "DENSE_MAX_CELLS", 10)
    code_g, grid, msg_g = run_error(capsys, "le", "--grid", "5x5", "--epsilon", "0.3")
    assert code_d == code_g == 3
    assert dense["status"] == grid["status"] == "infeasible"
    assert grid["epsilon_threshold"] == pytest.approx(dense["epsilon_threshold"], rel=1e-5)
    assert set(grid) == set(dense)
    assert msg_d.startswith("LE is infeasible at epsilon = 0.3") and "--lp" in msg_d
    assert msg_g.startswith("LE is infeasible at epsilon = 0.3") and "--lp" in msg_g


# --------------------------------------------------------------------------- §3 no traceback, ever


def _corrupt_npz(path):
    np.savez_compressed(path, distances=np.array([[0.0, 1.0], [1.0, 0.0]]) + np.zeros((2, 2)))
    b = bytearray(path.read_bytes())
    start = 40  # inside the first member's deflate stream
    for i in range(start, start + 40):
        b[i] ^= 0x55
    path.write_bytes(bytes(b))


@pytest.mark.parametrize("kind", ["corrupt.npz", "random.npz", "random.npy", "pickled.npy", "complex.npy"])
def test_bad_numpy_files_are_input_errors(capsys, tmp_path, kind):
    f = tmp_path / kind
    rng = np.random.default_rng(0)
    if kind == "corrupt.npz":
        _corrupt_npz(f)
        assert zipfile.is_zipfile(f)
    elif kind.startswith("random"):
        f.write_bytes(rng.bytes(400))
    elif kind == "pickled.npy":
        np.save(f, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    else:
        np.save(f, np.array([[0, 1], [1, 0]], complex) + 1j)
    code, obj, msg = run_error(capsys, "omg", "--distances", f)
    assert code == 2 and obj["status"] == "input_error" and obj["error_type"] == "InputError"
    expected = {"corrupt.npz": "corrupted or truncated", "random.npz": "not a NumPy .npz archive",
                "random.npy": "not a NumPy .npy file", "pickled.npy": "object (pickled) array",
                "complex.npy": "must be real, got complex"}[kind]
    assert expected in msg and (kind == "complex.npy" or str(f) in msg)
    assert "pickled data" not in msg


@pytest.mark.parametrize("flag", ["--points", "--graph", "--prior"])
def test_random_bytes_csv_is_named(capsys, tmp_path, flag):
    f = tmp_path / "junk.csv"
    f.write_bytes(b"\x96\xff\x00" + np.random.default_rng(1).bytes(300))
    code, obj, msg = run_error(capsys, "omg", flag, f)
    assert code == 2 and obj["status"] == "input_error"
    assert f"{f}" in msg and "not a UTF-8 text" in msg and "0x96 at offset 0" in msg


def test_random_bytes_rome_csv(capsys, tmp_path):
    from lpmech.datasets import ROME_EDGES, ROME_NODES

    for name in (ROME_NODES, ROME_EDGES):
        (tmp_path / name).write_bytes(b"\x96" + np.random.default_rng(2).bytes(200))
    code, obj, msg = run_error(capsys, "lrgeo", "--rome-dir", tmp_path)
    assert code == 2 and obj["status"] == "input_error"
    assert ROME_NODES in msg and "not a UTF-8 text CSV" in msg


def test_api_boundary_checks():
    with pytest.raises(InputError, match=r"expected an lpmech Instance.*got ndarray"):
        omg.solve(np.eye(3), 1)
    with pytest.raises(InputError, match="max_loss must be a number, got 'a'"):
        omg.solve(li.grid(2, 2), 1, max_loss="a")
    with pytest.raises(InputError, match="must be real, got complex"):
        li.from_matrix(np.array([[0, 1], [1, 0]]) * (1 + 1j))


def test_internal_error_is_one_line_exit_1(capsys, monkeypatch):
    monkeypatch.delenv("LPMECH_TRACEBACK", raising=False)

    def boom(inst, eps, **kw):
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(omg, "solve", boom)
    code, obj, msg = run_error(capsys, "omg", "--grid", "2x2")
    assert code == 1 and obj["status"] == "error" and obj["error_type"] == "ZeroDivisionError"
    assert msg.startswith("internal error (ZeroDivisionError: float division by zero)")


def test_memory_error_is_exit_2(capsys, monkeypatch):
    def oom(inst, eps, **kw):
        raise MemoryError

    monkeypatch.setattr(omg, "solve", oom)
    code, obj, msg = run_error(capsys, "omg", "--grid", "2x2")
    assert code == 2 and obj["status"] == "input_error" and msg.startswith("out of memory")


def _measured_arrays(build):
    """(peak, resident) memory of ``build()`` in dense K×K float64 arrays, measured by tracemalloc
    (which counts numpy's buffers) on a small instance; K = the number of locations built."""
    build()  # imports and caches first
    tracemalloc.start()
    try:
        obj = build()
        resident, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    K = len(obj.coords)
    return peak / (8 * K * K), resident / (8 * K * K)


def _needs_bytes(msg: str) -> float:
    return float(re.search(r"needs at least ([0-9.e+]+) GB", msg).group(1)) * 1e9


def _check_estimate(need, K, peak, resident):
    """The refused size's estimate lies between what the built instance keeps and the measured peak
    of building it (both K×K counts measured on a small one; 3 significant digits printed)."""
    assert need > GB and 8 * K * K * resident > GB  # the refusal is justified
    assert 8 * K * K * resident * (1 - 5e-3) <= need <= 8 * K * K * peak * (1 + 5e-3)


@pytest.mark.parametrize("argv, K, what", [
    (["omg", "--grid", "1000000000x1000000000"], 10**18, "a 1000000000x1000000000 grid"),
    (["omg", "--grid", "300x300"], 90_000, "a 300x300 grid"),
])
def test_too_large_grid_is_refused_before_allocating(capsys, memory, argv, K, what):
    code, obj, msg = run_error(capsys, *argv)
    assert code == 2 and obj["status"] == "input_error"
    assert msg.startswith(f"{what} (K = {K:,} locations) needs at least ")
    assert f"than the {GB / 1e9:.3g} GB available" in msg and "smaller instance" in msg
    peak, resident = _measured_arrays(lambda: li.grid(30, 30))
    _check_estimate(_needs_bytes(msg), K, peak, resident)


def test_too_large_synthetic_road_grid_is_refused(capsys, memory):
    code, obj, msg = run_error(capsys, "lrgeo", "--synthetic", "400x400")
    K = math.ceil(400 * 400 * 0.875)
    assert code == 2 and obj["status"] == "input_error"
    assert f"(K = {K:,} cells) needs at least " in msg and "--synthetic" in msg
    from lpmech.datasets import synthetic_road_grid

    peak, resident = _measured_arrays(
        lambda: synthetic_road_grid(30, 30, rng=np.random.default_rng(0)))
    _check_estimate(_needs_bytes(msg), K, peak, resident)


def test_omg_method_memory_is_checked(memory):
    """The OMG method's own arrays count too: K = 20,000 fits as an instance, not with a solve."""
    K = 20_000
    assert 8 * K * K * resources.INSTANCE_ARRAYS < GB < 8 * K * K * (
        resources.INSTANCE_ARRAYS + resources.OMG_ARRAYS["decomposition"])
    with pytest.raises(InputError, match=r"OMG \(method decomposition\) on K = 20,000 locations needs"):
        resources.require_omg_memory(K, "decomposition")


def test_epsilon_times_distance_overflow_is_exit_2_with_the_usable_range(capsys):
    code, obj, msg = run_error(capsys, "omg", "--grid", "6x6", "--epsilon", "500")
    d_max = 5 * math.sqrt(2)
    assert code == 2 and obj["status"] == "input_error"
    assert f"epsilon·d_max = {500 * d_max:.4g} > 709" in msg
    assert f"<= epsilon <= {709 / d_max:.4g}" in msg
    # at the top of the usable range the solve is certified
    res = omg.solve(li.grid(3, 3), 0.99 * 709 / (2 * math.sqrt(2)))
    assert res.certificate.satisfied


def test_unwritable_out_is_found_before_solving(capsys, monkeypatch):
    if not os.path.isdir("/proc"):
        pytest.skip("needs /proc (a directory nobody can create files in)")

    def never(*a, **k):
        raise AssertionError("solved before checking --out")

    monkeypatch.setattr(omg, "solve", never)
    code, obj, msg = run_error(capsys, "omg", "--grid", "2x2", "--out", "/proc/lpmech-test.npz")
    assert code == 2 and obj["status"] == "input_error"
    assert msg.startswith("cannot write /proc/lpmech-test.npz: directory /proc is not writable")


def test_nonmetric_message_names_the_cli_flag(capsys, tmp_path):
    f = tmp_path / "d.npy"
    np.save(f, np.array([[0, 1, 5], [1, 0, 1], [5, 1, 0]], float))
    code, obj, msg = run_error(capsys, "omg", "--distances", f)
    assert code == 2 and obj["status"] == "input_error"
    assert "triangle inequality" in msg and "--allow-nonmetric" in msg
    code, _, _ = run(capsys, "omg", "--distances", f, "--allow-nonmetric", "--method", "full")
    assert code == 0


def test_lrgeo_duplicate_user_and_bad_synthetic(capsys):
    code, obj, msg = run_error(capsys, "lrgeo", "--synthetic", "6x6", "--user-cells", "3,3")
    assert code == 2 and obj["status"] == "input_error"
    assert msg == "--user-cells lists cell 3 more than once: each user is at a distinct cell"
    code, obj, msg = run_error(capsys, "lrgeo", "--synthetic", "axb")
    assert code == 2 and msg.startswith("bad --synthetic 'axb'") and "--grid" not in msg


# ------------------------------------------------------------------------------------ §4 progress


def test_live_progress_only_on_a_terminal_without_json(capsys, monkeypatch):
    seen = []

    def spy(inst, eps, **kw):
        seen.append(progress.live_enabled())
        return omg.__dict__["_real_solve"](inst, eps, **kw)

    monkeypatch.setitem(omg.__dict__, "_real_solve", omg.solve)
    monkeypatch.setattr(omg, "solve", spy)
    import lpmech.cli as cli

    monkeypatch.setattr(cli, "_isatty", lambda stream: True)
    assert run(capsys, "omg", "--grid", "2x2")[0] == 0
    assert run(capsys, "omg", "--grid", "2x2", "--json")[0] == 0
    monkeypatch.setattr(cli, "_isatty", lambda stream: False)
    assert run(capsys, "omg", "--grid", "2x2")[0] == 0
    assert seen == [True, False, False]


def test_verbose_prints_from_a_plain_script():
    code = ("import lpmech.instance as li\nfrom lpmech.models import omg\n"
            "omg.solve(li.grid(3, 3), 1.0, verbose=True)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "lpmech: OMG K=9 eps=1" in p.stderr


# ---------------------------------------------------------------------------------------- §5 help


def _subparsers():
    parser = build_parser()
    action = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return action.choices


def test_every_subcommand_help_has_the_exit_codes():
    subs = _subparsers()
    assert {"omg", "certify", "le", "lrgeo", "mm", "lip"} <= set(subs)
    for name, sp in subs.items():
        text = sp.format_help()
        assert "exit codes:" in text and "4 no" in text and "5 privacy" in " ".join(text.split()), name


@pytest.mark.parametrize("name", ["omg", "certify", "le", "lrgeo"])
def test_every_option_has_a_description(name):
    sp = _subparsers()[name]
    missing = [a.option_strings or a.dest for a in sp._actions if not a.help]
    assert missing == []
