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
* ``fig10b`` — approximation ratio (LR-Geo objective under the table's upper costs ĉ (25) /
  relaxed bound (29)–(30) under its lower costs c̃ (31)) against the cost table's cell size.
* ``fig13``  — the §4.7 attack: for each coefficient ĉ a user uploads, the number of table rows
  whose β lies in the interval the server must search, against the cell size.

Figs 10(b) and 13 need a cost reference table *finer* than the locations (the paper: 1.2 km
locations, a 0.05–0.275 km table); our road data has nothing finer than the 0.49 km Rome cells, so
both use a synthetic fine road network (:func:`fine_network`: a jittered lattice of
``--fine-spacing`` km with 8-neighbour roads of detour U(1, 1.3)), the K locations a coarse
sub-lattice of its nodes (``--coarse`` per side, ``--coarse-spacing`` km apart, Rome-like) and the
table one network node per cell (:class:`FineTable`). Targets are the K locations (uniform), as in
the other sub-benchmarks; c̃ ≤ c ≤ ĉ then holds exactly by the triangle inequality.

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
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import dijkstra

from lpmech import datasets as ds
from lpmech.io import write_csv
from lpmech.models import baselines, lrgeo, omg
from lpmech.solvers.highs import solve_lp

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


# ------------------------------------------------------------- Figs 10(b) and 13: the fine table


def fine_network(side_km: float, spacing_km: float, rng: np.random.Generator,
                 detour=(1.0, 1.3)):
    """A road network finer than the locations: nodes on a ``spacing_km`` lattice over a square of
    ``side_km`` (jittered by up to a quarter spacing), roads to the 4- and diagonal neighbours with
    length = Euclidean length × U(``detour``). Returns (xy km, symmetric sparse road graph)."""
    n = round(side_km / spacing_km) + 1
    r, c = np.divmod(np.arange(n * n), n)
    xy = np.column_stack([c, r]) * spacing_km + rng.uniform(-0.25, 0.25, (n * n, 2)) * spacing_km
    us, vs = [], []
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        ok = (r + dr < n) & (c + dc >= 0) & (c + dc < n)
        a = np.flatnonzero(ok)
        us.append(a)
        vs.append((r[a] + dr) * n + c[a] + dc)
    u, v = np.concatenate(us), np.concatenate(vs)
    w = np.linalg.norm(xy[u] - xy[v], axis=1) * rng.uniform(*detour, u.size)
    g = coo_matrix((np.r_[w, w], (np.r_[u, v], np.r_[v, u])), shape=(n * n,) * 2).tocsr()
    return xy, g


def coarse_nodes(xy, per_side: int, spacing_km: float) -> np.ndarray:
    """The network nodes nearest a ``per_side``² lattice of ``spacing_km`` centred in the network."""
    mid = (xy.max(0) + xy.min(0)) / 2
    ticks = (np.arange(per_side) - (per_side - 1) / 2) * spacing_km
    pts = np.stack(np.meshgrid(ticks, ticks), -1).reshape(-1, 2) + mid
    return np.array([int(np.argmin(np.linalg.norm(xy - p, axis=1))) for p in pts])


class FineTable:
    """The §4.5 cost reference table on a fine road network (one node per ``cell_km`` square, the
    node nearest the square's centre), for locations ``loc`` (network nodes, also the targets).

    ``D[l, j]`` is the road distance from location l to network node j (Dijkstra from the
    locations). Each location snaps to the table node nearest by road (``snap``, ``s``), and
    β(a, b) = Σ_l q_l |D[l, a] − D[l, b]| (targets at their exact locations), so
    c̃ = max(0, β − s_i − s_k) ≤ c ≤ β + s_i + s_k = ĉ (eqs. (25), (31), Lemmas B.1–B.2)."""

    def __init__(self, xy, graph, loc, cell_km: float, D=None, shift=(0.0, 0.0)):
        self.cell = float(cell_km)
        self.loc = np.asarray(loc)
        self.D = dijkstra(graph, directed=False, indices=self.loc) if D is None else D
        rel = xy - xy.min(0) + np.asarray(shift, float)  # ``shift`` moves the table's origin
        b = np.floor(rel / cell_km).astype(np.int64)
        off = np.linalg.norm(rel - (b + 0.5) * cell_km, axis=1)
        key = b[:, 0] * (b[:, 1].max() + 1) + b[:, 1]
        order = np.lexsort((off, key))
        first = np.r_[True, key[order][1:] != key[order][:-1]]
        self.ref = np.sort(order[first])
        Dr = self.D[:, self.ref]
        pick = Dr.argmin(axis=1)
        self.snap = self.ref[pick]
        self.s = Dr[np.arange(len(self.loc)), pick]

    @property
    def travel_cost(self) -> np.ndarray:
        """Road distances between the locations (K×K)."""
        return self.D[:, self.loc]

    def beta(self, a, b, q) -> np.ndarray:
        """β for table nodes ``a`` (rows) × ``b`` (columns) under target weights q."""
        Da, Db = self.D[:, np.asarray(a)], self.D[:, np.asarray(b)]
        out = np.zeros((Da.shape[1], Db.shape[1]))
        step = max(1, 4_000_000 // max(1, out.size))
        for s0 in range(0, len(q), step):
            sl = slice(s0, s0 + step)
            out += np.einsum("l,lab->ab", q[sl], np.abs(Da[sl, :, None] - Db[sl, None, :]))
        return out

    def costs(self, rows, cols, q, *, zero_diagonal: bool = False):
        """(true c, upper ĉ, lower c̃) for locations ``rows`` × ``cols`` (without p_i).

        (25) gives ĉ_ii = 2 s_i > 0 for reporting the true location, whose cost c_ii = 0 the user
        knows without the table; ``zero_diagonal=True`` uses that (ĉ_ii = c̃_ii = 0)."""
        rows, cols = np.asarray(rows), np.asarray(cols)
        tc = self.travel_cost
        true = lrgeo.travel_error(tc, q, rows, cols)
        beta = self.beta(self.snap[rows], self.snap[cols], q)
        s = self.s[rows][:, None] + self.s[cols][None, :]
        up, low = beta + s, np.maximum(beta - s, 0.0)
        if zero_diagonal:
            same = rows[:, None] == cols[None, :]
            up[same] = low[same] = 0.0
        return true, up, low

    def all_betas(self, q) -> np.ndarray:
        """β of every table row (every ordered pair of table nodes), sorted."""
        return np.sort(self.beta(self.ref, self.ref, q).ravel())


def matched_rows(betas_sorted: np.ndarray, lo, hi) -> np.ndarray:
    """How many table rows have β in [lo, hi], for arrays of intervals."""
    return (np.searchsorted(betas_sorted, hi, side="right")
            - np.searchsorted(betas_sorted, lo, side="left"))


def fine_setup(args):
    """(fine network xy, graph, location nodes, a RoadGrid of the locations)."""
    xy, g = fine_network((args.coarse + 1) * args.coarse_spacing, args.fine_spacing,
                         np.random.default_rng(args.fine_seed))
    loc = coarse_nodes(xy, args.coarse, args.coarse_spacing)
    D = dijkstra(g, directed=False, indices=loc)
    P = xy[loc]
    metric = np.linalg.norm(P[:, None] - P[None], axis=2)
    grid = ds.RoadGrid(P, metric, D[:, loc], np.arange(len(loc)), name="coarse locations")
    return xy, g, loc, D, grid


def table_structure(grid, users, P, table: FineTable, *, zero_diagonal: bool = False):
    """LR structure of ``users`` with the fine table's (true, upper, lower) cost coefficients."""
    s = lrgeo.build_structure(grid, users, P.replace(table_cell=None))
    for u in s.users:
        true, up, low = table.costs(u.N, u.cols, s.targets, zero_diagonal=zero_diagonal)
        u.cost = {"true": u.p[:, None] * true, "upper": u.p[:, None] * up,
                  "lower": u.p[:, None] * low}
    return s


def clr_value(structure, costs: str) -> float:
    """CLR-Geo's optimum under the coefficients ``costs``, by the monolithic LP."""
    res = solve_lp(*lrgeo.clr_problem(structure, costs=costs).problem.as_lp())
    if res.status != "optimal":
        raise RuntimeError(f"CLR-Geo LP ended {res.status}")
    return float(res.objective)


def fig10b(grid, args, P):
    xy, g, loc, D, vgrid = fine_setup(args)
    users = np.sort(np.random.default_rng(10).choice(vgrid.K, args.users, replace=False))
    base = table_structure(vgrid, users, P, FineTable(xy, g, loc, args.fine_spacing / 2, D))
    exact = clr_value(base, "true")
    rows = []
    shifts = np.random.default_rng(101).uniform(0, 1, (args.table_shifts, 2))
    shifts[0] = 0.0  # the first table starts at the network's corner
    for cell in args.cells:
        for t, sh in enumerate(shifts):
            t0 = time.perf_counter()
            table = FineTable(xy, g, loc, cell, D, shift=sh * cell)
            rec = {"cell_km": cell, "shift": t, "table_nodes": table.ref.size,
                   "mean_snap_km": float(table.s.mean()), "max_snap_km": float(table.s.max()),
                   "lr_geo_true": exact}
            for tag, zd in (("", False), ("_zero_diag", True)):
                s = table_structure(vgrid, users, P, table, zero_diagonal=zd)
                up = clr_value(s, "upper")
                low = lrgeo.solve_relaxed(s, costs="lower")
                rec.update({f"lr_geo_upper{tag}": up, f"relaxed_lower{tag}": low,
                            f"approximation_ratio{tag}": up / low if low > 0 else float("inf"),
                            f"upper_over_true{tag}": up / exact})
            rec["s"] = time.perf_counter() - t0
            rows.append(rec)
            print({k: (round(v, 5) if isinstance(v, float) else v) for k, v in rec.items()})
    write("fig10b", rows)
    cells = sorted({r["cell_km"] for r in rows})

    def median(col, cell):
        return statistics.median(r[col] for r in rows if r["cell_km"] == cell)

    print("\nFig. 10(b): median over table origins of the approximation ratio")
    for cell in cells:
        print(f"  cell {cell:.3f} km: as printed {median('approximation_ratio', cell):8.3f}, "
              f"c_ii = 0 {median('approximation_ratio_zero_diag', cell):6.3f}, "
              f"LR-Geo(ĉ)/LR-Geo(c) {median('upper_over_true_zero_diag', cell):6.3f}")

    def draw(a1):
        for col, style, label in (
                ("approximation_ratio", "o-", "LR-Geo(ĉ) / relaxed(c̃), (25) and (31) as printed"),
                ("approximation_ratio_zero_diag", "s-", "same, c_ii = 0 known to the user"),
                ("upper_over_true_zero_diag", "^--", "LR-Geo(ĉ) / LR-Geo(c), c_ii = 0")):
            a1.plot(cells, [median(col, c) for c in cells], style, label=label)
            a1.scatter([r["cell_km"] for r in rows], [r[col] for r in rows], s=6, alpha=0.4)
        a1.set(xlabel="cost table cell size (km)", ylabel="ratio", yscale="log",
               title=f"Fig. 10(b), {vgrid.K} locations, {args.users} users, median of "
                     f"{args.table_shifts} table origins")
        a1.legend(fontsize=8)

    fig("fig10b", draw)


def fig13(grid, args, P):
    xy, g, loc, D, vgrid = fine_setup(args)
    rng = np.random.default_rng(13)
    users = rng.choice(vgrid.K, args.uploads)
    q = np.full(vgrid.K, 1.0 / vgrid.K)
    rows = []
    for cell in args.cells:
        t0 = time.perf_counter()
        table = FineTable(xy, g, loc, cell, D)
        betas = table.all_betas(q)
        s = lrgeo.build_structure(vgrid, users, P.replace(table_cell=None))
        c_hat, b_true = [], []
        for u in s.users:  # the coefficients each user uploads, p_i omitted as in Fig. 8
            _, up, _ = table.costs(u.N, u.O, q)
            c_hat.append(up.ravel())
            b_true.append(table.beta(table.snap[u.N], table.snap[u.O], q).ravel())
        c_hat, b_true = np.concatenate(c_hat), np.concatenate(b_true)
        half_diag = cell / np.sqrt(2)
        smax = float(table.s.max())
        paper = matched_rows(betas, c_hat - half_diag, c_hat + half_diag)
        consistent = matched_rows(betas, c_hat - 2 * smax, c_hat)
        rows.append({"cell_km": cell, "table_nodes": table.ref.size, "table_rows": betas.size,
                     "coefficients": c_hat.size, "mean_matched_paper": float(paper.mean()),
                     "median_matched_paper": float(np.median(paper)),
                     "paper_interval_holds_true_beta": float(np.mean(np.abs(c_hat - b_true)
                                                                     <= half_diag)),
                     "share_matched_paper": float(paper.mean() / betas.size),
                     "mean_matched_consistent": float(consistent.mean()),
                     "max_snap_km": smax, "s": time.perf_counter() - t0})
        print(rows[-1])
    write("fig13", rows)

    def draw(a1, a2):
        a1.plot([r["cell_km"] for r in rows], [r["mean_matched_paper"] for r in rows], "o-",
                label="β in [ĉ − δmax, ĉ + δmax] (paper)")
        a1.plot([r["cell_km"] for r in rows], [r["mean_matched_consistent"] for r in rows], "s--",
                label="β in [ĉ − 2 s_max, ĉ] (consistent)")
        a1.set(xlabel="cost table cell size (km)", ylabel="matched table rows per coefficient",
               yscale="log", title=f"Fig. 13, {args.uploads} uploaded cost matrices")
        a1.legend(fontsize=8)
        a2.plot([r["cell_km"] for r in rows], [r["share_matched_paper"] for r in rows], "o-")
        a2.set(xlabel="cost table cell size (km)", ylabel="matched share of the table (paper)",
               title="share of all table rows")

    fig("fig13", draw)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rome-dir", default=str(DEFAULT_ROME))
    ap.add_argument("--only", nargs="+", default=["table", "fig9", "fig10a", "fig11", "fig10b", "fig13"],
                    choices=["table", "fig9", "fig10a", "fig11", "fig10b", "fig13"])
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
    ap.add_argument("--cells", type=float, nargs="+",
                    default=[0.05, 0.075, 0.1, 0.125, 0.15, 0.175, 0.2, 0.225, 0.25, 0.275],
                    help="cost-table cell sizes (km) for Figs 10(b) and 13 (paper: 0.05-0.275)")
    ap.add_argument("--fine-spacing", type=float, default=0.025,
                    help="node spacing (km) of the fine road network of Figs 10(b), 13")
    ap.add_argument("--coarse", type=int, default=6,
                    help="locations per side for Figs 10(b), 13 (K = coarse^2)")
    ap.add_argument("--coarse-spacing", type=float, default=0.5,
                    help="spacing (km) of the locations for Figs 10(b), 13 (Rome: 0.49)")
    ap.add_argument("--fine-seed", type=int, default=0, help="seed of the fine road network")
    ap.add_argument("--table-shifts", type=int, default=3,
                    help="Fig. 10(b): table origins per cell size (the first at the network's "
                         "corner, the others random): the snap distances depend on the alignment")
    ap.add_argument("--uploads", type=int, default=100,
                    help="Fig. 13: users uploading a cost matrix (paper: 100)")
    args = ap.parse_args(argv)
    args.executor = "serial" if args.serial else None
    P = lrgeo.LRGeoParams(epsilon=args.epsilon, gamma=args.gamma)
    print("choices:", P.choices())
    grid = load_grid(args.rome_dir)
    print(grid)
    for name in args.only:
        t0 = time.perf_counter()
        {"table": table, "fig9": fig9, "fig10a": fig10a, "fig11": fig11, "fig10b": fig10b,
         "fig13": fig13}[name](grid, args, P)
        print(f"[{name}] {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
