"""``lpmech lip``: the certified optimal LIP channel for one user (Jiang, Li & Tandon's LIP papers).

Examples::

    lpmech lip --prior 0.93,0.07 --values 0,1 --epsilon 1 --json
    lpmech lip --prior 0.93,0.07 --epsilon 1 --mode paper          # the papers' closed form
    lpmech lip --prior-set "0.95,0.05;0.85,0.15" --epsilon 1       # bounded prior (minimax MSE)
    lpmech lip --prior-lo 0.1,0.1,0.1 --prior-hi 0.6,0.6,0.6 --task hist
    lpmech lip --cip-users 0.2,0.5,0.9,0.4 --epsilon 1                # CIP on the sum ([001] §IV-D)

The JSON object has ``status, mode, mse`` (per-user MSE of the MMSE estimator; worst case over a
prior set), ``realized_epsilon``, ``bound`` (certified lower bound on the MSE, ``null`` for a local
solve or a closed form), ``gap``, ``paper_feasible`` (paper mode: whether the closed form is really
ε-LIP), ``time_s`` and the channel ``matrix``.
"""

from __future__ import annotations

import sys

import numpy as np

from ..errors import InputError

_MODES = ("verified", "paper")


def register(sub, common) -> None:
    from ..cli import TIME_LIMIT_HELP

    p = sub.add_parser(
        "lip", parents=[common],
        help="optimal local information privacy (LIP) channel, certified",
        description="Design the per-user channel minimising the MSE of the MMSE estimator (or MAE / "
                    "Hamming) under eps-LIP, latent-secret LIP, bounded-prior LIP, eps-LDP or "
                    "Pufferfish (Jiang, Li & Tandon's LIP papers). Verified mode certifies the "
                    "realised epsilon and a "
                    "global bound (exact vertex method for d <= 8); paper mode reports the papers' "
                    "closed form and whether it really satisfies eps-LIP.")
    src = p.add_argument_group("prior (choose one)").add_mutually_exclusive_group(required=True)
    src.add_argument("--prior", metavar="P1,P2,...", help="the user's prior over the d values")
    src.add_argument("--prior-set", metavar="P;P;...",
                     help="a finite bounded-prior set: priors separated by ';' (minimax MSE)")
    src.add_argument("--prior-lo", metavar="LO1,LO2,...",
                     help="lower corner of a prior box (with --prior-hi); its vertices are used")
    src.add_argument("--cip-users", metavar="P1,...,PN",
                     help="centralized information privacy ([001] Sec. IV-D): each user's Pr(D_i = 1); a "
                          "trusted server releases Y from the sum S = sum D_i (inputs 0..N), every "
                          "user's posterior within e^+-eps of the prior; at least two users; "
                          "implies --notion cip")
    p.add_argument("--prior-hi", metavar="HI1,HI2,...", help="upper corner of a prior box")
    p.add_argument("--values", metavar="A1,A2,...",
                   help="numeric values of the d inputs for --task sum (default 0..d-1)")
    p.add_argument("--task", choices=("sum", "hist", "survey"), default="sum",
                   help="sum: (weighted) summation (default); hist: histogram; survey: "
                        "indicator of the last value")
    p.add_argument("--correlation", metavar="T;T;...",
                   help="latent secret G: rows Pr(X | G=g) separated by ';' (default G = X); the "
                        "prior must be a mixture of these rows")
    p.add_argument("--epsilon", type=float, default=1.0,
                   help="privacy budget, 1e-9 <= epsilon <= 12 (default 1)")
    p.add_argument("--notion", choices=("lip", "ldp", "pufferfish", "di", "cip"), default=None,
                   help="privacy notion of the design constraint: lip (eps-LIP, default; with "
                        "--correlation the latent-secret LIP, with a prior set BP-LIP), ldp (eps-LDP), "
                        "pufferfish (local Pufferfish over the correlation's secrets), di "
                        "(eps-differential identifiability, one prior) or cip (centralized "
                        "information privacy: only with --cip-users, which implies it)")
    p.add_argument("--objective", choices=("mse", "mae", "hamming"), default="mse",
                   help="what the channel minimises: mse (MSE of the MMSE estimator, default), mae "
                        "(expected |X - Y|, an LP) or hamming (Pr(Y != X), an LP)")
    p.add_argument("--mode", choices=_MODES, default="verified",
                   help="verified (default): certified optimum; paper: the papers' closed form")
    p.add_argument("--method", choices=("auto", "vertex", "exact", "local", "scip", "censored",
                                        "tilted"), default="auto",
                   help="auto (vertex for d <= 8, else exact where it applies, else local), vertex "
                        "(exact global, rays enumerated), exact (column generation with exact "
                        "pricing, certified gap: eps-LIP, G = X, one prior, sum/survey/hist), local "
                        "(multi-start local pricing: status feasible, no bound), scip (Pyomo model, "
                        "SCIP global); --cip-users only: censored (construction + lower bound, auto "
                        "above 30 users), tilted (tail pooling proved CIP under an exponential tilt, "
                        "auto above 5000 users)")
    p.add_argument("--seed", type=int, default=0, help="seed of the local solve's random starts")
    p.add_argument("--time-limit", type=float, metavar="SEC",
                   help=TIME_LIMIT_HELP)
    p.add_argument("--out", metavar="FILE.npz",
                   help="save the certified channel, its notion, epsilon and prior(s) (written "
                        "atomically, only when the exit code is 0; 'lpmech certify' reads it)")
    p.set_defaults(func=cmd_lip)


def _vector(text: str, what: str) -> np.ndarray:
    try:
        return np.array([float(x) for x in text.split(",")])
    except ValueError:
        raise InputError(f"{what} must be comma-separated numbers, got {text!r}") from None


def _matrix(text: str, what: str) -> np.ndarray:
    rows = [_vector(r, what) for r in text.split(";") if r.strip()]
    if not rows or len({r.size for r in rows}) != 1:
        raise InputError(f"{what} must be ';'-separated rows of equal length, got {text!r}")
    return np.array(rows)


def _check_cip_flags(args) -> None:
    """--cip-users designs a channel on the sum under CIP: refuse the flags that contradict it."""
    if args.cip_users is None:
        if args.notion == "cip":
            raise InputError("--notion cip needs --cip-users P1,...,PN (each user's Pr(D_i = 1))")
        return
    if args.notion not in (None, "cip"):
        raise InputError(f"--cip-users designs under CIP (it implies --notion cip), but --notion "
                         f"{args.notion} was given; drop --notion or --cip-users")
    given = [f for f, v in (("--values", args.values), ("--correlation", args.correlation),
                            ("--prior-hi", args.prior_hi)) if v is not None]
    if args.task != "sum":
        given.append(f"--task {args.task}")
    if args.objective != "mse":
        given.append(f"--objective {args.objective}")
    if given:
        raise InputError(f"{', '.join(given)} does not apply with --cip-users (the CIP channel on "
                         "the sum minimises the MSE of S)")


def cmd_lip(args) -> int:
    from .. import io as lpio
    from ..cli import exit_code_for, json_on_error, print_json, solver_log_to_stderr
    from ..instance import check_seed
    from ..models import lip

    notion = args.notion or ("cip" if args.cip_users is not None else "lip")
    info = {"command": "lip", "mode": args.mode, "epsilon": args.epsilon, "notion": notion,
            "objective_kind": args.objective}
    with json_on_error(args, info):
        check_seed(args.seed)
        _check_cip_flags(args)
        if args.out is not None:
            lpio.check_output_path(args.out, suffix=".npz", flag="--out")
        prior, priors, T, cip_p = None, None, None, None
        if args.cip_users is not None:
            from ..models.lip import lip_cip

            cip_p = _vector(args.cip_users, "--cip-users")
            if cip_p.size < 2:
                q = cip_p[0] if cip_p.size else 0.0
                raise InputError(f"--cip-users needs at least two users, got one ({args.cip_users}): "
                                 "with one user the sum is that user's own bit; design its channel "
                                 f"with --prior {1 - q:g},{q:g} (eps-LIP) instead")
            with solver_log_to_stderr(args.verbose):
                res = lip_cip.solve(cip_p, args.epsilon, mode=args.mode,
                                    method=args.method, time_limit=args.time_limit)
        elif args.prior is not None:
            prior = _vector(args.prior, "--prior")
        elif args.prior_set is not None:
            priors = _matrix(args.prior_set, "--prior-set")
        else:
            if args.prior_hi is None:
                raise InputError("--prior-lo needs --prior-hi")
            priors = lip.box_prior_vertices(_vector(args.prior_lo, "--prior-lo"),
                                            _vector(args.prior_hi, "--prior-hi"))
        if args.prior_hi is not None and args.prior_lo is None:
            raise InputError("--prior-hi needs --prior-lo")
        if args.cip_users is None:
            values = None if args.values is None else _vector(args.values, "--values")
            T = None if args.correlation is None else _matrix(args.correlation, "--correlation")
            if priors is not None and T is not None:
                T = [T] * len(priors)
            with solver_log_to_stderr(args.verbose):
                res = lip.solve(prior, args.epsilon, values=values, task=args.task, priors=priors, T=T,
                                notion=notion, method=args.method, mode=args.mode,
                                objective=args.objective, rng=np.random.default_rng(args.seed),
                                time_limit=args.time_limit)
        success = exit_code_for(res.status) == 0 and res.mechanism is not None
        if args.mode == "paper":
            success = success and bool(res.stats.get("paper_feasible", True))
        if args.out is not None and success:
            saved_priors = (priors if priors is not None else None if prior is None
                            else np.asarray(prior, float)[None, :])
            corr = None if T is None else (T[0] if isinstance(T, list) else T)
            lpio.save_lip(args.out, res, notion=notion, epsilon=args.epsilon,
                          priors=saved_priors, correlation=corr, cip_users=cip_p)
        elif args.out is not None:
            args.out = None  # files only on exit 0 (the CLI contract)
    st = res.stats
    if args.cip_users is not None:
        st = dict(st, mode=args.mode, d=st.get("N", 0) + 1, mse=res.objective)
    out = {"status": res.status, "mode": st["mode"], "mse": st.get("mse"),
           "objective": res.objective, "realized_epsilon": res.certificate.realized_epsilon,
           "bound": res.bound, "gap": res.gap, "paper_feasible": st.get("paper_feasible"),
           "time_s": st.get("time_s"), **info, "method": st.get("method"), "d": st.get("d"),
           "closed_form": st.get("closed_form"),
           "certified_by": st.get("certified_by"),
           "revealed": [st["k"], st["k_up"]] if "k" in st and "k_up" in st else None,
           "matrix": None if res.mechanism is None else res.mechanism.matrix.tolist(),
           "out": args.out}
    if args.mode == "paper" and not st["paper_feasible"]:
        print(f"lpmech: warning: the paper closed form is NOT {args.epsilon:g}-{info['notion'].upper()} "
              "(realised "
              f"epsilon {res.certificate.realized_epsilon:.6g}); use --mode verified", file=sys.stderr)
    if args.json:
        print_json(out)
    else:
        _report(out)
    from ..cli import finish
    return finish(res.status, "lip")


#: the text report prints the channel only up to this many rows and columns
PRINT_MAX_ROWS = 40


def _report(out: dict) -> None:
    print(f"LIP channel ({out['mode']} mode, {out['notion']}, objective {out['objective_kind']}), "
          f"d = {out['d']}, epsilon = {out['epsilon']:g}")
    print(f"  status            {out['status']} ({out['method']})")
    if out["objective_kind"] != "mse":
        print(f"  expected {out['objective_kind']:<8} {out['objective']:.10g}")
    if out["mse"] is not None:
        what = "MSE of the sum S" if out["notion"] == "cip" else "per-user MSE    "
        print(f"  {what}  {out['mse']:.10g}  (MMSE estimator)")
    if out["bound"] is not None:
        by = f", certified by the {out['certified_by']}" if out.get("certified_by") else ""
        print(f"  lower bound       {out['bound']:.10g}  (relative gap {out['gap']:.3g}{by})")
    print(f"  realised epsilon  {out['realized_epsilon']:.10g}")
    if out["paper_feasible"] is not None:
        print(f"  paper feasible    {out['paper_feasible']}")
    print(f"  time              {out['time_s']:.3f} s")
    M = out["matrix"]
    if M is None:  # CIP at tens of thousands of users: a pooling channel too large to hold dense
        print(f"  channel           not held (too large): reveals S in {out['revealed']}, pools "
              "each tail")
    elif len(M) > PRINT_MAX_ROWS or len(M[0]) > PRINT_MAX_ROWS:
        print(f"  channel           {len(M)}x{len(M[0])} (not printed above {PRINT_MAX_ROWS} rows or "
              "columns; --json has it)")
    else:
        print("  channel Pr(Y=k | X=m):")
        for row in M:
            print("    " + " ".join(f"{v:8.5f}" for v in row))
