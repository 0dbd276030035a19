"""Seed 000 Fig. 5 on Gowalla check-ins: LE against RR, OU, EM and PL on a 100×100 grid (m = 10,000).

Data: each user's earliest check-in inside the bounding box (``lpmech.datasets.read_checkins``,
``first_per_user=True``), gridded into W×H cells (``grid_counts``: rows south→north, columns
west→east); distances in cells, Euclidean. The paper used the UK box (lat 50–55, lon −5–0) of the
full SNAP file; the shared data holds the New York subset, so the default is the NY box
(``--bbox uk`` needs the full file via ``--data``). Everything runs on the grid scale path, no
m×m matrix: LE via ``GridLE`` (FFT + conjugate gradients), EM (ε/2) rows formed on the fly with
its estimator diag(Z)·K⁻¹ (K the same block-Toeplitz kernel at ε/2, CG), RR/OU in closed form,
PL sampled continuously and snapped (raw counts). Empirical Error_range at r = 0 and MSE_freq/n
= Σ_k (ĉ_k − c*_k)²/n, averaged over ``--repeats`` draws of the reports; LE's theoretical (6) and
RR/OU's (22) are printed beside them.

Writes ``benchmarks/results/le_gowalla.csv`` and ``.png``.

    python benchmarks/le_gowalla.py [--data FILE] [--bbox ny|uk] [--size 100] [--eps 1 2 3 4 5]
"""

from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path

import numpy as np

from lpmech import datasets, estimation
from lpmech.io import write_csv
from lpmech.models import baselines
from lpmech.models.le import GridLE

OUT = Path(__file__).resolve().parent / "results"
COLORS = {"LE": "C0", "EM": "C1", "RR": "C2", "OU": "C3", "PL": "C4"}
DATA = Path(os.environ.get("LPMECH_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
DEFAULT_FILE = DATA / "gowalla" / "loc-gowalla_totalCheckins.sample.txt.gz"


def sample_rows(W, H, cstar, weight_row, rng, block=256):
    """Reported counts when the c*_x users at cell x report k with probability ∝ weight_row(d_x·)."""
    m = W * H
    ys, xs = np.divmod(np.arange(m), W)
    cells = np.flatnonzero(cstar)
    out = np.zeros(m)
    N_diag = 0
    for a in range(0, cells.size, block):
        x = cells[a:a + block]
        d = np.hypot(xs[x, None] - xs[None], ys[x, None] - ys[None])
        w = weight_row(x, d)
        w /= w.sum(axis=1, keepdims=True)
        N = rng.multinomial(cstar[x].astype(np.int64), w)
        out += N.sum(axis=0)
        N_diag += N[np.arange(x.size), x].sum()
    return out, N_diag


def run(W, H, cstar, eps, rng, repeats):
    m, n = W * H, cstar.sum()
    rows = []

    def record(mech, errs, mses, secs, err_t=None, mse_t=None):
        rows.append(dict(mech=mech, eps=eps, m=m, n=int(n), err_e=float(np.mean(errs)) if errs else None,
                         mse_e=float(np.mean(mses)), err_t=err_t, mse_t=mse_t, time_s=secs))

    # LE
    t0 = time.perf_counter()
    g = GridLE(W, H, eps)
    errs, mses = [], []
    for _ in range(repeats):
        c, diag = sample_rows(W, H, cstar, lambda x, d: np.exp(-eps * d) * g.p[None, :], rng)
        errs.append(1 - diag / n)
        mses.append(np.sum((g.estimate(c) - cstar) ** 2) / n)
    record("LE", errs, mses, time.perf_counter() - t0, err_t=g.range_error(cstar, 0.0))
    # EM at eps/2: P = diag(1/Z) K, K = exp(-eps d / 2); estimator diag(Z) K^-1 c
    t0 = time.perf_counter()
    k = GridLE(W, H, eps / 2, check=False)  # only its kernel products and solves are used
    Z = k.matvec(np.ones(m))
    errs, mses = [], []
    for _ in range(repeats):
        c, diag = sample_rows(W, H, cstar, lambda x, d: np.exp(-0.5 * eps * d), rng)
        errs.append(1 - diag / n)
        mses.append(np.sum((Z * k.solve(c) - cstar) ** 2) / n)
    record("EM", errs, mses, time.perf_counter() - t0)
    # RR (GRR, denominator e^eps + m - 1)
    t0 = time.perf_counter()
    a, b = estimation.grr_ab(eps, m)
    true = np.repeat(np.arange(m), cstar.astype(np.int64))
    errs, mses = [], []
    for _ in range(repeats):
        keep = rng.random(true.size) < a
        other = rng.integers(0, m - 1, true.size)
        other += other >= true
        rep = np.where(keep, true, other)
        errs.append(float(np.mean(rep != true)))
        c = np.bincount(rep, minlength=m)
        mses.append(np.sum(((c - n * b) / (a - b) - cstar) ** 2) / n)
    record("RR", errs, mses, time.perf_counter() - t0, err_t=1 - a, mse_t=estimation.mse_grr(n, m, a, b) / n)
    # OU
    t0 = time.perf_counter()
    o = baselines.oue(eps, m)
    mses = [np.sum((o.estimate(o.sample_counts(cstar.astype(np.int64), rng), n) - cstar) ** 2) / n
            for _ in range(repeats)]
    record("OU", [], mses, time.perf_counter() - t0, mse_t=o.mse(n) / n)
    # PL, raw counts
    t0 = time.perf_counter()
    errs, mses = [], []
    for _ in range(repeats):
        r, c = baselines.planar_laplace_sample(true // W, true % W, W, H, eps, rng)
        rep = r * W + c
        errs.append(float(np.mean(rep != true)))
        mses.append(np.sum((np.bincount(rep, minlength=m) - cstar) ** 2) / n)
    record("PL", errs, mses, time.perf_counter() - t0)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_FILE)
    ap.add_argument("--bbox", choices=["ny", "uk"], default="ny")
    ap.add_argument("--size", type=int, default=100, help="grid is size x size (default 100)")
    ap.add_argument("--eps", type=float, nargs="+", default=[1, 2, 3, 4, 5])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if not args.data.is_file():
        raise SystemExit(f"Gowalla file not found: {args.data} (pass --data or set LPMECH_DATA)")
    OUT.mkdir(exist_ok=True)
    bbox = datasets.GOWALLA_NY_BBOX if args.bbox == "ny" else datasets.GOWALLA_UK_BBOX
    t0 = time.perf_counter()
    d = datasets.read_checkins(args.data, bbox=bbox, first_per_user=True)
    W = H = args.size
    cstar = datasets.grid_counts(d["lat"], d["lon"], W, H, bbox).ravel().astype(float)
    n = cstar.sum()
    top5 = np.sort(cstar)[-5:].sum() / n
    print(f"{args.data.name}: {int(n)} users in bbox {bbox}, {W}x{H} grid, "
          f"{int((cstar > 0).sum())} non-empty cells, top-5 cells hold {top5:.1%} "
          f"(paper, UK: ~25%); read in {time.perf_counter() - t0:.1f} s")
    rng = np.random.default_rng(args.seed)
    rows = []
    print(f"{'eps':>4} {'mech':>4} {'Err emp':>8} {'Err theory':>10} {'MSE/n emp':>10} {'MSE/n theory':>12} "
          f"{'time s':>7}")
    for eps in args.eps:
        for row in run(W, H, cstar, eps, rng, args.repeats):
            rows.append(row)

            def f(v, spec):
                return format(v, spec) if v is not None else "-".rjust(len(format(0.0, spec)))

            print(f"{eps:>4g} {row['mech']:>4} {f(row['err_e'], '8.4f')} {f(row['err_t'], '10.4f')} "
                  f"{row['mse_e']:10.4g} {f(row['mse_t'], '12.4g')} {row['time_s']:7.2f}", flush=True)
    write_csv(OUT / "le_gowalla.csv", rows)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for mech in ("LE", "EM", "RR", "OU", "PL"):
        r = [x for x in rows if x["mech"] == mech]
        if r[0]["err_e"] is not None:
            axes[0].plot([x["eps"] for x in r], [x["err_e"] for x in r], "o-", ms=3, label=mech,
                         color=COLORS[mech])
        axes[1].plot([x["eps"] for x in r], [x["mse_e"] for x in r], "o-", ms=3, label=mech,
                     color=COLORS[mech])
    axes[0].set_title(f"Gowalla {args.bbox.upper()}, m={W * H}: Error_range (r=0)", fontsize=9)
    axes[1].set_title(f"Gowalla {args.bbox.upper()}, m={W * H}: MSE_freq/n", fontsize=9)
    axes[1].set_yscale("log")
    for ax in axes:
        ax.set_xlabel("eps")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(OUT / "le_gowalla.png", dpi=110)
    print(f"wrote {OUT / 'le_gowalla.csv'} and {OUT / 'le_gowalla.png'}")
    assert math.isfinite(n)


if __name__ == "__main__":
    main()
