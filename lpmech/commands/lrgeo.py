"""``lpmech lrgeo``: LR-Geo (Qiu et al., LR-Geo §4) on the Rome road grid or a synthetic road grid.

Solves CLR-Geo for a set of users by Benders (progress per iteration in the log with ``-v``),
certifies every user's matrix, and reports the expected cost, Benders' bounds, the relaxed lower
bound (29)–(30) and the cross-user GV ratio (32) / GVE (33).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InputError
from ..solvers.highs import METHODS


def register(sub, common) -> None:
    from ..cli import TIME_LIMIT_HELP

    p = sub.add_parser(
        "lrgeo", parents=[common],
        help="LR-Geo: locally relevant geo-obfuscation with CLR-Geo solved by Benders",
        description="LR-Geo (Qiu et al., LR-Geo §4): per-user locally relevant LPs tied by exponential "
                    "entries, solved jointly (CLR-Geo) by Benders' decomposition. Distances in km, "
                    "epsilon per km. Without --rome-dir the instance is a synthetic road grid "
                    "shaped like the Rome default.")
    src = p.add_argument_group("instance")
    src.add_argument("--rome-dir", metavar="DIR",
                     help="folder with the Rome grid CSVs (e.g. ../shared/data/rome)")
    src.add_argument("--synthetic", metavar="WxH", default="39x39",
                     help="synthetic road grid size when --rome-dir is not given (default 39x39)")
    src.add_argument("--K", type=int, metavar="N",
                     help="keep N random cells of the grid (default: all)")
    src.add_argument("--users", type=int, default=10, metavar="M",
                     help="number of users, placed on random cells (default 10)")
    src.add_argument("--user-cells", metavar="I,J,...",
                     help="explicit user cells (indices into the grid, after --K); overrides --users")
    src.add_argument("--seed", type=int, default=0,
                     help="seed of numpy.random.default_rng for the synthetic grid, --K and users")
    m = p.add_argument_group("LR-Geo parameters (see lpmech.models.lrgeo.LRGeoParams)")
    m.add_argument("--epsilon", type=float, default=10.0, help="privacy budget per km (default 10)")
    m.add_argument("--gamma", type=float, default=1.0,
                   help="Geo-Ind neighbour threshold in km (default 1; inf = LR-Geo-F)")
    m.add_argument("--Gamma", type=float, default=20.0, help="LR distance threshold in km (default 20)")
    m.add_argument("--r-obf", type=float, default=4.0, help="obfuscation range in km (default 4)")
    m.add_argument("--r-exp", type=float, default=3.5,
                   help="exponential threshold in km, <= r-obf (default 3.5)")
    m.add_argument("--lr-cap", type=int, default=20, help="cap on |LR set| (default 20; 0 = none)")
    m.add_argument("--lr-select", choices=["nearest", "random"], default="nearest",
                   help="which cells fill an LR set capped by --lr-cap: the nearest by path distance "
                        "(default) or a random choice (seeded by --seed)")
    m.add_argument("--exp-form", choices=["truncated", "paper"], default="truncated",
                   help="exponential entries (18): y_k*exp(-eps*min(d_ik, r_obf)/2) (truncated, "
                        "default) or the paper's exp(-eps*d_ik/2) inside the range, exp(-eps*r_obf/2) "
                        "outside")
    m.add_argument("--outside", choices=["zero", "exp"], default="zero",
                   help="entries outside a user's obfuscation range: 0 (default) or the exponential form")
    m.add_argument("--costs", choices=["upper", "true", "lower"], default="upper",
                   help="cost coefficients of the objective: the reference table's upper bound (25) "
                        "(default), the true costs (5), or the lower bound (31)")
    m.add_argument("--table-cell", type=float, default=0.0,
                   help="cost reference table cell in km (default 0 = the grid itself: exact costs)")
    s = p.add_argument_group("solver")
    s.add_argument("--method", choices=["benders", "monolithic"], default="benders",
                   help="benders: Benders' decomposition over users (default); monolithic: one LP "
                        "with every user's block (exact reference, more memory)")
    s.add_argument("--lp-method", choices=list(METHODS), default=None,
                   help="HiGHS method of the monolithic LP, only with --method monolithic "
                        "(default simplex; ipm: interior point with crossover)")
    s.add_argument("--workers", type=int, default=None,
                   help="process-pool size for the subproblems (default: CPUs; 0 = in-process)")
    s.add_argument("--abs-tol", type=float, default=0.01, help="Benders gap UB-LB (default 0.01 km)")
    s.add_argument("--rel-tol", type=float, default=1e-6, help="Benders relative gap (default 1e-6)")
    s.add_argument("--max-iter", type=int, default=100,
                   help="Benders iteration cap (default 100); reaching it without a certified optimum "
                        "is status iteration_limit, exit 4")
    s.add_argument("--time-limit", type=float, metavar="SECONDS",
                   help=TIME_LIMIT_HELP)
    s.add_argument("--retain-after", default="auto", metavar="N|auto|never",
                   help="Benders block passes after which every user's block joins the master (the "
                        "whole LP, certified); auto (default): 1 for LPs up to 1e6 nonzeros, else "
                        "never; never: cuts only")
    s.add_argument("--no-relaxed-bound", action="store_true",
                   help="skip the relaxed lower bound (29)-(30) (saves M LP solves)")
    p.add_argument("--out", metavar="FILE.npz",
                   help="save the users' certified matrices with the grid's distances, epsilon and "
                        "gamma (written atomically, only when the exit code is 0; 'lpmech certify' "
                        "re-certifies each user's matrix on its LR set)")
    p.set_defaults(func=cmd_lrgeo)


def _g(v) -> str:
    return "n/a" if v is None else f"{v:.6g}"


def _grid(args, rng):
    from .. import datasets as ds
    from ..cli import parse_grid

    if args.rome_dir is not None:
        grid = ds.read_rome(args.rome_dir)
    else:
        w, h = parse_grid(args.synthetic, "--synthetic")
        grid = ds.synthetic_road_grid(w, h, rng=rng)
    if args.K is not None:
        grid = grid.sample(args.K, rng)
    return grid


def _users(args, grid, rng) -> np.ndarray:
    if args.user_cells is not None:
        try:
            cells = np.array([int(v) for v in args.user_cells.split(",") if v.strip()], int)
        except ValueError:
            raise InputError(f"bad --user-cells {args.user_cells!r}: expected integers like 0,5,9") from None
        if cells.size == 0:
            raise InputError("--user-cells is empty: give at least one cell index, e.g. 0,5,9")
        values, counts = np.unique(cells, return_counts=True)
        if (counts > 1).any():
            raise InputError(f"--user-cells lists cell {int(values[counts > 1][0])} more than once: each "
                             "user is at a distinct cell")
        return cells
    if not 1 <= args.users <= grid.K:
        raise InputError(f"--users must be between 1 and the number of cells ({grid.K}), got {args.users}")
    return np.sort(rng.choice(grid.K, size=args.users, replace=False))


def cmd_lrgeo(args) -> int:
    import concurrent.futures as cf

    from .. import io as lpio
    from ..cli import exit_code_for, finish, json_on_error, print_json, solver_log_to_stderr
    from ..instance import check_seed
    from ..models import lrgeo

    info = {"command": "lrgeo", "epsilon": args.epsilon, "method": args.method}
    with json_on_error(args, info):
        check_seed(args.seed)
        if args.lp_method is not None and args.method != "monolithic":
            raise InputError(f"--lp-method {args.lp_method} applies only to --method monolithic "
                             f"(got --method {args.method}, which solves by cuts); drop --lp-method "
                             "or add --method monolithic")
        if args.out is not None:
            lpio.check_output_path(args.out, suffix=".npz", flag="--out")
        params = lrgeo.LRGeoParams(
            epsilon=args.epsilon, gamma=args.gamma, Gamma=args.Gamma, r_obf=args.r_obf,
            r_exp=args.r_exp, lr_cap=args.lr_cap or None, lr_select=args.lr_select,
            exp_form=args.exp_form, outside=args.outside, costs=args.costs,
            table_cell=args.table_cell or None)
        rng = np.random.default_rng(args.seed)
        grid = _grid(args, rng)
        users = _users(args, grid, rng)
        lrgeo.check_lrgeo_epsilon(params, grid.metric, flag="--epsilon")
        info.update(instance=grid.name, K=grid.K)
        if args.workers is not None and args.workers < 0:
            raise InputError("--workers must be >= 0")
        retain_after = {"auto": "auto", "never": None}.get(args.retain_after, args.retain_after)
        if isinstance(retain_after, str) and retain_after != "auto":
            if not retain_after.isdigit() or int(retain_after) < 1:
                raise InputError(f"--retain-after must be a positive integer, auto or never, "
                                 f"got {args.retain_after!r}")
            retain_after = int(retain_after)
        executor = "serial" if args.workers == 0 else (
            None if args.workers is None else cf.ProcessPoolExecutor(max_workers=args.workers))
        try:
            with solver_log_to_stderr(args.verbose):
                res = lrgeo.solve(grid, users, params, method=args.method, executor=executor,
                                  abs_tol=args.abs_tol, rel_tol=args.rel_tol, max_iter=args.max_iter,
                                  time_limit=args.time_limit, relaxed_bound=not args.no_relaxed_bound,
                                  rng=rng, retain_after=retain_after,
                                  lp_method=args.lp_method or "simplex")
        finally:
            if hasattr(executor, "shutdown"):
                executor.shutdown()
        st = res.stats
        if math.isnan(st["cost"]) or exit_code_for(res.status) != 0:
            args.out = None  # files only on exit 0 (the CLI contract)
        if args.out is not None:
            lpio.save_lrgeo(args.out, res, grid.metric, args.epsilon, args.gamma,
                            coords=grid.coords, choices=st["choices"])
    out = {
        "status": res.status, "users": st["users"], "K": grid.K, "instance": grid.name,
        "cost": st["cost"], "true_cost": st["true_cost"], "own_row_cost": st["own_row_cost"],
        "lower_bound": st.get("lower_bound"), "upper_bound": st.get("upper_bound"),
        "gap": None if st.get("upper_bound") is None else st["upper_bound"] - st["lower_bound"],
        "iterations": st.get("iterations"), "relaxed_bound": st["relaxed_bound"],
        "approximation_ratio": st["approximation_ratio"], "gv_ratio": st["gv_ratio"],
        "gve_mean": st["gve_mean"], "gve_max": st["gve_max"],
        "realized_epsilon": res.certificate.realized_epsilon, "epsilon": args.epsilon,
        "time_s": st["time_s"], "choices": st["choices"], "method": args.method,
        "trace": [{k: t[k] for k in ("iteration", "lower_bound", "upper_bound", "gap")}
                  for t in st.get("trace", [])],
        "out": args.out,
    }
    if args.json:
        print_json(out)
    else:
        rb = out["relaxed_bound"]
        print("\n".join([
            f"LR-Geo on {grid.name} (K={grid.K}), {len(out['users'])} users, epsilon {args.epsilon:g}/km",
            f"  status            {out['status']} ({args.method}, {out['iterations']} iterations)",
            f"  cost              {out['cost']:.6g}  (objective (19); true-c cost {out['true_cost']:.6g})",
            f"  own-row cost      {out['own_row_cost']:.6g} km per user",
            f"  bounds            LB {_g(out['lower_bound'])}  UB {_g(out['upper_bound'])}",
            "  relaxed bound     " + ("skipped" if rb is None else f"{rb:.6g}"),
            f"  realised epsilon  {out['realized_epsilon']:.6g} (each user's LR set)",
            f"  GV ratio / GVE    {out['gv_ratio']:.4g} / mean {out['gve_mean']:.3g}, "
            f"max {out['gve_max']:.3g} (across users)",
            f"  time              {out['time_s']:.2f} s",
        ] + ([f"  saved             {args.out}"] if args.out else [])))
    if math.isnan(out["cost"]):
        return finish("error", "lrgeo")
    return finish(res.status, "lrgeo")
