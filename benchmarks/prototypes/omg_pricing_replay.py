"""Where the pricing time of an OMG decomposition goes: its pricing rounds replayed in one process.

Solves the g×g unit grid (ε from ``--epsilon``, Dirichlet(1) prior from ``--seed``) by
``omg_large.solve_decomposition`` while recording the pricing costs W of every round, then prices
every ``--every``-th output again, round by round, with fresh pricing LPs in this process (the same
LPs, rows and warm starts as a pricing worker's). Per round it prints the time per LP, the HiGHS
runs per LP, the dual simplex iterations of the first run after the change of costs and of the
runs after added rows, and the share of the outputs whose optimum is v = 0 and of their time;
at the end the share of HiGHS in the replay. Writes ``benchmarks/results/omg_pricing_replay.csv``
and a stacked bar chart ``omg_pricing_replay.png`` of the time per round (first runs, later runs,
the rest).

    python benchmarks/prototypes/omg_pricing_replay.py --size 20 --every 4
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import ClassVar

import numpy as np

from lpmech import instance as li
from lpmech.design import decomposition as dc
from lpmech.design.geoind import GeoInd, factor_matrix
from lpmech.io import write_csv
from lpmech.models.omg import omg_large
from lpmech.plotting import save_figure

OUT = Path(__file__).resolve().parents[1] / "results"


def record(inst, eps: float) -> list[np.ndarray]:
    """The pricing costs W (K×n) of every round of the fine solve (the coarse start's left out)."""
    seen: list[np.ndarray] = []
    price = dc.ProcessPricer.price, dc.LocalPricer.price

    def recording(orig):
        def wrapped(self, outputs, W, deadline):
            if W.shape[0] == inst.K and len(outputs) == W.shape[1] == inst.K:
                seen.append(W.copy())
            return orig(self, outputs, W, deadline)
        return wrapped

    dc.ProcessPricer.price, dc.LocalPricer.price = recording(price[0]), recording(price[1])
    try:
        omg_large.solve_decomposition(inst, eps)
    finally:
        dc.ProcessPricer.price, dc.LocalPricer.price = price
    return seen


class _Timed(dc.DualPricingLP):
    """The package's pricing LP, its HiGHS runs timed and their simplex iterations counted."""

    tally: ClassVar[dict] = {}

    def _solve_round(self, rnd: int) -> str:
        t0 = time.perf_counter()
        status = super()._solve_round(rnd)
        row = self.tally.setdefault("first" if rnd == 1 else "later", [0, 0, 0.0])
        row[0] += 1
        row[1] += self.h.getInfo().simplex_iteration_count
        row[2] += time.perf_counter() - t0
        return status


def replay(notion, rounds: list[np.ndarray], ks: list[int]):
    """Price outputs ``ks`` at each round's costs with fresh pricing LPs, in order: the per-round
    rows of the table and the optima found, ``values[r][c]`` for output ``ks[c]``."""
    lps = {k: _Timed(notion, k) for k in ks}
    rows, values = [], []
    for r, W in enumerate(rounds, start=1):
        _Timed.tally.clear()
        t_zero = n_zero = 0
        found = []
        t0 = time.perf_counter()
        for k in ks:
            t1 = time.perf_counter()
            _, value, _ = lps[k].price(W[:, k])
            found.append(value)
            if abs(value) <= 1e-12:
                n_zero += 1
                t_zero += time.perf_counter() - t1
        dt = time.perf_counter() - t0
        first = _Timed.tally.get("first", [0, 0, 0.0])
        later = _Timed.tally.get("later", [0, 0, 0.0])
        n = len(ks)
        rows.append({"round": r, "ms_per_lp": 1e3 * dt / n, "runs_per_lp": (first[0] + later[0]) / n,
                     "first_iterations_per_lp": first[1] / n, "later_iterations_per_lp": later[1] / n,
                     "first_s": first[2], "later_s": later[2], "other_s": dt - first[2] - later[2],
                     "zero_outputs": n_zero, "zero_s": t_zero,
                     "zero_time_share": t_zero / dt if dt else 0.0})
        values.append(found)
    return rows, values


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=20, help="grid side g (K = g*g)")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--every", type=int, default=4, help="replay every this many-th output")
    ap.add_argument("--name", default="omg_pricing_replay")
    args = ap.parse_args(argv)
    g, eps = args.size, args.epsilon
    inst = li.grid(g, g).with_prior(np.random.default_rng(args.seed).dirichlet(np.ones(g * g)))
    rounds = record(inst, eps)
    notion = GeoInd(factor_matrix(inst, eps), closure=np.exp(-eps * inst.metric).T.copy())
    ks = list(range(0, inst.K, args.every))
    print(f"K = {inst.K}, ε = {eps:g}, seed {args.seed}: {len(rounds)} rounds, {len(ks)} outputs "
          "replayed")
    t0 = time.perf_counter()
    rows, _ = replay(notion, rounds, ks)
    total = time.perf_counter() - t0
    print(f"{'round':>5} {'ms/LP':>7} {'runs/LP':>7} {'first its/LP':>12} {'later its/LP':>12} "
          f"{'v = 0':>6} {'their time':>10}")
    for row in rows:
        print(f"{row['round']:>5} {row['ms_per_lp']:>7.2f} {row['runs_per_lp']:>7.2f} "
              f"{row['first_iterations_per_lp']:>12.0f} {row['later_iterations_per_lp']:>12.0f} "
              f"{row['zero_outputs']:>6} {row['zero_time_share']:>10.0%}")
    highs = sum(r["first_s"] + r["later_s"] for r in rows)
    zero = sum(r["zero_s"] for r in rows)
    print(f"replay {total:.2f} s: HiGHS runs {highs / total:.0%} of it, the outputs of value 0 "
          f"{zero / total:.0%}")
    OUT.mkdir(exist_ok=True)
    write_csv(OUT / f"{args.name}.csv", rows)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    x = [r["round"] for r in rows]
    first = [r["first_s"] for r in rows]
    later = [r["later_s"] for r in rows]
    other = [r["other_s"] for r in rows]
    ax.bar(x, first, label="first run after the new costs")
    ax.bar(x, later, bottom=first, label="runs after added rows")
    ax.bar(x, other, bottom=np.add(first, later), label="oracle, bounds, Python")
    ax.set_xlabel("round")
    ax.set_ylabel(f"seconds for {len(ks)} pricing LPs")
    ax.set_title(f"OMG pricing replay, K = {inst.K}, ε = {eps:g}")
    ax.legend()
    save_figure(fig, OUT / f"{args.name}.png")
    print(f"wrote {OUT / (args.name + '.csv')} and {OUT / (args.name + '.png')}")


if __name__ == "__main__":
    main()
