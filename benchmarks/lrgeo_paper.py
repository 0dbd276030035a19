"""LR-Geo (seed 002 §5): Tables 1–2, Fig. 9, Fig. 10(a), Figs 11–12 on the Rome road grid.

    python benchmarks/lrgeo_paper.py [--rome-dir ../shared/data/rome] [--only table fig9 fig10a fig11]

Without the Rome data (``--rome-dir`` missing or absent) the synthetic road grid of the same shape
is used. Sub-benchmarks (each writes ``benchmarks/results/lrgeo_<name>.csv`` and ``.png``):

* ``table``  — Tables 1 and 2: time (s) and expected cost (km) by method for K in ``--Ks``:
  LR-Geo (Benders, process pool), LR-Geo-F (γ = ∞), LP (the full OMG LP with every row, as in
  the paper; K ≤ ``--lp-max-K``), ConstOPT
  (K ≤ ``--constopt-max-K``), Laplace (snap, Monte Carlo), ExpMech (distance d), lower bound.
  The K locations are the K cells nearest the grid centre (the paper does not say; a random
  sample leaves the Geo-Ind graph disconnected at any γ that keeps the LPs small).
* ``fig9``   — LR-Geo time against K (up to the whole grid) and against the number of users.
* ``fig10a`` — approximation ratio (LR-Geo objective / relaxed lower bound (29)–(30)) against Γ,
  for the "nearest" and the "random" (authors' code) LR-set selections.
* ``fig11``  — GV ratio (32) and GVE (33) across users against the number of users (Figs 11–12).

Expected cost = the mean over users of Σ_k z_{m,k} E_l|tc(v_m, v_l) − tc(v_k, v_l)| for the row the
user samples from (targets uniform over the K cells), the same quantity for every method. Times are
wall-clock on this machine, all methods in one process run (speed-ups are ratios within the run).
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time
from pathlib import Path

import numpy as np

from lpmech import datasets as ds
from lpmech.io import write_csv
from lpmech.models import baselines, lrgeo, omg

OUT = Path(__file__).resolve().parent / "results"
DEFAULT_ROME = Path(__file__).resolve().parents[2] / "shared" / "data" / "rome"
log = logging.getLogger("lpmech.benchmarks.lrgeo")


def load_grid(rome_dir):
    if rome_dir is not None and (Path(rome_dir) / ds.ROME_NODES).is_file():
        return ds.read_rome(rome_dir)
    print("Rome data not found: using the synthetic road grid")
    return ds.synthetic_road_grid(rng=np.random.default_rng(0))


def central(grid, K: int):
    """The K cells nearest the grid's centre cell."""
    centre = int(np.argmin(np.linalg.norm(grid.coords - grid.coords.mean(0), axis=1)))
    return grid.subset(np.sort(np.argsort(grid.metric[centre], kind="stable")[:K]))


def own_cost(L, rows, Z):
    return float(np.mean([L[u] @ Z[i] for i, u in enumerate(rows)]))


def write(name, rows):
    OUT.mkdir(exist_ok=True)
    write_csv(OUT / f"lrgeo_{name}.csv", rows)


def fig(name, draw):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lpmech.plotting import save_figure

    f, ax = plt.subplots(1, draw.__code__.co_argcount, figsize=(5 * draw.__code__.co_argcount, 3.6))
    draw(*np.atleast_1d(ax))
    f.tight_layout()
    save_figure(f, OUT / f"lrgeo_{name}.png")
    plt.close(f)


def table(grid, args, P):
    rows = []
    for K in args.Ks:
        sub = central(grid, K)
        inst = sub.instance(gamma=P.gamma)
        L = inst.loss
        for rep in range(args.reps):
            rng = np.random.default_rng(1000 * K + rep)
            users = np.sort(rng.choice(K, args.users, replace=False))
            rec = {"K": K, "rep": rep}

            t0 = time.perf_counter()
            r = lrgeo.solve(sub, users, P, executor=args.executor, relaxed_bound=False)
            rec["LR-Geo_s"] = time.perf_counter() - t0
            rec["LR-Geo_cost"] = own_cost(L, users, lrgeo.user_rows(r))
            rec["LR-Geo_iterations"] = r.stats["iterations"]
            rec["LR-Geo_objective"] = r.stats["cost"] / len(users)
            s = lrgeo.build_structure(sub, users, P)
            rec["lower_bound"] = lrgeo.solve_relaxed(s) / len(users)

            t0 = time.perf_counter()
            rf = lrgeo.solve(sub, users, P.replace(gamma=float("inf")), executor=args.executor,
                             relaxed_bound=False)
            rec["LR-Geo-F_s"] = time.perf_counter() - t0
            rec["LR-Geo-F_cost"] = own_cost(L, users, lrgeo.user_rows(rf))

            rec["LP_s"] = rec["LP_cost"] = None
            if K <= args.lp_max_K:
                t0 = time.perf_counter()
                o = omg.solve(inst, P.epsilon, method="full", reduce=False, time_limit=args.time_limit)
                rec["LP_s"] = time.perf_counter() - t0
                rec["LP_cost"] = own_cost(L, users, o.mechanism.matrix[users])
            rec["ConstOPT_s"] = rec["ConstOPT_cost"] = None
            if K <= args.constopt_max_K:
                t0 = time.perf_counter()
                c = lrgeo.constopt(sub, P, time_limit=args.time_limit)
                rec["ConstOPT_s"] = time.perf_counter() - t0
                rec["ConstOPT_cost"] = own_cost(L, users, c.mechanism.matrix[users])
            t0 = time.perf_counter()
            lap = lrgeo.laplace_rows(sub, users, P.epsilon, rng, n_samples=args.mc)
            rec["Laplace_s"] = time.perf_counter() - t0
            rec["Laplace_cost"] = own_cost(L, users, lap)
            t0 = time.perf_counter()
            e = baselines.exponential(inst, P.epsilon)
            rec["ExpMech_s"] = time.perf_counter() - t0
            rec["ExpMech_cost"] = own_cost(L, users, e.matrix[users])
            rows.append(rec)
            print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in rec.items()})
    write("table", rows)
    methods = ["LR-Geo", "LR-Geo-F", "LP", "ConstOPT", "Laplace", "ExpMech"]

    def summary(col):
        out = {}
        for K in args.Ks:
            vals = [r[col] for r in rows if r["K"] == K and r[col] is not None]
            out[K] = (statistics.mean(vals), 1.96 * statistics.pstdev(vals)) if vals else None
        return out

    for what in ("s", "cost"):
        print(f"\nTable {'1 (time, s)' if what == 's' else '2 (expected cost, km)'}; mean ± 1.96 sd")
        for m in methods + (["lower_bound"] if what == "cost" else []):
            col = m if m == "lower_bound" else f"{m}_{what}"
            cells = summary(col)
            print(f"  {m:12s}" + "".join(f"  K={K}: " + ("—" if v is None else f"{v[0]:.4g} ± {v[1]:.2g}")
                                          for K, v in cells.items()))

    def draw(a1, a2):
        for m in methods:
            for a, what in ((a1, "s"), (a2, "cost")):
                pts = [(K, v[0]) for K, v in summary(f"{m}_{what}").items() if v]
                if pts:
                    a.plot(*zip(*pts), "o-", label=m)
        a1.set(xlabel="K", ylabel="time (s)", yscale="log", title="Table 1")
        a2.set(xlabel="K", ylabel="expected cost (km)", title="Table 2")
        a1.legend(fontsize=7)

    fig("table", draw)


def fig9(grid, args, P):
    rows = []
    for K in args.fig9_Ks:
        sub = grid if K >= grid.K else central(grid, K)
        users = np.sort(np.random.default_rng(K).choice(sub.K, args.users, replace=False))
        times = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            r = lrgeo.solve(sub, users, P, executor=args.executor, relaxed_bound=False)
            times.append(time.perf_counter() - t0)
        rows.append({"sweep": "K", "K": sub.K, "users": args.users, "median_s": statistics.median(times),
                     "iterations": r.stats["iterations"], "status": r.status})
        print(rows[-1])
    for M in args.fig9_users:
        users = np.sort(np.random.default_rng(M).choice(grid.K, M, replace=False))
        times = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            r = lrgeo.solve(grid, users, P, executor=args.executor, relaxed_bound=False)
            times.append(time.perf_counter() - t0)
        rows.append({"sweep": "users", "K": grid.K, "users": M, "median_s": statistics.median(times),
                     "iterations": r.stats["iterations"], "status": r.status})
        print(rows[-1])
    write("fig9", rows)

    def draw(a1, a2):
        a = [r for r in rows if r["sweep"] == "K"]
        b = [r for r in rows if r["sweep"] == "users"]
        a1.plot([r["K"] for r in a], [r["median_s"] for r in a], "o-")
        a1.set(xlabel="K", ylabel="LR-Geo time (s)", title=f"Fig. 9(a), {args.users} users")
        a2.plot([r["users"] for r in b], [r["median_s"] for r in b], "o-")
        a2.set(xlabel="users", ylabel="LR-Geo time (s)", title=f"Fig. 9(b), K={grid.K}")

    fig("fig9", draw)


def fig10a(grid, args, P):
    rows = []
    users = np.sort(np.random.default_rng(10).choice(grid.K, args.users, replace=False))
    for select in ("nearest", "random"):
        for G in args.Gammas:
            p = P.replace(Gamma=G, lr_select=select)
            r = lrgeo.solve(grid, users, p, executor=args.executor, rng=np.random.default_rng(0))
            rows.append({"lr_select": select, "Gamma": G, "cost": r.stats["cost"],
                         "relaxed_bound": r.stats["relaxed_bound"],
                         "approximation_ratio": r.stats["approximation_ratio"],
                         "own_row_cost": r.stats["own_row_cost"]})
            print(rows[-1])
    write("fig10a", rows)

    def draw(a1):
        for select in ("nearest", "random"):
            pts = [(r["Gamma"], r["approximation_ratio"]) for r in rows if r["lr_select"] == select]
            a1.plot(*zip(*pts), "o-", label=f"LR set: {select}")
        a1.set(xlabel="Γ (km)", ylabel="approximation ratio", title="Fig. 10(a)")
        a1.legend()

    fig("fig10a", draw)


def fig11(grid, args, P):
    rows = []
    for M in args.fig11_users:
        for rep in range(args.reps):
            users = np.sort(np.random.default_rng(100 * M + rep).choice(grid.K, M, replace=False))
            r = lrgeo.solve(grid, users, P, executor=args.executor, relaxed_bound=False)
            rows.append({"users": M, "rep": rep, **{k: r.stats[k] for k in (
                "gv_ratio", "gve_mean", "gve_max", "gv_ratio_distinct", "gve_mean_distinct",
                "gve_max_distinct")}})
            print(rows[-1])
    write("fig11", rows)

    def draw(a1, a2):
        Ms = sorted({r["users"] for r in rows})
        for suffix, label in (("", "all row pairs"), ("_distinct", "distinct places")):
            a1.plot(Ms, [statistics.mean(r["gv_ratio" + suffix] for r in rows if r["users"] == M)
                         for M in Ms], "o-", label=label)
            a2.plot(Ms, [statistics.mean(r["gve_mean" + suffix] for r in rows if r["users"] == M)
                         for M in Ms], "o-", label=label)
        a1.set(xlabel="users", ylabel="GV ratio (32)", title="Fig. 11")
        a2.set(xlabel="users", ylabel="mean GVE (33) of violating pairs", title="Fig. 12")
        a1.legend()

    fig("fig11", draw)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rome-dir", default=str(DEFAULT_ROME))
    ap.add_argument("--only", nargs="+", default=["table", "fig9", "fig10a", "fig11"],
                    choices=["table", "fig9", "fig10a", "fig11"])
    ap.add_argument("--epsilon", type=float, default=10.0)
    ap.add_argument("--gamma", type=float, default=1.0)
    ap.add_argument("--users", type=int, default=4, help="users for Tables 1-2, Fig. 9(a), 10(a)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--Ks", type=int, nargs="+", default=[100, 200])
    ap.add_argument("--lp-max-K", type=int, default=200)
    ap.add_argument("--constopt-max-K", type=int, default=200)
    ap.add_argument("--time-limit", type=float, default=600.0)
    ap.add_argument("--mc", type=int, default=20_000, help="Monte Carlo samples per Laplace row")
    ap.add_argument("--fig9-Ks", type=int, nargs="+", default=[100, 400, 1331])
    ap.add_argument("--fig9-users", type=int, nargs="+", default=[2, 6, 10])
    ap.add_argument("--Gammas", type=float, nargs="+", default=[1.0, 2.0, 5.0, 10.0, 20.0])
    ap.add_argument("--fig11-users", type=int, nargs="+", default=[2, 4, 6, 8, 10])
    ap.add_argument("--serial", action="store_true", help="solve subproblems in-process")
    args = ap.parse_args(argv)
    args.executor = "serial" if args.serial else None
    P = lrgeo.LRGeoParams(epsilon=args.epsilon, gamma=args.gamma)
    print("choices:", P.choices())
    grid = load_grid(args.rome_dir)
    print(grid)
    for name in args.only:
        t0 = time.perf_counter()
        {"table": table, "fig9": fig9, "fig10a": fig10a, "fig11": fig11}[name](grid, args, P)
        print(f"[{name}] {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
