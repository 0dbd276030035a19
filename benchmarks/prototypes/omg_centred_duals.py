"""Prototype: well-centred duals for the OMG decomposition from an early-terminated interior-point master.

Design (issue "Exact at city scale"; Gondzio, González-Brevis & Munari, PDCGM, EJOR 2013 / 2016).
Today each round solves the restricted master to optimality with primal simplex and prices at a
Wentges-smoothed point between its (extreme, oscillating) optimal duals and the best-bound centre.
Here the master is solved by HiGHS' interior point (IPX) *without crossover*, stopped at a
relative gap δ_r that follows the column generation's own gap:

    δ_{r+1} = max(δ_min, min(δ_max, gap_r / D))        (gap_r = (upper − best_lower) / |upper|)
    δ_{r+1} = δ_r / D      when the round added no column (the duals were too far off)

The sub-optimal IPM point is well centred: its duals y sit inside the master's optimal dual face
rather than at a vertex of it, which is the stabilisation. No Wentges smoothing on top.

Why the certificate stays exact:

* the bound L(y) = rhs_term(y) + Σ_k min(0, bound_k) is valid at any sign-valid y (the unit rows
  are equalities: μ is free), and each bound_k is the pricing LP's own Lagrangian bound, so every
  lower bound reported is valid whatever the IPM's tolerance;
* the IPM point is primal feasible (to HiGHS' primal feasibility tolerance), so its objective is
  an upper bound used only to steer δ and to decide when to stop trying;
* the stop: when the IPM gap test passes, the master is solved once more *exactly* (IPX with
  crossover, a basis: the package's simplex master from then on) and the solve stops only if that
  exact master objective is within the floor of the best bound; the returned x is that basic
  solution, certified by :func:`lpmech.models.common.certified_result` like today's.

Hooking in without editing the package (as benchmarks/prototypes/omg_heuristic_pricing.py does):
``_decompose`` builds its ``Master`` and ``_State`` by module-global name; :func:`centred_duals`
swaps in :class:`IpmMaster` and :class:`CentredState` for the duration of one call of
:func:`lpmech.models.omg.omg_large.solve_decomposition` (starting columns, coarse-to-fine start,
phase 1, pricing LPs and workers are the package's own). Only phase 2's loop is new
(:meth:`CentredState.run`), written with the package's helpers (``_price``, ``pricing_costs``,
``rhs_term``, ``lagrangian``).

    python benchmarks/prototypes/omg_centred_duals.py [--sizes 15 20] [--eps 1] [--repeat 1 2]

Measured (both paths in one process, ε = 1, Dirichlet(1) prior seed 0, a 2-core machine shared
with other jobs, load 1–5): the IPM duals do not cut the rounds, and the IPX master costs 10–60×
the warm primal simplex per round, so this design is not kept:

=========  =====================  ===========================  ================================
K          today                  centred (PDCGM)              centred + Wentges smoothing
=========  =====================  ===========================  ================================
36         27 rounds, 2.9 s       31 rounds, 5.1 s             27 rounds, 3.3 s
49 ε=0.5   75 rounds, 7.0 s       104 rounds, 30.2 s           82 rounds, 17.3 s
100        22 rounds, 3.8 s       26 rounds, 22.9 s            22 rounds, 22.8 s
225        34 rounds, 51.5 s      37 rounds, 422.5 s           45 rounds, 467.5 s
           (master 6.7 s)         (master 370.1 s)             (master 413.0 s)
400        35 rounds, 130.2 s     capped at 150 s: 6 rounds,   not run
           (master 27.6 s)        gap 5.9e-2 (master 82.4 s)
=========  =====================  ===========================  ================================

Objectives agree within 5.4e-8 relative (K = 225) and every certified ε is 1. cProfile of one
K = 100 run (23.9 s): 15.5 s in HiGHS' IPX (the master: 26 solves, 360 IPM iterations, ~0.6 s a
solve against ~0.01 s for the warm simplex), 8.1 s waiting on the pricing workers, < 1 % Python.
The rounds are already set by the Lagrangian bound at smoothed duals (docs/rationale.md); the
IPM's centred duals move the bound no faster than self-adjusting Wentges smoothing around the
best-bound centre, and IPX cannot warm-start, so each round pays a full interior-point solve.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import ClassVar

import numpy as np

from lpmech import instance as li
from lpmech import stop
from lpmech.design import decomposition as dec
from lpmech.models.common import certified_result
from lpmech.models.omg import omg_large
from lpmech.solvers.highs import model_status, run_highs, set_time_left

OUT = Path(__file__).resolve().parents[1] / "results"

#: δ schedule (PDCGM): start, cap, floor and the divisor D of the gap
DELTA0, DELTA_MAX, DELTA_MIN, D_GAP = 0.5, 0.5, 1e-9, 10.0
#: an IPM point that HiGHS reports "unknown" (IPX imprecise, no crossover) is used when its primal
#: infeasibility is under this (its duals are valid for pricing whatever; its objective only steers δ)
IPM_PRIMAL_TOL = 1e-6
#: a column of the IPM master whose weight stayed below this share of its largest for
#: ``purge_after`` rounds leaves the LP (into the package's pool, sifted back by the exact master)
PURGE_WEIGHT = 1e-9


class IpmMaster(dec.Master):
    """The package's master; :meth:`run` by IPX without crossover while ``ipm_tol`` is set."""

    ipm_tol: float | None = None
    ipm_s = 0.0
    ipm_runs = 0
    ipm_iters = 0
    exact_runs = 0
    ipm_failed: list

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.ipm_failed = []
        self.after_ipm = False
    crossover = True  # the exact solve after IPM rounds: IPX + crossover (else simplex, cold)

    def run(self):
        if self.ipm_tol is None:
            if self.after_ipm:  # the first exact solve after IPM rounds
                return self._exact()
            return super().run()
        h = self.h
        ts = time.perf_counter()
        self.after_ipm = True
        h.setOptionValue("solver", "ipm")
        h.setOptionValue("run_crossover", "off")
        h.setOptionValue("ipm_optimality_tolerance", float(self.ipm_tol))
        h.clearSolver()  # HiGHS runs simplex, not the IPM, while the model has a valid basis
        if self.deadline is not None:
            set_time_left(h, self.deadline - ts)
        run_highs(h)
        status = model_status(h)
        self.solve_log.append((self.now, h.getNumCol() - self.n_art,
                               h.getInfo().ipm_iteration_count, time.perf_counter() - ts))
        info = h.getInfo()
        if status == "error" and info.ipm_iteration_count > 0 \
                and info.max_primal_infeasibility <= IPM_PRIMAL_TOL:
            status = "optimal"  # IPX "imprecise" without crossover (kUnknown): its point is usable
        if status != "optimal":  # fall back to an exact solve this round
            self.ipm_failed.append((self.now, status, str(h.getModelStatus())))
            return self._exact()
        sol = h.getSolution()
        dt = time.perf_counter() - ts
        self.run_s += dt
        self.ipm_s += dt
        self.runs += 1
        self.ipm_runs += 1
        self.ipm_iters += info.ipm_iteration_count
        self.incumbent = self.matrix()
        return self.valid(np.array(sol.row_dual)), float(info.objective_function_value)

    def _exact(self):
        """An exact master solve after IPM rounds: IPX to 1e-9 with crossover (a basis), then the
        package's simplex (sifting included) for every later exact solve."""
        h = self.h
        self.after_ipm = False
        h.setOptionValue("solver", "ipm" if self.crossover else "simplex")
        if self.crossover:
            h.setOptionValue("run_crossover", "on")
            h.setOptionValue("ipm_optimality_tolerance", 1e-9)
        else:
            h.clearSolver()
        ts = time.perf_counter()
        out = super().run()
        h.setOptionValue("solver", "simplex")
        self.exact_runs += 1
        self.ipm_s += time.perf_counter() - ts if self.crossover else 0.0
        return out

    def purge_by_weight(self, rnd: int, age: int) -> None:
        """Columns of IPM weight below PURGE_WEIGHT × the largest for ``age`` rounds leave the LP
        (the package's :meth:`~lpmech.design.decomposition.Master.purge` reads a basis)."""
        lam = np.asarray(self.h.getSolution().col_value)[self.n_art:]
        last = np.asarray(self.last_basic)
        if lam.size != last.size or lam.size == 0:
            return
        last[lam > PURGE_WEIGHT * lam.max()] = rnd
        keep = last >= rnd - age
        if keep.all():
            self.last_basic = last.tolist()
            return
        drop = (self.n_art + np.nonzero(~keep)[0]).astype(np.int32)
        self.h.deleteCols(drop.size, drop)
        self._pool([(k, v, key) for k, v, key, kept in zip(self.ks, self.vs, self.keys, keep)
                    if not kept])
        self.ks = [k for k, kept in zip(self.ks, keep) if kept]
        self.vs = [v for v, kept in zip(self.vs, keep) if kept]
        self.keys = [k for k, kept in zip(self.keys, keep) if kept]
        self.costs = [c for c, kept in zip(self.costs, keep) if kept]
        self.last_basic = last[keep].tolist()


class CentredState(dec._State):
    """The package's rounds with phase 2 priced at the duals of an early-terminated IPM master."""

    instances: ClassVar[list[CentredState]] = []
    delta0, delta_max, delta_min, d_gap = DELTA0, DELTA_MAX, DELTA_MIN, D_GAP
    purge = True
    smooth = False  # the package's self-adjusting Wentges smoothing on top of the IPM duals

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.deltas: list[float] = []
        self.exact_checks = 0
        CentredState.instances.append(self)

    def run(self, phase: int) -> str:
        if phase != 2 or not isinstance(self.master, IpmMaster):
            return super().run(phase)
        m = self.master
        n = self.HI.shape[1]
        delta = self.delta0
        exact_next = False
        while True:
            rnd = len(self.trace) + 1
            m.now = rnd
            if rnd > self.max_rounds:
                return "iteration_limit"
            if stop.requested():
                return stop.requested()
            if self.purge and self.purge_after and rnd % self.purge_after == 0 and m.ipm_tol:
                m.purge_by_weight(rnd, self.purge_after)
            m.ipm_tol = None if exact_next else delta
            self.deltas.append(0.0 if exact_next else delta)
            y, upper = m.run()
            exact = exact_next
            self.upper, self.y = upper, y
            floor = max(self.tol * abs(upper), self.abs_floor)
            thr = floor / n
            if exact:  # the exact master: stop if its objective meets the best bound
                self.exact_checks += 1
                why = self._settled(upper - self.best_lower, floor)
                if why:
                    self.stop = why + " (exact master)"
                    self._log(rnd, upper, -math.inf, 0, 0, exact)
                    return "optimal"
            y_m = y
            smoothed = self.smooth and not exact and self.center is not None
            if smoothed:
                y = self.stabilise * self.center + (1 - self.stabilise) * y_m
            W = m.pricing_costs(y)
            bounds = dec.lagrangian(self.RHO + (W - self.W_last), self.HI)
            todo = np.nonzero(bounds < -thr)[0]
            priced = self._price(todo, W, bounds)
            added = 0
            for k, v, value, _ in priced or ():
                if value < -thr and m.add(k, v, rnd):
                    added += 1
            if smoothed and priced is not None:
                self._adjust_alpha(priced, y_m)
            lower = -math.inf
            if priced is not None:
                lower = m.rhs_term(y) + math.fsum(np.minimum(bounds, 0.0))
                if lower > self.best_lower:
                    self.best_lower, self.center = lower, y
            self._log(rnd, upper, lower, added, 0 if priced is None else len(priced), exact)
            if priced is None or (self.deadline is not None and time.perf_counter() > self.deadline):
                return stop.requested() or "time_limit"
            gap_abs = upper - self.best_lower
            if exact and (added == 0 or self._settled(gap_abs, floor)):
                self.stop = "no improving column" if added == 0 else self._settled(gap_abs, floor)
                return "optimal"  # exact (optimal) master duals: nothing prices out
            self.lowers.append(self.best_lower)
            rel = max(gap_abs, 0.0) / max(abs(upper), 1e-12)
            delta = max(self.delta_min, min(self.delta_max, rel / self.d_gap))
            if exact:  # the exact check failed: back to the IPM master
                exact_next = False
                continue
            # the IPM point's objective (an upper bound) meets the bound: check exactly
            exact_next = bool(self._settled(gap_abs, floor))
            if added == 0:  # nothing prices out at these duals: a tighter IPM next, else exact
                delta = max(self.delta_min, min(delta, m.ipm_tol / self.d_gap))
                exact_next |= m.ipm_tol <= self.delta_min

    def _settled(self, gap_abs: float, floor: float) -> str:
        """The package's stops: the gap under the floor, or the bound stalled within
        ``stall_gap`` × the floor for STALL_ROUNDS rounds ('' if neither)."""
        if gap_abs <= floor:
            return "gap"
        if (gap_abs <= self.stall_gap * floor and len(self.lowers) > dec.STALL_ROUNDS
                and self.best_lower - self.lowers[-1 - dec.STALL_ROUNDS] <= 0.1 * floor):
            return f"bound stalled within {self.stall_gap:g}x the tolerance"
        return ""

    def _log(self, rnd, upper, lower, added, priced, exact):
        cs = self.cscale
        gap = (upper - self.best_lower) / max(abs(upper), 1e-12)
        self.trace.append({"round": rnd, "phase": 2, "upper": upper * cs, "lower": lower * cs,
                           "gap": gap, "added": added, "priced": priced, "smoothed": False,
                           "exact": exact, "delta": self.deltas[-1], "columns": len(self.master.ks),
                           "master_s": self.master.run_s, "time_s": self.prog.elapsed})
        self.prog.update(phase=2, lower=self.best_lower * cs, upper=upper * cs, gap=gap,
                         priced=priced, added=added)


@contextlib.contextmanager
def centred_duals(**params):
    """Swap :class:`IpmMaster` and :class:`CentredState` into the package for the duration."""
    orig = dec.Master, dec._State
    saved = {k: getattr(CentredState, k) for k in params if hasattr(CentredState, k)}
    for k, v in params.items():
        setattr(CentredState if hasattr(CentredState, k) else IpmMaster, k, v)
    dec.Master, dec._State = IpmMaster, CentredState
    try:
        yield
    finally:
        dec.Master, dec._State = orig
        for k, v in saved.items():
            setattr(CentredState, k, v)


def _summary(res, t, inst, eps, name, state=None) -> dict:
    raw = res
    if res.status == "optimal":
        res = certified_result(res, res.x.reshape(inst.K, inst.K), inst, eps, name=name)
    s = res.stats
    opt = res.optimality
    out = {"K": inst.K, "eps": eps, "path": name, "time_s": t,
           "objective": res.objective if res.status == "optimal" else opt.objective,
           "bound": opt.bound, "gap": res.gap if res.status == "optimal" else
           (opt.objective - opt.bound) / abs(opt.objective),
           "status": res.status,
           "realized_eps": res.certificate.realized_epsilon if res.status == "optimal" else math.nan,
           "rounds": s["rounds"],
           "master_s": s["master_s"], "pricing_s": s["pricing_s"], "priced": s["priced"],
           "setup_s": s["setup_s"], "stop": s.get("stop"), "columns": s["columns"],
           "exact_checks": 0, "ipm_iters": 0,
           "gaps": [tr["gap"] for tr in raw.stats["trace"] if tr["phase"] == 2]}
    out["other_s"] = t - out["master_s"] - out["pricing_s"]
    if state is not None:
        out.update(exact_checks=state.exact_checks, ipm_iters=state.master.ipm_iters)
    out["result"] = res
    return out


def solve(instance, eps: float, *, delta0: float = DELTA0, delta_max: float = DELTA_MAX,
          delta_min: float = DELTA_MIN, d_gap: float = D_GAP, purge: bool = True,
          crossover: bool = True, smooth: bool = False, **kwargs) -> dict:
    """OMG by the decomposition with an early-terminated interior-point master, certified.

    Returns a dict: ``objective`` (of the certified, cleaned mechanism), ``bound``, ``gap``,
    ``status``, ``rounds`` (of the fine solve), ``time_s``, ``master_s``, ``pricing_s``,
    ``other_s``, ``exact_checks``, ``result`` (the certified :class:`Result`) and ``state`` (the
    fine solve's :class:`CentredState`). ``kwargs`` go to ``solve_decomposition``.
    """
    CentredState.instances.clear()
    t0 = time.perf_counter()
    with centred_duals(delta0=delta0, delta_max=delta_max, delta_min=delta_min, d_gap=d_gap,
                       purge=purge, crossover=crossover, smooth=smooth):
        res = omg_large.solve_decomposition(instance, eps, **kwargs)
    t = time.perf_counter() - t0
    state = CentredState.instances[-1]  # the fine solve's state (coarse ones come first)
    out = _summary(res, t, instance, eps, "centred", state)
    out["state"] = state
    return out


def solve_today(instance, eps: float, **kwargs) -> dict:
    t0 = time.perf_counter()
    res = omg_large.solve_decomposition(instance, eps, **kwargs)
    return _summary(res, time.perf_counter() - t0, instance, eps, "today")


def _instance(g: int, seed: int = 0):
    """The g×g grid with a Dirichlet(1) prior of ``seed`` (the heuristic prototype's instances)."""
    rng = np.random.default_rng(seed)
    return li.grid(g, g).with_prior(rng.dirichlet(np.ones(g * g)))


def _load() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[15, 20])
    ap.add_argument("--eps", type=float, nargs="+", default=[1.0])
    ap.add_argument("--repeat", type=int, nargs="+", default=[1, 2],
                    help="runs of each size, by position in --sizes (default: 1 for 15, 2 for 20)")
    ap.add_argument("--delta0", type=float, default=DELTA0)
    ap.add_argument("--d-gap", type=float, default=D_GAP)
    ap.add_argument("--no-purge", action="store_true")
    ap.add_argument("--variants", nargs="+", default=["pure", "smooth"], choices=["pure", "smooth"],
                    help="pure: PDCGM (IPM duals as they are); smooth: with the package's "
                         "self-adjusting Wentges smoothing on top")
    ap.add_argument("--time-limit", type=float, default=None,
                    help="seconds for each prototype solve (its status then says time_limit)")
    ap.add_argument("--only", choices=["both", "centred"], default="both")
    ap.add_argument("--name", default="omg_centred_duals")
    ap.add_argument("--profile", action="store_true", help="cProfile one prototype run of the last size")
    args = ap.parse_args(argv)
    OUT.mkdir(exist_ok=True)
    rows = []
    print(f"load: {_load()}", flush=True)
    head = (f"{'K':>5} {'eps':>4} {'run':>3} {'path':>14} {'time s':>7} {'rounds':>6} "
            f"{'master':>7} {'pricing':>7} {'other':>6} {'LPs':>6} {'xchk':>4} {'gap':>8} "
            f"{'objective':>14} {'ratio':>6} load")
    print(head, flush=True)
    ok = True
    kw = dict(delta0=args.delta0, d_gap=args.d_gap, purge=not args.no_purge)
    for pos, g in enumerate(args.sizes):
        reps = args.repeat[min(pos, len(args.repeat) - 1)]
        for eps in args.eps:
            inst = _instance(g)
            for rep in range(1, reps + 1):
                a = solve_today(inst, eps) if args.only == "both" else None
                if a is not None:
                    _row(rows, a, a, rep, 0.0)
                for variant in args.variants:
                    b = solve(inst, eps, smooth=variant == "smooth", time_limit=args.time_limit,
                              **kw)
                    b["path"] = "centred" if variant == "pure" else "centred+smooth"
                    rel = 0.0 if a is None else abs(b["objective"] - a["objective"]) / abs(a["objective"])
                    agree = rel <= 1e-6 and b["bound"] <= b["objective"] * (1 + 1e-9)
                    if a is not None and b["status"] != "optimal":  # stopped: gap by round
                        r0 = len(b["gaps"])
                        print(f"      stopped at round {r0}, gap {b['gaps'][-1]:.1e}; today's gap "
                              f"at round {r0}: {a['gaps'][min(r0, len(a['gaps'])) - 1]:.1e}")
                    ok &= agree and b["status"] == "optimal" and (a is None or a["status"] == "optimal")
                    _row(rows, b, a, rep, rel)
                    print(f"      objectives agree to {rel:.1e} (certified eps "
                          f"{b['realized_eps']:.7f}, stop: today {a and a['stop']!r}, "
                          f"{b['path']} {b['stop']!r})", flush=True)
    from lpmech.io import write_csv

    write_csv(OUT / f"{args.name}.csv", rows)
    _plot(rows, OUT / f"{args.name}.png")
    print(f"wrote {OUT / (args.name + '.csv')} and {OUT / (args.name + '.png')}")
    if args.profile:
        import cProfile
        import pstats

        inst = _instance(args.sizes[-1])
        prof = cProfile.Profile()
        prof.enable()
        solve(inst, args.eps[0], smooth=args.variants[-1] == "smooth", **kw)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)
    if not ok:
        print("MISMATCH: objectives differ or a solve was not optimal", file=sys.stderr)
        return 1
    return 0


def _row(rows, r, a, rep, rel) -> None:
    r.update(run=rep, ratio=math.nan if a is None or r is a else a["time_s"] / r["time_s"],
             rel_diff=rel, load=_load().split("load average:")[-1].strip())
    rows.append({k: v for k, v in r.items() if k not in ("result", "state", "gaps")})
    print(f"{r['K']:>5} {r['eps']:>4g} {rep:>3} {r['path']:>14} {r['time_s']:>7.1f} {r['rounds']:>6} "
          f"{r['master_s']:>7.1f} {r['pricing_s']:>7.1f} {r['other_s']:>6.1f} {r['priced']:>6} "
          f"{r['exact_checks']:>4} {r['gap']:>8.1e} {r['objective']:>14.10f} {r['ratio']:>6.2f} "
          f"{r['load']}{'' if r['status'] == 'optimal' else ' ' + r['status']}", flush=True)


def _plot(rows, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lpmech.plotting import save_figure

    paths = [p for p in ("today", "centred", "centred+smooth") if any(r["path"] == p for r in rows)]
    labels = [f"K={r['K']} ε={r['eps']:g} #{r['run']}" for r in rows if r["path"] == paths[0]]
    parts = ("master_s", "pricing_s", "other_s")
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(labels)), 4.5))
    x = np.arange(len(labels))
    width = 0.8 / len(paths)
    for j, which in enumerate(paths):
        off = (j - (len(paths) - 1) / 2) * width
        rs = [r for r in rows if r["path"] == which]
        bottom = np.zeros(len(rs))
        for p, col in zip(parts, ("C0", "C1", "grey")):
            h = np.array([r[p] for r in rs])
            ax.bar(x + off, h, width * 0.95, bottom=bottom, color=col, alpha=(0.4, 0.7, 1.0)[j],
                   label=f"{which}: {p[:-2]}")
            bottom += h
        for xi, r, b in zip(x, rs, bottom):
            ax.text(xi + off, b, f"{r['rounds']}r", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylabel("time (s)")
    ax.set_title("OMG decomposition: today vs IPM-centred duals (left to right); rounds on top",
                 fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    save_figure(fig, path)


if __name__ == "__main__":
    raise SystemExit(main())
