"""The ``lpmech`` command line (also ``python -m lpmech``): the entry point and the plumbing the
subcommands share (instance flags, errors to exit codes, JSON on error, solver output to stderr).

Every subcommand lives in :mod:`lpmech.commands` (one module each: ``omg``, ``certify``, ``le``,
``lip``, ``lrgeo``, ``mm``), which registers its parser and handler here.

Exit codes: 0 a certified optimum (or closed form), 1 solver failure or internal error, 2 bad
input (also argparse's usage errors, and an instance too large for the machine's memory),
3 infeasible model, 4 no certified optimum (time limit, iteration cap, Ctrl-C with a certified
incumbent, optimality not proved: the best mechanism's objective, bound and gap are reported),
5 a mechanism that fails its privacy certificate, 130 interrupted with nothing to report; a
result's status maps to its
code through :data:`lpmech.solvers.result.EXIT_CODES`. An error prints exactly one line
``lpmech: error: <message>`` on stderr (and, with ``--json``, one JSON object with ``status`` and
``error`` on stdout); no output file is written unless the whole run succeeds.
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import io
import logging
import math
import multiprocessing
import os
import re
import signal
import sys
import threading
import time

import numpy as np

from . import __version__, commands, stop
from . import io as lpio
from .errors import InputError, InterruptError, LpmechError, NotOptimalError, error_status
from .instance import Instance, grid, read_distances, read_edges, read_points
from .progress import live_progress, verbose_logging
from .solvers.highs import flush_c_stdio
from .solvers.result import EXIT_CODES

log = logging.getLogger("lpmech.cli")

DEFAULT_GRID = "6x6"
#: the help of every subcommand's --time-limit
TIME_LIMIT_HELP = ("seconds from the command's start, model building included; at the limit the run "
                   "stops and reports its best certified mechanism, bound and gap (exit 4), ending "
                   "within max(1.1 T, T + 2 s)")
_EXIT_CODES = """exit codes: 0 certified optimum (or a closed form), 1 solver failure or internal
error, 2 bad input (also an instance too large for this machine's memory), 3 infeasible, 4 no
certified optimum (time limit, iteration cap, Ctrl-C, or a certified mechanism whose optimality is
not proved; the best certified mechanism's objective, bound and gap are reported), 5 privacy
certificate failed, 130 interrupted before any mechanism. --time-limit counts from the start of
the command and ends it within max(1.1 T, T + 2 s). With --json an error still prints one JSON
object whose "status" is the error's."""


# ------------------------------------------------------------------------------------------ parser


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of the ``lpmech`` command."""
    parser = _Parser(
        prog="lpmech", epilog=_EXIT_CODES,
        description="Optimal privacy mechanisms as LP models, solved and certified.")
    parser.add_argument("--version", action="version", version=f"lpmech {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    common = _Parser(add_help=False)
    common.add_argument("--json", action="store_true",
                        help="print exactly one JSON object on stdout instead of the report")
    common.add_argument("-v", "--verbose", action="store_true",
                        help="log progress (and the solver's log) to stderr")

    for module in commands.modules():
        module.register(sub, common)
    for sp in sub.choices.values():  # every subcommand's --help ends with the exit codes
        if not sp.epilog:
            sp.epilog = _EXIT_CODES
    return parser



def add_instance_arguments(p: argparse.ArgumentParser, *, default_grid: str = DEFAULT_GRID) -> None:
    """The instance flags shared by the subcommands (read back by :func:`load_instance`):
    ``--grid/--points/--distances/--graph``, ``--cell``, ``--latlon``, ``--allow-nonmetric``,
    ``--gamma`` and ``--prior``."""
    src = p.add_argument_group("instance (choose one)").add_mutually_exclusive_group()
    src.add_argument("--grid", metavar="WxH",
                     help=f"WxH grid of cell centres, Euclidean metric (default {default_grid})")
    src.add_argument("--points", metavar="FILE",
                     help="CSV of points x,y (header optional), Euclidean metric")
    src.add_argument("--distances", metavar="FILE",
                     help="distance matrix in .npy or .npz (array 'distances'; an .npz may also "
                          "carry 'prior' and 'loss')")
    src.add_argument("--graph", metavar="EDGES.csv",
                     help="CSV edge list u,v[,weight] (header optional; missing weight = 1); "
                          "shortest-path metric")
    p.add_argument("--cell", type=float, metavar="SIZE",
                   help="grid cell size in km (with --grid; default 1)")
    p.add_argument("--latlon", action="store_true",
                   help="with --points: the columns are lat,lon in degrees and the metric is the "
                        "Haversine distance in km")
    p.add_argument("--allow-nonmetric", action="store_true",
                   help="with --distances: skip the triangle-inequality check")
    p.add_argument("--gamma", type=float, default=math.inf,
                   help="Geo-Ind neighbour threshold: constrain only pairs with d <= gamma "
                        "(default inf: all pairs)")
    p.add_argument("--prior", metavar="SPEC",
                   help="prior over the locations: 'uniform' (default; a --distances .npz's own "
                        "'prior' array wins over the default), 'random:SEED' (Dirichlet(1) from "
                        "numpy.random.default_rng(SEED)), 'counts:FILE' (proportional to counts), "
                        "or FILE (.npy or one-column CSV of probabilities summing to 1)")
    p.set_defaults(default_grid=default_grid)


#: seconds a stopped run has to hand over its incumbent (after Ctrl-C, or at the deadline) before
#: the command line ends it anyway; the deadline's grace is max(2 s, 10 % of the limit)
STOP_GRACE = 1.2
#: seconds before the deadline's end at which a command still running is ended (the report and the
#: exit, on a loaded machine, take some of them)
END_MARGIN = 0.5


class UsageError(InputError):
    """A command line argparse refuses (unknown flag, bad value): exit 2."""

    def __init__(self, message: str, parser: argparse.ArgumentParser):
        super().__init__(message)
        self.parser = parser


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors raise :class:`UsageError` (so ``--json`` gets its
    JSON object) instead of exiting."""

    def error(self, message):
        raise UsageError(message, self)


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit code.

    Every failure ends in one line ``lpmech: error: ...`` on stderr (argparse's usage errors after
    the usage line) and its exit code (see :func:`classify_error`), with ``--json`` also one JSON
    object on stdout; no traceback, unless the environment variable ``LPMECH_TRACEBACK=1`` asks
    for it (to report a bug). ``--help`` and ``--version`` raise ``SystemExit(0)`` as argparse does.

    The command runs in a worker thread while this thread watches for Ctrl-C and the
    ``--time-limit`` deadline (counted from the process's start): either requests a stop
    (:mod:`lpmech.stop`), and the command ends with its incumbent (exit 4) or, with none, exit
    130 / 4. As the ``lpmech`` program (``argv=None``), a command that has not ended
    :data:`STOP_GRACE` seconds (plus the time its solve reserved for certifying its incumbent)
    after Ctrl-C (a second Ctrl-C: at once), or max(2 s, 10 %) after its deadline, is ended with
    the same report and the process exits; an in-process call
    (``argv`` given) counts the deadline from the call and waits for the command to end.
    """
    entry = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    want_json = "--json" in argv
    try:
        args = build_parser().parse_args(argv)
    except UsageError as exc:
        exc.parser.print_usage(sys.stderr)
        print(f"{exc.parser.prog}: error: {exc}", file=sys.stderr)
        if want_json:
            print_json({"status": "input_error", "error": _one_line(exc), "error_type": "UsageError",
                        "exit_code": 2})
        return 2
    stop.clear()
    if threading.current_thread() is not threading.main_thread():  # no signals off the main thread
        return _run(args)
    return _Watch(args, entry).run()


def _run(args) -> int:
    """The command of ``args``, its errors turned into exit codes."""
    live = not getattr(args, "json", False) and _isatty(sys.stderr)
    try:
        with verbose_logging(getattr(args, "verbose", False), force=True), live_progress(live):
            return args.func(args)
    except KeyboardInterrupt:
        print("lpmech: error: interrupted (nothing was written)", file=sys.stderr)
        return 130
    except BrokenPipeError:  # stdout closed early (e.g. piped into head): not an error of ours
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:  # the one place an error becomes an exit code
        if os.environ.get("LPMECH_TRACEBACK") and not isinstance(exc, LpmechError):
            raise
        _status, code, message = classify_error(exc)
        print(f"lpmech: error: {message}", file=sys.stderr)
        return code


class _Watch:
    """Run a command in a worker thread; turn Ctrl-C and the deadline into stop requests, and
    end the command after its grace (:func:`main`). The command's stdout is held until it ends,
    so a command ended here prints nothing half-way: only this thread's report."""

    def __init__(self, args, entry: bool):
        self.args, self.entry = args, entry
        self.t0 = stop.START if entry else time.monotonic()
        limit = getattr(args, "time_limit", None)
        self.limit = limit if isinstance(limit, int | float) and 0 < limit < math.inf else None
        self.hard: float | None = None  # when this thread ends the command
        self.report: tuple[int, bytes | None, bytes] | None = None  # what it then writes
        self.sigints = 0
        self.fds: tuple[int, ...] = ()  # stdout's and stderr's descriptors as the command started

    def _end(self) -> float:
        """The latest end of a run with a time limit T: T + max(2 s, 10 % of T)."""
        return self.t0 + self.limit + max(2.0, 0.1 * self.limit)

    def _stop_at(self) -> float:
        """When the deadline's stop is requested: at the limit, or earlier by what handing over
        the incumbent needs to end before :meth:`_end` (the solve's :func:`lpmech.stop.reserve`
        for certifying it, and :data:`STOP_GRACE`), but not before half the limit."""
        at = min(self.t0 + self.limit, self._end() - END_MARGIN - STOP_GRACE - stop.reserved())
        return max(at, self.t0 + 0.5 * self.limit)

    def _sigint(self, signum, frame) -> None:
        """Ctrl-C: request a stop, and end the command after :data:`STOP_GRACE` plus the time its
        solve reserved to certify its incumbent (:func:`lpmech.stop.reserve`); a second: at once."""
        self.sigints += 1
        stop.request("interrupted")
        now = time.monotonic()
        if self.sigints > 1:
            self.hard = now
            self.report = self.report or self._report()
            return
        grace = STOP_GRACE + stop.reserved()
        self.hard = min(self.hard or math.inf, now + grace)
        self.report = self._report()
        if self.entry and grace > 2 * STOP_GRACE and self.fds:
            with contextlib.suppress(OSError):
                os.write(self.fds[1], (f"lpmech: stopping: certifying the best mechanism so far "
                                       f"(up to {grace:.0f} s); Ctrl-C again to quit without it\n")
                         .encode())

    def run(self) -> int:
        out, held = sys.stdout, io.StringIO()
        box: dict = {}
        ctx = contextvars.copy_context()

        def work():
            try:
                box["code"] = ctx.run(_run, self.args)
            except BaseException as exc:  # LPMECH_TRACEBACK: re-raised below, in this thread
                box["exc"] = exc

        previous = signal.signal(signal.SIGINT, self._sigint)
        if self.entry:
            out.flush()
            sys.stderr.flush()
            self.fds = (os.dup(out.fileno()), os.dup(sys.stderr.fileno()))
        sys.stdout = held
        worker = threading.Thread(target=work, name="lpmech-command", daemon=True)
        try:
            worker.start()
            while worker.is_alive():
                worker.join(0.05)
                now = time.monotonic()
                if self.limit is not None and self.hard is None and now > self._stop_at():
                    stop.request("time_limit")
                    self.hard = self._end() - END_MARGIN
                    self.report = self._report()
                if self.entry and self.hard is not None and now >= self.hard and worker.is_alive():
                    return self._abandon()
        finally:
            signal.signal(signal.SIGINT, previous)
            stop.clear()  # an in-process caller's next call starts afresh
            for fd in self.fds:
                os.close(fd)
            if sys.stdout is held:
                sys.stdout = out
        _emit(out, held.getvalue())
        if "exc" in box:
            raise box["exc"]
        return box["code"]

    def _report(self) -> tuple[int, bytes | None, bytes]:
        """What :meth:`_abandon` writes: the exit code, the JSON object (with ``--json``) and the
        error line, as bytes. Made when the end is set, not at the end: the command's thread may
        hold the interpreter for long stretches (a solver's C code), and each step here waits for
        it (Pyomo's 9×9 full LP: 0.2–0.8 s between the end and the exit, with this made there)."""
        reason = stop.requested() or "interrupted"
        if reason == "time_limit":
            code, message = 4, (f"time limit of {self.limit:g} s reached while the command could "
                                "not hand over a mechanism (nothing was written)")
        else:
            code, message = 130, "interrupted (nothing was written)"
        obj = None
        if getattr(self.args, "json", False):
            obj = (lpio.dumps({
                "command": getattr(self.args, "command", None), "status": reason,
                "error": message, "error_type": "TimeLimitError" if code == 4 else "InterruptError",
                "exit_code": code}) + "\n").encode()
        return code, obj, f"lpmech: error: {message}\n".encode()

    def _abandon(self) -> int:
        """End the process now: one error line (and JSON object), exit 130 or 4. They are written
        to the descriptors stdout and stderr had when the command started (:attr:`fds`): a solver
        may have pointed 1 and 2 elsewhere meanwhile (Pyomo captures them while it solves)."""
        code, obj, line = self.report or self._report()
        fd_out, fd_err = self.fds
        with contextlib.suppress(OSError):
            if obj is not None:
                os.write(fd_out, obj)
            os.write(fd_err, line)
        for child in multiprocessing.active_children():  # pricing workers, racers: not orphans
            with contextlib.suppress(Exception):
                child.kill()
        os._exit(code)


def _emit(stream, text: str) -> None:
    if not text:
        return
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def classify_error(exc: BaseException) -> tuple[str, int, str]:
    """``(status, exit code, one-line message)`` of an exception ending a command.

    The package's errors carry their own (:func:`lpmech.errors.error_status`, ``exit_code``); a
    ``MemoryError`` is a too-large input (exit 2); anything else is an internal error (exit 1),
    reported in one line that names the exception type.
    """
    if isinstance(exc, LpmechError):
        status, code, message = error_status(exc), exc.exit_code, _one_line(exc)
        result = getattr(exc, "result", None)
        mech = getattr(result, "mechanism", None)
        if isinstance(exc, NotOptimalError) and mech is not None and result.objective is not None:
            bound = "none" if result.bound is None else f"{result.bound:.10g}"
            gap = "" if result.gap is None else f", gap {result.gap:.3g}"
            message += (f" [best certified mechanism: objective {result.objective:.10g}, bound "
                        f"{bound}{gap}, realised epsilon {mech.certificate.realized_epsilon:.6g}]")
        elif isinstance(exc, InterruptError):  # stopped with nothing to hand over
            code = 130
        return status, code, message
    if isinstance(exc, MemoryError):
        return ("input_error", 2, "out of memory: the instance does not fit in this machine's memory; "
                "use a smaller instance (fewer locations) or a method that needs less memory")
    return ("error", 1, f"internal error ({type(exc).__name__}: {_one_line(exc)}); please report it "
            "with the command line (LPMECH_TRACEBACK=1 prints the traceback)")


def exit_code_for(status: str) -> int:
    """The exit code of a command that ended with a result of ``status`` (``EXIT_CODES``)."""
    return EXIT_CODES.get(status, 1)


def finish(status: str, what: str) -> int:
    """Exit code for a command that printed a result of ``status``; for a non-zero code also one
    ``lpmech: error:`` line on stderr saying what the status means."""
    code = exit_code_for(status)
    if code:
        print(f"lpmech: error: {what}: status {status}: {_STATUS_MEANING.get(status, status)}",
              file=sys.stderr)
    return code


_STATUS_MEANING = {
    "feasible": "a certified private mechanism, but its optimality is not proved (see bound and gap)",
    "time_limit": "the time limit was reached without a certified optimum",
    "iteration_limit": "the iteration cap was reached without a certified optimum",
    "infeasible": "the model has no feasible point",
    "unbounded": "the model is unbounded",
    "error": "the solver failed",
}


# ---------------------------------------------------------------------------------- instances


def load_instance(args) -> Instance:
    """The :class:`~lpmech.instance.Instance` described by the instance flags
    (:func:`add_instance_arguments`)."""
    if args.latlon and args.points is None:
        raise InputError("--latlon applies only to --points")
    if args.allow_nonmetric and args.distances is None:
        raise InputError("--allow-nonmetric applies only to --distances")
    if args.cell is not None and (args.points or args.distances or args.graph) is not None:
        raise InputError("--cell applies only to --grid")
    if args.points is not None:
        inst = read_points(args.points, latlon=args.latlon)
    elif args.distances is not None:
        inst = read_distances(args.distances, allow_nonmetric=args.allow_nonmetric)
    elif args.graph is not None:
        inst = read_edges(args.graph)
    else:
        w, h = parse_grid(getattr(args, "default_grid", DEFAULT_GRID) if args.grid is None
                          else args.grid)
        inst = grid(w, h, cell=1.0 if args.cell is None else args.cell)
    inst = apply_prior(inst, args.prior)
    if args.gamma != inst.gamma:
        inst = inst.with_gamma(args.gamma)
    return inst


def parse_grid(spec: str, flag: str = "--grid") -> tuple[int, int]:
    """``"WxH"`` (also ``WXH``, ``W×H``) -> (W, H); errors name ``flag``."""
    m = re.fullmatch(r"\s*(\d+)\s*[xX×]\s*(\d+)\s*", spec)
    if m is None:
        raise InputError(f"bad {flag} {spec!r}: expected WxH with positive integers, e.g. 6x6")
    return int(m[1]), int(m[2])


def apply_prior(inst: Instance, spec: str | None) -> Instance:
    """``inst`` with the prior of a ``--prior`` spec (``None``: the instance's own)."""
    if spec is None:
        return inst
    if spec == "uniform":
        return inst.with_prior("uniform")
    if spec.startswith("random:"):
        seed = spec.removeprefix("random:")
        if not seed.isdigit():
            raise InputError(f"bad --prior {spec!r}: the seed must be a non-negative integer, "
                             "e.g. random:42")
        rng = np.random.default_rng(int(seed))
        return inst.with_prior(rng.dirichlet(np.ones(inst.K)))
    if spec.startswith("counts:"):
        return inst.with_counts(lpio.read_vector(spec.removeprefix("counts:"), "counts"))
    return inst.with_prior(lpio.read_vector(spec, "prior"))


# ---------------------------------------------------------------------------------- plumbing


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def print_json(obj: dict) -> None:
    print(lpio.dumps(obj))


@contextlib.contextmanager
def json_on_error(args, info: dict):
    """With ``--json``, an error still gives one JSON object on stdout (status, error, error_type,
    exit_code, what is known so far, and the partial result's summary), then propagates.

    The ``status`` is the error's (:func:`classify_error`), never the partial result's ``optimal``:
    a mechanism that failed its certificate reports ``certification_failed``.
    """
    try:
        yield
    except (KeyboardInterrupt, BrokenPipeError):
        raise
    except Exception as exc:
        if getattr(args, "json", False):
            status, code, message = classify_error(exc)
            partial = {}
            result = getattr(exc, "result", None)
            if result is not None:
                partial = result.summary()
                partial["backend"] = partial.pop("solver", None)
                partial["result_status"] = partial.pop("status", None)
            print_json({**partial, **info, "status": status, "error": message,
                        "error_type": type(exc).__name__, "exit_code": code})
        raise


@contextlib.contextmanager
def solver_log_to_stderr(verbose: bool):
    """With ``verbose``, send what the solver prints to stdout to stderr instead, so stdout keeps
    only the report or the JSON object.

    HiGHS prints from C++ to file descriptor 1, so fd 1 is pointed at stderr for the solve. Pyomo's
    appsi interface captures fds 1 and 2 itself and copies them to ``sys.stdout``; that is a new
    stream on a duplicate of the stderr descriptor, which Pyomo's capture leaves alone (writing
    to ``sys.stderr`` there would feed Pyomo's own capture pipe and deadlock it).
    """
    if not verbose:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        err = os.fdopen(os.dup(sys.stderr.fileno()), "w", buffering=1)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        # sys.stderr is not a file (an embedding or test capture): redirect Python output only
        with contextlib.redirect_stdout(sys.stderr):
            yield
        return
    saved_stdout = os.dup(1)
    os.dup2(err.fileno(), 1)
    try:
        with err, contextlib.redirect_stdout(err):
            yield
    finally:
        flush_c_stdio()
        os.dup2(saved_stdout, 1)
        os.close(saved_stdout)


__all__ = ["DEFAULT_GRID", "TIME_LIMIT_HELP", "add_instance_arguments", "apply_prior", "build_parser",
           "json_on_error", "load_instance", "main", "parse_grid", "print_json", "solver_log_to_stderr"]

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
