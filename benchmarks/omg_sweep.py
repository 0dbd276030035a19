"""OMG (or LE LP (8)) robustness sweep (issue 12): every exact method across ε, metric families and
priors.

Cells: ε ∈ {0.05, 0.3, 1, 4, 10, 30} × metrics {grid, points, graph, latlon, neardup} × priors
{uniform, dirichlet, spiky} × methods {full, cutting-plane, decomposition, auto} at about ``--K``
locations (instance families: :mod:`lpmech.models.omg.omg_sweep`). For every (instance, ε) the raw full
LP (``omg.build_lp`` + HiGHS, no cleaning) is solved once as the reference and the baseline time;
each method's cell records status, time, time ratio against that baseline, objective, gap, realised ε
(the package certifier on the original points) and relative difference to the reference. A cell is
``ok`` iff it ends ``optimal`` with gap ≤ 1e-6, realised ε ≤ ε(1 + 1e-6) and the objective at
most 1e-6 above the reference's (absolute 1e-8·max loss for a near-zero optimum; below it is fine:
the mechanism is certified, so the reference was suboptimal, see ``omg_sweep.agree``); every
other cell is listed at the end. Writes ``benchmarks/results/omg_sweep.csv`` and a heatmap
``omg_sweep.png`` (one panel per method, rows metric/prior, columns ε; ``--name`` changes the stem).

    python benchmarks/omg_sweep.py --quick            # K = 16, ε ∈ {0.3, 4, 30}: about 15 s
    python benchmarks/omg_sweep.py --K 36             # the full grid of cells
    python benchmarks/omg_sweep.py --K 100 --methods cutting-plane decomposition --time-limit 300

``--model le`` (or ``benchmarks/le_sweep.py``) sweeps LE's LP (8)+(12) instead: methods full,
support, outputs of :func:`lpmech.models.le.solve` (``path="lp"``) and its default ``auto`` path
(LE when its dual test passes, else the LP), against the raw LP (8) with every row
(:func:`lpmech.models.le.build_lp` + HiGHS); losses are 0/1, so the absolute floor is 1e-8.
Support generation refuses coincident points (its co-location form differs from the loss
1[d > 0] there): that refusal is the expected answer, counted ok with status ``refused``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

from lpmech.errors import InputError
from lpmech.io import write_csv
from lpmech.models import le, omg
from lpmech.models.omg import omg_sweep as sw
from lpmech.plotting import save_figure

OUT = Path(__file__).resolve().parent / "results"


LE_METHODS = ("full", "support", "outputs", "auto")


def reference(inst, eps, model: str = "omg"):
    """(seconds, objective) of the raw full LP, or (seconds, None) if it does not solve."""
    t0 = time.perf_counter()
    lp = omg.build_lp(inst, eps) if model == "omg" else le.build_lp(inst, eps)
    res = lp.solve()
    t = time.perf_counter() - t0
    return t, (float(lp.c @ res.x) if res.status == "optimal" else None)


def le_cell(inst, eps, method, time_limit):
    """LE's cell: the LP (8) by ``method``, or ``auto``: :func:`lpmech.models.le.solve`'s default."""
    if method == "auto":
        return le.solve(inst, eps, time_limit=time_limit)
    return le.solve(inst, eps, path="lp", lp_method=method, time_limit=time_limit)


def cell(inst, eps, method, ref, args) -> dict:
    if args.model == "omg":
        return sw.run_cell(inst, eps, method, reference=ref, time_limit=args.time_limit)
    if method == "support" and le.has_coincident_points(inst.metric):  # the expected refusal
        t0 = time.perf_counter()
        try:
            le_cell(inst, eps, method, args.time_limit)
            refused = False
        except InputError:
            refused = True
        return {"K": inst.K, "epsilon": eps, "method": method,
                "status": "refused" if refused else "not_refused", "ok": refused,
                "time_s": time.perf_counter() - t0, "eps_ok": True, "error": ""}
    return sw.run_cell(inst, eps, method, reference=ref, time_limit=args.time_limit, solve=le_cell,
                       scale=1.0)


def run(args) -> list[dict]:
    rows = []
    for metric in args.metrics:
        for prior in args.priors:
            inst = sw.make_instance(metric, prior, args.K, args.seed)
            for eps in args.eps:
                t_ref, ref = reference(inst, eps, args.model)
                for method in args.methods:
                    row = cell(inst, eps, method, ref, args)
                    row = {"metric": metric, "prior": prior, **row, "reference_s": t_ref,
                           "ratio_vs_full_lp": row["time_s"] / t_ref if t_ref > 0 else math.nan}
                    rows.append(row)
                    print(f"{metric:8s} {prior:9s} K={inst.K:3d} eps={eps:<5g} {method:14s} "
                          f"{row['status']:15s} {row['time_s']:7.2f}s ({row['ratio_vs_full_lp']:6.2f}x "
                          f"full LP {t_ref:.2f}s) gap={_g(row.get('gap'))} "
                          f"eps_real={_g(row.get('realized_epsilon'), '.9g')} "
                          f"diff={_g(row.get('rel_diff'), '+.2e')} {'ok' if row['ok'] else 'FAIL'}",
                          flush=True)
    return rows


def _g(x, fmt=".2e"):
    return "-" if x is None else format(x, fmt)


def heatmap(rows, args, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    labels = [f"{m}/{p}" for m in args.metrics for p in args.priors]
    # 0 ok, 1 optimal but gap/agreement off, 2 certificate off, 3 error / limit
    cmap = ListedColormap(["#4caf50", "#ffb300", "#e53935", "#6d1b1b"])
    fig, axes = plt.subplots(1, len(args.methods), figsize=(3.2 * len(args.methods) + 1.5,
                                                            0.4 * len(labels) + 1.8),
                             squeeze=False, sharey=True)
    for ax, method in zip(axes[0], args.methods):
        code = np.full((len(labels), len(args.eps)), np.nan)
        for r in rows:
            if r["method"] != method:
                continue
            y = labels.index(f"{r['metric']}/{r['prior']}")
            x = list(args.eps).index(r["epsilon"])
            if r["status"] == "refused":
                c, text = 0, "refused"
            elif r["status"] != "optimal":
                c, text = 3, r["status"].replace("_", " ")[:10]
            elif not r["eps_ok"]:
                c, text = 2, f"ε {r['realized_epsilon']:.3g}"
            elif not r["ok"]:
                worst = np.nanmax([r.get("gap") or 0.0, r.get("rel_diff") or 0.0])  # > 0: above
                c, text = 1, f"{worst:.0e}"
            else:
                c, text = 0, f"{r['time_s']:.1f}s"
            code[y, x] = c
            ax.text(x, y, text, ha="center", va="center", fontsize=6)
        ax.imshow(code, cmap=cmap, vmin=0, vmax=3, aspect="auto")
        ax.set_xticks(range(len(args.eps)), [f"{e:g}" for e in args.eps])
        ax.set_yticks(range(len(labels)), labels, fontsize=7)
        ax.set_xlabel("ε")
        ax.set_title(method, fontsize=9)
    fig.suptitle(f"{args.model.upper()} sweep, K≈{args.K}: green ok (time), amber gap/agreement > 1e-6, "
                 "red realised ε > ε(1+1e-6), dark: status", fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--K", type=int, default=36, help="locations per instance (grid: nearest square)")
    ap.add_argument("--eps", type=float, nargs="+", default=list(sw.EPSILONS))
    ap.add_argument("--metrics", nargs="+", default=list(sw.METRICS), choices=sw.METRICS)
    ap.add_argument("--priors", nargs="+", default=list(sw.PRIORS), choices=sw.PRIORS)
    ap.add_argument("--model", choices=("omg", "le"), default="omg",
                    help="OMG, or LE's LP (8) (methods full, support, outputs, auto)")
    ap.add_argument("--methods", nargs="+", default=None,
                    choices=sorted(set(sw.METHODS) | set(LE_METHODS)),
                    help="default: every method of the model")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=120.0, help="seconds per cell")
    ap.add_argument("--quick", action="store_true", help="K = 16 and ε ∈ {0.3, 4, 30}")
    ap.add_argument("--name", default=None, help="file stem under benchmarks/results/ "
                    "(default: omg_sweep or le_sweep)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a cell is not ok")
    args = ap.parse_args(argv)
    allowed = sw.METHODS if args.model == "omg" else LE_METHODS
    if args.methods is None:
        args.methods = list(allowed)
    wrong = [m for m in args.methods if m not in allowed]
    if wrong:
        ap.error(f"--model {args.model} has no method {', '.join(wrong)}: use {', '.join(allowed)}")
    args.name = args.name or f"{args.model}_sweep"
    if args.quick:
        args.K, args.eps = 16, [0.3, 4.0, 30.0]
    OUT.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    rows = run(args)
    write_csv(OUT / f"{args.name}.csv", rows)
    heatmap(rows, args, OUT / f"{args.name}.png")
    bad = [r for r in rows if not r["ok"]]
    by_method = {m: [r for r in rows if r["method"] == m] for m in args.methods}
    print(f"\n{len(rows)} cells in {time.perf_counter() - t0:.0f}s; "
          + ", ".join(f"{m}: {sum(r['ok'] for r in rs)}/{len(rs)} ok, median "
                      f"{np.median([r['ratio_vs_full_lp'] for r in rs]):.2f}x the full LP's time"
                      for m, rs in by_method.items()))
    if bad:
        print(f"{len(bad)} cells NOT optimal with gap <= 1e-6, realised eps <= eps(1+1e-6) and "
              "the full LP's objective:")
        for r in bad:
            print(f"  {r['metric']}/{r['prior']} eps={r['epsilon']:g} {r['method']}: {r['status']} "
                  f"gap={_g(r.get('gap'))} gap_abs={_g(r.get('gap_abs'))} "
                  f"abs_diff={_g(r.get('abs_diff'), '+.2e')} "
                  f"eps_real={_g(r.get('realized_epsilon'), '.9g')} diff={_g(r.get('rel_diff'), '+.2e')} "
                  f"{r.get('error') or ''}")
    print(f"wrote {OUT / (args.name + '.csv')} and .png")
    return 1 if bad and args.strict else 0


if __name__ == "__main__":
    sys.exit(main())
