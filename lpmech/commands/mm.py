"""``lpmech mm``: the metric-LDP mechanisms of Xiang et al., metric LDP.

Two mechanisms (``--mechanism``):

* ``laplace`` (default): the Laplace matrix mechanism A h_x + Lap(s) (§3). With no options it solves
  program (2) (frequencies, A = B = I) under E_S with m = 100, |S| = 10, ε = 1, and reports the
  certified total error, the Lagrangian bound, the gap and the closed form.
* ``range``: the threshold-bit E_{L¹}-LDP range mechanism of §4 on [m_1]×…×[m_D]: users' values from
  a file or a seeded Zipf sample, range queries from a file or random (seeded), quantiles (D = 1),
  public weights (§4.3.2). Nothing is optimised; it reports, per query, the estimate of one seeded
  run, the exact variance and the paper's Theorem 2–4 expression side by side (the paper's ignores
  covariances and is not an upper bound: spec §3.2), and the encoder's realised ε.
"""

from __future__ import annotations

import argparse
import csv
import logging
import math
from pathlib import Path

import numpy as np

from ..errors import CertificationError, InputError

log = logging.getLogger("lpmech.commands.mm")

METRICS = ("es", "line", "l1", "matrix")
#: range queries sample every user's bits (int8 + a float64 uniform each while sampling)
MAX_REPORT_BITS = 50_000_000
MECHANISMS = ("laplace", "range")
#: options of each mechanism (dest names), for "applies only to" messages
_LAPLACE_ONLY = ("workload", "strategy", "metric", "distances", "allow_nonmetric", "S",
                 "reconstruction", "lazy", "time_limit", "out")
_RANGE_ONLY = ("sizes", "data", "zipf", "ranges", "random_ranges", "quantiles", "weights", "pad",
               "seed", "repeat", "delta")

_DESCRIPTION = """\
Metric-LDP mechanisms of Xiang et al., metric LDP (Xiang et al.).

--mechanism laplace (default): solve the scale program of the Laplace matrix mechanism A h_x + Lap(s)
under an E-LDP metric (§3): program (2) for frequencies, or program (1) for a fixed strategy A with
B = W A^+. Every strategy returned is certified by Proposition 2 on all pairs; the bound is a
Lagrangian bound. Default: program (2) under E_S, m = 100, |S| = 10, epsilon = 1. Usable epsilon:
[1e-100, 1e100] (the errors scale as 1/epsilon^2).

--mechanism range: the threshold-bit E_L1-LDP mechanism of §4 (range counting on
[m_1]x...x[m_D], weighted ranges, quantiles). The users' values come from --data or a seeded
Zipf(--zipf) sample of --n users; the reports are sampled once per --repeat with --seed. For each
range it prints the estimate, the true count, the exact variance Var[c^(R)] and the paper's
Theorem 2-4 expression kappa^(2D) 2^(-D_R) (1 - q^(2D)) n Delta^2 (constant 1) side by side: the
paper's expression ignores covariances and is NOT an upper bound (they agree on the whole domain;
valid_bound is a proved one). Status closed_form: the mechanism is given in closed form, nothing is
optimised, so there is no bound or gap. Usable epsilon: [2 atanh((n w^2/1e300)^(1/2D)), 700] (the
variances grow as n w^2 coth(epsilon/2)^(2D), w = max|weight| or 1); a bad epsilon's message
gives the range.
Values and ranges are 0-based: x[d] in 0..m_d-1, a range is (l, r) inclusive."""


def register(sub, common) -> None:
    from ..cli import _EXIT_CODES, TIME_LIMIT_HELP

    p = sub.add_parser(
        "mm", parents=[common], epilog=_EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="metric-LDP matrix mechanism (programs (1)/(2)) and the range/quantile mechanism "
             "(Xiang et al., metric LDP)",
        description=_DESCRIPTION)
    p.add_argument("--mechanism", choices=MECHANISMS, default="laplace",
                   help="laplace: the Laplace matrix mechanism of §3 (default); range: the "
                        "threshold-bit range/quantile mechanism of §4")
    p.add_argument("--epsilon", type=float, default=1.0,
                   help="privacy parameter (default 1): the metric is epsilon times a distance")
    p.add_argument("--n", type=int, default=None,
                   help="number of users: laplace scales the error by it (default 1); range: the "
                        "size of the synthetic sample (default 1000; with --data the file's rows)")
    p.add_argument("--m", type=int, default=None,
                   help="domain size per dimension (default 100 for laplace, 10 for range)")
    p.add_argument("--D", type=int, default=None,
                   help="dimensions: laplace with --metric l1, or range (default 1)")

    lap = p.add_argument_group("--mechanism laplace (§3)")
    lap.add_argument("--workload", choices=("identity", "ranges", "prefix"), default=None,
                     help="W: identity (frequencies, default), ranges (all m(m+1)/2 intervals), "
                          "prefix (L_m)")
    lap.add_argument("--strategy", choices=("identity", "prefix", "hierarchical", "haar", "auto"),
                     default=None,
                     help="A (default identity); auto tries identity, prefix and hierarchical and "
                          "keeps the least error")
    lap.add_argument("--metric", choices=METRICS, default=None,
                     help="es: E_S (default); line: epsilon|x-x'|; l1: epsilon L1 on [m]^D; matrix: "
                          "epsilon times a distance matrix file (--distances)")
    lap.add_argument("--distances", metavar="FILE",
                     help="with --metric matrix: a distance matrix d (.npy, or .npz with array "
                          "'distances'); the metric is E = epsilon*d, the same convention as "
                          "'omg --distances' (a matrix that already includes epsilon goes with "
                          "--epsilon 1)")
    lap.add_argument("--allow-nonmetric", action="store_true",
                     help="with --distances: skip the triangle-inequality check (Proposition 2 "
                          "is then imposed on the given E(x,x') as is)")
    lap.add_argument("--S", type=int, default=None, dest="S",
                     help="|S| for E_S: S = the first |S| values (default 10)")
    lap.add_argument("--reconstruction", choices=("pinv", "alternate"), default=None,
                     help="B = W A^+ (default) or alternating weighted least squares")
    lap.add_argument("--lazy", action=argparse.BooleanOptionalAction, default=None,
                     help="generate pair constraints lazily (default: when m > 60)")
    lap.add_argument("--time-limit", type=float, metavar="SECONDS",
                     help=TIME_LIMIT_HELP)
    lap.add_argument("--out", metavar="FILE.npz",
                     help="save the certified strategy A, reconstruction B, scales s and the "
                          "metric (written atomically, only when the exit code is 0; 'lpmech "
                          "certify' re-checks Proposition 2). The range mechanism is a closed form "
                          "with nothing to save")

    rng = p.add_argument_group("--mechanism range (§4)")
    rng.add_argument("--sizes", metavar="M1xM2x...",
                     help="domain sizes per dimension, e.g. 10x10x5 (instead of --m/--D)")
    rng.add_argument("--data", metavar="FILE",
                     help="the users' values: CSV (header optional) or .npy, one row per user, D "
                          "integer columns, 0-based (default: a Zipf sample, see --zipf)")
    rng.add_argument("--zipf", type=float, metavar="A", default=None,
                     help="without --data: each coordinate Zipf(A) truncated to [m_d], "
                          "P(v) ~ (v+1)^-A (default 1.1, as in the paper's Fig. 2)")
    rng.add_argument("--ranges", metavar="FILE",
                     help="range queries: CSV (header optional) or .npy, one query per row, 2D "
                          "integers l_1,r_1,...,l_D,r_D (0-based, inclusive)")
    rng.add_argument("--random-ranges", type=int, metavar="Q", default=None,
                     help="Q random ranges, per dimension uniform over the m(m+1)/2 intervals "
                          "(default 10 when neither --ranges nor --quantiles is given)")
    rng.add_argument("--quantiles", metavar="P[,P...]",
                     help="quantile levels in (0, 1], e.g. 0.5,0.9 (D = 1 only): the binary "
                          "search of §4.4, with the true quantile, its error Err and the bounds")
    rng.add_argument("--weights", metavar="FILE",
                     help="public weights, one number per user (one per line, header optional, "
                          "or .npy): weighted range counts sum_i w_i 1[x_i in R] (§4.3.2); "
                          "quantiles stay unweighted")
    rng.add_argument("--pad", action="store_true",
                     help="the §4.2 dummy value: every dimension gets an extra value, so every "
                          "query has D_R = D")
    rng.add_argument("--seed", type=int, default=0,
                     help="seed of numpy.random.default_rng for the sample, the random ranges and "
                          "the reports (default 0)")
    rng.add_argument("--repeat", type=int, default=1, metavar="R",
                     help="encode the data R times (default 1) and report each query's empirical "
                          "mean squared error beside its exact variance")
    rng.add_argument("--delta", type=float, default=0.05,
                     help="failure probability of the quantile error bounds (default 0.05)")
    p.set_defaults(func=cmd_mm)


# ------------------------------------------------------------------------------------ laplace


def _given(args, names) -> list[str]:
    """The options among ``names`` that the user set (defaults are None/False/the parser's)."""
    defaults = {"pad": False, "allow_nonmetric": False, "seed": 0, "repeat": 1, "delta": 0.05}
    return ["--" + n.replace("_", "-") for n in names
            if getattr(args, n) is not None and getattr(args, n) != defaults.get(n)]


def _check_laplace_epsilon(eps: float) -> float:
    from ..models.matrix import matrix_mechanism as mm

    try:
        return mm.check_program_epsilon(eps)
    except InputError as exc:
        raise InputError(str(exc).replace("epsilon", "--epsilon", 1)) from None


def _metric(args):
    from ..instance import read_distances
    from ..models.matrix import matrix_mechanism as mm

    kind = args.metric or "es"
    if kind != "matrix" and args.distances is not None:
        raise InputError("--distances applies only to --metric matrix")
    if args.allow_nonmetric and args.distances is None:
        raise InputError("--allow-nonmetric applies only to --metric matrix with --distances")
    if kind != "l1" and args.D is not None:
        raise InputError("--D applies only to --metric l1 (or --mechanism range)")
    if kind != "es" and args.S is not None:
        raise InputError("--S applies only to --metric es")
    m = 100 if args.m is None else args.m
    cells = m ** (1 if kind != "l1" or args.D is None else max(args.D, 1))
    if cells > mm.MAX_DOMAIN:
        raise InputError(f"--m {m}{'' if cells == m else f' --D {args.D}'} gives {cells} values, "
                         f"above the {mm.MAX_DOMAIN} the Laplace mechanism's pair constraints allow; "
                         "for D-dimensional range counting use --mechanism range")
    eps = _check_laplace_epsilon(args.epsilon)
    if kind == "es":
        return mm.es_metric(m, 10 if args.S is None else args.S, eps)
    if kind == "line":
        return mm.line_metric(m, eps)
    if kind == "l1":
        return mm.l1_metric(m, eps, D=1 if args.D is None else args.D)
    if args.m is not None:
        raise InputError("--m does not apply to --metric matrix (the matrix gives m)")
    if args.distances is None:
        raise InputError("--metric matrix needs --distances FILE")
    # d is checked once (triangle inequality included unless --allow-nonmetric); E = eps d is the
    # one K×K array kept: ε > 0 scales a metric to a metric, so E is not checked again
    d = read_distances(args.distances, allow_nonmetric=args.allow_nonmetric,
                       verbose=getattr(args, "verbose", False)).metric
    E = eps * d
    del d
    if not np.isfinite(E).all():
        raise InputError(f"--epsilon {eps:g} times the distances of {args.distances} overflows")
    return mm.metric_from_matrix(E, eps, check_triangle=False, copy=False)


def _cmd_laplace(args) -> int:
    from .. import io as lpio
    from ..cli import json_on_error, print_json
    from ..models.matrix import matrix_mechanism as mm

    workload, strategy = args.workload or "identity", args.strategy or "identity"
    n = 1 if args.n is None else args.n
    info = {"command": "mm", "mechanism": "laplace", "workload": workload, "strategy": strategy,
            "metric_kind": args.metric or "es", "epsilon": args.epsilon, "n": n}
    with json_on_error(args, info):
        wrong = _given(args, _RANGE_ONLY)
        if wrong:
            raise InputError(f"{', '.join(wrong)} applies only to --mechanism range")
        if args.out is not None:
            lpio.check_output_path(args.out, suffix=".npz", flag="--out")
        metric = _metric(args)
        info["m"] = metric.m
        kw = dict(n=n, reconstruction=args.reconstruction or "pinv", lazy=args.lazy,
                  time_limit=args.time_limit)
        if strategy == "auto":
            res = mm.choose_strategy(workload, metric, **kw)
        else:
            res = mm.solve(workload, metric, strategy=strategy, **kw)
        if args.out is not None:  # solve raises unless certified optimal: this run exits 0
            lpio.save_matrix_mechanism(args.out, res, metric)
    out = {**res.summary(), **info, "out": args.out}
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
        f"  workload / strategy  {workload} / {out['strategy']} (p = {out['p']} rows), n = {n}",
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


# -------------------------------------------------------------------------------------- range


def read_int_table(path, what: str, ncols: int) -> np.ndarray:
    """An integer table with ``ncols`` columns from ``.npy`` or CSV (optional header line)."""
    from ..instance import load_numpy

    p = Path(path)
    if not p.is_file():
        raise InputError(f"no such {what} file: {p}")
    if p.suffix.lower() == ".npy":
        a = load_numpy(p, what)[""]
        if a.ndim == 1 and ncols == 1:
            a = a[:, None]
        if a.ndim != 2 or a.shape[1] != ncols or a.dtype.kind not in "iuf":
            raise InputError(f"{what} file {p} must hold an array of shape (rows, {ncols}), got "
                             f"shape {a.shape} of {a.dtype}")
        if not np.isfinite(a).all() or (a != np.round(a)).any():
            raise InputError(f"{what} file {p} must hold integers")
        a = a.astype(np.int64)
    else:
        try:
            with p.open(newline="") as f:
                rows = [r for r in csv.reader(f) if r and any(c.strip() for c in r)]
        except UnicodeDecodeError as exc:
            raise InputError(f"cannot read {what} file {p}: not a UTF-8 text file (byte "
                             f"{exc.object[exc.start]:#04x} at offset {exc.start})") from None
        except (OSError, csv.Error) as exc:
            raise InputError(f"cannot read {what} file {p}: {exc}") from None
        vals = []
        for k, row in enumerate(rows, start=1):
            cells = [c.strip() for c in row]
            try:
                vals.append([int(c) for c in cells])
            except ValueError:
                if k == 1:
                    continue  # a header line
                raise InputError(f"{what} file {p}, line {k}: {row} are not all integers") from None
            if len(cells) != ncols:
                raise InputError(f"{what} file {p}, line {k}: expected {ncols} integers, got "
                                 f"{len(cells)}")
        a = np.array(vals, np.int64).reshape(-1, ncols)
    if a.shape[0] == 0:
        raise InputError(f"{what} file {p} has no rows")
    return a


def _sizes(args) -> tuple[int, ...]:
    from ..models.matrix import range_mechanism as rm

    if args.sizes is not None:
        if args.m is not None or args.D is not None:
            raise InputError("give either --sizes or --m/--D, not both")
        parts = args.sizes.replace("×", "x").replace("X", "x").split("x")
        if not all(s.strip().isdigit() and int(s) >= 1 for s in parts):
            raise InputError(f"bad --sizes {args.sizes!r}: expected positive integers joined by "
                             "x, e.g. 10x10x5")
        return tuple(int(s) for s in parts)
    m, D = 10 if args.m is None else args.m, 1 if args.D is None else args.D
    if m < 1:
        raise InputError(f"--m must be a positive integer, got {m}")
    if D < 1:
        raise InputError(f"--D must be a positive integer, got {D}")
    return rm.domain_sizes(m, D)


def _quantile_levels(spec: str) -> list[float]:
    try:
        ps = [float(t) for t in spec.split(",") if t.strip()]
    except ValueError:
        raise InputError(f"bad --quantiles {spec!r}: expected numbers in (0, 1] separated by "
                         "commas, e.g. 0.5,0.9") from None
    if not ps or not all(0 < p <= 1 for p in ps):
        raise InputError(f"bad --quantiles {spec!r}: every level must lie in (0, 1]")
    return ps


def _range_inputs(args, rng):
    """(sizes, X, source, weights, ranges, quantile levels), all validated with CLI spellings."""
    from .. import io as lpio
    from ..models.matrix import range_mechanism as rm

    sizes = _sizes(args)
    D = len(sizes)
    if math.prod(sizes) > 10**18:
        raise InputError(f"--sizes {'x'.join(map(str, sizes))} has more than 1e18 cells")
    ps = [] if args.quantiles is None else _quantile_levels(args.quantiles)
    if args.ranges is not None and args.random_ranges is not None:
        raise InputError("give either --ranges FILE or --random-ranges Q, not both")
    Q = None
    if args.ranges is None:
        Q = args.random_ranges if args.random_ranges is not None else (0 if ps else 10)
        if Q < 0 or Q > 100_000:
            raise InputError(f"--random-ranges must be in 0..100000, got {Q}")
    has_ranges = args.ranges is not None or Q > 0
    if args.data is not None:
        if args.zipf is not None:
            raise InputError("--zipf applies only without --data")
        if args.n is not None:
            raise InputError("--n applies only without --data (the file's rows are the users)")
        X = read_int_table(args.data, "--data", D)
        bad = (X < 0) | (X >= np.asarray(sizes))
        if bad.any():
            i, d = np.argwhere(bad)[0]
            raise InputError(f"--data row {i + 1}: value {X[i, d]} of dimension {d + 1} is outside "
                             f"0..{sizes[d] - 1} (values are 0-based)")
        source = str(args.data)
    else:
        n = 1000 if args.n is None else args.n
        if n < 1:
            raise InputError(f"--n must be a positive integer, got {n}")
        if n > 10**8:
            raise InputError(f"--n {n} is above 1e8 users; sample fewer or pass --data")
        if has_ranges:  # refuse before the sample is drawn, not after
            _check_report_size(n, sizes, args.pad)
        from ..resources import require_memory

        require_memory(SAMPLE_BYTES_PER_VALUE * n * D, f"a Zipf sample of n = {n:,} users in D = {D}",
                       "use a smaller --n")
        a = 1.1 if args.zipf is None else args.zipf
        X = rm.zipf_values(n, sizes, rng, a)
        source = f"zipf:{a:g}"
    n = X.shape[0]
    if has_ranges:
        _check_report_size(n, sizes, args.pad)
    w = None
    if args.weights is not None:
        w = lpio.read_vector(args.weights, "--weights")
        if w.shape != (n,):
            raise InputError(f"--weights must hold {n} finite numbers (one per user), got {w.size}")
        bad = np.flatnonzero(~np.isfinite(w))
        if bad.size:
            raise InputError(f"--weights must be finite numbers: {bad.size} of the {n} are not "
                             f"(the first, user {bad[0] + 1}, is {w[bad[0]]:g})")
    if ps and D != 1:
        raise InputError(f"--quantiles needs a one-dimensional domain (D = 1), got D = {D}")
    if not 0 < args.delta < 1:
        raise InputError(f"--delta must lie in (0, 1), got {args.delta:g}")
    if args.repeat < 1 or args.repeat > 10_000:
        raise InputError(f"--repeat must be in 1..10000, got {args.repeat}")
    if args.ranges is not None:
        flat = read_int_table(args.ranges, "--ranges", 2 * D)
        R = flat.reshape(-1, D, 2)
        lo, hi = R[..., 0], R[..., 1]
        bad = (lo < 0) | (hi >= np.asarray(sizes)) | (lo > hi)
        if bad.any():
            q, d = np.argwhere(bad)[0]
            raise InputError(f"--ranges row {q + 1}, dimension {d + 1}: ({lo[q, d]}, {hi[q, d]}) "
                             f"is not a range 0 <= l <= r <= {sizes[d] - 1}")
    else:
        R = rm.random_ranges(Q, sizes, rng)
    return sizes, X, source, w, R, ps


#: bytes per sampled value while a Zipf sample is drawn (the int64 values, numpy's float64
#: uniforms and the stacked copy)
SAMPLE_BYTES_PER_VALUE = 24
#: bytes per report bit while the reports are sampled (an int8 bit and a float64 uniform)
REPORT_BYTES_PER_BIT = 9


def _check_report_size(n: int, sizes, pad: bool) -> None:
    """Refuse range queries whose reports (n·Σ m_d bits) exceed :data:`MAX_REPORT_BITS`, before
    anything is allocated, with the memory they would take."""
    bits = n * sum(m + 1 if pad else m for m in sizes)
    if bits > MAX_REPORT_BITS:
        raise InputError(
            f"the reports of n = {n} users hold n*sum(m_d) = {bits:,} bits, above "
            f"{MAX_REPORT_BITS:,} (about {bits * REPORT_BYTES_PER_BIT / 1e9:.3g} GB to sample them); "
            "use fewer users (--n) or smaller --sizes (--quantiles alone needs only the column "
            "sums and has no such limit)")


def _cmd_range(args) -> int:
    from ..cli import json_on_error, print_json
    from ..instance import check_seed
    from ..mechanism import EPS_RTOL
    from ..models.matrix import range_mechanism as rm

    info = {"command": "mm", "mechanism": "range", "epsilon": args.epsilon, "seed": args.seed}
    with json_on_error(args, info):
        wrong = _given(args, _LAPLACE_ONLY)
        if wrong:
            raise InputError(f"{', '.join(wrong)} applies only to --mechanism laplace")
        rng = np.random.default_rng(check_seed(args.seed))
        sizes, X, source, w, R, ps = _range_inputs(args, rng)
        n, D = X.shape
        delta_w = 1.0 if w is None else max(float(np.abs(w).max()), 1e-300)
        try:
            eps = rm.check_range_epsilon(args.epsilon, D, n, delta_w)
        except InputError as exc:
            raise InputError(str(exc).replace("epsilon", "--epsilon", 1)) from None
        info.update(sizes=list(sizes), D=D, n=n, data=source, weights=args.weights,
                    pad=args.pad, repeat=args.repeat)
        real = rm.encoder_epsilon(eps)
        certified = real <= eps * (1 + EPS_RTOL)
        info.update(realized_epsilon=real, target_epsilon=eps, certified=certified)
        if not certified:
            raise CertificationError(
                f"the encoder's realised epsilon {real:.9g} exceeds --epsilon {eps:g}")
        qs = _queries(X, sizes, eps, R, w, rng, args)
        quant = _quantiles(X, sizes, eps, ps, rng, args)
    if R.shape[0]:
        V = np.array([q["variance_exact"] for q in qs])
        P = np.array([q["paper_expression"] for q in qs])
        info.update(mean_variance_exact=float(V.mean()), mean_paper_expression=float(P.mean()),
                    queries_above_paper_expression=int((V > P * (1 + 1e-12)).sum()),
                    mean_squared_error=float(np.mean([q["squared_error"] for q in qs])))
    psz = tuple(m + 1 for m in sizes) if args.pad else sizes
    out = {"status": "closed_form", **info,
           "flip_probability": rm.flip_probability(eps),
           "average_cell_variance": rm.average_cell_variance(psz, eps, n),
           "paper_single_value": float(rm.paper_bound(len(psz), len(psz), eps, n)),
           "queries": qs, "quantiles": quant}
    if args.json:
        print_json(out)
        return 0
    _print_range(out)
    return 0


def _queries(X, sizes, eps, R, w, rng, args) -> list[dict]:
    from ..models.matrix import range_mechanism as rm

    if R.shape[0] == 0:
        return []
    psz = tuple(m + 1 for m in sizes) if args.pad else sizes
    truth = rm.true_counts(X, R, sizes, w)
    var = rm.range_variance(X, R, psz, eps, w)
    DR = rm.nontrivial_dims(R, psz)
    D, n = len(sizes), X.shape[0]
    delta = 1.0 if w is None else float(np.abs(w).max())
    paper = np.asarray(rm.paper_bound(D, DR, eps, n, delta), float) * np.ones(len(R))
    valid = np.asarray(rm.valid_bound(D, DR, eps, n, delta), float) * np.ones(len(R))
    sq = np.zeros((args.repeat, len(R)))
    first = None
    for r in range(args.repeat):
        est = rm.range_query(rm.encode(X, sizes, eps, rng, pad=args.pad), R, w)
        first = est if first is None else first
        sq[r] = (est - truth) ** 2
    out = []
    for k in range(len(R)):
        q = {"range": R[k].tolist(), "D_R": int(DR[k]), "true": float(truth[k]),
             "estimate": float(first[k]), "squared_error": float(sq[0, k]),
             "variance_exact": float(var[k]), "paper_expression": float(paper[k]),
             "exact_over_paper": float(var[k] / paper[k]) if paper[k] > 0 else None,
             "valid_bound": float(valid[k])}
        if args.repeat > 1:
            q["empirical_mse"] = float(sq[:, k].mean())
        out.append(q)
    return out


def _quantiles(X, sizes, eps, ps, rng, args) -> list[dict]:
    from ..models.matrix import range_mechanism as rm

    if not ps:
        return []
    n, m = X.shape[0], sizes[0]
    x = X[:, 0]
    union = rm.quantile_error_bound(eps, n, m, args.delta, kind="union")
    paper = rm.quantile_error_bound(eps, n, m, args.delta, kind="paper") if m >= 2 else None
    runs = [rm.sample_bit_sums(x, m, eps, rng) for _ in range(args.repeat)]  # O(m) memory
    out = []
    for p in ps:
        est = [rm.quantile(rep, p) for rep in runs]
        err = [rm.quantile_error(x, e, p) for e in est]
        q = {"p": p, "estimate": est[0], "true": rm.true_quantile(x, p), "error": err[0],
             "bound_union": union, "bound_paper": paper, "delta": args.delta}
        if args.repeat > 1:
            q["fraction_within_bound_union"] = float(np.mean(np.array(err) <= union))
        out.append(q)
    return out


def _print_range(out: dict) -> None:
    sizes = "x".join(map(str, out["sizes"]))
    lines = [
        f"range mechanism (Xiang et al. §4) on [{sizes}], n = {out['n']} users ({out['data']}), "
        f"epsilon {out['epsilon']:g}{', padded' if out['pad'] else ''}",
        f"  status               {out['status']} (nothing optimised)",
        f"  realised epsilon     {out['realized_epsilon']:.10g} per unit of L1 distance "
        f"(encoder as implemented)",
        f"  avg cell variance    {out['average_cell_variance']:.6g}  (paper Thm 2: "
        f"{out['paper_single_value']:.6g})",
    ]
    if out["queries"]:
        lines.append(f"  {'range':<28} {'D_R':>3} {'true':>10} {'estimate':>12} "
                     f"{'exact var':>12} {'paper expr':>12}")
        for q in out["queries"][:20]:
            r = ",".join(f"[{lo},{hi}]" for lo, hi in q["range"])
            lines.append(f"  {r[:28]:<28} {q['D_R']:>3} {q['true']:>10.6g} {q['estimate']:>12.6g} "
                         f"{q['variance_exact']:>12.6g} {q['paper_expression']:>12.6g}")
        if len(out["queries"]) > 20:
            lines.append(f"  ... {len(out['queries']) - 20} more (--json prints all)")
        lines.append(f"  mean exact variance  {out['mean_variance_exact']:.6g}; paper expression "
                     f"{out['mean_paper_expression']:.6g}; exact above paper on "
                     f"{out['queries_above_paper_expression']} of {len(out['queries'])} queries")
    for q in out["quantiles"]:
        lines.append(f"  quantile p={q['p']:g}      estimate {q['estimate']}, true {q['true']}, "
                     f"error {q['error']:.4g} (bound {q['bound_union']:.4g} w.p. "
                     f"{1 - q['delta']:g})")
    print("\n".join(lines))


def cmd_mm(args) -> int:
    if args.mechanism == "range":
        return _cmd_range(args)
    return _cmd_laplace(args)
