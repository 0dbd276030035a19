"""LIP solver acceptance: certified global optimum for d ≤ 6 and a certified local optimum for d = 50.

For each domain size d, prior (uniform and Dirichlet(1)), task (summation with values 0..d−1 and
histogram) and ε, solve the MMSE design problem with

* the exact vertex method (ray LP; global, HiGHS dual bound → gap) for d ≤ ``--global-max``,
* SCIP's spatial branch and bound on the declarative Pyomo model (same process, the baseline the
  speed ratio is stated against) for d ≤ ``--scip-max`` with ``--scip-time`` seconds,
* column generation with multi-start local pricing (``method="local"``) for ``--local-sizes``.

Prints the table and writes ``benchmarks/results/lip_solver.csv`` and ``.png``.

    python benchmarks/lip_solver.py [--global-max 6] [--local-sizes 20 50] [--scip-max 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lip_common import OUT, write_csv

from lpmech.errors import NotOptimalError
from lpmech.models import lip


def run(d, P, task, eps, method, rng, time_limit=None):
    t0 = time.perf_counter()
    try:
        r = lip.solve(P, eps, task=task, method=method, rng=rng, time_limit=time_limit)
    except NotOptimalError as exc:  # e.g. SCIP at its time limit: the certified point and bound
        r = exc.result
    return {"d": d, "task": task, "epsilon": eps, "method": method, "time_s": time.perf_counter() - t0,
            "mse": r.objective, "bound": r.bound, "gap": r.gap,
            "realized_epsilon": r.certificate.realized_epsilon, "certified": r.certificate.satisfied}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--global-max", type=int, default=6)
    ap.add_argument("--local-sizes", type=int, nargs="+", default=[20, 50])
    ap.add_argument("--scip-max", type=int, default=3)
    ap.add_argument("--scip-time", type=float, default=20.0)
    ap.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    rows = []
    print(f"{'d':>3} {'prior':>9} {'task':>5} {'eps':>4} {'method':>7} {'time s':>8} {'MSE':>12} "
          f"{'gap':>9} {'real eps':>9}")

    def show(row):
        gap = "-" if row["gap"] is None else f"{row['gap']:.1e}"
        print(f"{row['d']:>3} {row['prior']:>9} {row['task']:>5} {row['epsilon']:>4g} {row['method']:>7} "
              f"{row['time_s']:>8.3f} {row['mse']:>12.6g} {gap:>9} {row['realized_epsilon']:>9.6f}")
        rows.append(row)

    for d in range(2, args.global_max + 1):
        for prior_name in ("uniform", "dirichlet"):
            P = np.full(d, 1 / d) if prior_name == "uniform" else rng.dirichlet(np.ones(d))
            for task in ("sum", "hist"):
                for eps in args.epsilons:
                    row = run(d, P, task, eps, "vertex", rng)
                    row["prior"] = prior_name
                    show(row)
                    if d <= args.scip_max and eps == 1.0:
                        s = run(d, P, task, eps, "scip", rng, args.scip_time)
                        s["prior"] = prior_name
                        s["speedup_vs_scip"] = s["time_s"] / row["time_s"]
                        s["mse_minus_vertex"] = s["mse"] - row["mse"]
                        show(s)
    for d in args.local_sizes:
        P = rng.dirichlet(np.ones(d))
        for task in ("sum", "hist"):
            row = run(d, P, task, 1.0, "local", np.random.default_rng(args.seed))
            row["prior"] = "dirichlet"
            show(row)
    write_csv(rows, "lip_solver")

    glob = [r for r in rows if r["method"] == "vertex"]
    loc = [r for r in rows if r["method"] == "local"]
    print(f"\nglobal (vertex) d<={args.global_max}: max time {max(r['time_s'] for r in glob):.3f} s, "
          f"max gap {max(r['gap'] for r in glob):.1e}, all certified: {all(r['certified'] for r in glob)}")
    sc = [r for r in rows if r["method"] == "scip"]
    if sc:
        print("SCIP / vertex time ratio: " + ", ".join(f"d={r['d']} {r['task']}: {r['speedup_vs_scip']:.0f}x"
                                                      f" (SCIP gap {r['gap'] or 0:.1e})" for r in sc))
    for r in loc:
        print(f"local d={r['d']} {r['task']}: {r['time_s']:.1f} s, certified {r['certified']}")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lpmech.plotting import save_figure

    fig, ax = plt.subplots(figsize=(6, 4))
    for method, mk in (("vertex", "o"), ("scip", "s"), ("local", "^")):
        pts = [(r["d"], r["time_s"]) for r in rows if r["method"] == method]
        if pts:
            ax.plot(*zip(*pts, strict=True), mk, label=method, alpha=0.6)
    ax.axhline(10, color="grey", ls=":", label="10 s (global target)")
    ax.axhline(60, color="grey", ls="--", label="60 s (d = 50 target)")
    ax.set_yscale("log")
    ax.set_xscale("log")
    ax.set_xlabel("domain size d")
    ax.set_ylabel("solve time (s)")
    ax.set_title("LIP MMSE design: solve time")
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, OUT / "lip_solver.png")
    print(f"wrote {OUT / 'lip_solver.csv'} and {OUT / 'lip_solver.png'}")


if __name__ == "__main__":
    main()
