"""The command line's contract under stops (Ctrl-C, time limits) and usage errors, and a property
test of the contract over random command lines.

Each stop is checked against what a user can see and what must hold of it independently of the
run: the wall time from outside the process, the exit code, exactly one JSON object, and for a
kept incumbent its certificate (realised ε within the target) and bound ≤ objective; at the API
level the incumbent's objective is recomputed from its matrix and bracketed by the full LP's
optimum (bound ≤ optimum ≤ objective).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lpmech import instance as li
from lpmech import stop
from lpmech.cli import main
from lpmech.errors import IterationLimitError
from lpmech.models.omg import omg, omg_large
from lpmech.solvers.result import EXIT_CODES

CODES = {0, 1, 2, 3, 4, 5, 130}


def _spawn(*args: str) -> tuple[subprocess.Popen, float]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("LPMECH_TRACEBACK", None)
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "lpmech", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    return proc, t0


def _one_json(text: str) -> dict:
    """The one JSON object of a --json run's stdout (fails on none, or on more than one)."""
    dec = json.JSONDecoder()
    obj, end = dec.raw_decode(text.strip())
    assert text.strip()[end:].strip() == "", f"more than one JSON object: {text!r}"
    return obj


def _check_incumbent(d: dict, eps: float) -> None:
    """A kept incumbent: certified within ε, and its bound below its objective."""
    assert d["realized_epsilon"] <= eps * (1 + 1e-6)
    assert d["bound"] is not None and d["bound"] <= d["objective"] * (1 + 1e-9)
    assert d["gap"] == pytest.approx((d["objective"] - d["bound"]) / abs(d["objective"]), rel=1e-6)


# ------------------------------------------------------------------------------------ Ctrl-C

SIGINT_CASES = [
    ("omg", "--grid", "12x12", "--prior", "random:0", "--method", "full"),
    ("omg", "--grid", "12x12", "--prior", "random:0", "--method", "cutting-plane"),
    ("omg", "--grid", "14x14", "--prior", "random:3", "--method", "decomposition"),
    ("omg", "--grid", "9x9", "--prior", "random:0", "--method", "full", "--solver", "pyomo"),
    ("le", "--grid", "9x9", "--prior", "random:1", "--epsilon", "0.5", "--lp", "--lp-method", "full"),
]


@pytest.mark.parametrize("case", SIGINT_CASES, ids=lambda c: "-".join(c[i] for i in (0, -1)))
def test_ctrl_c_stops_within_2_s(case):
    """SIGINT while the solver runs: the process ends within 2 s, exit 4 with a certified
    incumbent or 130 without one, and --json prints exactly one object whose status says so."""
    proc, _ = _spawn(*case, "--json")
    time.sleep(4.0)
    if proc.poll() is not None:  # solved before the signal on a fast machine: nothing to test
        pytest.skip("the solve ended before SIGINT was sent")
    t = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    took = time.perf_counter() - t
    assert took <= 2.0, f"{took:.2f} s after SIGINT"
    assert proc.returncode in (4, 130)
    d = _one_json(out)
    assert d["status"] == "interrupted" and d["exit_code"] == proc.returncode
    assert "Traceback" not in err and err.count("lpmech: error:") == 1
    if proc.returncode == 4:
        _check_incumbent(d, float(case[case.index("--epsilon") + 1]) if "--epsilon" in case else 1.0)


def test_the_report_of_an_ended_command_is_made_when_its_end_is_set():
    """Ctrl-C (or the deadline) sets the end and, at once, the bytes the ending writes: exit 130
    with an "interrupted" JSON object (4 and "time_limit" at the deadline), so that ending the
    process waits on nothing the command's thread holds."""
    import argparse
    import json

    from lpmech.cli import _Watch

    stop.clear()
    try:
        watch = _Watch(argparse.Namespace(json=True, command="omg", time_limit=None), entry=False)
        assert watch.report is None
        watch._sigint(signal.SIGINT, None)
        code, obj, line = watch.report
        assert code == 130 and line == b"lpmech: error: interrupted (nothing was written)\n"
        d = json.loads(obj)
        assert d["status"] == "interrupted" and d["exit_code"] == 130 and d["command"] == "omg"
        stop.clear()
        stop.request("time_limit")
        watch = _Watch(argparse.Namespace(json=False, command="omg", time_limit=5.0), entry=False)
        code, obj, line = watch._report()
        assert code == 4 and obj is None and b"time limit of 5 s" in line
    finally:
        stop.clear()


def test_ctrl_c_waits_for_the_certification_the_solve_reserved():
    """After the first Ctrl-C the command is ended only STOP_GRACE plus the seconds its solve
    reserved for certifying its incumbent later (K = 1,024: about 30 s), as at a deadline; a
    second Ctrl-C ends it at once."""
    import argparse

    from lpmech.cli import STOP_GRACE, _Watch

    watch = _Watch(argparse.Namespace(), entry=False)
    stop.clear()
    stop.reserve(30.0)
    try:
        t = time.monotonic()
        watch._sigint(signal.SIGINT, None)
        assert stop.requested() == "interrupted"
        assert watch.hard - t == pytest.approx(STOP_GRACE + 30.0, abs=0.5)
        watch._sigint(signal.SIGINT, None)
        assert watch.hard <= time.monotonic()
    finally:
        stop.clear()


# -------------------------------------------------------------------------------- time limits


@pytest.mark.parametrize("case", [
    ("omg", "--grid", "10x10", "--prior", "random:3", "--method", "full", "--solver", "pyomo"),
    ("omg", "--grid", "40x40"),
    ("le", "--grid", "16x16", "--prior", "random:1", "--epsilon", "2", "--lp"),
], ids=["pyomo-full", "omg-40x40", "le-lp"])
def test_time_limit_holds_on_every_path(case):
    """``--time-limit 1`` ends within max(1.1 T, T + 2 s) of the process's start on paths that
    build for long (Pyomo's model, a 1,600-point instance, LE's support generation): exit 4 with
    status time_limit, and a kept incumbent is certified."""
    proc, t0 = _spawn(*case, "--time-limit", "1", "--json")
    out, err = proc.communicate(timeout=60)
    took = time.perf_counter() - t0
    assert took <= 3.0, f"{took:.2f} s for --time-limit 1"
    assert proc.returncode == 4, err
    d = _one_json(out)
    assert d["status"] == "time_limit" and d["exit_code"] == 4
    if d.get("objective") is not None:
        _check_incumbent(d, float(case[case.index("--epsilon") + 1]) if "--epsilon" in case else 1.0)


@pytest.mark.parametrize("limit", [2.0, 5.0])
def test_time_limit_holds_from_the_process_start_and_keeps_the_incumbent(limit):
    """``--time-limit T`` ends the run within max(1.1 T, T + 2 s) of its start (model building
    included), exit 4, status time_limit, with the certified incumbent, its bound and gap."""
    proc, t0 = _spawn("omg", "--grid", "14x14", "--prior", "random:3", "--time-limit", str(limit),
                      "--json")
    out, err = proc.communicate(timeout=60)
    took = time.perf_counter() - t0
    assert took <= max(1.1 * limit, limit + 2.0), f"{took:.2f} s for --time-limit {limit}"
    assert proc.returncode == 4
    d = _one_json(out)
    assert d["status"] == "time_limit" and d["exit_code"] == 4
    _check_incumbent(d, 1.0)
    assert "best certified mechanism: objective" in err


def test_a_stopped_decomposition_keeps_a_certified_incumbent_and_a_valid_bound():
    """The API side of a stop: the error carries the incumbent, whose objective is its matrix's
    expected loss (recomputed here), whose ε is certified by a brute check over all pairs, and
    whose bound lies below the full LP's optimum, which lies below the objective."""
    inst = li.grid(6, 6, prior=np.random.default_rng(5).dirichlet(np.ones(36)))
    full = omg.solve(inst, 0.7, method="full")
    with pytest.raises(IterationLimitError) as info:
        raw = omg_large.solve_decomposition(inst, 0.7, max_rounds=3, coarse=False)
        omg.certified_result(raw, raw.x.reshape(36, 36), inst, 0.7, name="OMG")
    res = info.value.result
    assert res.status == "iteration_limit" and res.mechanism is not None
    Z = res.mechanism.matrix
    assert res.objective == pytest.approx(float(np.sum(inst.prior[:, None] * inst.loss * Z)),
                                          rel=1e-12)
    d, worst = inst.metric, 0.0
    for i in range(36):
        for j in range(36):
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.log(Z[i] / Z[j])
            r = r[np.isfinite(r)]
            if i != j and r.size:
                worst = max(worst, float(r.max()) / d[i, j])
    assert worst <= 0.7 * (1 + 1e-6)
    assert res.bound <= full.objective + 1e-9 <= res.objective + 2e-9
    assert res.objective > full.objective + 1e-6  # three rounds do not reach the optimum here


def test_ctrl_c_in_python_becomes_an_interrupted_run():
    """In a Python session Ctrl-C during a HiGHS run stops that run (status interrupted, no
    KeyboardInterrupt), and the next call starts afresh and reaches the optimum."""
    import threading

    inst = li.grid(7, 7, prior=np.random.default_rng(0).dirichlet(np.ones(49)))
    lp = omg.build_lp(inst, 1.0)
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    t = time.perf_counter()
    res = lp.solve()
    assert time.perf_counter() - t < 2.0
    assert res.status == "interrupted" and stop.requested() == "interrupted"
    stop.clear()
    small = omg.build_lp(li.grid(3, 3), 1.0).solve()
    assert small.status == "optimal"
    assert small.objective == pytest.approx(omg.solve(li.grid(3, 3), 1.0, method="full").objective,
                                            rel=1e-7)


def test_ctrl_c_in_python_stops_a_decomposition_pricing_in_this_process():
    """Ctrl-C in a Python session while a public solve prices in this process (pricing LPs run
    without interrupt callbacks, and Python code runs between them): a stop request wherever it
    lands, no KeyboardInterrupt; the solve ends within a round with a certified incumbent and a
    bound on either side of the certified optimum; the next call starts afresh."""
    import threading

    from lpmech.errors import InterruptError

    inst = li.grid(8, 8, prior=np.random.default_rng(0).dirichlet(np.ones(64)))
    best = omg.solve(inst, 1.0)  # certified (gap ≤ 1e-6)
    for delay in (0.15, 0.4, 0.7):
        timer = threading.Timer(delay, lambda: os.kill(os.getpid(), signal.SIGINT))
        t = time.perf_counter()
        timer.start()
        try:
            again = omg.solve(inst, 1.0, method="decomposition")  # K < 100: pricing here
        except InterruptError as exc:
            res = exc.result
        else:
            timer.cancel()
            assert again.objective == pytest.approx(best.objective, rel=1e-6)
            continue
        finally:
            timer.join()
        assert time.perf_counter() - t < delay + 1.5
        assert res.status == "interrupted" and stop.requested() is None
        assert res.bound <= best.bound + 1e-9
        assert best.objective <= res.objective + 2e-9
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.parametrize("how", ["request", "worker"])
def test_a_stop_during_output_generation_pricing_is_an_interrupt(monkeypatch, how):
    """A stop requested while output generation prices (seen between pricing LPs, or raised from a
    pricing LP or worker) ends the solve as interrupted, not as a time limit and with no private
    exception, keeping the last restricted optimum certified and round 1's bound on either side of
    the full LP's optimum; the request does not outlive the call."""
    from lpmech.design import LIP, DPrivacy, solve
    from lpmech.design import decomposition as dc
    from lpmech.errors import InterruptError

    rng = np.random.default_rng(3)
    inst = li.grid(5, 4, 1.0, unit="cell")
    w = rng.dirichlet(np.ones(20))
    notion, C = DPrivacy(inst.metric, 1.5) & LIP(w, 2.0), w[:, None] * inst.metric
    full = solve(notion, C, method="full")
    price, calls = dc.LocalPricer.price, []

    def stopping(self, outputs, W, deadline):
        calls.append(1)
        if len(calls) == 2:  # round 2: round 1 has its restricted optimum and its bound
            if how == "worker":
                raise dc._Stopped("interrupted")
            stop.request("interrupted")
        return price(self, outputs, W, deadline)

    monkeypatch.setattr(dc.LocalPricer, "price", stopping)
    with pytest.raises(InterruptError) as err:
        solve(notion, C, method="outputs", workers=1)
    res = err.value.result
    assert res.status == "interrupted" and stop.requested() is None
    assert res.certificate.satisfied
    assert res.objective == pytest.approx(float((C * res.mechanism.matrix).sum()), rel=1e-9)
    assert 1e-6 < res.bound <= full.objective + 1e-9 <= res.objective + 2e-9


def test_a_stop_request_does_not_outlive_a_public_solve():
    """A Ctrl-C request seen during one call (here pending when it returns) is cleared by the
    outermost public solve, so the next call reaches the same optimum as a fresh process's."""
    from lpmech.models import le

    inst = li.grid(3, 3, prior=np.random.default_rng(2).dirichlet(np.ones(9)))
    fresh = le.solve(inst, 1.0, path="lp", lp_method="full")
    stop.request("interrupted")
    le.solve(inst, 1.0, path="closed")  # a call during which the request was pending
    assert stop.requested() is None
    again = le.solve(inst, 1.0, path="lp", lp_method="full")
    assert again.status == "optimal" and again.objective == pytest.approx(fresh.objective, rel=1e-9)


# ----------------------------------------------------------------------------- usage errors


@pytest.mark.parametrize("argv", [["omg", "--json", "--epsilon", "abc"], ["omg", "--json", "--bogus"],
                                  ["--json"], ["le", "--json", "--grid"]])
def test_usage_errors_print_one_json_object(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    assert code == 2
    d = _one_json(out.getvalue())
    assert d["status"] == "input_error" and d["exit_code"] == 2 and d["error"]
    assert d["error"] in err.getvalue()  # the same message as the stderr line


# ------------------------------------------------------------------------------ progress


def test_progress_note_keeps_the_bar_description_and_fixed_width_without_a_terminal():
    from lpmech.progress import Progress, live_progress

    buf = io.StringIO()
    with contextlib.redirect_stderr(buf), live_progress(True):
        prog = Progress("OMG decomposition K=9", unit="round")
        prog.note("master with %d starting columns", 432)
        prog.update(lower=1.0, upper=2.0, gap=0.5)
        assert prog.bar.desc == "OMG decomposition K=9"
        assert prog.bar.ncols == 100  # no terminal: a fixed width, not an empty line
        prog.close()
    assert "master with 432 starting columns" in buf.getvalue()


def test_verbose_decomposition_logs_started_once(caplog):
    caplog.set_level("INFO", logger="lpmech")
    inst = li.grid(5, 5, prior=np.random.default_rng(1).dirichlet(np.ones(25)))
    res = omg.solve(inst, 1.0, method="decomposition", verbose=True)
    started = [r.getMessage() for r in caplog.records if r.getMessage().endswith(": started")]
    assert len(started) == len(set(started)), started
    assert res.objective == pytest.approx(omg.solve(inst, 1.0, method="full").objective, rel=1e-6)


# ------------------------------------------------------------------- the contract, property test

_VALUES = st.sampled_from(["1", "0.5", "-1", "0", "nan", "inf", "1e300", "1e-300", "abc", "3x3",
                           "2x2", "0x3", "random:1", "uniform", "/nonexistent.npy", ""])
_FLAGS = {
    "omg": ["--grid", "--epsilon", "--prior", "--method", "--time-limit", "--delta", "--gamma",
            "--max-loss", "--solver"],
    "le": ["--grid", "--epsilon", "--prior", "--time-limit", "--seed", "--metric"],
    "lip": ["--prior", "--epsilon", "--method", "--task", "--time-limit", "--seed"],
    "mm": ["--m", "--epsilon", "--mechanism", "--metric", "--seed"],
    "lrgeo": ["--synthetic", "--users", "--epsilon", "--seed"],
    "certify": ["--epsilon"],
}


@st.composite
def _command_lines(draw):
    cmd = draw(st.sampled_from(sorted(_FLAGS)))
    flags = draw(st.lists(st.sampled_from(_FLAGS[cmd]), max_size=3, unique=True))
    argv = [cmd]
    for f in flags:
        argv += [f, draw(_VALUES)]
    if cmd in ("omg", "le") and "--grid" not in flags:
        argv += ["--grid", "3x3"]
    if cmd == "lrgeo" and "--synthetic" not in flags:
        argv += ["--synthetic", "3x3", "--users", "1"]
    if cmd == "certify":
        argv.insert(1, "/nonexistent.npz")
    return argv


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(argv=_command_lines(), with_json=st.booleans())
def test_random_command_lines_keep_the_contract(tmp_path_factory, argv, with_json):
    """Whatever the flags: an exit code in the documented set, exactly one JSON object with
    --json (whose exit_code is the process's), no traceback, and --out untouched unless exit 0."""
    tmp = tmp_path_factory.mktemp("out")
    keep = tmp / "keep.npz"
    keep.write_bytes(b"precious")
    argv = [*argv, "--time-limit", "20"] if "--time-limit" not in argv and argv[0] in (
        "omg", "le", "lip") else list(argv)
    if argv[0] in ("omg", "le", "lrgeo", "lip", "mm"):
        argv += ["--out", str(keep)]
    if with_json:
        argv.append("--json")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # only --help/--version exit this way
            code = exc.code
    assert code in CODES, (argv, code, err.getvalue())
    assert "Traceback" not in err.getvalue()
    if code != 0:
        assert keep.read_bytes() == b"precious", argv
        assert err.getvalue().count("lpmech: error:") + err.getvalue().count(": error:") >= 1
    if with_json:
        d = _one_json(out.getvalue())
        if code != 0:
            assert d["exit_code"] == code
            assert d["status"] in (*EXIT_CODES, "input_error", "certification_failed")
    assert not math.isnan(float(code))
