"""``lpmech mm``: the matrix mechanism under metric LDP (seed 003 §3).

With no options it solves program (2) (frequencies, A = B = I) under E_S with m = 100, |S| = 10,
ε = 1, and reports the certified total error, the Lagrangian bound, the gap and the closed form.
"""

from __future__ import annotations

import argparse
import logging
import math

from ..errors import InputError

log = logging.getLogger("lpmech.commands.mm")

METRICS = ("es", "line", "l1", "matrix")


def register(sub, common) -> None:
    p = sub.add_parser(
        "mm", parents=[common],
        help="matrix mechanism under metric LDP: programs (1)/(2) (seed 003)",
        description="Solve the scale program of the Laplace matrix mechanism A h_x + Lap(s) under "
                    "an E-LDP metric (seed 003 §3): program (2) for frequencies, or program (1) "
                    "for a fixed strategy A with B = W A^+. Every strategy returned is certified "
                    "by Proposition 2 on all pairs; the bound is a Lagrangian bound. Default: "
                    "program (2) under E_S, m = 100, |S| = 10, epsilon = 1.")
    p.add_argument("--workload", choices=("identity", "ranges", "prefix"), default="identity",
                   help="W: identity (frequencies, default), ranges (all m(m+1)/2 intervals), "
                        "prefix (L_m)")
    p.add_argument("--strategy", choices=("identity", "prefix", "hierarchical", "haar", "auto"),
                   default="identity",
                   help="A (default identity); auto tries identity, prefix and hierarchical and "
                        "keeps the least error")
    p.add_argument("--metric", choices=METRICS, default="es",
                   help="es: E_S (default); line: epsilon|x-x'|; l1: epsilon L1 on [m]^D; "
                        "matrix: a distance matrix file (--distances)")
    p.add_argument("--distances", metavar="FILE", help="with --metric matrix: .npy/.npz matrix")
    p.add_argument("--m", type=int, default=100, help="domain size per dimension (default 100)")
    p.add_argument("--D", type=int, default=1, help="dimensions for --metric l1 (default 1)")
    p.add_argument("--S", type=int, default=10, dest="S",
                   help="|S| for E_S: S = the first |S| values (default 10)")
    p.add_argument("--epsilon", type=float, default=1.0, help="privacy parameter (default 1)")
    p.add_argument("--n", type=int, default=1, help="number of users (scales the error; default 1)")
    p.add_argument("--reconstruction", choices=("pinv", "alternate"), default="pinv",
                   help="B = W A^+ (default) or alternating weighted least squares")
    p.add_argument("--lazy", action=argparse.BooleanOptionalAction, default=None,
                   help="generate pair constraints lazily (default: when m > 60)")
    p.add_argument("--time-limit", type=float, metavar="SECONDS", help="solver time limit")
    p.set_defaults(func=cmd_mm)


def _metric(args):
    from ..instance import read_distances
    from ..models import matrix_mechanism as mm

    if args.metric != "matrix" and args.distances is not None:
        raise InputError("--distances applies only to --metric matrix")
    if args.metric != "l1" and args.D != 1:
        raise InputError("--D applies only to --metric l1")
    if args.metric == "es":
        return mm.es_metric(args.m, args.S, args.epsilon)
    if args.metric == "line":
        return mm.line_metric(args.m, args.epsilon)
    if args.metric == "l1":
        return mm.l1_metric(args.m, args.epsilon, D=args.D)
    if args.distances is None:
        raise InputError("--metric matrix needs --distances FILE")
    return mm.metric_from_matrix(read_distances(args.distances).metric, args.epsilon)


def cmd_mm(args) -> int:
    from ..cli import json_on_error, print_json
    from ..models import matrix_mechanism as mm

    info = {"command": "mm", "workload": args.workload, "strategy": args.strategy,
            "metric_kind": args.metric, "epsilon": args.epsilon, "n": args.n}
    with json_on_error(args, info):
        metric = _metric(args)
        info["m"] = metric.m
        kw = dict(n=args.n, reconstruction=args.reconstruction, lazy=args.lazy,
                  time_limit=args.time_limit)
        if args.strategy == "auto":
            res = mm.choose_strategy(args.workload, metric, **kw)
        else:
            res = mm.solve(args.workload, metric, strategy=args.strategy, **kw)
    out = {**res.summary(), **info}
    out["strategy"] = res.stats["strategy"]
    out["backend"] = out.pop("solver", "cvxpy/CLARABEL")
    if "candidates" in res.stats:
        out["candidates"] = res.stats["candidates"]
    if args.json:
        print_json(out)
        return 0
    cf = out.get("closed_form")
    lines = [
        f"matrix mechanism ({out['model']}) on {out['metric']}",
        f"  workload / strategy  {args.workload} / {out['strategy']} (p = {out['p']} rows), "
        f"n = {args.n}",
        f"  status               {out['status']}",
        f"  objective            {out['objective']:.10g}  (total expected squared error)",
        f"  bound                {out['bound']:.10g}  (gap {out['gap']:.2g})",
        "  closed form          " + ("none known" if cf is None else
                                     f"{cf:.10g}  (rel. diff {out['closed_form_rel_diff']:.2g})"),
        f"  realised epsilon     {out['realized_epsilon']:.10g}  (Proposition 2, all "
        f"{out['pairs_total']} pairs)",
        f"  cutting planes       {out['rounds']} rounds, {out['pairs_used']} pairs in the model",
        f"  time                 {out['time_s']:.3f} s",
    ]
    if "candidates" in out:
        lines.append("  candidates           " + ", ".join(
            f"{k}: {v:.6g}" if isinstance(v, float) and math.isfinite(v) else f"{k}: {v}"
            for k, v in out["candidates"].items()))
    print("\n".join(lines))
    return 0
