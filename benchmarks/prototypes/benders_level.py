"""Prototype: a level-bundle master for CLR-Geo's Benders decomposition, against today's cuts.

Today's :func:`lpmech.solvers.benders.solve_benders` separates at the cutting-plane master's
minimiser ȳ, stabilised in-out (towards the best point ŷ). The level method (Lemaréchal,
Nemirovskii & Nesterov 1995) separates instead at the point of the level set of the cut model
nearest the best point:

    y⁺ = argmin ‖y − ŷ‖₁  s.t. the cuts, α·y + Σ_m w_m ≤ L,  L = lb + λ (f(ŷ) − lb),

an LP (the ℓ1 distance by ny extra columns and 2·ny rows; ``--norms l2``: the squared
distance, a QP in HiGHS; ``l2-clarabel``: the same QP by Clarabel), where lb is the cut model's minimum
(the master LP, solved each iteration for the bound) and f the elastic recourse value. An empty
level set raises lb to L. Both runs use the same elastic recourse, penalty raises and tolerances.

    python benchmarks/prototypes/benders_level.py [--only instances rome] [--lam 0.3]
        [--users 50] [--workers 2]

``instances``: the three 10-user instances of ``benchmarks/lrgeo_users.py`` (synthetic grids);
``rome``: the Rome grid (``../shared/data/rome``) at the binding parameters (ε = 3, r_exp = 1.5)
with ``--users`` users. Every run is to a relative gap of 1e-6, cuts only (no retention), in one
process, the baseline first; writes ``benchmarks/results/benders_level.csv``.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import math
import sys
import time
from pathlib import Path

import highspy
import numpy as np

from lpmech import datasets as ds
from lpmech.errors import LpmechError
from lpmech.io import write_csv
from lpmech.models import lrgeo
from lpmech.solvers.benders import _elastic_lp, _Master, map_tasks, solve_benders, solve_block

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from lrgeo_users import DEFAULT_ROME, INSTANCES, PARAMS

OUT = Path(__file__).resolve().parents[1] / "results"
INF = highspy.kHighsInf


class LevelMaster(_Master):
    """The cut model with ℓ1 distance columns t and a level row: min Σ t, |y − ŷ| ≤ t,
    α·y + Σ w ≤ L."""

    def __init__(self, problem):
        super().__init__(problem)
        ny, M = self.ny, self.M
        h = self.h
        h.changeColsCost(ny + M, np.arange(ny + M, dtype=np.int32), np.zeros(ny + M))
        h.addCols(ny, np.ones(ny), np.zeros(ny), np.full(ny, INF), 0, np.array([], np.int32),
                  np.array([], np.int32), np.array([], float))
        self.n_col += ny
        self.r0 = h.getNumRow()
        i = np.arange(ny, dtype=np.int32)
        t = ny + M + i
        # rows y_i − t_i ≤ ŷ_i (first ny) and y_i + t_i ≥ ŷ_i (next ny)
        for sign in (-1.0, 1.0):
            starts = (2 * i).astype(np.int32)
            idx = np.column_stack([i, t]).ravel().astype(np.int32)
            vals = np.column_stack([np.ones(ny), np.full(ny, sign)]).ravel()
            h.addRows(ny, np.full(ny, -INF), np.full(ny, INF), 2 * ny, starts, idx, vals)
        a = np.concatenate([problem.alpha, np.ones(M)])
        nz = np.flatnonzero(a)
        h.addRows(1, np.array([-INF]), np.array([INF]), nz.size, np.array([0], np.int32),
                  nz.astype(np.int32), a[nz])
        self.level_row = self.r0 + 2 * ny

    def project(self, centre: np.ndarray, level: float):
        ny, h = self.ny, self.h
        rows = np.arange(self.r0, self.r0 + 2 * ny, dtype=np.int32)
        lo = np.concatenate([np.full(ny, -INF), centre])
        hi = np.concatenate([centre, np.full(ny, INF)])
        h.changeRowsBounds(2 * ny, rows, lo, hi)
        h.changeRowBounds(self.level_row, -INF, level)
        return self.solve()


class LevelMasterL2(_Master):
    """The cut model with the squared Euclidean distance and a level row (a QP for HiGHS):
    min ½‖y‖² − ŷ·y, α·y + Σ w ≤ L."""

    def __init__(self, problem):
        super().__init__(problem)
        ny, M = self.ny, self.M
        n = ny + M
        starts = np.minimum(np.arange(n + 1), ny).astype(np.int32)
        self.h.passHessian(n, ny, highspy.HessianFormat.kTriangular, starts,
                           np.arange(ny, dtype=np.int32), np.ones(ny))
        a = np.concatenate([problem.alpha, np.ones(M)])
        nz = np.flatnonzero(a)
        self.level_row = self.h.getNumRow()
        self.h.addRows(1, np.array([-INF]), np.array([INF]), nz.size, np.array([0], np.int32),
                       nz.astype(np.int32), a[nz])

    def project(self, centre: np.ndarray, level: float):
        ny, M = self.ny, self.M
        self.h.changeColsCost(ny + M, np.arange(ny + M, dtype=np.int32),
                              np.concatenate([-centre, np.zeros(M)]))
        self.h.changeRowBounds(self.level_row, -INF, level)
        return self.solve()


class LevelMasterClarabel:
    """The same projection (squared Euclidean distance) solved by Clarabel from the cut list."""

    def __init__(self, problem):
        import scipy.sparse as sp

        self.sp, self.problem = sp, problem
        self.ny, self.M = problem.n_y, len(problem.blocks)
        self.rows, self.rhs = [], []
        for m, coef, const in problem.initial_cuts:
            self.add_cut(np.asarray(coef, float), int(m), float(const))

    def add_cut(self, coef_y, m, const):
        r = np.zeros(self.ny + self.M)
        r[:self.ny] = coef_y
        r[self.ny + m] = -1.0
        self.rows.append(r)
        self.rhs.append(-const)

    def project(self, centre, level):
        import clarabel

        sp, pb, ny, M = self.sp, self.problem, self.ny, self.M
        n = ny + M
        blocks, rhs = [sp.csr_matrix(np.array(self.rows))], [np.array(self.rhs)]
        if pb.master_A is not None:
            A0 = sp.hstack([pb.master_A, sp.csr_matrix((pb.master_A.shape[0], M))]).tocsr()
            for sign, bnd in ((1.0, pb.master_hi), (-1.0, -np.asarray(pb.master_lo))):
                keep = np.flatnonzero(np.isfinite(bnd))
                blocks.append(sign * A0[keep])
                rhs.append(bnd[keep])
        lo = np.concatenate([pb.y_lo, [b.w_lower for b in pb.blocks]])
        hi = np.concatenate([pb.y_hi, np.full(M, np.inf)])
        eye = sp.identity(n, format="csr")
        for sign, bnd in ((1.0, hi), (-1.0, -lo)):
            keep = np.flatnonzero(np.isfinite(bnd))
            blocks.append(sign * eye[keep])
            rhs.append(bnd[keep])
        blocks.append(sp.csr_matrix(np.concatenate([pb.alpha, np.ones(M)])[None, :]))
        rhs.append([level])
        A = sp.vstack(blocks).tocsc()
        b = np.concatenate([np.asarray(r, float) for r in rhs])
        P = sp.diags(np.r_[np.ones(ny), np.zeros(M)]).tocsc()
        q = np.r_[-centre, np.zeros(M)]
        settings = clarabel.DefaultSettings()
        settings.verbose = False
        sol = clarabel.DefaultSolver(P, q, A, b, [clarabel.NonnegativeConeT(A.shape[0])],
                                     settings).solve()
        st = str(sol.status)
        if "PrimalInfeasible" in st:
            return "Infeasible", None, None, None
        if "Solved" not in st:
            return st, None, None, None
        x = np.asarray(sol.x)
        return "optimal", None, x[:ny], x[ny:]


def solve_level(problem, *, executor="serial", lam=0.3, norm="l1", rel_tol=1e-6, max_iter=500, penalty=10.0,
                opt_tol=1e-9, slack_tol=1e-9, time_limit=None, verbose=False):
    t0 = time.perf_counter()
    M = len(problem.blocks)
    for b in problem.blocks:
        _elastic_lp(b)
    low = _Master(problem)
    lev = {"l1": LevelMaster, "l2": LevelMasterL2, "l2-clarabel": LevelMasterClarabel}[norm](problem)
    scale = np.array([max(1.0, float(np.abs(b.c).max(initial=0.0))) for b in problem.blocks])
    factor = penalty
    bases = [None] * M
    lb, ub, f_best, centre = -math.inf, math.inf, math.inf, None
    y_next, w_next = None, None
    trace, status, n_empty, n_fail = [], "iteration_limit", 0, 0
    for it in range(1, max_iter + 1):
        st, mobj, ybar, wbar = low.solve()
        if st != "optimal":
            raise RuntimeError(f"master {st}")
        lb = max(lb, mobj)
        if math.isfinite(ub) and ub - lb <= rel_tol * abs(ub):
            status = "optimal"
            break
        y_eval, w_eval = (ybar, wbar) if y_next is None else (y_next, w_next)
        U = factor * scale
        outs = map_tasks(executor, solve_block, [(problem.blocks[m], y_eval, U[m], bases[m])
                                                  for m in range(M)])
        f = total = float(problem.alpha @ y_eval)
        feasible, n_cut = True, 0
        for m, out in enumerate(outs):
            if out["kind"] == "error":
                raise RuntimeError(out["status"])
            bases[m] = out.get("basis")
            f += out["value"]
            total += out["cost"]
            feasible &= out["slack"] <= slack_tol
            at = out["const"] + float(out["coef"] @ y_eval)
            if w_eval[m] < at - opt_tol * (1.0 + abs(at)):
                low.add_cut(out["coef"], m, out["const"])
                lev.add_cut(out["coef"], m, out["const"])
                n_cut += 1
        if f < f_best:
            f_best, centre = f, y_eval.copy()
        if feasible and total < ub:
            ub = total
        if verbose:
            print(it, lb, f, ub, n_cut, round(time.perf_counter() - t0, 2), flush=True)
        trace.append({"iteration": it, "lower_bound": lb, "upper_bound": ub, "cuts": n_cut,
                      "time_s": time.perf_counter() - t0})
        if math.isfinite(ub) and ub - lb <= rel_tol * abs(ub):
            status = "optimal"
            break
        if f_best - lb <= rel_tol * abs(f_best):
            # the elastic problem is solved, its minimiser still uses slack: raise the penalty
            factor *= 10.0
            f_best = math.inf
            y_next = None
            continue
        while True:
            level = lb + lam * (f_best - lb)
            st, _, y_next, w_next = lev.project(centre, level)
            if st == "optimal":
                break
            if st != "Infeasible":  # the projection failed: separate at the master's minimiser
                n_fail += 1
                if hasattr(lev, "h"):
                    lev.h.clearSolver()
                y_next, w_next = None, None
                break
            n_empty += 1
            lb = level  # the cut model stays above L everywhere
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            status = "time_limit"
            break
    return {"status": status, "value": ub, "lower_bound": lb, "iterations": len(trace),
            "empty_levels": n_empty, "failed_projections": n_fail,
            "time_s": time.perf_counter() - t0, "penalty": factor}


def instances():
    for name, (w, kw) in INSTANCES.items():
        rng = np.random.default_rng(0)
        grid = ds.synthetic_road_grid(w, w, rng=rng)
        users = np.sort(rng.choice(grid.K, size=10, replace=False))
        yield name, grid, users, lrgeo.LRGeoParams(**kw)


def rome(n_users):
    grid = ds.read_rome(DEFAULT_ROME)
    users = np.sort(np.random.default_rng(n_users).choice(grid.K, n_users, replace=False))
    yield f"Rome {n_users} users binding", grid, users, lrgeo.LRGeoParams(**PARAMS["binding"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", default=["instances"], choices=["instances", "rome"])
    ap.add_argument("--lam", type=float, nargs="+", default=[0.3])
    ap.add_argument("--users", type=int, default=50)
    ap.add_argument("--norms", nargs="+", default=["l1", "l2-clarabel"], choices=["l1", "l2", "l2-clarabel"])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--max-iter", type=int, default=500)
    ap.add_argument("--time-limit", type=float, default=900.0)
    args = ap.parse_args(argv)
    cases = []
    if "instances" in args.only:
        cases += list(instances())
    if "rome" in args.only:
        cases += list(rome(args.users))
    rows = []
    with cf.ProcessPoolExecutor(max_workers=args.workers) as ex:
        ex.submit(int, 0).result()
        for name, grid, users, P in cases:
            structure = lrgeo.build_structure(grid, users, P)
            clr = lrgeo.clr_problem(structure, executor=ex, relaxed_cuts=False)
            t0 = time.perf_counter()
            try:
                base = solve_benders(clr.problem, executor=ex, abs_tol=0.0, rel_tol=1e-6,
                                     max_iter=args.max_iter, time_limit=args.time_limit,
                                     retain_after=None)
            except LpmechError as e:
                print(f"[{name}] skipped: {e}")
                continue
            rows.append({"instance": name, "method": "in-out (today)", "status": base.status,
                         "value": base.stats["upper_bound"], "lower_bound": base.stats["lower_bound"],
                         "iterations": base.stats["iterations"], "time_s": time.perf_counter() - t0})
            print(rows[-1], flush=True)
            for norm in args.norms:
                for lam in args.lam:
                    clr = lrgeo.clr_problem(structure, executor=ex, relaxed_cuts=False)
                    r = solve_level(clr.problem, executor=ex, lam=lam, norm=norm,
                                    max_iter=args.max_iter, time_limit=args.time_limit)
                    rows.append({"instance": name, "method": f"level {norm} λ={lam:g}", **r})
                print(rows[-1], flush=True)
    OUT.mkdir(exist_ok=True)
    write_csv(OUT / "benders_level.csv", rows)


if __name__ == "__main__":
    main()
