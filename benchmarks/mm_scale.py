"""Program (2) at scale: lazy pair constraints (cutting planes) against the monolithic model.

For m values on random metrics — Euclidean distances of m uniform points in [0, 10]², and the
shortest-path metric of a complete graph with uniform random weights — solve program (2)
(``lpmech.models.matrix.matrix_mechanism.solve_frequency``, CVXPY/Clarabel) with lazily generated pair
constraints, and, up to ``--mono-max``, with all m(m−1)/2 pairs in one model (the baseline, same
process). Prints time, rounds, pairs used, objective agreement and the Lagrangian gap; the issue's
target is m = 1,000 in ≤ 30 s. Writes ``benchmarks/results/mm_scale.csv`` and ``.png``.

    python benchmarks/mm_scale.py [--sizes 100 300 1000] [--mono-max 300] [--seed 0]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from scipy.sparse.csgraph import shortest_path

from lpmech.io import write_csv
from lpmech.models.matrix import matrix_mechanism as mm
from lpmech.plotting import save_figure

OUT = Path(__file__).resolve().parent / "results"


def metrics(m: int, rng: np.random.Generator) -> dict:
    xy = 10 * rng.random((m, 2))
    euclid = np.sqrt(((xy[:, None] - xy[None]) ** 2).sum(-1))
    W = rng.random((m, m))
    W = (W + W.T) / 2
    np.fill_diagonal(W, 0)
    return {"euclidean": euclid, "graph": shortest_path(W, method="D")}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 1000])
    ap.add_argument("--mono-max", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    OUT.mkdir(exist_ok=True)
    rows = []
    print(f"{'m':>5} {'metric':>9} {'lazy s':>7} {'rounds':>6} {'pairs':>7} {'of':>7} {'mono s':>7} "
          f"{'mono/lazy':>9} {'|lazy-mono|/mono':>16} {'gap':>8}")
    for m in args.sizes:
        rng = np.random.default_rng(args.seed + m)
        for name, E in metrics(m, rng).items():
            t0 = time.perf_counter()
            met = mm.metric_from_matrix(E, check_triangle=False)
            lazy = mm.solve_frequency(met, lazy=True)
            t_lazy = time.perf_counter() - t0
            t_mono = obj_mono = None
            if m <= args.mono_max:
                t0 = time.perf_counter()
                mono = mm.solve_frequency(met, lazy=False)
                t_mono, obj_mono = time.perf_counter() - t0, mono.objective
            row = dict(m=m, metric=name, lazy_s=t_lazy, rounds=lazy.stats["rounds"],
                       pairs_used=lazy.stats["pairs_used"], pairs_total=lazy.stats["pairs_total"],
                       mono_s=t_mono, objective=lazy.objective, bound=lazy.bound, gap=lazy.gap,
                       objective_mono=obj_mono,
                       rel_diff_mono=None if obj_mono is None else abs(lazy.objective - obj_mono) / obj_mono,
                       realized_epsilon=lazy.certificate.realized_epsilon,
                       certified=lazy.certificate.satisfied)
            rows.append(row)
            mono_txt = ("-", "-", "-") if t_mono is None else (
                f"{t_mono:.2f}", f"{t_mono / t_lazy:.1f}", f"{row['rel_diff_mono']:.1e}")
            print(f"{m:>5} {name:>9} {t_lazy:>7.2f} {row['rounds']:>6} {row['pairs_used']:>7} "
                  f"{row['pairs_total']:>7} {mono_txt[0]:>7} {mono_txt[1]:>9} {mono_txt[2]:>16} "
                  f"{lazy.gap:>8.1e}", flush=True)
    write_csv(OUT / "mm_scale.csv", rows)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 4))
    for name, marker in (("euclidean", "o"), ("graph", "s")):
        sel = [r for r in rows if r["metric"] == name]
        ax.loglog([r["m"] for r in sel], [r["lazy_s"] for r in sel], marker + "-", label=f"lazy, {name}")
        mono = [r for r in sel if r["mono_s"] is not None]
        ax.loglog([r["m"] for r in mono], [r["mono_s"] for r in mono], marker + "--",
                  label=f"all pairs, {name}")
    ax.axhline(30, color="k", lw=0.8, ls=":", label="target 30 s")
    ax.set_xlabel("m (domain size)")
    ax.set_ylabel("time (s)")
    ax.set_title("Program (2), random metrics")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, OUT / "mm_scale.png")
    print(f"wrote {OUT / 'mm_scale.csv'} and {OUT / 'mm_scale.png'}")


if __name__ == "__main__":
    main()
