"""The ``lpmech`` command line (also ``python -m lpmech``).

Subcommands:

* ``lpmech omg``: build and solve the optimal (ε, γ)-Geo-Ind mechanism (the OMG LP of seed 002
  §2.3) for a grid, a CSV of points (planar or lat/lon), a distance matrix or a weighted graph;
  print a report or one JSON object, and optionally save the certified mechanism (``--out``).
* ``lpmech certify``: re-certify a saved mechanism against its saved metric.

Exit codes: 0 a certified optimum (or closed form), 1 solver failure or internal error, 2 bad
input (also argparse's usage errors, and an instance too large for the machine's memory),
3 infeasible model, 4 no certified optimum (time limit, iteration cap, optimality not proved),
5 a mechanism that fails its privacy certificate, 130 interrupted; a result's status maps to its
code through :data:`lpmech.solvers.result.EXIT_CODES`. An error prints exactly one line
``lpmech: error: <message>`` on stderr (and, with ``--json``, one JSON object with ``status`` and
``error`` on stdout); no output file is written unless the whole run succeeds.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import io
import logging
import math
import os
import re
import sys

import numpy as np

from . import __version__, commands, plotting
from . import io as lpio
from .errors import CertificationError, InfeasibleError, InputError, LpmechError, error_status
from .instance import Instance, grid, read_distances, read_edges, read_points
from .mechanism import EPS_RTOL, certify
from .models import omg
from .progress import live_progress, verbose_logging
from .solvers.result import EXIT_CODES

log = logging.getLogger("lpmech.cli")

DEFAULT_GRID = "6x6"
#: --solver choice -> (omg.solve path, HiGHS algorithm on the fast path)
SOLVERS = {
    "highs": ("fast", "simplex"),
    "highs-ipm": ("fast", "ipm"),
    "highs-choose": ("fast", "choose"),
    "pyomo": ("pyomo", "simplex"),
}
_EXIT_CODES = """exit codes: 0 certified optimum (or a closed form), 1 solver failure or internal
error, 2 bad input (also an instance too large for this machine's memory), 3 infeasible, 4 no
certified optimum (time limit, iteration cap, or a certified mechanism whose optimality is not
proved), 5 privacy certificate failed, 130 interrupted. With --json an error still prints one JSON
object whose "status" is the error's."""


# ------------------------------------------------------------------------------------------ parser


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of the ``lpmech`` command."""
    parser = argparse.ArgumentParser(
        prog="lpmech", epilog=_EXIT_CODES,
        description="Optimal privacy mechanisms as LP models, solved and certified.")
    parser.add_argument("--version", action="version", version=f"lpmech {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true",
                        help="print exactly one JSON object on stdout instead of the report")
    common.add_argument("-v", "--verbose", action="store_true",
                        help="log progress (and the solver's log) to stderr")

    p = sub.add_parser(
        "omg", parents=[common], epilog=_EXIT_CODES,
        help="optimal (eps, gamma)-Geo-Ind mechanism (the OMG LP, exact at scale)",
        description="Solve the OMG LP (seed 002 §2.3): the (eps, gamma)-Geo-Ind mechanism of least "
                    "expected loss (loss = the metric) under the prior, with a certified realised "
                    "epsilon and a dual bound. Without an instance flag the instance is a "
                    f"{DEFAULT_GRID} grid.")
    add_instance_arguments(p)
    p.add_argument("--epsilon", type=float, default=1.0,
                   help="privacy budget per unit of distance (default 1)")
    p.add_argument("--method", choices=list(omg.METHODS), default="auto",
                   help="full: every Geo-Ind row; cutting-plane: lazy rows (exact); decomposition: "
                        "Dantzig-Wolfe by output column with lazy rows (exact, fastest at large K); "
                        "spanner: rows on a delta-spanner with eps/delta (approximate, certified); "
                        f"auto (default): cutting-plane up to K={omg.AUTO_SMALL_K}, else decomposition "
                        "(the report says which ran)")
    p.add_argument("--delta", type=float, default=1.1,
                   help="spanner dilation for --method spanner (default 1.1)")
    p.add_argument("--solver", choices=list(SOLVERS), default="highs",
                   help="highs: fast sparse path, dual simplex (default); highs-ipm: interior "
                        "point + crossover; highs-choose: HiGHS decides; pyomo: the declarative "
                        "Pyomo model via appsi_highs")
    p.add_argument("--time-limit", type=float, metavar="SECONDS",
                   help="solver time limit; reaching it is an error (exit 4)")
    p.add_argument("--max-loss", type=float, metavar="X",
                   help="utility requirement: expected loss <= X (below the optimum the model is "
                        "infeasible, exit 3)")
    p.add_argument("--out", metavar="FILE.npz",
                   help="save the certified mechanism, metric, prior and certificates (written "
                        "atomically, only on success)")
    p.add_argument("--plot", metavar="FILE.png",
                   help="draw the output distributions of a few true locations (written "
                        "atomically, only on success)")
    p.set_defaults(func=cmd_omg)

    c = sub.add_parser(
        "certify", parents=[common], epilog=_EXIT_CODES,
        help="re-certify a saved mechanism",
        description="Re-certify a mechanism saved by 'lpmech omg --out' against its saved metric: "
                    "the realised epsilon, the worst violation at the target epsilon and the "
                    "violation ratio and magnitude (seed 002 eqs. (32)-(33)). Exit 5 when the "
                    f"realised epsilon exceeds the target by more than a factor 1+{EPS_RTOL:g}.")
    c.add_argument("file", metavar="FILE.npz", help="a mechanism saved by 'lpmech omg --out'")
    c.add_argument("--epsilon", type=float, help="target epsilon (default: the saved one)")
    c.add_argument("--gamma", type=float, help="neighbour threshold (default: the saved one)")
    c.set_defaults(func=cmd_certify)

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


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit code.

    argparse usage errors raise ``SystemExit(2)`` as usual. Every other failure ends in one line
    ``lpmech: error: ...`` on stderr and its exit code (see :func:`classify_error`); no traceback,
    unless the environment variable ``LPMECH_TRACEBACK=1`` asks for it (to report a bug).
    """
    args = build_parser().parse_args(argv)
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
        return error_status(exc), exc.exit_code, _one_line(exc)
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


# -------------------------------------------------------------------------------------- omg


def cmd_omg(args) -> int:
    """``lpmech omg``: build the instance, solve, report, save."""
    path, algorithm = SOLVERS[args.solver]
    info = {"command": "omg", "solver": args.solver, "epsilon": args.epsilon,
            "gamma": args.gamma}
    with json_on_error(args, info):
        if args.out is not None:  # fail now, not after a long solve
            lpio.check_output_path(args.out, suffix=".npz")
        if args.plot is not None:
            lpio.check_output_path(args.plot, suffix=".png")
        inst = load_instance(args)
        info.update(instance=inst.describe(), K=inst.K, prior=_prior_description(args, inst))
        log.info("instance %s, epsilon %g, solver %s", inst.describe(), args.epsilon, args.solver)
        try:
            with solver_log_to_stderr(args.verbose):
                res = omg.solve(inst, args.epsilon, method=args.method, path=path,
                                algorithm=algorithm, time_limit=args.time_limit,
                                max_loss=args.max_loss, delta=args.delta,
                                verbose=args.verbose)
        except InfeasibleError as exc:
            if args.max_loss is None:
                raise
            raise InfeasibleError(
                f"OMG is infeasible: --max-loss {args.max_loss:g} is below the least expected "
                f"loss of any mechanism at epsilon {args.epsilon:g}; raise --max-loss or "
                "--epsilon",
                result=exc.result) from None
        if args.out is not None:
            lpio.save_result(args.out, res, inst)
            log.info("saved %s", args.out)
        if args.plot is not None:
            title = f"OMG, {inst.describe()}, epsilon {args.epsilon:g}"
            plotting.save_figure(plotting.plot_mechanism(res.mechanism, inst, title=title),
                                 args.plot)
            log.info("plotted %s", args.plot)

    summary = res.summary()
    summary["backend"] = summary.pop("solver", None)
    out = {**summary, **info, "unit": inst.unit, "out": args.out, "plot": args.plot}
    if args.json:
        print_json(out)
    else:
        _print_omg_report(out)
    return finish(res.status, "omg")


def load_instance(args) -> Instance:
    """The :class:`~lpmech.instance.Instance` described by ``lpmech omg``'s flags."""
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


def _prior_description(args, inst: Instance) -> str:
    if args.prior is not None:
        return args.prior
    return "uniform" if np.all(inst.prior == inst.prior[0]) else f"from {args.distances}"


def _solver_details(out: dict) -> str:
    auto = " (auto)" if out.get("requested_method") == "auto" else ""
    if out.get("path") == "fast":
        algo = f" {out['algorithm']}" if out.get("algorithm") else ""
        return f"method {out.get('method')}{auto}, {out['backend']}{algo}, sparse fast path"
    return f"method full{auto}, {out['backend']}, declarative model"


def _print_omg_report(out: dict) -> None:
    unit = f" per {out['unit']}" if out["unit"] else ""
    gamma = "" if math.isinf(out["gamma"]) else f", gamma {out['gamma']:g}"
    lines = [
        f"OMG on {out['instance']}",
        f"  epsilon           {out['epsilon']:g}{unit}{gamma}, prior {out['prior']}",
        f"  solver            {out['solver']} ({_solver_details(out)}), status {out['status']}",
        f"  objective         {out['objective']:.10g}  (expected loss)",
        "  bound             " + ("none" if out["bound"] is None else
                                  f"{out['bound']:.10g}  (gap {out['gap']:.2g})"),
        f"  realised epsilon  {out['realized_epsilon']:.10g}  "
        f"(worst violation {out['worst_violation']:.2g})",
        f"  time              {out['time_s']:.3f} s",
    ]
    if out["out"] is not None:
        lines.append(f"  saved             {out['out']}")
    if out["plot"] is not None:
        lines.append(f"  plot              {out['plot']}")
    print("\n".join(lines))


# ---------------------------------------------------------------------------------- certify


def cmd_certify(args) -> int:
    """``lpmech certify``: re-certify a saved mechanism; exit 5 if it fails."""
    info = {"command": "certify", "file": args.file}
    with json_on_error(args, info):
        saved = lpio.load_mechanism(args.file)
        eps = saved.epsilon if args.epsilon is None else args.epsilon
        gamma = saved.gamma if args.gamma is None else args.gamma
        if not gamma > 0:
            raise InputError(f"--gamma must be > 0, got {gamma:g}")
        cert = certify(saved.matrix, saved.metric, eps, gamma)
    out = {**info, "status": "certified" if cert.satisfied else "certification_failed",
           "K": saved.mechanism.shape[0], "certified": cert.satisfied,
           "epsilon": cert.target_epsilon, "gamma": cert.gamma,
           "realized_epsilon": cert.realized_epsilon, "worst_violation": cert.worst_violation,
           "violation_ratio": cert.violation_ratio,
           "violation_magnitude": cert.violation_magnitude, "n_constraints": cert.n_constraints,
           "rtol": cert.rtol, "saved_epsilon": saved.epsilon,
           "saved_realized_epsilon": saved.certificate.get("realized_epsilon")}
    if args.json:
        print_json(out)
    else:
        gamma_txt = "" if math.isinf(cert.gamma) else f", gamma {cert.gamma:g}"
        print("\n".join([
            f"mechanism {args.file}: {out['K']} locations",
            f"  target epsilon      {cert.target_epsilon:g}{gamma_txt}",
            f"  realised epsilon    {cert.realized_epsilon:.10g}",
            f"  worst violation     {cert.worst_violation:.3g}",
            f"  violation ratio     {cert.violation_ratio:.4g}  "
            f"({round(cert.violation_ratio * cert.n_constraints)} of {cert.n_constraints})",
            f"  violation magnitude {cert.violation_magnitude:.3g}",
            f"  certified           {'yes' if cert.satisfied else 'NO'}",
        ]))
    if not cert.satisfied:
        raise CertificationError(
            f"{args.file} is not certified: realised epsilon {cert.realized_epsilon:.9g} > "
            f"{cert.target_epsilon:g}*(1+{cert.rtol:g}); worst violation "
            f"{cert.worst_violation:.3g}, violation ratio {cert.violation_ratio:.4g}")
    return 0


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
        _flush_c_stdout()
        os.dup2(saved_stdout, 1)
        os.close(saved_stdout)


def _flush_c_stdout() -> None:
    """Flush the C library's stdio buffers (what HiGHS printed but did not flush yet)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).fflush(None)


__all__ = ["SOLVERS", "add_instance_arguments", "apply_prior", "build_parser", "json_on_error",
           "load_instance", "main", "parse_grid", "print_json", "solver_log_to_stderr"]

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
