"""LIP certified at large d: column generation with exact pricing (``method="exact"``).

For each d, prior (uniform; Dirichlet(1) drawn with ``--seed``), task (summation with values 0..d−1,
histogram) and ε, and with ``--gowalla`` the d = 86 cells of [001] Fig. 9(b) (histogram, the Gowalla
New York prior of ``benchmarks/lip_001_figures.py``, ε 1..5, limit ``--gowalla-time-limit``), solve
the per-user MMSE design problem under ε-LIP with the exact-pricing column
generation and report the certified relative gap and the time. The baseline, run in the same
process, is the multi-start local column generation (``method="local"``, no bound): the table
states time(exact) / time(local) and the MSE difference (exact ≤ local, as exact is the optimum).

Prints the table and writes ``benchmarks/results/lip_exact.csv`` and ``.png``.

``--pricing-ratio EPS``: the histogram pricing alone. A Gowalla solve at ε = EPS runs for
``--capture-time`` seconds recording every exact pricing problem; each is then solved again by the
batched branch and bound (default) and by the one-node-at-a-time reference (``max_batch=1``), in
this process: total times, their ratio and the largest difference of the bounds are printed
(``benchmarks/results/lip_pricing_ratio.csv``).

    python benchmarks/lip_exact.py [--sizes 50] [--epsilons 0.5 1 2] [--tasks sum hist]
                                   [--time-limit 60] [--no-baseline] [--gowalla]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lip_common import OUT, write_csv

from lpmech.errors import LpmechError, NotOptimalError
from lpmech.models import lip


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[50])
    ap.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    ap.add_argument("--tasks", nargs="+", default=["sum", "hist"], choices=["sum", "hist"])
    ap.add_argument("--priors", nargs="+", default=["uniform", "dirichlet"],
                    choices=["uniform", "dirichlet"])
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--no-baseline", action="store_true", help="skip the local-solve baseline")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gowalla", action="store_true", help="add the d = 86 Gowalla cells of Fig. 9(b)")
    ap.add_argument("--gowalla-only", action="store_true", help="only the Gowalla cells")
    ap.add_argument("--out", default="lip_exact", help="name of the CSV/PNG under benchmarks/results")
    ap.add_argument("--gowalla-eps", type=float, nargs="+", default=[1.0, 2.0, 3.0, 4.0, 5.0])
    ap.add_argument("--gowalla-time-limit", type=float, default=300.0)
    ap.add_argument("--baseline-time-limit", type=float, help="time limit of the local baseline "
                    "(default: the cell's limit)")
    ap.add_argument("--pricing-ratio", type=float, metavar="EPS",
                    help="time the batched histogram pricing against one node at a time (Gowalla, EPS)")
    ap.add_argument("--capture-time", type=float, default=40.0)
    args = ap.parse_args(argv)
    if args.pricing_ratio is not None:
        return pricing_ratio(args)
    rows = []
    print(f"{'d':>3} {'prior':>9} {'task':>4} {'eps':>4} {'status':>15} {'time s':>8} {'MSE':>13} "
          f"{'rel gap':>8} {'rounds':>6} {'t/t_local':>9} {'MSE-local':>10}")
    cells = []
    for d in [] if args.gowalla_only else args.sizes:
        rng = np.random.default_rng(args.seed)
        dirichlet = rng.dirichlet(np.ones(d))
        for prior in args.priors:
            P = np.full(d, 1 / d) if prior == "uniform" else dirichlet
            cells += [(d, prior, P, task, eps, args.time_limit) for task in args.tasks
                      for eps in args.epsilons]
    if args.gowalla or args.gowalla_only:
        from lip_001_figures import gowalla_prior

        P = gowalla_prior(10)[0]
        cells += [(P.size, "gowalla", P, "hist", eps, args.gowalla_time_limit) for eps in args.gowalla_eps]
    for d, prior, P, task, eps, limit in cells:
        t0 = time.perf_counter()
        try:
            r = lip.solve(P, eps, task=task, method="exact", time_limit=limit)
        except NotOptimalError as exc:  # a stop without a certified optimum: its result
            r = exc.result
        t = time.perf_counter() - t0
        row = {"d": d, "prior": prior, "task": task, "epsilon": eps, "status": r.status,
               "time_s": t, "mse": r.objective, "bound": r.bound,
               "rel_gap": (r.objective - r.bound) / r.objective,
               "rounds": r.stats.get("rounds"),
               "realized_epsilon": r.certificate.realized_epsilon}
        if not args.no_baseline:
            t1 = time.perf_counter()
            try:
                loc = lip.solve(P, eps, task=task, method="local",
                                rng=np.random.default_rng(args.seed), starts=2,
                                time_limit=args.baseline_time_limit or limit)
                row["time_local_s"] = time.perf_counter() - t1
                row["mse_local"] = loc.objective
            except LpmechError as exc:  # the baseline's own failure is a table entry
                row["local_error"] = type(exc).__name__
        ratio = row["time_s"] / row["time_local_s"] if "time_local_s" in row else float("nan")
        diff = row["mse"] - row.get("mse_local", float("nan"))
        print(f"{d:>3} {prior:>9} {task:>4} {eps:>4g} {r.status:>15} {t:>8.2f} "
              f"{r.objective:>13.8g} {row['rel_gap']:>8.1e} {row['rounds']!s:>6} "
              f"{ratio:>9.2f} {diff:>10.2e}", flush=True)
        rows.append(row)
    path = write_csv(rows, args.out)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    combos = list(dict.fromkeys((r["prior"], r["task"]) for r in rows))
    for (prior, task), mk in zip(combos, "osd^v<>", strict=False):
        sel = [r for r in rows if r["prior"] == prior and r["task"] == task]
        lab = f"{prior}, {task}"
        ax[0].plot([f"d={r['d']} e={r['epsilon']:g}" for r in sel], [r["time_s"] for r in sel], mk,
                   label=lab)
        ax[1].semilogy([f"d={r['d']} e={r['epsilon']:g}" for r in sel],
                       [max(r["rel_gap"], 1e-16) for r in sel], mk, label=lab)
    ax[0].set_ylabel("time (s), exact column generation")
    ax[1].set_ylabel("certified relative gap")
    ax[1].axhline(1e-6, color="r", lw=0.8, ls="--")
    for a in ax:
        a.tick_params(axis="x", rotation=60)
        a.legend(fontsize=8)
    fig.suptitle("LIP (G = X) certified at large d")
    fig.tight_layout()
    fig.savefig(OUT / f"{args.out}.png", dpi=120)
    print(f"wrote {path} and {OUT / (args.out + '.png')}")


def pricing_ratio(args):
    """The batched separable branch and bound against one node at a time, on the exact pricing
    problems of a Gowalla solve (module docstring)."""
    from lip_001_figures import gowalla_prior

    from lpmech.models.lip import lip_optimize as lo

    P = gowalla_prior(10)[0]
    orig, calls = lo.price_separable, []

    def capture(*a, **k):
        if k.get("max_nodes", 0) > 1000:  # the exact calls (not the capped ones between them)
            calls.append((a, {key: v for key, v in k.items() if key != "pool"}))
        return orig(*a, **k)

    lo.price_separable = capture
    try:
        lip.solve(P, args.pricing_ratio, task="hist", method="exact", time_limit=args.capture_time)
    except NotOptimalError:
        pass
    finally:
        lo.price_separable = orig
    rows = []
    for i, (a, k) in enumerate(calls):
        out = {"call": i}
        for name, mb in (("batched", 64), ("one_node", 1)):
            t0 = time.perf_counter()
            ub, _, best, nodes = orig(*a, **k, max_batch=mb)
            out |= {f"time_{name}_s": time.perf_counter() - t0, f"nodes_{name}": nodes,
                    f"bound_{name}": ub, f"best_{name}": best}
        rows.append(out)
    tb = sum(r["time_batched_s"] for r in rows)
    t1 = sum(r["time_one_node_s"] for r in rows)
    print(f"Gowalla d = {P.size}, eps {args.pricing_ratio:g}: {len(rows)} exact pricing problems; batched "
          f"{tb:.2f} s, one node at a time {t1:.2f} s, ratio {t1 / max(tb, 1e-12):.2f}x; nodes "
          f"{sum(r['nodes_batched'] for r in rows)} vs {sum(r['nodes_one_node'] for r in rows)}")
    path = write_csv(rows, "lip_pricing_ratio")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 4))
    ax.loglog([r["time_one_node_s"] for r in rows], [r["time_batched_s"] for r in rows], "o", ms=3)
    lim = [min(min(r["time_one_node_s"], r["time_batched_s"]) for r in rows),
           max(max(r["time_one_node_s"], r["time_batched_s"]) for r in rows)]
    ax.plot(lim, lim, "k--", lw=0.8)
    ax.set_xlabel("one node at a time (s)")
    ax.set_ylabel("batched (s)")
    ax.set_title(f"LIP histogram pricing, Gowalla d = {P.size}, eps {args.pricing_ratio:g}")
    fig.tight_layout()
    fig.savefig(OUT / "lip_pricing_ratio.png", dpi=120)
    print(f"wrote {path} and {OUT / 'lip_pricing_ratio.png'}")


if __name__ == "__main__":
    main()
