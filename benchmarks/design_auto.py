"""What ``method="auto"`` picks for Geo-Ind ∧ LIP, against both paths, across priors and ε_LIP.

For each prior (the Gowalla NYC check-in prior on a W×W grid, and Dirichlet(α) priors, seed
``--seed``, for each ``--alpha``) and each ``--eps-lip``, the notion Geo-Ind(ε) ∧ LIP(ε_LIP) is
solved through ``lpmech.design.solve`` by output generation and by the decomposition, alternating
which runs first, both certified; prints each time, their ratio, the prior's participation ratio
1/Σp² (as a share of K), the path ``auto`` picks (:func:`lpmech.design.engine.choose_method`) and
whether it is the faster one (or within 1.2× of it). The two optima are compared. Writes
``benchmarks/results/design_auto.csv`` and ``.png`` (time ratio against participation ratio).

    python benchmarks/design_auto.py [--size 10] [--eps-lip 1.5 2] [--alpha 0.1 0.3 0.5 1]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from design_composed import add_prior_options, sweep_priors

from lpmech.design import LIP, DPrivacy, Problem, solve
from lpmech.design.engine import choose_method
from lpmech.errors import LpmechError
from lpmech.io import write_csv
from lpmech.plotting import save_figure

OUT = Path(__file__).resolve().parent / "results"


def timed(notion, prior, loss, method, time_limit):
    t0 = time.perf_counter()
    try:
        res = solve(notion, prior=prior, loss=loss, method=method, time_limit=time_limit)
    except LpmechError as exc:  # a time limit: the best certified mechanism and bound, if any
        got = getattr(exc, "result", None)
        best = "" if got is None or got.bound is None or got.objective is None else \
            f", objective {got.objective:.6g}, bound {got.bound:.6g}"
        return time.perf_counter() - t0, None, type(exc).__name__ + best
    return time.perf_counter() - t0, res, res.status


def plot(rows, path: Path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for e in sorted({r["eps_lip"] for r in rows}):
        got = sorted((r["participation"], r["ratio"]) for r in rows if r["eps_lip"] == e)
        ax.loglog(*zip(*got), "o-", label=f"ε_LIP = {e:g}")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set_xlabel("participation ratio 1/Σp² ÷ K")
    ax.set_ylabel("decomposition time ÷ output-generation time")
    ax.legend()
    fig.tight_layout()
    save_figure(fig, path)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_prior_options(ap, [0.1, 0.3, 0.5, 1.0])
    ap.add_argument("--eps", type=float, default=1.0, help="Geo-Ind ε per cell")
    ap.add_argument("--eps-lip", type=float, nargs="+", default=[1.5, 2.0])
    ap.add_argument("--name", default="design_auto")
    args = ap.parse_args(argv)
    priors = sweep_priors(args)
    OUT.mkdir(parents=True, exist_ok=True)
    rows, c = [], 0
    verdict = {True: "ok", False: "SLOWER", None: "neither certified"}
    for e in args.eps_lip:
        for label, inst in priors:
            notion = DPrivacy(inst, args.eps) & LIP(inst.prior, e)
            auto = choose_method(Problem.make(notion, prior=inst.prior, loss=inst.loss))
            order = ("outputs", "decomposition")[::1 if c % 2 == 0 else -1]
            c += 1
            got = {m: timed(notion, inst.prior, inst.loss, m, args.time_limit)
                   for m in dict.fromkeys((*order, auto))}  # "full" for a small K·n
            (t_out, out, s_out), (t_dec, dec, s_dec) = got["outputs"], got["decomposition"]
            part = 1.0 / float(np.sum(inst.prior ** 2)) / inst.K
            faster = "outputs" if t_out <= t_dec else "decomposition"
            row = dict(prior=label, eps_lip=e, K=inst.K, participation=part, outputs_s=t_out,
                       outputs_status=s_out, decomposition_s=t_dec, decomposition_status=s_dec,
                       ratio=t_dec / t_out, auto=auto, faster=faster,
                       auto_ok=(None if out is None and dec is None  # neither certified
                                else got[auto][1] is not None and got[auto][0] <= 1.2 * min(t_out, t_dec)),
                       objective=None if out is None else out.objective,
                       diff=None if out is None or dec is None else abs(out.objective - dec.objective))
            rows.append(row)
            write_csv(OUT / f"{args.name}.csv", rows)
            print(f"eps_LIP {e:g}, {label} (1/Σp² = {part:.3f} K): outputs {t_out:.1f} s ({s_out}), "
                  f"decomposition {t_dec:.1f} s ({s_dec}), ratio dec/out {row['ratio']:.2f}; auto "
                  f"picks {auto}: {verdict[row['auto_ok']]}"
                  + ("" if row["diff"] is None else f", |diff| {row['diff']:.1e}"), flush=True)
    plot(rows, OUT / f"{args.name}.png")
    ok = sum(r["auto_ok"] is True for r in rows)
    both = sum(r["auto_ok"] is not None for r in rows)
    print(f"auto within 1.2x of the faster path in {ok}/{both} cases either path certified; wrote "
          f"{OUT / (args.name + '.csv')} and .png")


if __name__ == "__main__":
    main()
