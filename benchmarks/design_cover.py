"""The decomposition with the master's unit rows as Σ ≥ 1 first (covering rows) against Σ = 1, on
Geo-Ind ∧ LIP.

For each prior (the Gowalla NYC check-in prior on a W×W grid, and Dirichlet(α) priors, seed
``--seed``, for each ``--alpha``), each Geo-Ind ``--eps`` and each ``--eps-lip``, the notion
Geo-Ind(ε) ∧ LIP(ε_LIP) is solved through ``lpmech.design.solve(method="decomposition")`` with
``cover=True`` and ``cover=False``, alternating which runs first, both certified; prints both times,
rounds and the ratio off ÷ on, and checks that the two optima agree (``--strict``: exit 1 when they
do not, or a solve fails). Writes ``benchmarks/results/design_cover.csv`` and ``.png``.

    python benchmarks/design_cover.py [--size 10] [--eps 1] [--eps-lip 1.5 2 3] [--alpha 0.1 1]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from design_composed import add_prior_options, sweep_priors

from lpmech.design import LIP, DPrivacy, solve
from lpmech.errors import LpmechError
from lpmech.io import write_csv
from lpmech.plotting import save_figure

OUT = Path(__file__).resolve().parent / "results"


def timed(notion, prior, loss, cover, time_limit):
    t0 = time.perf_counter()
    try:
        res = solve(notion, prior=prior, loss=loss, method="decomposition", cover=cover,
                    time_limit=time_limit)
    except LpmechError as exc:  # a time limit: no certified optimum to compare
        return time.perf_counter() - t0, None, type(exc).__name__
    return time.perf_counter() - t0, res, res.status


def plot(rows, path: Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for eps in sorted({r["eps"] for r in rows}):
        got = [r for r in rows if r["eps"] == eps and r["ratio"] is not None]
        ax.semilogy([r["eps_lip"] for r in got], [r["ratio"] for r in got], "o",
                    label=f"Geo-Ind ε = {eps:g}")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xlabel("ε_LIP")
    ax.set_ylabel("time with Σ = 1 ÷ time with covering rows")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_prior_options(ap, [0.1, 1.0])
    ap.add_argument("--eps", type=float, nargs="+", default=[1.0], help="Geo-Ind ε per cell")
    ap.add_argument("--eps-lip", type=float, nargs="+", default=[1.5, 2.0, 3.0])
    ap.add_argument("--strict", action="store_true", help="exit 1 unless every pair agrees")
    ap.add_argument("--name", default="design_cover")
    args = ap.parse_args(argv)
    priors = sweep_priors(args)
    OUT.mkdir(parents=True, exist_ok=True)
    rows, bad = [], 0
    for eps in args.eps:
        for e in args.eps_lip:
            for label, inst in priors:
                notion = DPrivacy(inst, eps) & LIP(inst.prior, e)
                order = (True, False)[::1 if len(rows) % 2 == 0 else -1]
                got = {cover: timed(notion, inst.prior, inst.loss, cover, args.time_limit)
                       for cover in order}
                (t_on, on, s_on), (t_off, off, s_off) = got[True], got[False]
                diff = None if on is None or off is None else abs(on.objective - off.objective)
                agree = diff is not None and diff <= 1e-6 * max(1.0, abs(off.objective))
                bad += not agree
                row = dict(prior=label, eps=eps, eps_lip=e, K=inst.K, cover_s=t_on,
                           cover_status=s_on, cover_rounds=None if on is None else on.stats["rounds"],
                           covered_until=None if on is None else on.stats.get("covered_until"),
                           equality_s=t_off, equality_status=s_off,
                           equality_rounds=None if off is None else off.stats["rounds"],
                           ratio=t_off / t_on if on is not None and off is not None else None,
                           objective=None if off is None else off.objective, diff=diff)
                rows.append(row)
                write_csv(OUT / f"{args.name}.csv", rows)
                print(f"eps {eps:g}, eps_LIP {e:g}, {label}: covering {t_on:.1f} s "
                      f"({s_on}, {row['cover_rounds']} rounds), equality {t_off:.1f} s "
                      f"({s_off}, {row['equality_rounds']} rounds)"
                      + ("" if row["ratio"] is None else f", ratio {row['ratio']:.2f}")
                      + ("" if diff is None else f", |diff| {diff:.1e}"), flush=True)
    plot(rows, OUT / f"{args.name}.png")
    ratios = [r["ratio"] for r in rows if r["ratio"] is not None]
    if ratios:
        print(f"equality ÷ covering: median {np.median(ratios):.2f}, range "
              f"{min(ratios):.2f}–{max(ratios):.2f} over {len(ratios)} cells; wrote "
              f"{OUT / (args.name + '.csv')} and .png")
    if args.strict and bad:
        print(f"{bad} cell(s) without two agreeing certified optima", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
