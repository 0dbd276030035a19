"""LE's certified optimality gap on real data: Gowalla NYC counts on a W×W grid, across ε.

LE (seed 000 (9)–(10)) is optimal for LP (8)+(12) only under a uniform prior (Theorem 1; for a
weighted objective when the LP-dual test E⁻¹w ≥ 0 passes). With real check-in counts w the test
fails, and this script measures by how much LE misses the optimum:

* the LP (8) with the weighted co-location loss 1[d_ik > 0] (objective 1 − Σ_k w_k z_kk) is solved
  exactly and certified (realised ε, Lagrangian bound, gap);
* a certified lower bound that needs no LP over mechanisms (``relaxation_bound``: multipliers
  μ ≥ 0 with E μ ≥ w), so LE's gap is bracketed even where the solve does not finish;
* LE's objective 1 − w·p (p = E⁻¹1) is compared with it: ``le_gap = LE − OPT`` lies between
  LE − (LP objective) and LE − (LP bound), both printed;
* the LP-dual test min(E⁻¹w) is printed beside it;
* the exact LP by support generation (``--method support``, the default:
  ``lpmech.models.le.le_support``, a core LP on a growing set of points, exact pricing, blocked
  points and a greedy extension to all points; ``solve_s`` is the time of ``le.solve``, the LP
  and the certification of its mechanism on every pair, ``time_s`` adds the relaxation bound and
  the tent-filler) or an engine path (``outputs``: output generation, its
  restricted LP by ``--lp``);
* baseline in the same process: support generation against output generation with its
  restricted LP by ``--lp`` (interior point by default, the previous path) at ``--baseline-size``
  for each ``--baseline-eps`` (default: the first ε), under ``--time-limit``; the ratio of times
  (a lower bound where output generation stopped, marked ``+``) and the objectives' difference
  are printed.

Data: each user's earliest check-in inside the NYC box (``lpmech.datasets.read_checkins``,
``first_per_user=True``), gridded W×W (distances in cells, Euclidean). Writes
``benchmarks/results/le_gap_real.csv`` and ``.png``.

    python benchmarks/le_gap_real.py [--size 32] [--eps 0.7 1 2 4] [--time-limit 600] [--method support]
"""

from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from lpmech import datasets
from lpmech import instance as li
from lpmech.design import DPrivacy, solve
from lpmech.errors import LpmechError
from lpmech.io import write_csv
from lpmech.models import le

OUT = Path(__file__).resolve().parent / "results"
DATA = Path(os.environ.get("LPMECH_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
DEFAULT_FILE = DATA / "gowalla" / "loc-gowalla_totalCheckins.sample.txt.gz"


def gowalla_instance(path: Path, size: int):
    d = datasets.read_checkins(path, bbox=datasets.GOWALLA_NY_BBOX, first_per_user=True)
    counts = datasets.grid_counts(d["lat"], d["lon"], size, size, datasets.GOWALLA_NY_BBOX).ravel()
    return li.grid(size, size, 1.0, unit="cell").with_counts(counts), counts


def relaxation_bound(E: np.ndarray, w: np.ndarray, *, support: bool = False):
    """A certified lower bound on the optimum of LP (8)+(12) without solving it.

    Weak duality with multipliers μ ≥ 0 of the unit rows and E μ ≥ w: for every column v in the
    d-privacy cone, v ≥ v_k e^{−ε d_·k}, so μ·v ≥ v_k (Eμ)_k ≥ w_k v_k and the error is at least
    1 − Σ μ. μ comes from the dual of max{w·t : E t ≤ 1, t ≥ 0} (HiGHS), scaled up until
    E μ ≥ w holds exactly in floating point. With ``support``, also the cells with t_k > 0 (the
    tents the relaxation uses: a good first guess of the outputs the optimum uses).
    """
    from scipy.optimize import linprog

    r = linprog(-w, A_ub=E, b_ub=np.ones(w.size), bounds=(0, None), method="highs")
    mu = np.clip(-r.ineqlin.marginals, 0.0, None)
    Emu = E @ mu
    need = w > 0
    if need.any():
        mu *= max(1.0, float((w[need] / np.maximum(Emu[need], 1e-300)).max()) * (1 + 1e-12))
    bound = float(1.0 - math.fsum(mu))
    return (bound, np.nonzero(r.x > 1e-12)[0]) if support else bound


def tent_filler(inst, eps: float, w: np.ndarray, *, time_limit: float | None = None):
    """A certified d-private mechanism for a prior w, fast at m = 1,024: tents plus one smooth filler.

    LE's columns are tents t_k e^{−ε d_·k} (in the d-privacy cone) with E t = 1. For a skewed prior
    take max w·t over t ≥ 0 with E t ≤ 1 and the rest s = 1 − E t itself in the cone
    (e^{−ε d_ij} s_i ≤ s_j, rows added lazily: (E_j − e^{−ε d_ij} E_i)·t ≤ 1 − e^{−ε d_ij}); s
    goes on one output with w = 0 (or the lightest). An LP over m variables, not m². The matrix
    is certified by the engine (:func:`lpmech.design.engine.certify_matrix`), so its objective is
    a certified upper bound on the optimum, and LE − (it) a certified lower bound on LE's gap.
    """
    from lpmech.design import Problem
    from lpmech.design.engine import certify_matrix
    from lpmech.solvers.cutting_planes import LazyLP

    m = inst.K
    E = le.kernel(inst.metric, eps)
    F = E.copy()
    np.fill_diagonal(F, 0.0)

    present = np.zeros((m, m), dtype=bool)  # rows already in the LP are never added again (the
    # LP holds them to its own tolerance; re-adding them looped); the certificate below decides

    def separate(t):
        s = 1.0 - E @ t
        T = F * s[:, None]  # T[i, j] = F_ij s_i
        T[present] = -np.inf
        i = T.argmax(axis=0)
        j = np.nonzero(T[i, np.arange(m)] - s > 1e-9)[0]
        if j.size == 0:
            return None
        i = i[j]
        present[i, j] = True
        A = E[j] - F[i, j][:, None] * E[i]
        return sp.csr_matrix(A), np.full(j.size, -np.inf), 1.0 - F[i, j]

    lazy = LazyLP(-w, np.zeros(m), np.full(m, 1.0), separate, A=sp.csr_matrix(E),
                  row_lo=np.full(m, -np.inf), row_hi=np.ones(m), method="simplex")
    out = lazy.solve(time_limit=time_limit)
    if out.status != "optimal":
        return None
    t = np.clip(out.x, 0.0, None)
    Z = E * t[None, :]
    Z[:, int(np.argmin(w))] += np.clip(1.0 - Z.sum(axis=1), 0.0, None)
    C = w[:, None] * le.range_loss(inst.metric)
    problem = Problem.make(DPrivacy(inst.metric, eps, reduce=False), C)  # certify checks all pairs
    Zc, certs, _ = certify_matrix(problem, Z)
    return float(math.fsum((C * Zc).ravel())), certs[0].realized, out.rounds


def run(inst, eps: float, *, time_limit, workers, verbose, method="outputs", start=None,
        lp: str = "ipm"):
    """One ε: LE, the relaxation bound, the certified LP optimum. ``start``: outputs to start the
    output generation with (the previous ε's outputs: a warm start across ε); the relaxation's
    tents and the heaviest √m cells are always added."""
    w = inst.prior
    loss = le.range_loss(inst.metric, 0.0)
    p = le.le_diagonal(inst.metric, eps)
    feasible = bool(p.min() >= -le.P_TOL)
    # λ = E⁻¹w of the LP-dual test (spec §2.6); le.kkt also forms every residual, O(m³) in Python
    lam = scipy.linalg.cho_solve(scipy.linalg.cho_factor(le.kernel(inst.metric, eps)), w)
    le_obj = float(1.0 - w @ p) if feasible else math.nan
    columns = []
    if feasible:  # LE's columns e^{−ε d_·k} p_k / max, in the d-privacy cone
        E = le.kernel(inst.metric, eps)
        columns = [(k, E[:, k].copy()) for k in range(inst.K)]
    t0 = time.perf_counter()
    t_relax = time.perf_counter()
    bound, tents = relaxation_bound(le.kernel(inst.metric, eps), w, support=True)
    t_relax = time.perf_counter() - t_relax
    row = dict(eps=eps, m=inst.K, users=None, le_feasible=feasible, le_objective=le_obj,
               min_lambda=float(lam.min()), lp_dual_test=bool(lam.min() >= 0), method=method,
               relaxation_bound=bound, relaxation_s=t_relax)
    t_tf = time.perf_counter()
    tf = tent_filler(inst, eps, w, time_limit=time_limit)
    if tf is not None:
        row.update(tent_filler_objective=tf[0], tent_filler_eps=tf[1], tent_filler_rounds=tf[2],
                   tent_filler_s=time.perf_counter() - t_tf)
        if feasible:
            row["le_gap_low"] = le_obj - tf[0]  # certified: OPT ≤ the tent-filler mechanism
    if feasible:
        row["le_gap_high"] = le_obj - bound  # certified: OPT ≥ the relaxation bound
    if method == "none":
        return row
    if method == "support":
        t_solve = time.perf_counter()
        try:
            res = le.solve(inst, eps, path="lp", lp_method="support", time_limit=time_limit,
                           verbose=verbose)
        except LpmechError as exc:
            row.update(status=type(exc).__name__, time_s=time.perf_counter() - t0,
                       solve_s=time.perf_counter() - t_solve, error=str(exc)[:200])
            got = getattr(exc, "result", None)
            sb = None if got is None else got.stats.get("bound")
            if sb is not None:  # the last round's Lagrangian bound: valid at any stop
                row["support_bound"] = sb
                if feasible:
                    row["le_gap_high"] = le_obj - max(bound, sb)
            return row
        row.update(status=res.status, opt_objective=res.objective, opt_bound=res.bound,
                   opt_gap=res.gap, realized_eps=res.certificate.realized_epsilon,
                   time_s=time.perf_counter() - t0, solve_s=time.perf_counter() - t_solve,
                   rounds=res.stats.get("rounds"),
                   points=res.stats.get("points"), outputs=res.stats.get("outputs"),
                   outputs_used=int((res.mechanism.matrix.sum(axis=0) > 0).sum()))
        if feasible:
            row.update(le_gap_low=le_obj - res.objective, le_gap_high=le_obj - res.bound,
                       le_gap_rel=(le_obj - res.objective) / res.objective)
        return row
    opts = {}
    if method == "outputs":
        heavy = np.argsort(-w, kind="stable")[:math.ceil(math.sqrt(inst.K))]
        S = np.union1d(np.union1d(tents, heavy), [] if start is None else start).astype(np.int64)
        opts.update(start=S, lp=lp)
        row.update(start_outputs=int(S.size), lp=lp)
    try:
        t_notion = time.perf_counter()
        notion = DPrivacy(inst.metric, eps, n_near=8)
        row["notion_s"] = time.perf_counter() - t_notion
        res = solve(notion, prior=w, loss=loss, method=method,
                    columns=columns, time_limit=time_limit, workers=workers, verbose=verbose, **opts)
    except LpmechError as exc:
        row.update(status=type(exc).__name__, time_s=time.perf_counter() - t0, error=str(exc)[:200])
        got = getattr(exc, "result", None)
        if got is not None and got.mechanism is not None and feasible:  # a certified mechanism
            row.update(best_objective=got.objective,
                       le_gap_low=max(le_obj - got.objective, row.get("le_gap_low", -math.inf)))
        if feasible:
            row["le_gap_high"] = le_obj - row["relaxation_bound"]
        return row
    row.update(status=res.status, opt_objective=res.objective, opt_bound=res.bound, opt_gap=res.gap,
               realized_eps=res.certificate.realized_epsilon, time_s=time.perf_counter() - t0,
               rounds=res.stats.get("rounds"), master_share=res.stats.get("master_share"),
               columns=res.stats.get("columns"), merged_outputs=res.stats.get("merged_outputs"),
               outputs_used=int((res.mechanism.matrix.sum(axis=0) > 0).sum()))
    row["_used"] = np.nonzero(res.mechanism.matrix.sum(axis=0) > 1e-12)[0]
    if feasible:
        row.update(le_gap_low=le_obj - res.objective, le_gap_high=le_obj - res.bound,
                   le_gap_rel=(le_obj - res.objective) / res.objective)
    elif "opt_objective" in row:
        row.update(le_gap_low=math.nan, le_gap_high=math.nan)
    return row


def _solve_timed(inst, eps, how, workers, time_limit):
    """(objective, seconds, status) of one exact path: ``support`` (le.solve's support
    generation) or ``outputs-ipm`` / ``outputs-simplex`` (output generation, restricted LP by
    that method)."""
    t0 = time.perf_counter()
    try:
        if how == "support":
            r = le.solve(inst, eps, path="lp", lp_method="support", time_limit=time_limit)
        else:
            r = solve(DPrivacy(inst.metric, eps, n_near=8), prior=inst.prior,
                      loss=le.range_loss(inst.metric, 0.0), method="outputs", workers=workers,
                      lp=how.split("-")[1], time_limit=time_limit)
        return r.objective, time.perf_counter() - t0, "optimal"
    except LpmechError as exc:
        return math.nan, time.perf_counter() - t0, type(exc).__name__


def baseline_ratio(inst, eps, workers, time_limit=None, lp="ipm"):
    """Support generation (``le.solve(..., lp_method="support")``, the default here) against the
    previous path, output generation with its restricted LP by ``lp``, same process, same
    instance: objectives and times (a path stopped at ``time_limit`` counts as that many seconds,
    a lower bound on its time, and is marked)."""
    (a, ta, sa) = _solve_timed(inst, eps, "support", workers, time_limit)
    (b, tb, sb) = _solve_timed(inst, eps, f"outputs-{lp}", workers, time_limit)
    print(f"baseline m={inst.K} eps={eps:g}: support {a:.10f} in {ta:.1f}s ({sa}), outputs-{lp} "
          f"{b:.10f} in {tb:.1f}s ({sb}), ratio outputs/support = {tb / ta:.2f}"
          f"{'+' if sb != 'optimal' else ''}, |diff| = {abs(a - b):.1e}")
    return dict(m=inst.K, eps=eps, support_s=ta, support_status=sa, outputs_s=tb, outputs_status=sb,
                outputs_lp=lp, ratio_outputs_support=tb / ta, objective_diff=abs(a - b))


def _num(v) -> float:
    """A CSV or row value as a float (NaN where missing)."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def plot(rows, path: Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in rows if r.get("relaxation_bound") is not None]
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    if ok:
        e = [r["eps"] for r in ok]
        best = [_num(r.get("opt_objective") or r.get("best_objective")) for r in ok]
        lower = [max(_num(r.get(k)) for k in ("relaxation_bound", "support_bound", "opt_bound"))
                 for r in ok]
        if any("tent_filler_objective" in r for r in ok):
            ax[0].plot(e, [_num(r.get("tent_filler_objective")) for r in ok], "^-.",
                       label="tent-filler mechanism (certified)")
        ax[0].plot(e, [_num(r.get("le_objective")) for r in ok], "o-",
                   label="LE (closed form; missing where infeasible)")
        ax[0].plot(e, best, "s--", label="engine: optimum, or best certified mechanism at the limit")
        ax[0].plot(e, lower, "v:", label="certified lower bound (best of relaxation, LP bound)")
        ax[0].set_xlabel("ε (per cell)")
        ax[0].set_ylabel("weighted co-location error 1 − Σ w_k z_kk")
        ax[0].legend(fontsize=8)
        lo = [_num(r.get("le_gap_low")) for r in ok]
        hi = [_num(r.get("le_gap_high")) for r in ok]
        ax[1].plot(e, lo, "o-", label="LE − (certified mechanism)  ≤ gap")
        ax[1].plot(e, hi, "v--", label="gap ≤ LE − (certified lower bound)")
        ax[1].set_xlabel("ε (per cell)")
        ax[1].set_ylabel("LE's optimality gap (absolute)")
        ax[1].legend(fontsize=8)
    m = rows[0]["m"] if rows else 0
    fig.suptitle(f"LE vs the optimum on Gowalla NYC, m = {m} cells")
    fig.tight_layout()
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=120)
    os.replace(tmp, path)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_FILE)
    ap.add_argument("--size", type=int, default=32, help="grid side W (m = W²)")
    ap.add_argument("--eps", type=float, nargs="+", default=[0.7, 1.0, 2.0, 4.0])
    ap.add_argument("--time-limit", type=float, default=600.0, help="seconds per solve")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--method", default="support",
                    choices=["support", "outputs", "decomposition", "full", "none"],
                    help="the path for the exact LP: support generation (lpmech.models.le.le_support) "
                         "or an engine path; none: only LE, the tent-filler mechanism and the "
                         "relaxation bound (the certified bracket of LE's gap)")
    ap.add_argument("--lp", default="ipm", choices=["ipm", "simplex"],
                    help="how output generation solves its restricted LP (lpmech.design.outputs), "
                         "for --method outputs and the baseline")
    ap.add_argument("--baseline-size", type=int, default=10, help="grid side of the baseline (0: none)")
    ap.add_argument("--baseline-eps", type=float, nargs="+", default=None,
                    help="ε of the baseline runs (default: the first --eps)")
    ap.add_argument("--no-warm", dest="warm", action="store_false",
                    help="do not start each ε's output generation with the previous ε's outputs")
    ap.add_argument("--name", default="le_gap_real")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    if not args.data.is_file():
        raise SystemExit(f"no Gowalla file at {args.data} (set --data or LPMECH_DATA)")
    OUT.mkdir(parents=True, exist_ok=True)
    if args.baseline_size:
        binst, _ = gowalla_instance(args.data, args.baseline_size)
        base = [baseline_ratio(binst, e, args.workers, args.time_limit, args.lp)
                for e in (args.baseline_eps or args.eps[:1])]
        write_csv(OUT / f"{args.name}_baseline.csv", base)
    inst, counts = gowalla_instance(args.data, args.size)
    print(f"Gowalla NYC {args.size}x{args.size}: m = {inst.K}, {int(counts.sum())} users, "
          f"{int((counts == 0).sum())} empty cells")
    rows = []
    used = None
    for eps in args.eps:
        r = run(inst, eps, time_limit=args.time_limit, workers=args.workers, verbose=args.verbose,
                method=args.method, start=used if args.warm else None, lp=args.lp)
        used = r.pop("_used", used)
        r["users"] = int(counts.sum())
        rows.append(r)
        print({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()}, flush=True)
        write_csv(OUT / f"{args.name}.csv", rows)
    plot(rows, OUT / f"{args.name}.png")
    print(f"wrote {OUT / (args.name + '.csv')} and .png")


if __name__ == "__main__":
    main()
