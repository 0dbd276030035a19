"""OMG: our full-LP fast path (HiGHS simplex and IPM) against the peer qif, in the same run.

For each g×g unit grid (ε = 1 per cell, Euclidean loss, a random prior), time
``lpmech.models.omg.solve`` (fast path, dual simplex and interior point) and
``qif.mechanism.d_privacy.min_loss_given_d``; print the times, the ratio qif/ours and the
agreement of the objectives, and write ``benchmarks/results/omg_vs_qif.csv`` and ``.png``.

    python benchmarks/omg_vs_qif.py [--sizes 3 4 5 6 7] [--epsilon 1] [--seed 0]

qif is a test/benchmark dependency (``pip install -e ".[test]"``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from lpmech import instance as li
from lpmech.io import write_csv
from lpmech.models import omg

OUT = Path(__file__).resolve().parent / "results"


def qif_solve(inst, eps):
    from qif.mechanism import d_privacy

    d, L, p = inst.metric, inst.loss, inst.prior
    t0 = time.perf_counter()
    C = d_privacy.min_loss_given_d(p, inst.K, lambda i, j: eps * d[i, j], lambda i, j: L[i, j])
    return time.perf_counter() - t0, float((p[:, None] * L * C).sum())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[3, 4, 5, 6, 7])
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    OUT.mkdir(exist_ok=True)
    rows = []
    print(f"{'K':>5} {'simplex s':>10} {'ipm s':>10} {'qif s':>10} {'qif/ours':>9} "
          f"{'objective':>14} {'|ours-qif|/ours':>15} {'gap':>9}")
    for g in args.sizes:
        rng = np.random.default_rng(args.seed + g)
        inst = li.grid(g, g).with_prior(rng.dirichlet(np.ones(g * g)))
        t0 = time.perf_counter()
        simplex = omg.solve(inst, args.epsilon, method="full", algorithm="simplex")
        t_simplex = time.perf_counter() - t0
        t0 = time.perf_counter()
        ipm = omg.solve(inst, args.epsilon, method="full", algorithm="ipm")
        t_ipm = time.perf_counter() - t0
        t_qif, obj_qif = qif_solve(inst, args.epsilon)
        best = min(t_simplex, t_ipm)
        agree = abs(simplex.objective - obj_qif) / abs(simplex.objective)
        row = dict(K=inst.K, simplex_s=t_simplex, ipm_s=t_ipm, qif_s=t_qif, ratio_qif_ours=t_qif / best,
                   objective=simplex.objective, objective_ipm=ipm.objective, objective_qif=obj_qif,
                   rel_diff_qif=agree, gap=simplex.gap,
                   realized_epsilon=simplex.certificate.realized_epsilon)
        rows.append(row)
        print(f"{inst.K:>5} {t_simplex:>10.2f} {t_ipm:>10.2f} {t_qif:>10.2f} {t_qif / best:>9.2f} "
              f"{simplex.objective:>14.9f} {agree:>15.2e} {simplex.gap:>9.1e}", flush=True)
    write_csv(OUT / "omg_vs_qif.csv", rows)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    K = [r["K"] for r in rows]
    fig, ax = plt.subplots(figsize=(5, 4))
    for key, label in [("simplex_s", "lpmech fast path, dual simplex"),
                       ("ipm_s", "lpmech fast path, IPM"), ("qif_s", "qif min_loss_given_d")]:
        ax.loglog(K, [r[key] for r in rows], "o-", label=label)
    ax.set_xlabel("K (locations)")
    ax.set_ylabel("time (s)")
    ax.set_title(f"Full OMG LP, eps = {args.epsilon:g} per cell")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(OUT / "omg_vs_qif.png", dpi=120)
    print(f"wrote {OUT / 'omg_vs_qif.csv'} and {OUT / 'omg_vs_qif.png'}")


if __name__ == "__main__":
    main()
