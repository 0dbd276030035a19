"""OMG decomposition: the pricing LPs' memory and what putting them to sleep costs.

For each g×g unit grid (ε per cell, Euclidean loss, Dirichlet(1) prior from ``--seed``), solve
``omg_large.solve_decomposition`` twice, each in a forked child process: as shipped (an LP sleeps
only past its process' share of :data:`lpmech.design.decomposition.PRICING_MEMORY_SHARE`) and with
every pricing LP put to sleep once priced (``PricingLP.sleep``: its HiGHS model freed, rebuilt from
its rows and basis at its next pricing). Each result is certified against every Geo-Ind pair, and
both must reach the same optimum. Prints the time, rounds, pricing time, the LPs asleep at the end
and the peak resident memory of the solving process and of its largest pricing worker, and the
ratios asleep / as shipped. Writes ``benchmarks/results/omg_memory.csv`` and ``.png``.

    python benchmarks/omg_memory.py --sizes 15 20 [--epsilon 1] [--workers 2]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import time
from pathlib import Path

import numpy as np

from lpmech import instance as li
from lpmech.design import decomposition
from lpmech.io import write_csv
from lpmech.models.common import certified_result
from lpmech.models.omg import omg_large
from lpmech.plotting import save_figure

OUT = Path(__file__).resolve().parent / "results"
ARMS = ("shipped", "asleep")


def _solve(queue, g: int, eps: float, seed: int, workers: int, arm: str, budget: float) -> None:
    if arm == "asleep":
        decomposition.memory_limit = lambda workers: 0
    inst = li.grid(g, g).with_prior(np.random.default_rng(seed).dirichlet(np.ones(g * g)))
    t0 = time.perf_counter()
    res = omg_large.solve_decomposition(inst, eps, workers=workers, time_limit=budget)
    seconds = time.perf_counter() - t0
    row = {"K": inst.K, "arm": arm, "seconds": seconds, "status": res.status,
           "objective": res.objective, "rounds": res.stats["rounds"],
           "pricing_s": res.stats["pricing_s"], "pricing_rows": res.stats["pricing_rows"],
           "asleep": res.stats["pricing_asleep"],
           "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
           "worker_peak_gb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20}
    if res.status == "optimal":
        res = certified_result(res, res.x.reshape(inst.K, inst.K), inst, eps, name="OMG")
        row["realized_epsilon"] = res.certificate.realized_epsilon
    row["gap"] = res.gap
    queue.put(row)


def run(g: int, eps: float, seed: int, workers: int, arm: str, budget: float) -> dict:
    """One arm in a fresh forked process, so that its peak memory is its own."""
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_solve, args=(queue, g, eps, seed, workers, arm, budget))
    proc.start()
    row = queue.get()
    proc.join()
    return row


def plot(rows, path) -> None:
    import matplotlib.pyplot as plt

    Ks = sorted({r["K"] for r in rows})
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for i, arm in enumerate(ARMS):
        got = {r["K"]: r for r in rows if r["arm"] == arm}
        x = np.arange(len(Ks)) + (i - 0.5) * 0.35
        axes[0].bar(x, [got[K]["seconds"] for K in Ks], 0.35, label=arm)
        axes[1].bar(x, [got[K]["worker_peak_gb"] for K in Ks], 0.35, label=arm)
    for ax, label in zip(axes, ("seconds", "largest pricing worker, GB")):
        ax.set_xticks(np.arange(len(Ks)), [f"K = {K}" for K in Ks])
        ax.set_ylabel(label)
        ax.legend()
    fig.suptitle("OMG decomposition: pricing LPs kept awake or put to sleep")
    save_figure(fig, path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[15, 20], help="grid sides g (K = g*g)")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--budget", type=float, default=900.0, help="time limit per solve (s)")
    ap.add_argument("--name", default="omg_memory", help="output file stem under results/")
    ap.add_argument("--out", default=str(OUT), help="output folder")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)  # before hours of solving, not after
    print(f"{'K':>5} {'arm':>8} {'seconds':>8} {'rounds':>6} {'pricing s':>9} {'asleep':>6} "
          f"{'peak GB':>7} {'worker GB':>9} {'gap':>9}  status", flush=True)
    rows = []
    for g in args.sizes:
        got = {}
        for arm in ARMS:
            row = got[arm] = run(g, args.epsilon, args.seed, args.workers, arm, args.budget)
            rows.append(row)
            print(f"{row['K']:>5} {arm:>8} {row['seconds']:>8.1f} {row['rounds']:>6} "
                  f"{row['pricing_s']:>9.1f} {row['asleep']:>6} {row['peak_gb']:>7.2f} "
                  f"{row['worker_peak_gb']:>9.2f} {row['gap']:>9.2e}  {row['status']}", flush=True)
        a, s = got["asleep"], got["shipped"]
        diff = abs(a["objective"] - s["objective"]) / abs(s["objective"])
        print(f"      asleep / shipped: time {a['seconds'] / s['seconds']:.2f}, largest worker "
              f"{a['worker_peak_gb'] / s['worker_peak_gb']:.2f}; objectives differ by {diff:.1e}",
              flush=True)
    csv, png = out / f"{args.name}.csv", out / f"{args.name}.png"
    write_csv(csv, rows)
    plot(rows, png)
    print(f"wrote {csv} and {png}")


if __name__ == "__main__":
    main()
