"""CLR-Geo with many users: Benders against the monolithic LP (issue 13).

    python benchmarks/lrgeo_users.py [--only users sweep instances] [--users 10 50 200]

Sub-benchmarks (each writes ``benchmarks/results/lrgeo_users_<name>.csv`` and ``.png``):

* ``users``     — the Rome grid (``--rome-dir``; the synthetic Rome-shaped grid when absent), the
  paper's parameters (ε = 10 km⁻¹, r_exp = 3.5 km) and binding ones (ε = 3, r_exp = 1.5), for
  ``--users`` users at random cells: Benders on the serial, process-pool (``--workers``) and Dask
  ``LocalCluster`` executors, then the monolithic LP by each HiGHS method of ``--mono-methods``
  (``--mono-cap F``: each stopped at F × the fastest Benders time). Time (whole ``lrgeo.solve``:
  structure, LP/Benders, certification) and iterations against users; prints the fastest
  monolithic optimum's time over each Benders time, or why no monolithic LP has an optimum.
* ``sweep``     — ε ∈ {1, 2, 3, 5, 10} × r_exp ∈ {0.5, 1, 1.5, 3.5} on a synthetic grid
  (``--sweep-grid``, ``--sweep-users``): Benders (elastic recourse; and the paper's Farkas cuts)
  against the monolithic LP.
* ``whole``     — profile of the retention endgame (issue 13): Rome, ``--params`` and ``--users``,
  Benders with ``retain_after=1`` (one block pass, then the whole LP by row generation over the
  Geo-Ind rows, :func:`~lpmech.solvers.benders.solve_whole_lazy`), serial; one CSV row per round of
  added rows: rows in the model, HiGHS status, simplex iterations, seconds, ms per iteration, the
  recovery steps a numerically failed round took, and the run's final status and time.
* ``instances`` — the three instance shapes of issue 13 (12×12 ε=2 r_exp=1; 14×14 ε=5 r_exp=2
  r_obf=3; 10×10 ε=1 r_exp=0.5; 10 users, seed 0): monolithic, Benders elastic, Benders Farkas.

Every Benders run is to a relative gap of ``--rel-tol`` (abs tol 0; default 1e-6, the issue's
acceptance), so its value must match the monolithic optimum; the CSV holds the relative difference.
Benders runs with ``lrgeo.solve``'s default ``retain_after="auto"`` (LPs up to ``lrgeo.RETAIN_NNZ``
nonzeros: every block joins the master after one block pass without a certified gap, and the whole
LP is solved by row generation over the Geo-Ind rows); ``--pure`` adds runs with ``retain_after=None``
(cuts only) to the sweep and the instances, to show what the cuts alone need. Times are wall-clock
on this machine, all methods in one process run; the ratios are within the run.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import contextlib
import time
from pathlib import Path

import numpy as np

from lpmech import datasets as ds
from lpmech.errors import LpmechError
from lpmech.io import write_csv
from lpmech.models import lrgeo
from lpmech.solvers.highs import METHODS

OUT = Path(__file__).resolve().parent / "results"
DEFAULT_ROME = Path(__file__).resolve().parents[2] / "shared" / "data" / "rome"
PARAMS = {"paper": dict(epsilon=10.0, r_exp=3.5), "binding": dict(epsilon=3.0, r_exp=1.5)}
INSTANCES = {"12x12 eps=2 r_exp=1": (12, dict(epsilon=2.0, r_exp=1.0)),
             "14x14 eps=5 r_exp=2 r_obf=3": (14, dict(epsilon=5.0, r_exp=2.0, r_obf=3.0)),
             "10x10 eps=1 r_exp=0.5": (10, dict(epsilon=1.0, r_exp=0.5))}


def load_grid(rome_dir):
    if rome_dir is not None and (Path(rome_dir) / ds.ROME_NODES).is_file():
        return ds.read_rome(rome_dir)
    print("Rome data not found: using the synthetic road grid")
    return ds.synthetic_road_grid(rng=np.random.default_rng(0))


@contextlib.contextmanager
def executor(kind: str, workers: int):
    if kind == "serial":
        yield "serial"
    elif kind == "pool":
        with cf.ProcessPoolExecutor(max_workers=workers) as ex:
            ex.submit(int, 0).result()  # start the workers outside the timed solve
            yield ex
    elif kind == "dask":
        import distributed

        cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
        with cluster, distributed.Client(cluster) as client:
            yield client.get_executor()
    else:
        raise ValueError(kind)


def run(grid, users, P, method, ex, args, recourse="elastic", retain_after="auto", lp_method="simplex",
        time_limit=None) -> dict:
    t0 = time.perf_counter()
    try:
        res = lrgeo.solve(grid, users, P, method=method, executor=ex, abs_tol=0.0, rel_tol=args.rel_tol,
                          max_iter=args.max_iter, time_limit=time_limit or args.time_limit,
                          relaxed_bound=False, recourse=recourse, retain_after=retain_after,
                          lp_method=lp_method)
        st = res.stats
        out = {"status": res.status, "cost": st["cost"], "lower_bound": st.get("lower_bound"),
               "iterations": st.get("iterations"), "realized_epsilon": res.certificate.realized_epsilon,
               "retained": st.get("retained_blocks"), "build_s": st.get("build_s"),
               "lp_nonzeros": st.get("lp_nonzeros")}
    except LpmechError as e:
        r = getattr(e, "result", None)
        st = {} if r is None else r.stats
        out = {"status": r.status if r is not None else type(e).__name__, "cost": st.get("upper_bound"),
               "lower_bound": st.get("lower_bound"), "iterations": st.get("iterations"),
               "realized_epsilon": None}
    out["time_s"] = time.perf_counter() - t0
    return out


def rel(a, b):
    return None if a is None or b is None else abs(a - b) / max(abs(b), 1e-12)


def user_batches(grid, args):
    """(parameter name, parameters, M, users) for every ``--params`` × ``--users`` cell (the users of
    a batch of M are drawn with seed M)."""
    for pname in args.params:
        P = lrgeo.LRGeoParams(**PARAMS[pname])
        for M in args.users:
            yield pname, P, M, np.sort(np.random.default_rng(M).choice(grid.K, M, replace=False))


def users_bench(args):
    """Benders on each executor first, then the monolithic LP by each ``--mono-methods`` HiGHS
    method; with ``--mono-cap F`` a monolithic LP gets at most F × the fastest Benders time (a
    monolithic LP still without an optimum then is slower than Benders, whatever it would need)."""
    grid = load_grid(args.rome_dir)
    rows = []
    for pname, P, M, users in user_batches(grid, args):
        bends = []
        for kind in args.executors:
            with executor(kind, args.workers) as ex:
                b = run(grid, users, P, "benders", ex, args)
            bends.append((kind, b))
            print(f"[{pname} M={M}] benders/{kind}: {b['status']} {b['cost']} in {b['time_s']:.2f}s, "
                  f"{b['iterations']} iterations", flush=True)
        monos = []
        if M <= args.mono_max_users:
            fastest = min((b["time_s"] for _, b in bends), default=None)
            cap = None if args.mono_cap is None or fastest is None else args.mono_cap * fastest
            for lpm in args.mono_methods:
                mono = run(grid, users, P, "monolithic", "serial", args, lp_method=lpm,
                           time_limit=None if cap is None else min(cap, args.time_limit))
                monos.append((lpm, mono))
                rows.append({"params": pname, "users": M, "method": "monolithic", "executor": lpm,
                             **mono, "rel_diff": None, "mono_over_benders": None})
                print(f"[{pname} M={M}] monolithic ({lpm}): {mono['status']} {mono['cost']} in "
                      f"{mono['time_s']:.2f}s", flush=True)
        solved = [m for _, m in monos if m["status"] == "optimal"]
        best = min(solved, key=lambda m: m["time_s"]) if solved else None
        for kind, b in bends:
            # a monolithic LP without an optimum (HiGHS error, time limit) has no time to compare
            ratio = None if best is None else best["time_s"] / b["time_s"]
            rows.append({"params": pname, "users": M, "method": "benders", "executor": kind, **b,
                         "rel_diff": rel(b["cost"], None if best is None else best["cost"]),
                         "mono_over_benders": ratio})
            print(f"[{pname} M={M}] benders/{kind}: fastest monolithic / Benders time = "
                  f"{'n/a' if ratio is None else f'{ratio:.2f}'}"
                  + ("" if best is not None or not monos else
                     " (no monolithic optimum: " + ", ".join(f"{lpm} {m['status']!r} after {m['time_s']:.1f}s"
                                                             for lpm, m in monos) + ")"),
                  flush=True)
        for r in rows:
            if r["method"] == "monolithic" and r["params"] == pname and r["users"] == M and best:
                r["rel_diff"] = rel(r["cost"], best["cost"])
    write("users", rows)

    def draw(ax1, ax2):
        for pname in args.params:
            series = [("monolithic", m, "s-") for m in args.mono_methods] + \
                [("benders", k, "o--") for k in args.executors]
            for meth, kind, mk in series:
                pts = [(r["users"], r["time_s"], r["iterations"]) for r in rows
                       if r["params"] == pname and r["method"] == meth and r["executor"] == kind]
                if not pts:
                    continue
                x, t, it = zip(*pts)
                label = f"{pname} {meth} ({kind})"
                ax1.plot(x, t, mk, label=label)
                if meth == "benders":
                    ax2.plot(x, [i or 0 for i in it], mk, label=label)
        ax1.set(xlabel="users", ylabel="time (s)", xscale="log", yscale="log", title="CLR-Geo on Rome: time")
        ax2.set(xlabel="users", ylabel="Benders iterations", xscale="log", title="iterations")
        ax1.legend(fontsize=7)
        ax2.legend(fontsize=7)

    fig("users", draw)


def sweep_bench(args):
    w = args.sweep_grid
    grid = ds.synthetic_road_grid(w, w, rng=np.random.default_rng(0))
    users = np.sort(np.random.default_rng(1).choice(grid.K, args.sweep_users, replace=False))
    rows = []
    for eps in (1.0, 2.0, 3.0, 5.0, 10.0):
        for r_exp in (0.5, 1.0, 1.5, 3.5):
            P = lrgeo.LRGeoParams(epsilon=eps, r_exp=r_exp)
            mono = run(grid, users, P, "monolithic", "serial", args)
            row = {"epsilon": eps, "r_exp": r_exp, "mono_status": mono["status"], "mono_cost": mono["cost"],
                   "mono_s": mono["time_s"]}
            for rec in variants(args):
                b = run(grid, users, P, "benders", "serial", args, **VARIANTS[rec])
                row.update({f"{rec}_status": b["status"], f"{rec}_rel_diff": rel(b["cost"], mono["cost"]),
                            f"{rec}_iterations": b["iterations"], f"{rec}_retained": b.get("retained"),
                            f"{rec}_s": b["time_s"], f"{rec}_over_mono": b["time_s"] / mono["time_s"]})
            rows.append(row)
            print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()),
                  flush=True)
    write("sweep", rows)

    def draw(ax):
        for rec in variants(args):
            ax.plot(range(len(rows)), [r[f"{rec}_over_mono"] for r in rows], "o-", label=f"Benders {rec}")
        ax.set_xticks(range(len(rows)), [f"{r['epsilon']:g}/{r['r_exp']:g}" for r in rows], rotation=90,
                      fontsize=6)
        ax.set(yscale="log", xlabel="ε / r_exp", ylabel="Benders time / monolithic time",
               title=f"sweep, {w}x{w} grid, {args.sweep_users} users")
        ax.legend(fontsize=7)

    fig("sweep", draw)


def instances_bench(args):
    rows = []
    for name, (w, kw) in INSTANCES.items():
        rng = np.random.default_rng(0)
        grid = ds.synthetic_road_grid(w, w, rng=rng)
        users = np.sort(rng.choice(grid.K, size=10, replace=False))
        P = lrgeo.LRGeoParams(**kw)
        mono = run(grid, users, P, "monolithic", "serial", args)
        rows.append({"instance": name, "method": "monolithic", **mono, "rel_diff": 0.0, "over_mono": 1.0})
        for rec in variants(args):
            b = run(grid, users, P, "benders", "serial", args, **VARIANTS[rec])
            rows.append({"instance": name, "method": f"benders {rec}", **b,
                         "rel_diff": rel(b["cost"], mono["cost"]), "over_mono": b["time_s"] / mono["time_s"]})
        for r in rows[-1 - len(variants(args)):]:
            print(f"[{name}] {r['method']}: {r['status']} {r['cost']} ({r['iterations']} it) in "
                  f"{r['time_s']:.2f}s, rel diff {r['rel_diff']}, time / monolithic {r['over_mono']:.2f}",
                  flush=True)
    write("instances", rows)

    def draw(ax):
        names = list(INSTANCES)
        for j, meth in enumerate(["monolithic"] + [f"benders {r}" for r in variants(args)]):
            t = [next((r["time_s"] for r in rows if r["instance"] == n and r["method"] == meth), 0)
                 for n in names]
            width = 0.8 / (1 + len(variants(args)))
            ax.bar(np.arange(len(names)) + width * j, t, width=width, label=meth)
        ax.set_xticks(np.arange(len(names)) + 0.4, names, fontsize=7)
        ax.set(ylabel="time (s)", title="issue 13 instances (10 users)")
        ax.legend(fontsize=7)

    fig("instances", draw)


def whole_bench(args):
    grid = load_grid(args.rome_dir)
    rows = []
    for pname, P, M, users in user_batches(grid, args):
        t0 = time.perf_counter()
        try:
            res = lrgeo.solve(grid, users, P, method="benders", executor="serial", abs_tol=0.0,
                              rel_tol=args.rel_tol, max_iter=args.max_iter, time_limit=args.time_limit,
                              relaxed_bound=False, retain_after=1)
        except LpmechError as e:
            res = getattr(e, "result", None)
        elapsed = time.perf_counter() - t0
        st = {} if res is None else res.stats
        whole = st.get("whole_lp") or {"trace": []}
        for t in whole["trace"]:
            it = t["simplex_iterations"]
            rows.append({"params": pname, "users": M, **{k: t.get(k) for k in (
                "round", "rows", "status", "simplex_iterations", "time_s", "value", "violated")},
                "ms_per_iteration": 1e3 * t["time_s"] / it if it > 0 else None,
                "recoveries": "+".join(t["recoveries"]), "lp_rows": whole.get("rows"),
                "run_status": None if res is None else res.status, "run_time_s": elapsed,
                "lower_bound": st.get("lower_bound"), "upper_bound": st.get("upper_bound")})
            print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                           for k, v in rows[-1].items()), flush=True)
        print(f"[{pname} M={M}] Benders with retention: {None if res is None else res.status} in "
              f"{elapsed:.1f}s, whole LP {len(whole['trace'])} rounds", flush=True)
    write("whole", rows)

    def draw(ax1, ax2):
        for pname in args.params:
            for M in args.users:
                pts = [r for r in rows if r["params"] == pname and r["users"] == M]
                if not pts:
                    continue
                lab = f"{pname}, {M} users"
                ax1.plot([r["rows"] for r in pts], [r["time_s"] for r in pts], "o-", label=lab)
                ok = [r for r in pts if r["ms_per_iteration"]]
                ax2.plot([r["rows"] for r in ok], [r["ms_per_iteration"] for r in ok], "o-", label=lab)
                bad = [r for r in pts if r["recoveries"] or r["status"] != "Optimal"]
                ax1.plot([r["rows"] for r in bad], [r["time_s"] for r in bad], "rx", ms=10)
        ax1.set(xlabel="rows in the model", ylabel="seconds per round", yscale="log",
                title="whole LP with lazy rows (x: HiGHS failure)")
        ax2.set(xlabel="rows in the model", ylabel="ms per simplex iteration", yscale="log",
                title="cost of a dual simplex iteration")
        ax1.legend(fontsize=7)
        ax2.legend(fontsize=7)

    fig("whole", draw)


#: Benders variants: recourse, and the cuts-only run (no retention) with --pure
VARIANTS = {"elastic": dict(recourse="elastic"), "farkas": dict(recourse="farkas"),
            "elastic_pure": dict(recourse="elastic", retain_after=None),
            "farkas_pure": dict(recourse="farkas", retain_after=None)}


def variants(args) -> list[str]:
    return list(args.recourse) + ([f"{r}_pure" for r in args.recourse] if args.pure else [])


def write(name, rows):
    OUT.mkdir(exist_ok=True)
    write_csv(OUT / f"lrgeo_users_{name}.csv", rows)


def fig(name, draw):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lpmech.plotting import save_figure

    n = draw.__code__.co_argcount
    f, ax = plt.subplots(1, n, figsize=(5.5 * n, 4))
    draw(*np.atleast_1d(ax))
    f.tight_layout()
    save_figure(f, OUT / f"lrgeo_users_{name}.png")
    plt.close(f)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="+", default=["instances", "sweep", "users"],
                    choices=["instances", "sweep", "users", "whole"])
    ap.add_argument("--rome-dir", default=str(DEFAULT_ROME))
    ap.add_argument("--users", type=int, nargs="+", default=[10, 50, 200])
    ap.add_argument("--params", nargs="+", default=["paper", "binding"], choices=list(PARAMS))
    ap.add_argument("--executors", nargs="+", default=["serial", "pool", "dask"],
                    choices=["serial", "pool", "dask"])
    ap.add_argument("--workers", type=int, default=2, help="process-pool / Dask workers")
    ap.add_argument("--mono-max-users", type=int, default=200, help="skip the monolithic LP above this")
    ap.add_argument("--mono-methods", nargs="+", default=["simplex"],
                    choices=list(METHODS),
                    help="users: the HiGHS methods of the monolithic LP")
    ap.add_argument("--mono-cap", type=float, default=None,
                    help="users: stop a monolithic LP at this multiple of the fastest Benders time")
    ap.add_argument("--recourse", nargs="+", default=["elastic"], choices=["elastic", "farkas"])
    ap.add_argument("--sweep-grid", type=int, default=8, help="synthetic grid side of the sweep")
    ap.add_argument("--sweep-users", type=int, default=5)
    ap.add_argument("--pure", action="store_true",
                    help="also run Benders with cuts only (retain_after=None) in the sweep and instances")
    ap.add_argument("--rel-tol", type=float, default=1e-6)
    ap.add_argument("--max-iter", type=int, default=300)
    ap.add_argument("--time-limit", type=float, default=600.0)
    args = ap.parse_args(argv)
    for name in args.only:
        {"instances": instances_bench, "sweep": sweep_bench, "users": users_bench,
         "whole": whole_bench}[name](args)


if __name__ == "__main__":
    main()
