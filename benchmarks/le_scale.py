"""LE at scale: the grid path (FFT + conjugate gradients / exact Kronecker) against a dense solve.

For each s×s unit grid (ε = 1 per cell by default) time ``lpmech.models.le.GridLE`` (E p = 1, the
precondition check) plus the inversion estimator (15) on n = 10·m reported counts, for the
Euclidean metric (FFT products, conjugate gradients) and the Manhattan metric (tridiagonal
Kronecker inverse). In the same run, a dense Cholesky solve of the same systems (scipy
``cho_factor`` on the m×m E) at the sizes up to ``--dense-max`` gives the speed ratio and the
agreement max |p_grid − p_dense|. Targets (issue 5): m = 10,000 in ≤ 2 s, m = 250,000 in ≤ 60 s.
Writes ``benchmarks/results/le_scale.csv`` and ``.png``.

    python benchmarks/le_scale.py [--sizes 30 50 100 200 500] [--dense-max 100] [--epsilon 1]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import scipy.linalg as sla

from lpmech.io import write_csv
from lpmech.models.le import GridLE

OUT = Path(__file__).resolve().parent / "results"


def dense_le(s: int, eps: float, metric: str, counts: np.ndarray):
    """Dense reference: E (m×m) by blocks, Cholesky, p = E⁻¹1, ĉ = E⁻¹(c/p)."""
    t0 = time.perf_counter()
    m = s * s
    ys, xs = np.divmod(np.arange(m), s)
    E = np.empty((m, m))
    for a in range(0, m, 1000):
        b = slice(a, min(m, a + 1000))
        dx, dy = xs[b, None] - xs[None], ys[b, None] - ys[None]
        d = np.abs(dx) + np.abs(dy) if metric == "manhattan" else np.hypot(dx, dy)
        E[b] = np.exp(-eps * d)
    f = sla.cho_factor(E, overwrite_a=True, check_finite=False)
    p = sla.cho_solve(f, np.ones(m), check_finite=False)
    est = sla.cho_solve(f, counts / p, check_finite=False)
    return time.perf_counter() - t0, p, est


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[30, 50, 100, 200, 500])
    ap.add_argument("--dense-max", type=int, default=100, help="largest s for the dense solve")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    OUT.mkdir(exist_ok=True)
    rows = []
    print(f"{'metric':>9} {'m':>8} {'grid s':>8} {'iters':>6} {'residual':>9} {'dense s':>8} "
          f"{'dense/grid':>10} {'max|dp|':>9} {'max|dc|/n':>9}")
    for metric in ("euclidean", "manhattan"):
        for s in args.sizes:
            m = s * s
            rng = np.random.default_rng(args.seed + s)
            counts = rng.multinomial(10 * m, rng.dirichlet(np.ones(m))).astype(float)
            t0 = time.perf_counter()
            g = GridLE(s, s, args.epsilon, metric=metric)
            est = g.estimate(counts)
            t_grid = time.perf_counter() - t0
            row = dict(metric=metric, m=m, grid_s=t_grid, cg_iterations=g.stats["cg_iterations"],
                       residual=g.stats["residual"], min_p=float(g.p.min()), dense_s=None,
                       ratio_dense_grid=None, max_dp=None, max_dest_over_n=None)
            if s <= args.dense_max:
                t_dense, p, est_d = dense_le(s, args.epsilon, metric, counts)
                row.update(dense_s=t_dense, ratio_dense_grid=t_dense / t_grid,
                           max_dp=float(np.abs(p - g.p).max()),
                           max_dest_over_n=float(np.abs(est - est_d).max() / counts.sum()))
            rows.append(row)

            def fmt(v, f):
                return f"{'-':>{f[:-3] if '.' in f else f[:-1]}}" if v is None else format(v, f)

            print(f"{metric:>9} {m:>8} {t_grid:8.3f} {row['cg_iterations']:>6} {row['residual']:9.1e} "
                  f"{fmt(row['dense_s'], '8.2f')} {fmt(row['ratio_dense_grid'], '10.0f')} "
                  f"{fmt(row['max_dp'], '9.1e')} {fmt(row['max_dest_over_n'], '9.1e')}", flush=True)
    write_csv(OUT / "le_scale.csv", rows)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for metric, mark in (("euclidean", "o"), ("manhattan", "s")):
        r = [x for x in rows if x["metric"] == metric]
        ax.loglog([x["m"] for x in r], [x["grid_s"] for x in r], mark + "-", label=f"GridLE {metric}")
        rd = [x for x in r if x["dense_s"] is not None]
        ax.loglog([x["m"] for x in rd], [x["dense_s"] for x in rd], mark + "--",
                  label=f"dense Cholesky {metric}")
    ax.axhline(2, color="grey", lw=0.5)
    ax.axhline(60, color="grey", lw=0.5)
    ax.set_xlabel("m = cells")
    ax.set_ylabel("LE + estimator time (s)")
    ax.set_title(f"LE at scale, epsilon = {args.epsilon:g}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(OUT / "le_scale.png", dpi=120)
    print(f"wrote {OUT / 'le_scale.csv'} and {OUT / 'le_scale.png'}")


if __name__ == "__main__":
    main()
