"""Program (2) at scale: explicit metrics from a file up to m = 8,192, and lazy pair constraints.

Mode ``file`` (default): for each m, m uniform points in the unit square are written as a Euclidean
distance matrix to an .npy file in a temporary directory, then

* the metric check of ``lpmech mm --metric matrix --distances FILE`` (load, finiteness, symmetry,
  zero diagonal, triangle inequality: :func:`lpmech.instance.read_distances`) is timed, and beside
  it, in the same process, the check as it was before (one numpy pass per k, O(m²) memory per
  step, m steps), stopped after ``--old-budget`` seconds and extrapolated linearly in the steps done
  (each step costs the same); the old command ran that check twice (file, then ε·d);
* the whole command ``lpmech mm --metric matrix --distances FILE --json`` (default checks) runs in a
  fresh process, which reports its wall time, the solve time and its peak resident memory
  (``ru_maxrss``, what ``/usr/bin/time -v`` prints).

The issue's targets (a 2-core machine, alone): m = 8,192 in ≤ 60 s and ≤ 3 GB, m = 4,096 in
≤ 20 s, the triangle check at m = 4,096 in ≤ 10 s. Writes ``benchmarks/results/mm_scale_file.csv``
and ``.png``.

    python benchmarks/mm_scale.py [--sizes 1024 2048 4096 8192] [--max-m 4096] [--old-budget 20]

Mode ``lazy``: for m values on random metrics — Euclidean distances of m uniform points in [0, 10]²,
and the shortest-path metric of a complete graph with uniform random weights — solve program (2)
(``lpmech.models.matrix.matrix_mechanism.solve_frequency``, CVXPY/Clarabel) with lazily generated
pair constraints, and, up to ``--mono-max``, with all m(m−1)/2 pairs in one model (the baseline,
same process). Prints time, rounds, pairs used, objective agreement and the Lagrangian gap; the
issue's target is m = 1,000 in ≤ 30 s. Writes ``benchmarks/results/mm_scale.csv`` and ``.png``.

    python benchmarks/mm_scale.py --mode lazy [--sizes 100 300 1000] [--mono-max 300] [--seed 0]
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
    ap.add_argument("--mode", choices=("file", "lazy"), default="file")
    ap.add_argument("--sizes", type=int, nargs="+", default=None,
                    help="m values (file: 1024 2048 4096 8192; lazy: 100 300 1000)")
    ap.add_argument("--max-m", type=int, default=None, help="file mode: skip sizes above this")
    ap.add_argument("--old-budget", type=float, default=20.0,
                    help="file mode: seconds the old check may run per size before extrapolation")
    ap.add_argument("--mono-max", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    OUT.mkdir(exist_ok=True)
    if args.mode == "file":
        return file_mode(args)
    args.sizes = args.sizes or [100, 300, 1000]
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


# ------------------------------------------------------------------------------ file mode


def old_check_triangle(d: np.ndarray, atol: float, budget: float) -> tuple[float, int, bool]:
    """The triangle check as it was (lpmech.instance._check_triangle before the blocked one): one
    m×m numpy pass per k. Stops after ``budget`` seconds; returns (seconds, steps done, violated)."""
    t0 = time.perf_counter()
    m = d.shape[0]
    for k in range(m):
        excess = d - (d[:, k, None] + d[None, k, :])
        if excess.max() > atol:
            return time.perf_counter() - t0, k + 1, True
        if time.perf_counter() - t0 > budget:
            return time.perf_counter() - t0, k + 1, False
    return time.perf_counter() - t0, m, False


_CHILD = """
import json, resource, sys, time, io, contextlib
from lpmech.cli import main
buf = io.StringIO()
t0 = time.perf_counter()
with contextlib.redirect_stdout(buf):
    code = main(["mm", "--metric", "matrix", "--distances", sys.argv[1], "--json"])
wall = time.perf_counter() - t0
out = json.loads(buf.getvalue())
print(json.dumps({"code": code, "wall_s": wall, "solve_s": out.get("time_s"),
                  "objective": out.get("objective"), "gap": out.get("gap"),
                  "realized_epsilon": out.get("realized_epsilon"),
                  "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6}))
"""


def file_mode(args) -> int:
    import json
    import subprocess
    import sys
    import tempfile

    from lpmech import _triangle as tri
    from lpmech.instance import METRIC_TOL, read_distances

    sizes = [m for m in (args.sizes or [1024, 2048, 4096, 8192])
             if args.max_m is None or m <= args.max_m]
    t0 = time.perf_counter()
    tri.block_excess(np.zeros((64, 64)), np.zeros(1, np.int64), np.zeros(1, np.int64))
    print(f"triangle kernel: {tri.backend()} (compiled or loaded from cache in "
          f"{time.perf_counter() - t0:.2f} s, not timed below)")
    print(f"{'m':>5} {'check s':>8} {'old check s':>12} {'ratio':>7} {'command s':>10} "
          f"{'solve s':>8} {'peak GB':>8} {'gap':>8}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for m in sizes:
            rng = np.random.default_rng(args.seed + m)
            xy = rng.random((m, 2))
            d = np.empty((m, m))
            for r0 in range(0, m, 512):  # no m×m×2 temporary
                diff = xy[r0:r0 + 512, None, :] - xy[None, :, :]
                d[r0:r0 + 512] = np.sqrt((diff ** 2).sum(-1))
            path = Path(tmp) / f"D{m}.npy"
            np.save(path, d)
            del d
            t = time.perf_counter()
            inst = read_distances(path)  # load + every check, as the command does
            t_new = time.perf_counter() - t
            dd = np.array(inst.metric)
            del inst
            t_old, steps, violated = old_check_triangle(dd, METRIC_TOL * dd.max(), args.old_budget)
            del dd
            assert not violated
            old_est = t_old * m / steps
            child = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True,
                                   text=True, check=True)
            c = json.loads(child.stdout.strip().splitlines()[-1])
            assert c["code"] == 0, child.stderr
            row = dict(m=m, backend=tri.backend(), check_s=t_new, old_check_s=old_est,
                       old_check_extrapolated=steps < m, old_steps=steps,
                       ratio_old_over_new=old_est / t_new, command_s=c["wall_s"],
                       solve_s=c["solve_s"], peak_rss_gb=c["peak_rss_gb"],
                       objective=c["objective"], gap=c["gap"],
                       realized_epsilon=c["realized_epsilon"])
            rows.append(row)
            star = "*" if steps < m else " "
            print(f"{m:>5} {t_new:>8.2f} {old_est:>11.1f}{star} {old_est / t_new:>7.1f} "
                  f"{c['wall_s']:>10.2f} {c['solve_s']:>8.2f} {c['peak_rss_gb']:>8.2f} "
                  f"{c['gap']:>8.1e}", flush=True)
    print("* extrapolated from the steps done within --old-budget; the old command ran the check "
          "twice")
    write_csv(OUT / "mm_scale_file.csv", rows)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 4))
    ms = [r["m"] for r in rows]
    ax.loglog(ms, [r["check_s"] for r in rows], "o-", label=f"metric check ({rows[0]['backend']})")
    ax.loglog(ms, [r["old_check_s"] for r in rows], "s--", label="old check (extrapolated)")
    ax.loglog(ms, [r["solve_s"] for r in rows], "^-", label="solve")
    ax.loglog(ms, [r["command_s"] for r in rows], "d-", label="whole command")
    ax.axhline(60, color="k", lw=0.8, ls=":", label="target 60 s (m = 8,192)")
    ax.set_xlabel("m (points, random Euclidean metric from .npy)")
    ax.set_ylabel("time (s)")
    ax.set_title("lpmech mm --metric matrix --distances")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, OUT / "mm_scale_file.png")
    print(f"wrote {OUT / 'mm_scale_file.csv'} and {OUT / 'mm_scale_file.png'}")
    return 0


if __name__ == "__main__":
    main()
