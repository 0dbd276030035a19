"""``lpmech omg``: the optimal (ε, γ)-Geo-Ind mechanism (the OMG LP of Qiu et al., LR-Geo §2.3) for a grid,
a CSV of points (planar or lat/lon), a distance matrix or a weighted graph; prints a report or one
JSON object, and optionally saves the certified mechanism (``--out``) and a plot (``--plot``).
"""

from __future__ import annotations

import logging
import math

import numpy as np

from .. import io as lpio
from .. import plotting
from ..cli import (
    _EXIT_CODES,
    DEFAULT_GRID,
    TIME_LIMIT_HELP,
    add_instance_arguments,
    exit_code_for,
    finish,
    json_on_error,
    load_instance,
    print_json,
    solver_log_to_stderr,
)
from ..errors import InfeasibleError, InputError
from ..instance import Instance
from ..models import omg

log = logging.getLogger("lpmech.cli")

#: listed first in ``lpmech --help`` (see :func:`lpmech.commands.modules`)
ORDER = 0

#: --solver choice -> (omg.solve path, HiGHS algorithm on the fast path)
SOLVERS = {
    "highs": ("fast", "simplex"),
    "highs-ipm": ("fast", "ipm"),
    "highs-choose": ("fast", "choose"),
    "pyomo": ("pyomo", "simplex"),
}


def register(sub, common) -> None:
    p = sub.add_parser(
        "omg", parents=[common], epilog=_EXIT_CODES,
        help="optimal (eps, gamma)-Geo-Ind mechanism (the OMG LP, exact at scale)",
        description="Solve the OMG LP (Qiu et al., LR-Geo §2.3): the (eps, gamma)-Geo-Ind "
                    "mechanism of least "
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
    p.add_argument("--delta", type=float, default=None,
                   help="spanner dilation, only with --method spanner (default 1.1)")
    p.add_argument("--solver", choices=list(SOLVERS), default="highs",
                   help="highs: fast sparse path, dual simplex (default); highs-ipm: interior "
                        "point + crossover; highs-choose: HiGHS decides; pyomo: the declarative "
                        "Pyomo model via appsi_highs")
    p.add_argument("--time-limit", type=float, metavar="SECONDS",
                   help=TIME_LIMIT_HELP)
    p.add_argument("--max-loss", type=float, metavar="X",
                   help="utility requirement: expected loss <= X (below the optimum the model is "
                        "infeasible, exit 3)")
    p.add_argument("--out", metavar="FILE.npz",
                   help="save the certified mechanism, metric, prior and certificates (written "
                        "atomically, only when the exit code is 0; 'lpmech certify' reads it)")
    p.add_argument("--plot", metavar="FILE.png",
                   help="draw the output distributions of a few true locations (written "
                        "atomically, only when the exit code is 0)")
    p.set_defaults(func=cmd_omg)


def cmd_omg(args) -> int:
    """``lpmech omg``: build the instance, solve, report, save."""
    path, algorithm = SOLVERS[args.solver]
    info = {"command": "omg", "solver": args.solver, "epsilon": args.epsilon,
            "gamma": args.gamma}
    with json_on_error(args, info):
        if args.delta is not None and args.method != "spanner":
            raise InputError(f"--delta {args.delta:g} applies only to --method spanner (got --method "
                             f"{args.method}); drop --delta or add --method spanner")
        if args.out is not None:  # fail now, not after a long solve
            lpio.check_output_path(args.out, suffix=".npz", flag="--out")
        if args.plot is not None:
            lpio.check_output_path(args.plot, suffix=".png", flag="--plot")
        inst = load_instance(args)
        info.update(instance=inst.describe(), K=inst.K, prior=_prior_description(args, inst))
        log.info("instance %s, epsilon %g, solver %s", inst.describe(), args.epsilon, args.solver)
        try:
            with solver_log_to_stderr(args.verbose):
                res = omg.solve(inst, args.epsilon, method=args.method, path=path,
                                algorithm=algorithm, time_limit=args.time_limit,
                                max_loss=args.max_loss,
                                delta=1.1 if args.delta is None else args.delta,
                                verbose=args.verbose)
        except InfeasibleError as exc:
            if args.max_loss is None:
                raise
            raise InfeasibleError(
                f"OMG is infeasible: --max-loss {args.max_loss:g} is below the least expected "
                f"loss of any mechanism at epsilon {args.epsilon:g}; raise --max-loss or "
                "--epsilon",
                result=exc.result) from None
        success = exit_code_for(res.status) == 0  # files only on exit 0 (the CLI contract)
        if not success:
            args.out = args.plot = None
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
