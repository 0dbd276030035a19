"""``lpmech le``: the LE mechanism of Gu et al., LE (local d-privacy for range queries and frequencies).

Small instances (any ``--grid/--points/--distances/--graph``) use the dense closed form with the
certified realised ε (:func:`lpmech.models.le.solve`); a ``--grid`` with more than
``DENSE_MAX_CELLS`` cells uses the scale path :class:`lpmech.models.le.GridLE` (no m×m matrix).

JSON keys: ``status, m, epsilon, path, realized_epsilon, colocation_error`` (expected Error_range
at r = 0 under uniform data), ``mse_theory`` ((20)/n under uniform data, the paper's MSE_freq/n;
``mse_theory_se`` when it is a Hutchinson estimate), ``kkt_residual`` (with ``--kkt``), ``time_s``;
with ``--estimate``: ``n`` and ``estimate_out``.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np

from ..errors import InputError

log = logging.getLogger("lpmech.commands.le")

DENSE_MAX_CELLS = 900
#: without --lp, a prior for which LE is not proved optimal is solved by the LP (8) up to this m
MAX_LP_CELLS = 144


def register(sub, common) -> None:
    import argparse

    from ..cli import _EXIT_CODES, TIME_LIMIT_HELP, add_instance_arguments

    p = sub.add_parser(
        "le", parents=[common], epilog=_EXIT_CODES,
        help="LE mechanism (Gu et al., LE): local d-privacy for range queries and frequencies",
        description="Build the linear-equations mechanism P = E diag(E^-1 1) (Gu et al., LE (9)-(10)), "
                    "certify its realised epsilon, report its co-location error and frequency MSE "
                    "under uniform data, optionally verify Theorem 1's KKT conditions and estimate "
                    "frequencies from reported counts. Exit 3 when E^-1 1 has negative entries "
                    "(the message names the smallest feasible epsilon). Large grids use the "
                    "FFT/Kronecker scale path.")
    add_instance_arguments(p, default_grid="10x10")
    for action in p._actions:  # LE is local d-privacy (gamma = inf): --gamma is refused, not listed
        if "--gamma" in action.option_strings:
            action.help = argparse.SUPPRESS
    p.add_argument("--metric", choices=["euclidean", "manhattan"], default="euclidean",
                   help="grid metric (with --grid; default euclidean)")
    p.add_argument("--epsilon", type=float, default=1.0,
                   help="privacy budget per unit of distance (default 1)")
    p.add_argument("--kkt", action="store_true",
                   help="verify Theorem 1 (KKT with the multipliers (14)); report the largest residual")
    p.add_argument("--lp", action="store_true",
                   help="when LE is infeasible (or not optimal for the prior), solve the LP (8) "
                        "instead, at any size (without --lp: an infeasible LE is exit 3, and a "
                        f"prior LE is not optimal for is solved by the LP up to m = {MAX_LP_CELLS}, "
                        "beyond that LE is reported with status feasible and a valid bound, exit 4)")
    p.add_argument("--lp-method", choices=["auto", "full", "support", "outputs", "decomposition"],
                   default="auto",
                   help="how the LP (8) is solved: auto (the full LP up to 64 cells, else support "
                        "generation), full, support, outputs or decomposition")
    p.add_argument("--time-limit", type=float, metavar="SECONDS",
                   help=TIME_LIMIT_HELP + ". It bounds the LP (8) solves (with --lp, or for a "
                        "prior LE is not optimal for); LE's closed form and the grid scale path "
                        "solve no LP")
    p.add_argument("--estimate", metavar="FILE",
                   help="reported counts (one per location, .npy or one-column CSV): estimate the "
                        "true counts with the inversion estimator (15)")
    p.add_argument("--out", metavar="FILE.npy",
                   help="with --estimate: write the estimated counts here (atomically, only when "
                        "the exit code is 0)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed (a non-negative integer) of the Hutchinson estimate of mse_theory on "
                        "large Euclidean grids")
    p.add_argument("--probes", type=int, default=16,
                   help="probe vectors of that estimate (default 16)")
    p.set_defaults(func=cmd_le)


def _large_grid(args):
    from ..cli import parse_grid

    if any(getattr(args, k) is not None for k in ("points", "distances", "graph")):
        return None
    W, H = parse_grid(args.default_grid if args.grid is None else args.grid)
    return (W, H) if W * H > DENSE_MAX_CELLS else None


def cmd_le(args) -> int:
    from .. import io as lpio
    from ..cli import (
    exit_code_for,
    finish,
    json_on_error,
    load_instance,
    print_json,
    solver_log_to_stderr,
)
    from ..instance import check_seed
    from ..models import le as L

    info = {"command": "le", "epsilon": args.epsilon}
    t0 = time.perf_counter()
    with json_on_error(args, info):
        # every input is checked here, before the first solve (a refusal costs no solve)
        check_seed(args.seed)
        if args.time_limit is not None and not args.time_limit > 0:  # also NaN
            raise InputError(f"--time-limit must be a positive number of seconds, got "
                             f"{args.time_limit:g}")
        if math.isfinite(args.gamma):
            raise InputError(f"--gamma {args.gamma:g}: LE is local d-privacy, every pair is "
                             "constrained (gamma = inf); drop --gamma")
        if args.out is not None:
            if args.estimate is None:
                raise InputError("--out needs --estimate (it writes the estimated counts)")
            lpio.check_output_path(args.out, suffix=".npy", flag="--out")
        if args.probes < 2:
            raise InputError("--probes must be at least 2")
        counts = None if args.estimate is None else lpio.read_vector(args.estimate, "--estimate")
        big = _large_grid(args)
        if big is not None:
            if args.prior is not None or args.cell is not None or args.lp:
                raise InputError(f"a {big[0]}x{big[1]} grid uses the scale path, which takes no "
                                 "--prior, --cell or --lp (distances are in cells)")
            if args.time_limit is not None:
                raise InputError(f"--time-limit applies to the LP (8), which a {big[0]}x{big[1]} "
                                 "grid (the scale path, no LP) never solves; drop it")
            info.update(instance=f"grid {big[0]}x{big[1]} cell=1 metric={args.metric}")
            L.check_grid_epsilon(*big, args.epsilon, args.metric, flag="--epsilon")
            if counts is not None:
                counts = _counts(counts, big[0] * big[1])
            out, estimate = _run_grid(args, big, counts)
        else:
            inst = load_instance(args)
            if args.metric != "euclidean":
                if args.grid is None and any(getattr(args, k) is not None
                                             for k in ("points", "distances", "graph")):
                    raise InputError("--metric applies only to --grid")
                from ..instance import grid

                inst = grid(*inst.shape, cell=inst.cell, metric=args.metric, prior=inst.prior)
            info.update(instance=inst.describe())
            L.check_le_epsilon(args.epsilon, inst.metric, flag="--epsilon")
            if counts is not None:
                counts = _counts(counts, inst.K)
            with solver_log_to_stderr(args.verbose):
                out, estimate = _run_dense(args, inst, counts, L)
        code = exit_code_for(out["status"])
        if code != 0:
            args.out = None  # files only on exit 0 (the CLI contract)
        if estimate is not None and args.out is not None:
            lpio.atomic_write(args.out, lambda f: np.save(f, estimate), flag="--out")
    out.update(info, time_s=time.perf_counter() - t0, estimate_out=args.out)
    if args.json:
        print_json(out)
    else:
        _print_report(out, estimate)
    return finish(out["status"], "le")


def _uniform(m: int) -> np.ndarray:
    return np.full(m, 1.0)  # MSE/n and Error_range do not depend on n for a fixed shape


def _run_dense(args, inst, counts, L):
    from .. import estimation as est

    # LE when it is the optimum (uniform data, or the LP-dual test passes); for other priors the
    # LP (8) up to MAX_LP_CELLS cells (any size with --lp), else LE with status feasible (exit 4)
    res = L.solve(inst, args.epsilon, path="auto", fallback_lp=args.lp,
                  max_lp_size=inst.K if args.lp else MAX_LP_CELLS, lp_method=args.lp_method,
                  time_limit=args.time_limit, verbose=args.verbose)
    P = res.mechanism.matrix
    c = _uniform(inst.K)
    out = {"status": res.status, "m": inst.K, "path": res.stats["path"],
           "lp_method": res.stats.get("engine_method"),
           "realized_epsilon": res.certificate.realized_epsilon,
           "colocation_error": est.range_error(P, c, inst.metric, 0.0),
           "objective": res.objective, "bound": res.bound, "gap": res.gap,
           "kkt_residual": None}
    try:
        out["mse_theory"] = est.mse_theory(P, c) / c.sum()
    except InputError:  # singular P (an LP optimum with an unused output)
        out["mse_theory"] = None
    for k in ("le_feasible", "lp_dual_test", "le_gap", "epsilon_threshold"):
        if k in res.stats:
            out[k] = res.stats[k]
    if args.kkt:
        if res.stats.get("le_feasible") is False:
            raise InputError("--kkt verifies LE, which is infeasible here (see epsilon_threshold)")
        rep = L.kkt(inst, args.epsilon)
        out["kkt_residual"] = rep.max_residual
        out["kkt"] = rep.to_dict()
    estimate = None
    if counts is not None:
        estimate = est.estimate_counts(P, _counts(counts, inst.K))
        out["n"] = float(counts.sum())
    return out, estimate


def _run_grid(args, shape, counts):
    from ..models import le as L

    W, H = shape
    g = L.GridLE(W, H, args.epsilon, metric=args.metric)
    c = _uniform(g.m)
    if g.p.min() > 0:
        mse, se = g.mse_theory(c, rng=np.random.default_rng(args.seed), probes=args.probes)
    else:  # some p_kk = 0: P is singular, the inversion estimator (15) and its MSE do not exist
        mse, se = None, None
    out = {"status": "optimal", "m": g.m, "path": "grid-" + ("kronecker" if args.metric == "manhattan"
                                                             else "fft-cg"),
           "instance": f"grid {W}x{H} cell=1 metric={args.metric}",
           "realized_epsilon": g.certificate.realized_epsilon,
           "colocation_error": g.range_error(c, 0.0),
           "mse_theory": None if mse is None else mse / c.sum(),
           "mse_theory_se": se / c.sum() if se else None,
           "residual": g.stats["residual"], "cg_iterations": g.stats["cg_iterations"],
           # KKT of Thm 1 on the grid: with λ = p every residual but (23) E λ = 1 and λ ≥ 0 is 0
           # by construction, so the largest residual is max(|E p − 1|, max(0, −min p))
           "kkt_residual": max(g.stats["residual"], max(0.0, -float(g.p.min()))) if args.kkt else None}
    estimate = None
    if counts is not None:
        estimate = g.estimate(_counts(counts, g.m))
        out["n"] = float(counts.sum())
    return out, estimate


def _counts(counts, m: int) -> np.ndarray:
    if counts.shape != (m,):
        raise InputError(f"--estimate has {counts.size} counts, the domain has {m} locations")
    if not np.isfinite(counts).all() or (counts < 0).any():
        raise InputError("--estimate counts must be finite and non-negative")
    return counts


def _print_report(out: dict, estimate) -> None:
    def f(v, fmt=".6g"):
        return "n/a" if v is None else format(v, fmt)

    lines = [
        f"LE on {out.get('instance', '')} (m = {out['m']}, path {out['path']}), status {out['status']}",
        f"  epsilon             {out['epsilon']:g}",
        f"  realised epsilon    {f(out['realized_epsilon'], '.10g')}",
        f"  co-location error   {f(out['colocation_error'], '.6f')}  (Error_range r=0, uniform data)",
        f"  MSE_freq/n (20)     {f(out['mse_theory'])}  (uniform data)",
    ]
    if out.get("kkt_residual") is not None:
        lines.append(f"  KKT residual        {out['kkt_residual']:.3g}  (Theorem 1)")
    if out.get("gap") is not None:
        lines.append(f"  bound / gap         {out['bound']:.10g} / {out['gap']:.2g}")
    if estimate is not None:
        lines.append(f"  estimate            n = {out['n']:g}, sum = {estimate.sum():.6g}"
                     + (f", written to {out['estimate_out']}" if out["estimate_out"] else ""))
    lines.append(f"  time                {out['time_s']:.3f} s")
    print("\n".join(lines))
