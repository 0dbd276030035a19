"""Seed 000 Figs. 1–4 on synthetic data: LE against RR, OU, EM and PL, theory and experiment.

Settings (spec seed000 §5.2 and §6.2): n = 10·m users on a random 20% of the domain (each user
assigned uniformly at random among the ⌈0.2·m⌉ support cells), regenerated
with the reports on each of ``--repeats`` repeats (default 5); 1-D domain {1..m} with |i−j|, 2-D
√m×√m unit grid with the Euclidean metric. Theory uses the realised c* of each repeat ((6), (20));
the columns ``*_uniform`` give the theory under uniform data, the setting of the spec's reference
tables (§5.6), for a direct check. RR = GRR with denominator e^ε + m − 1; OU = OUE (frequency
only); EM = exponential mechanism at ε/2 with the inversion estimator; PL = planar Laplace sampled
continuously and snapped/clamped to the grid, raw counts (2-D only, empirical only).

* Fig. 1: ε varies, m = 100 (1-D: ε ∈ {0.1, …, 5}; 2-D: ε ≥ 1, LE's precondition).
* Fig. 2: m varies (1-D at ε = 0.5; 2-D at ε = 2).
* Fig. 3: the range radius r varies (2-D 10×10, ε ∈ {1, 2}).
* Fig. 4: 1-D m = 200, n = 2000, uniform vs sparse data (two cells, 50 and 150), with and without
  the estimator (theory; raw-count MSE from spec §3.2).

Writes ``benchmarks/results/le_figs.csv`` and ``le_fig1.png`` … ``le_fig4.png``.

    python benchmarks/le_figs.py [--figs 1 2 3 4] [--repeats 5] [--seed 0] [--quick]
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from lpmech import estimation as est
from lpmech.instance import grid, line
from lpmech.io import write_csv
from lpmech.models import baselines
from lpmech.models import le as L

OUT = Path(__file__).resolve().parent / "results"
COLORS = {"LE": "C0", "EM": "C1", "RR": "C2", "OU": "C3", "PL": "C4"}
MATRIX_MECHS = ("LE", "EM", "RR")


def sparse_data(m, n, rng, share=0.2):
    c = np.zeros(m)
    support = rng.choice(m, max(1, math.ceil(share * m)), replace=False)
    np.add.at(c, support[rng.integers(0, support.size, n)], 1)
    return c


def le_matrix(inst, eps):
    """Certified LE; where e^(-eps d) underflows (1-D m=200 at eps=4) the grid path on a 1×m
    Manhattan grid (analytic certificate, Prop. 1) and its dense matrix with exact zeros."""
    if inst.kind == "line" and eps * inst.metric.max() > 700:
        g = L.GridLE(inst.K, 1, eps, metric="manhattan")
        assert g.certificate.satisfied
        return g.dense()
    return L.le(inst, eps).matrix


def matrices(inst, eps):
    return {"LE": le_matrix(inst, eps), "EM": baselines.exponential(inst, eps).matrix,
            "RR": baselines.randomized_response_dprivate(inst, eps).matrix}


def evaluate(inst, eps, rng, repeats, r=0.0, two_d=False, mats=None):
    """Rows (one per mechanism) with theory/empirical Error_range at r and MSE/n, averaged."""
    m = inst.K
    n = 10 * m
    mats = matrices(inst, eps) if mats is None else mats
    uniform = np.full(m, n / m)
    acc = {k: {"err_t": [], "err_e": [], "mse_t": [], "mse_e": []} for k in (*mats, "OU", "PL")}
    oue = baselines.oue(eps, m)
    ball = inst.metric <= r + 1e-9
    for _ in range(repeats):
        c = sparse_data(m, n, rng)
        for k, P in mats.items():
            N, counts = est.reported_counts(P, c, rng)
            acc[k]["err_t"].append(est.range_error(P, c, inst.metric, r))
            acc[k]["err_e"].append(1 - (N * ball).sum() / n)
            acc[k]["mse_t"].append(est.mse_theory(P, c) / n)
            acc[k]["mse_e"].append(np.sum((est.estimate_counts(P, counts) - c) ** 2) / n)
        acc["OU"]["mse_t"].append(oue.mse(n) / n)
        chat = oue.estimate(oue.sample_counts(c.astype(int), rng), n)
        acc["OU"]["mse_e"].append(np.sum((chat - c) ** 2) / n)
        if two_d:
            W = inst.shape[0]
            true = np.repeat(np.arange(m), c.astype(int))
            rr, cc = baselines.planar_laplace_sample(true // W, true % W, W, inst.shape[1], eps, rng)
            rep = rr * W + cc
            acc["PL"]["err_e"].append(float(np.mean(inst.metric[true, rep] > r + 1e-9)))
            acc["PL"]["mse_e"].append(np.sum((np.bincount(rep, minlength=m) - c) ** 2) / n)
    rows = []
    for k, a in acc.items():
        if not a["mse_e"]:
            continue
        row = {"mech": k, "m": m, "eps": eps, "r": r, "n": n, "repeats": repeats}
        for key in ("err_t", "err_e", "mse_t", "mse_e"):
            row[key] = float(np.mean(a[key])) if a[key] else None
        if k in mats:
            row["err_t_uniform"] = est.range_error(mats[k], uniform, inst.metric, r)
            row["mse_t_uniform"] = est.mse_theory(mats[k], uniform) / n
        elif k == "OU":
            row["err_t_uniform"], row["mse_t_uniform"] = None, oue.mse(n) / n
        else:
            row["err_t_uniform"] = row["mse_t_uniform"] = None
        rows.append(row)
    return rows


def fig4(eps_list):
    m, n = 200, 2000
    inst = line(m)
    uniform = np.full(m, n / m)
    sparse = np.zeros(m)
    sparse[[50, 150]] = n / 2
    rows = []
    for eps in eps_list:
        mats = matrices(inst, eps)
        p, q = est.oue_ab(eps)
        for data, c in (("uniform", uniform), ("sparse", sparse)):
            for k, P in mats.items():
                rows.append({"fig": 4, "mech": k, "m": m, "eps": eps, "n": n, "data": data,
                             "mse_t": est.mse_theory(P, c) / n, "mse_raw_t": est.mse_raw(P, c) / n})
            raw_ou = np.sum(c / 4 + (n - c) * q * (1 - q) + ((n - c) * q - c / 2) ** 2) / n
            rows.append({"fig": 4, "mech": "OU", "m": m, "eps": eps, "n": n, "data": data,
                         "mse_t": est.mse_grr(n, m, p, q) / n, "mse_raw_t": raw_ou})
    return rows


def plot(rows, OUTDIR):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def panel(ax, sub, x, y, title, logy=False):
        for mech in ("LE", "EM", "RR", "OU", "PL"):
            r = [row for row in sub if row["mech"] == mech and row.get(y) is not None]
            if r:
                ax.plot([row[x] for row in r], [row[y] for row in r], "o-", label=mech, ms=3,
                        color=COLORS[mech])
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(x)
        if logy:
            ax.set_yscale("log")
        ax.legend(fontsize=7)

    for fig_no, x in ((1, "eps"), (2, "m"), (3, "r")):
        sub = [row for row in rows if row.get("fig") == fig_no]
        if not sub:
            continue
        dims = sorted({row["dim"] for row in sub})
        fig, axes = plt.subplots(len(dims), 2, figsize=(9, 3.2 * len(dims)), squeeze=False)
        for a, dim in enumerate(dims):
            s = [row for row in sub if row["dim"] == dim]
            if fig_no == 3:  # one panel per epsilon
                for b, eps in enumerate(sorted({row["eps"] for row in s})[:2]):
                    panel(axes[a, b], [row for row in s if row["eps"] == eps], x, "err_e",
                          f"Fig. 3 {dim}: Error_range (empirical), eps={eps:g}")
                continue
            panel(axes[a, 0], s, x, "err_e", f"Fig. {fig_no} {dim}: Error_range (empirical)")
            panel(axes[a, 1], s, x, "mse_e", f"Fig. {fig_no} {dim}: MSE_freq/n (empirical)", True)
        fig.tight_layout()
        fig.savefig(OUTDIR / f"le_fig{fig_no}.png", dpi=110)
        plt.close(fig)
    sub = [row for row in rows if row.get("fig") == 4]
    if sub:
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
        for ax, data in zip(axes, ("uniform", "sparse")):
            for mech in ("LE", "EM", "RR", "OU"):
                r = [row for row in sub if row["mech"] == mech and row["data"] == data]
                ax.plot([row["eps"] for row in r], [row["mse_t"] for row in r], "o-", ms=3,
                        color=COLORS[mech], label=f"{mech} est.")
                ax.plot([row["eps"] for row in r], [row["mse_raw_t"] for row in r], "x--", ms=3,
                        color=COLORS[mech], label=f"{mech} raw")
            ax.set_yscale("log")
            ax.set_title(f"Fig. 4: 1-D m=200, {data} data, MSE_freq/n", fontsize=9)
            ax.set_xlabel("eps")
            ax.legend(fontsize=6, ncol=2)
        fig.tight_layout()
        fig.savefig(OUTDIR / "le_fig4.png", dpi=110)
        plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--figs", type=int, nargs="+", default=[1, 2, 3, 4])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="small grids (smoke run)")
    args = ap.parse_args(argv)
    OUT.mkdir(exist_ok=True)
    rng = np.random.default_rng(args.seed)
    rows: list[dict] = []
    t0 = time.perf_counter()
    q = args.quick
    if 1 in args.figs:
        for eps in [0.1, 0.25, 0.5, 1, 2, 3, 4, 5]:
            rows += [{"fig": 1, "dim": "1-D", **r} for r in evaluate(line(100), eps, rng, args.repeats)]
        for eps in [1, 1.5, 2, 3, 4, 5]:
            rows += [{"fig": 1, "dim": "2-D", **r}
                     for r in evaluate(grid(10, 10), eps, rng, args.repeats, two_d=True)]
    if 2 in args.figs:
        for m in [25, 50, 100, 200] if q else [25, 50, 100, 200, 400, 800]:
            rows += [{"fig": 2, "dim": "1-D", **r} for r in evaluate(line(m), 0.5, rng, args.repeats)]
        for s in [5, 7, 10] if q else [5, 7, 10, 15, 20, 30]:
            rows += [{"fig": 2, "dim": "2-D", **r}
                     for r in evaluate(grid(s, s), 2.0, rng, args.repeats, two_d=True)]
    if 3 in args.figs:
        g = grid(10, 10)
        for eps in (1.0, 2.0):
            mats = matrices(g, eps)
            for r in [0, 1, math.sqrt(2), 2, math.sqrt(5), 3, 4, 5]:
                rows += [{"fig": 3, "dim": "2-D", **x}
                         for x in evaluate(g, eps, rng, args.repeats, r=r, two_d=True, mats=mats)
                         if x["mech"] != "OU"]
    if 4 in args.figs:
        rows += fig4([0.5, 1, 2, 4])
    keys = ["fig", "dim", "mech", "m", "eps", "r", "n", "repeats", "data", "err_t", "err_e", "mse_t",
            "mse_e", "err_t_uniform", "mse_t_uniform", "mse_raw_t"]
    write_csv(OUT / "le_figs.csv", [{k: row.get(k) for k in keys} for row in rows])
    plot(rows, OUT)
    print(f"{'fig':>3} {'dim':>4} {'mech':>4} {'m':>4} {'eps':>5} {'r':>5} {'Err theory':>10} "
          f"{'Err emp':>8} {'MSE/n theory':>12} {'MSE/n emp':>10} {'Err unif':>8} {'MSE/n unif':>10}")

    def f(v, spec):
        return format(v, spec) if v is not None else "-".rjust(len(format(0.0, spec)))

    for row in rows:
        if row["fig"] == 4:
            continue
        print(f"{row['fig']:>3} {row['dim']:>4} {row['mech']:>4} {row['m']:>4} {row['eps']:>5.3g} "
              f"{row['r']:>5.3g} {f(row['err_t'], '10.4f')} {f(row['err_e'], '8.4f')} "
              f"{f(row['mse_t'], '12.4g')} {f(row['mse_e'], '10.4g')} {f(row['err_t_uniform'], '8.4f')} "
              f"{f(row['mse_t_uniform'], '10.4g')}")
    print("\nFig. 4 (1-D m=200, n=2000, theory): MSE_freq/n with estimator / raw counts")
    for row in rows:
        if row["fig"] == 4:
            print(f"  eps={row['eps']:<4g} {row['mech']:>3} {row['data']:>8}: {row['mse_t']:10.4g} / "
                  f"{row['mse_raw_t']:10.4g}")
    print(f"wrote {OUT / 'le_figs.csv'} and le_fig*.png in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
