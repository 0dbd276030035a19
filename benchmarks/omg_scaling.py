"""OMG at scale: every solve path of ours against qif and a plain full HiGHS solve, in one run.

For each g×g unit grid (ε = 1 per cell, Euclidean loss, a Dirichlet(1) prior from ``--seed``),
time ``lpmech.models.omg.solve`` with each method (``decomposition``, ``cutting-plane``,
``spanner``), the plain full LP (every row written, no implied-row elimination, HiGHS
``--full-algorithm``) and ``qif.mechanism.d_privacy.min_loss_given_d`` (in a child process, so it can
be stopped). A path that exceeds ``--budget`` seconds at one size is skipped at larger sizes.
Prints times, the ratios qif/ours and full/ours (ours = our fastest exact path), the objectives'
agreement, our certified gap and realised ε, and the spanner's excess loss, and for the
decomposition its rounds, the master LP's share of the time and the pricing time; writes
``benchmarks/results/omg_scaling.csv`` and a log-log ``omg_scaling.png`` of time against K
(``--name`` changes the file stem).

    python benchmarks/omg_scaling.py [--sizes 4 5 7 8 10 14 20] [--budget 600]
    python benchmarks/omg_scaling.py --sizes 20 --seeds 0 1 2 --methods decomposition --baselines

qif is a test/benchmark dependency (``pip install -e ".[test]"``).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time
from pathlib import Path

import numpy as np

from lpmech import instance as li
from lpmech.errors import TimeLimitError
from lpmech.io import write_csv
from lpmech.models import omg
from lpmech.plotting import save_figure

OUT = Path(__file__).resolve().parent / "results"
EXACT = ("decomposition", "cutting-plane")


def _qif_child(queue, prior, metric, eps):
    from qif.mechanism import d_privacy

    t0 = time.perf_counter()
    C = d_privacy.min_loss_given_d(prior, len(prior), lambda i, j: eps * metric[i, j],
                                   lambda i, j: metric[i, j])
    queue.put((time.perf_counter() - t0, float((prior[:, None] * metric * C).sum())))


def qif_solve(inst, eps, budget):
    """(seconds, objective) of qif in a child process, or (None, None) past the budget."""
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_qif_child, args=(queue, inst.prior, inst.metric, eps))
    proc.start()
    proc.join(budget)
    if proc.is_alive():
        proc.kill()
        proc.join()
        return None, None
    return queue.get() if not queue.empty() else (None, None)


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    try:
        res = fn(*args, **kwargs)
    except TimeLimitError:
        return None, None
    return time.perf_counter() - t0, res


def _load_old(commit, rel, name):
    """Module file ``rel`` as of ``commit`` (git show) imported as ``name``, or None if absent."""
    import importlib.util
    import subprocess
    import sys
    import tempfile

    if name in sys.modules:
        return sys.modules[name]
    out = subprocess.run(["git", "show", f"{commit}:{rel}"], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1])
    if out.returncode != 0:
        return None
    path = Path(tempfile.mkdtemp()) / Path(rel).name
    path.write_text(out.stdout)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _old_module(commit):
    """The OMG large-K module as of ``commit``, imported beside the new one, with the generic
    decomposition engine (``lpmech/design/decomposition.py``) of the same commit where it had one.
    The Geo-Ind notion (``lpmech/design/geoind.py``) of that commit replaces the new one in it.
    Its path is lpmech/models/omg_large.py before the layout by family, lpmech/models/omg/omg_large.py
    after it (imported inside the package it was written for, so its relative imports resolve)."""
    mod = (_load_old(commit, "lpmech/models/omg_large.py", f"lpmech.models._omg_large_{commit}")
           or _load_old(commit, "lpmech/models/omg/omg_large.py", f"lpmech.models.omg._omg_large_{commit}"))
    engine = _load_old(commit, "lpmech/design/decomposition.py", f"lpmech.design._decomposition_{commit}")
    if engine is not None:
        for attr in ("decompose", "PricingLP", "lagrangian"):
            if hasattr(mod, attr) and hasattr(engine, attr):
                setattr(mod, attr, getattr(engine, attr))
    notion = _load_old(commit, "lpmech/design/geoind.py", f"lpmech.design._geoind_{commit}")
    if notion is not None:  # the Geo-Ind notion (rows, oracle, repair) of the same commit
        for attr in ("GeoInd", "tents", "factor_matrix", "most_violated"):
            if hasattr(mod, attr) and hasattr(notion, attr):
                setattr(mod, attr, getattr(notion, attr))
    return mod


def _warm_kernels(mod) -> None:
    """Compile the Geo-Ind kernels of ``mod`` (a module with ``GeoInd``) in this process, before
    any timing: the forked pricing workers inherit them (an old commit's kernels, loaded from a
    temporary file, have no cache on disk and would compile in every worker of the first solve)."""
    from lpmech.design import geoind

    K = geoind.JIT_MIN_K
    inst = li.grid(K, 1)
    v = np.linspace(1.0, 0.0, K)
    try:
        notion = mod.GeoInd(mod.factor_matrix(inst, 1.0), closure=np.exp(-inst.metric).T.copy())
        notion.separator(0, notion.initial_rows(0))(v)
        notion.repair(v[:, None])
    except (AttributeError, TypeError):  # a commit before these kernels: nothing to compile
        pass


def _decomposition(inst, eps, workers, budget):
    """omg.solve's decomposition path with a chosen number of pricing workers (certified)."""
    from lpmech.models.common import certified_result
    from lpmech.models.omg import omg_large

    res = omg_large.solve_decomposition(inst, eps, workers=workers, time_limit=budget)
    res = certified_result(res, res.x.reshape(inst.K, inst.K), inst, eps, name="OMG")
    res.stats["method"] = "decomposition"
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[4, 5, 7, 8, 10, 14, 20],
                    help="grid sides g (K = g*g)")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", type=int, nargs="+", default=None,
                    help="several Dirichlet(1) priors: each size is run for each seed (default: --seed)")
    ap.add_argument("--budget", type=float, default=600.0, help="seconds per solve (default 600)")
    ap.add_argument("--methods", nargs="+", default=["decomposition", "cutting-plane", "spanner"],
                    choices=["decomposition", "cutting-plane", "spanner"])
    ap.add_argument("--baselines", nargs="*", default=["full", "qif"], choices=["full", "qif"])
    ap.add_argument("--full-algorithm", default="ipm", choices=["ipm", "simplex", "choose"])
    ap.add_argument("--delta", type=float, default=1.1, help="spanner dilation")
    ap.add_argument("--name", default="omg_scaling", help="output file stem under results/")
    ap.add_argument("--old", default=None, metavar="COMMIT",
                    help="also time the decomposition of lpmech/models/omg_large.py (before the layout "
                         "by family) as of this git commit (e.g. 581b176, before the generic engine): "
                         "old/new is printed")
    ap.add_argument("--workers", type=int, default=None,
                    help="pricing workers of the decomposition (default: 2 from K = 100 on 2+ cores)")
    args = ap.parse_args(argv)
    OUT.mkdir(exist_ok=True)
    eps, budget = args.epsilon, args.budget
    over: dict[str, int] = {}  # path -> the K at which it went over the budget
    rows = []
    head = (f"{'K':>5} " + " ".join(f"{m[:13]:>13}" for m in args.methods) +
            " " + " ".join(f"{b:>9}" for b in args.baselines) +
            f" {'qif/ours':>9} {'full/ours':>9} {'objective':>13} {'max rel diff':>12} {'gap':>8}"
            f" {'real eps':>10} {'spanner +%':>10}")
    print(head, flush=True)
    from lpmech.models.omg import omg_large

    _warm_kernels(omg_large)
    if args.old:
        _warm_kernels(_old_module(args.old))
    for g, seed in [(g, s) for g in args.sizes for s in (args.seeds or [args.seed])]:
        rng = np.random.default_rng(seed)
        inst = li.grid(g, g).with_prior(rng.dirichlet(np.ones(g * g)))
        K = inst.K
        row: dict = {"K": K, "seed": seed}
        results = {}
        for m in args.methods:
            if m in over:
                t, res = None, None
            elif m == "decomposition":
                t, res = timed(_decomposition, inst, eps, args.workers, budget)
            else:
                t, res = timed(omg.solve, inst, eps, method=m, delta=args.delta, time_limit=budget)
            if t is None and m not in over:
                over[m] = K
            row[f"{m}_s"] = t
            if res is not None:
                results[m] = res
                row[f"{m}_objective"] = res.objective
                row[f"{m}_gap"] = res.gap
                row[f"{m}_realized_epsilon"] = res.certificate.realized_epsilon
                row[f"{m}_rounds"] = res.stats.get("rounds")
                if m == "decomposition":
                    row["decomposition_master_s"] = res.stats.get("master_s")
                    row["decomposition_pricing_s"] = res.stats.get("pricing_s")
                    row["decomposition_master_share"] = res.stats.get("master_share")
                    row["decomposition_workers"] = res.stats.get("workers")
        if args.old:
            old = _old_module(args.old)
            t, res = (None, None) if "old" in over else timed(
                old.solve_decomposition, inst, eps, workers=args.workers, time_limit=budget)
            if t is None and "old" not in over:
                over["old"] = K
            row["old_s"] = t
            row["old_objective"] = None if res is None else res.optimality.objective
            row["old_rounds"] = None if res is None else res.stats.get("rounds")
            row["old_master_s"] = None if res is None else res.stats.get("master_s")
            new = row.get("decomposition_s")
            row["ratio_old_new"] = t / new if t and new else None
        if "full" in args.baselines:
            t, res = (None, None) if "full" in over else timed(
                omg.solve, inst, eps, method="full", reduce=False, algorithm=args.full_algorithm,
                time_limit=budget)
            if t is None and "full" not in over:
                over["full"] = K
            row["full_s"] = t
            row["full_objective"] = None if res is None else res.objective
        if "qif" in args.baselines:
            t, obj = (None, None) if "qif" in over else qif_solve(inst, eps, budget)
            if t is None and "qif" not in over:
                over["qif"] = K
            row["qif_s"], row["qif_objective"] = t, obj
        exact = [m for m in EXACT if m in results]
        ours = min((row[f"{m}_s"] for m in exact), default=None)
        ref = results[exact[0]] if exact else None
        row["ours_s"] = ours
        row["ratio_qif_ours"] = row.get("qif_s") / ours if ours and row.get("qif_s") else None
        row["ratio_full_ours"] = row.get("full_s") / ours if ours and row.get("full_s") else None
        objs = [results[m].objective for m in exact] + [
            row[k] for k in ("full_objective", "qif_objective") if row.get(k) is not None]
        row["max_rel_diff"] = (max(objs) - min(objs)) / min(objs) if len(objs) > 1 else None
        if "spanner" in results and ref is not None:
            row["spanner_excess"] = results["spanner"].objective / ref.objective - 1
        rows.append(row)

        def f(v, spec):
            return f"{v:{spec}}" if v is not None else f"{'-':>{spec.split('.')[0]}}"

        print(f"{K:>5} " + " ".join(f(row.get(f"{m}_s"), "13.2f") for m in args.methods) + " " +
              " ".join(f(row.get(f"{b}_s"), "9.2f") for b in args.baselines) +
              f" {f(row['ratio_qif_ours'], '9.1f')} {f(row['ratio_full_ours'], '9.1f')}"
              f" {f(ref.objective if ref else None, '13.9f')} {f(row['max_rel_diff'], '12.1e')}"
              f" {f(ref.gap if ref else None, '8.1e')}"
              f" {f(ref.certificate.realized_epsilon if ref else None, '10.7f')}"
              f" {f(100 * row['spanner_excess'] if 'spanner_excess' in row else None, '10.2f')}",
              flush=True)
        if "decomposition" in results:
            print(f"{'':>5} decomposition: {row['decomposition_rounds']} rounds, master "
                  f"{row['decomposition_master_s']:.1f}s ({100 * row['decomposition_master_share']:.0f}% "
                  f"of the time), pricing {row['decomposition_pricing_s']:.1f}s on "
                  f"{row['decomposition_workers']} worker(s)", flush=True)
        if args.old and row.get("old_s"):
            diff = abs(row["old_objective"] / ref.objective - 1) if ref else None
            print(f"{'':>5} old decomposition ({args.old}): {row['old_s']:.1f}s, {row['old_rounds']} "
                  f"rounds, master {row['old_master_s']:.1f}s; old/new {f(row['ratio_old_new'], '.2f')}, "
                  f"objective diff {f(diff, '.1e')}", flush=True)
    if over:
        print("over the budget (then skipped): " + ", ".join(f"{p} at K={k}" for p, k in over.items()))
    write_csv(OUT / f"{args.name}.csv", rows)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.5))
    labels = {"decomposition": "lpmech decomposition (exact)",
              "cutting-plane": "lpmech cutting planes (exact)",
              "spanner": f"lpmech spanner, delta {args.delta:g} (approx.)",
              "full": f"plain full LP, HiGHS {args.full_algorithm}", "qif": "qif min_loss_given_d"}
    for key in [*args.methods, *args.baselines]:
        pts = [(r["K"], r[f"{key}_s"]) for r in rows if r.get(f"{key}_s")]
        if pts:
            ax.loglog(*zip(*pts), "o-", label=labels[key])
    ax.axhline(budget, color="grey", lw=0.8, ls=":")
    ax.set_xticks([r["K"] for r in rows], [str(r["K"]) for r in rows])
    ax.minorticks_off()
    ax.set_xlabel("K (locations)")
    ax.set_ylabel("time (s)")
    ax.set_title(f"OMG, g×g grid, epsilon {eps:g}, Euclidean loss")
    ax.grid(True, which="both", lw=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, OUT / f"{args.name}.png")
    print(f"wrote {OUT / (args.name + '.csv')} and {OUT / (args.name + '.png')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
