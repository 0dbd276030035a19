"""OMG decomposition against the number of pricing workers: multi-core scaling and the master's share.

For a g×g unit grid (ε = 1 per cell, Euclidean loss, Dirichlet(1) prior from ``--seed``), solve
``omg_large.solve_decomposition`` once per worker count in ``--workers`` (process pool, same
machine), certify each result against every Geo-Ind pair, and print the time, the speed-up against
the first worker count (the baseline, run in the same process), the rounds, the master LP's time and
share, the pricing time, the certified gap and realised ε. Every run must reach the same optimum
(relative difference printed). Writes ``benchmarks/results/omg_workers.csv`` and ``.png`` (time and
master time against workers; ``--name`` changes the stem).

    python benchmarks/omg_workers.py --size 20 --workers 2 4 8 16 [--budget 600]

The serial master bounds the speed-up (Amdahl): with master time M and pricing time P on w₀ workers,
w workers take at least M + P·w₀/w.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from lpmech import instance as li
from lpmech.io import write_csv
from lpmech.models.common import certified_result
from lpmech.models.omg import omg_large
from lpmech.plotting import save_figure

OUT = Path(__file__).resolve().parent / "results"


def run(inst, eps: float, workers: int, budget: float, verbose: bool = False) -> dict:
    t0 = time.perf_counter()
    res = omg_large.solve_decomposition(inst, eps, workers=workers, time_limit=budget, verbose=verbose)
    seconds = time.perf_counter() - t0
    row = {"K": inst.K, "workers": workers, "seconds": seconds, "status": res.status,
           "objective": res.objective, "rounds": res.stats.get("rounds"),
           "master_s": res.stats.get("master_s"), "pricing_s": res.stats.get("pricing_s")}
    if res.status == "optimal":
        res = certified_result(res, res.x.reshape(inst.K, inst.K), inst, eps, name="OMG")
        row["gap"] = res.gap
        row["realized_epsilon"] = res.certificate.realized_epsilon
    else:
        row["gap"] = res.gap
    row["master_share"] = row["master_s"] / seconds if row["master_s"] is not None else None
    return row


def _num(x, fmt: str, width: int) -> str:
    return f"{'-':>{width}}" if x is None else f"{x:>{width}{fmt}}"


def plot(rows, path) -> None:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    w = [r["workers"] for r in rows]
    ax.plot(w, [r["seconds"] for r in rows], "o-", label="total")
    ax.plot(w, [r["master_s"] for r in rows], "s--", label="master LP")
    ax.plot(w, [r["seconds"] * rows[0]["workers"] / x for r, x in zip(rows, w)], ":", color="grey",
            label="ideal (from the first)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("pricing workers")
    ax.set_ylabel("seconds")
    ax.set_title(f"OMG decomposition, K = {rows[0]['K']}, {os.cpu_count()} cores")
    ax.legend()
    save_figure(fig, path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=20, help="grid side g (K = g*g)")
    ap.add_argument("--workers", type=int, nargs="+", default=[2, 4, 8, 16])
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget", type=float, default=600.0, help="time limit per solve (s)")
    ap.add_argument("--name", default="omg_workers", help="output file stem under results/")
    ap.add_argument("--verbose", action="store_true", help="log every round (upper, lower, gap)")
    ap.add_argument("--out", default=str(OUT), help="output folder")
    args = ap.parse_args(argv)
    g = args.size
    inst = li.grid(g, g).with_prior(np.random.default_rng(args.seed).dirichlet(np.ones(g * g)))
    print(f"K = {inst.K}, ε = {args.epsilon}, {os.cpu_count()} cores", flush=True)
    print(f"{'workers':>7} {'seconds':>8} {'speed-up':>8} {'rounds':>6} {'master s':>8} {'share':>6} "
          f"{'pricing s':>9} {'gap':>9} {'real eps':>9} {'obj rel diff':>12}", flush=True)
    rows = []
    for w in args.workers:
        row = run(inst, args.epsilon, w, args.budget, args.verbose)
        base = rows[0] if rows else row
        row["speedup"] = base["seconds"] / row["seconds"]
        row["objective_rel_diff"] = (abs(row["objective"] - base["objective"]) / abs(base["objective"])
                                     if row["objective"] is not None and base["objective"] else None)
        rows.append(row)
        print(f"{w:>7} {row['seconds']:>8.1f} {row['speedup']:>8.2f} {row['rounds']:>6} "
              f"{row['master_s']:>8.1f} {row['master_share']:>6.2f} {row['pricing_s']:>9.1f} "
              f"{_num(row['gap'], '.2e', 9)} {_num(row.get('realized_epsilon'), '.6f', 9)} "
              f"{_num(row['objective_rel_diff'], '.1e', 12)}  {row['status']}", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / f"{args.name}.csv", rows)
    plot(rows, out / f"{args.name}.png")
    print(f"wrote {out / args.name}.csv and .png")


if __name__ == "__main__":
    main()
