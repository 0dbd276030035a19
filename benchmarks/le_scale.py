"""LE at scale: the Euclidean grid path against the path as it was before (same process, same work).

For each s×s unit grid (ε = 1 per cell by default) time the work of ``lpmech le --grid sxs``:
``GridLE`` (p = E⁻¹1 by conjugate gradients, the residual ‖E p − 1‖∞ with every kernel entry),
``mse_theory`` (16 Hutchinson probes, seed 0) and ``range_error`` (r = 0), by

* **new**: :class:`lpmech.models.le.GridLE`: CG products on an (H+R)×(W+R) torus with the kernel
  cut at the radius R where its dropped mass is ≤ 1e-16, preconditioned by the periodised
  kernel's circulant on that torus restricted to the grid, probes solved to 1e-8;
* **start**: the path before (kept here verbatim as :class:`StartPath`): products by a
  zero-padded FFT on the (2H−1)×(2W−1) torus, T. Chan's H×W circulant preconditioner, SciPy's
  ``cg`` to 1e-12 for every solve. Its time is capped (``--cap`` seconds): past the cap its
  remaining probes are extrapolated from the mean of those it ran (column ``start_extrapolated``).

Printed and written per size: wall time, CG iterations, peak of traced allocations (tracemalloc:
NumPy arrays; FFT scratch is not traced), the ratios start/new of wall and of CPU time (all
threads; less sensitive than wall time to other processes on a shared machine), and the agreement
of p and of the MSE. Read the ratios (both paths in one process), not the seconds.
Writes ``benchmarks/results/le_scale.csv`` and ``.png``.

    python benchmarks/le_scale.py [--sizes 100 200 500 1000] [--max 2000] [--cap 300] [--epsilon 1]
"""

from __future__ import annotations

import argparse
import math
import resource
import time
import tracemalloc
from pathlib import Path

import numpy as np
import scipy.fft as sfft
from scipy.sparse.linalg import LinearOperator, cg

from lpmech.io import write_csv
from lpmech.models.le import GridLE

OUT = Path(__file__).resolve().parent / "results"
PROBES = 16  # the CLI's default --probes


class StartPath:
    """The Euclidean GridLE solve as it was before this benchmark's change (verbatim)."""

    def __init__(self, W, H, eps, rtol=1e-12):
        self.W, self.H, self.m, self.eps, self.rtol = W, H, W * H, eps, rtol
        self.iterations = 0
        dy, dx = np.arange(-(H - 1), H), np.arange(-(W - 1), W)
        k = np.exp(-eps * np.hypot(dy[:, None], dx[None, :]))
        self._fshape = (sfft.next_fast_len(2 * H - 1, real=True),
                        sfft.next_fast_len(2 * W - 1, real=True))
        self._khat = sfft.rfft2(k, s=self._fshape)
        jy, jx = np.arange(H)[:, None], np.arange(W)[None, :]

        def ker(a, b):
            return np.exp(-eps * np.hypot(a, b))

        c = ((H - jy) * (W - jx) * ker(jy, jx) + (H - jy) * jx * ker(jy, W - jx)
             + jy * (W - jx) * ker(H - jy, jx) + jy * jx * ker(H - jy, W - jx)) / (H * W)
        lam = sfft.rfft2(c).real
        self._pre = lam if lam.min() > 1e-12 * lam.max() else None
        self.p = self.solve(np.ones(self.m))
        self.residual = float(np.abs(self.matvec(self.p) - 1).max())

    def matvec(self, x):
        H, W = self.H, self.W
        y = sfft.irfft2(sfft.rfft2(np.asarray(x, float).reshape(H, W), s=self._fshape) * self._khat,
                        s=self._fshape)
        return y[H - 1:2 * H - 1, W - 1:2 * W - 1].ravel()

    def solve(self, b):
        it = [0]

        def count(_):
            it[0] += 1

        op = LinearOperator((self.m, self.m), matvec=self.matvec, dtype=float)
        M = None
        if self._pre is not None:
            H, W, lam = self.H, self.W, self._pre
            M = LinearOperator((self.m, self.m), dtype=float, matvec=lambda r: sfft.irfft2(
                sfft.rfft2(np.reshape(r, (H, W))) / lam, s=(H, W)).ravel())
        x, info = cg(op, b, rtol=self.rtol, atol=0.0, maxiter=20 * self.m + 100, callback=count, M=M)
        self.iterations += it[0]
        assert info == 0
        return x

    def range_error0(self, c):  # r = 0: the full-size convolution with the centre-only kernel
        H, W = self.H, self.W
        dy, dx = np.arange(-(H - 1), H)[:, None], np.arange(-(W - 1), W)[None, :]
        d = np.hypot(dy, dx)
        kern = np.where(d <= 1e-9, np.exp(-self.eps * d), 0.0)
        y = sfft.irfft2(sfft.rfft2(self.p.reshape(H, W), s=self._fshape)
                        * sfft.rfft2(kern, s=self._fshape), s=self._fshape)
        inside = y[H - 1:2 * H - 1, W - 1:2 * W - 1].ravel()
        return float(1.0 - c @ inside / c.sum())


def run_start(s, eps, seed, cap):
    """The start path's CLI work; returns (time, iterations, p, mse, se, extrapolation factor of
    the time (1.0: every probe ran), residual)."""
    t0 = time.perf_counter()
    g = StartPath(s, s, eps)
    p_iters = g.iterations
    c = np.ones(g.m)
    v = g.p * g.matvec(c) / g.p**2
    sq = np.sqrt(v)
    rng = np.random.default_rng(seed)
    vals, t_probes, extrapolated = [], [], False
    for _ in range(PROBES):
        if time.perf_counter() - t0 > cap and vals:
            extrapolated = True
            break
        tp = time.perf_counter()
        z = rng.choice([-1.0, 1.0], size=g.m)
        vals.append(np.sum((sq * g.solve(z)) ** 2))
        t_probes.append(time.perf_counter() - tp)
    g.range_error0(c)
    t = t_run = time.perf_counter() - t0
    iters = g.iterations
    if extrapolated:
        left = PROBES - len(vals)
        t += left * float(np.mean(t_probes))
        iters = round(iters + left * (iters - p_iters) / len(vals))
    vals = np.asarray(vals)
    mse = float(vals.mean() - c.sum())
    se = float(vals.std(ddof=1) / math.sqrt(len(vals))) if len(vals) > 1 else math.nan
    return t, iters, g.p, mse, se, t / t_run, g.residual


def run_new(s, eps, seed):
    t0 = time.perf_counter()
    g = GridLE(s, s, eps)
    c = np.ones(g.m)
    mse, se = g.mse_theory(c, rng=np.random.default_rng(seed), probes=PROBES)
    g.range_error(c, 0.0)
    return time.perf_counter() - t0, g.stats["cg_iterations"], g.p, mse, se, g.stats


def traced(fn, *a):
    """fn(*a), the peak of its traced allocations (MB) and its CPU time (all threads, s)."""
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    c0 = time.process_time()
    out = fn(*a)
    return out, (tracemalloc.get_traced_memory()[1] - base) / 2**20, time.process_time() - c0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 200, 500, 1000])
    ap.add_argument("--max", type=int, default=None, help="also this size (e.g. 2000: m = 4e6)")
    ap.add_argument("--cap", type=float, default=300.0,
                    help="seconds after which the start path's remaining probes are extrapolated")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    sizes = sorted(set(args.sizes + ([args.max] if args.max else [])))
    if min(sizes) ** 2 <= GridLE.dense_max:  # there mse_theory is exact (dense), not Hutchinson
        ap.error(f"sizes must exceed {math.isqrt(GridLE.dense_max)} (m > GridLE.dense_max)")
    OUT.mkdir(exist_ok=True)
    tracemalloc.start()
    rows = []
    print(f"eps = {args.epsilon:g}, {PROBES} Hutchinson probes (the CLI's default)")
    print(f"{'m':>9} {'new s':>7} {'it':>4} {'MB':>6} {'start s':>8} {'it':>5} {'MB':>6} "
          f"{'ratio':>6} {'cpu ratio':>9} {'max|dp|':>8} {'dmse/se':>8} {'residual':>9}")
    for s in sizes:
        (t_new, it_new, p_new, mse_new, se_new, st), mb_new, cpu_new = traced(
            run_new, s, args.epsilon, args.seed)
        (t_old, it_old, p_old, mse_old, _, extra, res_old), mb_old, cpu_old = traced(
            run_start, s, args.epsilon, args.seed, args.cap)
        cpu_old *= extra  # the probes not run, at the rate of those run (1 when all ran)
        row = dict(m=s * s, grid=f"{s}x{s}", epsilon=args.epsilon, new_s=t_new,
                   new_cg_iterations=it_new, new_peak_traced_mb=mb_new,
                   new_truncation_radius=st.get("truncation_radius"), new_residual=st["residual"],
                   start_s=t_old, start_cg_iterations=it_old, start_peak_traced_mb=mb_old,
                   start_cpu_s=cpu_old, new_cpu_s=cpu_new, start_extrapolated=extra > 1,
                   start_residual=res_old, ratio_start_new=t_old / t_new,
                   ratio_cpu_start_new=cpu_old / cpu_new,
                   max_abs_dp=float(np.abs(p_new - p_old).max()),
                   mse_over_n=mse_new / s**2, mse_se_over_n=se_new / s**2,
                   dmse_over_se=abs(mse_new - mse_old) / se_new if extra == 1 else None)
        rows.append(row)
        dm = "-" if row["dmse_over_se"] is None else f"{row['dmse_over_se']:.1e}"
        print(f"{s * s:>9} {t_new:7.2f} {it_new:>4} {mb_new:6.0f} {t_old:8.2f}"
              f"{'*' if extra > 1 else ' '}{it_old:>5} {mb_old:6.0f} {t_old / t_new:6.1f} "
              f"{cpu_old / cpu_new:9.1f} {row['max_abs_dp']:8.1e} {dm:>8} {st['residual']:9.1e}",
              flush=True)
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"(* start path past the {args.cap:g} s cap: remaining probes extrapolated; "
          f"process peak RSS {rss:.0f} MB)")
    write_csv(OUT / "le_scale.csv", rows)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    m = [r["m"] for r in rows]
    ax.loglog(m, [r["new_s"] for r in rows], "o-", label="new (cut kernel, torus preconditioner)")
    ax.loglog(m, [r["start_s"] for r in rows], "s--", label="start (2H-1 FFT, T. Chan, scipy cg)")
    ax.axhline(30, color="grey", lw=0.5)
    ax.set_xlabel("m = cells")
    ax.set_ylabel("lpmech le --grid work (s)")
    ax.set_title(f"LE grid, epsilon = {args.epsilon:g}, {PROBES} probes")
    ax.legend(fontsize=8)
    ax2.semilogx(m, [r["ratio_start_new"] for r in rows], "o-")
    ax2.set_xlabel("m = cells")
    ax2.set_ylabel("time ratio start / new (same process)")
    fig.tight_layout()
    fig.savefig(OUT / "le_scale.png", dpi=120)
    print(f"wrote {OUT / 'le_scale.csv'} and {OUT / 'le_scale.png'}")


if __name__ == "__main__":
    main()
