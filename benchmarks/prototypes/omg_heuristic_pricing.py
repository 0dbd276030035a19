"""Prototype: heuristic pricing of the OMG decomposition from the structure of the Geo-Ind cone.

Design (issue "Exact at city scale"). With a metric and every pair a row, every vertex of
C_k ∩ [0, 1]^K other than 0 is a *multi-tent* v = max_{s∈S} t^s, t^s_i = e^{−ε P(s, i)} (P the
shortest paths of the row graph, = d for a full metric): a tight chain of rows leads from every
entry to an apex at its upper bound 1. So pricing output k is min over apex sets S of
Σ_i w_ik max_{s∈S} t^s_i, and a greedy over S gives good columns with no LP:

* start from the best single tent (all single tents at once: R = Tᵀ W, one matrix product);
* add the apex of the most negative gain Σ_i w_ik max(t^s_i − v_i, 0) among the ``n_cand``
  cells of most negative w_ik (1 − v_ik) (vectorised over all outputs), until no apex improves.

Every heuristic column is exactly a max of columns of the notion's closure, so it lies in the cone.

The round loop is the package's :meth:`lpmech.design.decomposition._State.run`, unchanged; only
:meth:`_State._price` is overridden (:class:`HeuristicState`): at the costs W of the round, the
heuristic prices every output the round would price (``todo``: those whose stale Lagrangian bound
can still go below the threshold); the exact pricing LPs then run only for the outputs where the
heuristic found no column of value below −thr (and for all of ``todo`` every ``exact_every``
rounds, and in the first round). An output not priced exactly keeps the stale bound that ``run``
computed from its last exact reduced costs (Σ min(0, ρ + ΔW), valid for any W), so every bound the
loop reports is a valid Lagrangian bound, and the loop's stops are unchanged: "gap" with a valid
bound; "no improving column" only in a round with no improving column at all, i.e. one in which
every output of ``todo`` was priced exactly.

The package's ``_decompose`` builds its ``_State`` by module-global name: :func:`solve` swaps in
:class:`HeuristicState` (and wraps ``omg_large.decompose`` to hand it the notion's closure) for
the duration of one call of :func:`lpmech.models.omg.omg_large.solve_decomposition`, so starting
columns, the coarse-to-fine start, the master, smoothing and the stops are the package's own.

    python benchmarks/prototypes/omg_heuristic_pricing.py [--sizes 15 20] [--eps 1] [--repeat 2]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from pathlib import Path
from typing import ClassVar

import numpy as np

from lpmech import instance as li
from lpmech.design import decomposition as dec
from lpmech.models.common import certified_result
from lpmech.models.omg import omg_large

OUT = Path(__file__).resolve().parents[1] / "results"

#: candidates per greedy step (cells of most negative w_ik (1 − v_ik)) and the step cap
N_CAND, MAX_APEX = 24, 64
#: outputs per vectorised chunk (memory K × N_CAND × chunk)
CHUNK = 128


def multi_tents(Tent: np.ndarray, W: np.ndarray, *, n_cand: int = N_CAND,
                max_apex: int = MAX_APEX) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Greedy multi-tent columns for every column of W (K×n): ``(V, value, n_apex)``.

    ``Tent[:, s]`` is the tent of apex s (a column of the cone with Tent[s, s] = 1). Column k of V
    is max_{s∈S_k} Tent[:, s] for the greedy apex set S_k, value[k] = W[:, k]·V[:, k].
    """
    K, n = W.shape
    V = np.empty((K, n))
    val = np.empty(n)
    napex = np.ones(n, np.int64)
    R = Tent.T @ W  # R[s, k]: reduced cost of the single tent of s for output k
    s0 = R.argmin(axis=0)
    V[:] = Tent[:, s0]
    m = min(n_cand, K)
    for a in range(0, n, CHUNK):
        b = min(n, a + CHUNK)
        Wc, Vc = W[:, a:b], V[:, a:b]  # views: V updated in place
        act = np.arange(b - a)
        for _ in range(max_apex - 1):
            if act.size == 0:
                break
            Wa, Va = Wc[:, act], Vc[:, act]
            score = Wa * (1.0 - Va)
            cand = np.argpartition(score, m - 1, axis=0)[:m] if m < K else np.argsort(score, axis=0)
            Tc = Tent[:, cand]  # (K, m, |act|)
            gain = np.einsum("ik,imk->mk", Wa, np.maximum(Tc - Va[:, None, :], 0.0))
            c = gain.argmin(axis=0)
            g = gain[c, np.arange(act.size)]
            scale = np.abs(Wa).max(axis=0)
            ok = g < -1e-12 * scale
            if not ok.any():
                break
            cols = act[ok]
            Vc[:, cols] = np.maximum(Vc[:, cols], Tc[:, c[ok], np.nonzero(ok)[0]])
            napex[a + cols] += 1
            act = cols
    val[:] = np.einsum("ik,ik->k", W, V)
    return V, val, napex


class HeuristicState(dec._State):
    """The package's round loop with heuristic pricing first (module doc)."""

    #: set by :func:`solve` for each decomposition it starts: the tents (Tent[:, s] = tent of s)
    tents_stack: ClassVar[list[np.ndarray]] = []
    #: every state built (the caller reads its timings)
    instances: ClassVar[list[HeuristicState]] = []
    exact_every = 0  # 0: exact pricing only where the heuristic fails
    force_first = False  # price every output exactly in the first round too
    #: "replace": exact pricing only for outputs the heuristic fails on; "add": exact pricing of
    #: every output as today, heuristic columns added besides; "warmup": heuristic only while it
    #: finds columns for ≥ warm_frac of the outputs priced, then "add"
    mode = "replace"
    warm_frac = 0.5
    use_library = True  # offer every output the exactly priced columns of all outputs
    lib_max = 10  # library size, × K columns

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.Tent = self.tents_stack[-1]
        self.heur_s = 0.0
        self.heur_found = 0
        self.heur_rounds = 0
        self.exact_rounds = 0
        self.heur_cols: list[tuple[int, np.ndarray]] = []  # kept for the tests (capped)
        self.round_log: list[dict] = []
        K = self.Tent.shape[0]
        self.lib = np.empty((K, self.lib_max * K))
        self.lib_n = 0
        self.lib_pos = 0
        self.lib_hits = 0
        self.warm = True
        HeuristicState.instances.append(self)

    def _lib_add(self, v: np.ndarray) -> None:
        """Keep an exactly priced column (in the cone of every output) in the library (FIFO)."""
        self.lib[:, self.lib_pos] = v
        self.lib_pos = (self.lib_pos + 1) % self.lib.shape[1]
        self.lib_n = min(self.lib_n + 1, self.lib.shape[1])

    def _price(self, todo, W, bounds):
        m = self.master
        if m.phase != 2 or len(todo) == 0:
            return super()._price(todo, W, bounds)
        rnd = len(self.trace) + 1
        todo = np.asarray(todo, dtype=np.int64)
        floor = max(self.tol * abs(self.upper), self.abs_floor)
        thr = floor / W.shape[1]
        ts = time.perf_counter()
        V, val, napex = multi_tents(self.Tent, W[:, todo])
        src = np.zeros(todo.size, np.int64)  # 0: multi-tent, 1: library
        if self.lib_n:
            L = self.lib[:, :self.lib_n]
            R = L.T @ W[:, todo]
            best = R.argmin(axis=0)
            lv = R[best, np.arange(todo.size)]
            better = lv < val
            V[:, better] = L[:, best[better]]
            val[better] = lv[better]
            src[better] = 1
        self.heur_s += time.perf_counter() - ts
        found = val < -thr
        force = (self.force_first and rnd == 1) or (self.exact_every and rnd % self.exact_every == 0)
        if self.mode == "warmup" and self.warm and found.sum() < self.warm_frac * todo.size:
            self.warm = False  # the heuristic has dried up: exact pricing of all todo from now on
        if self.mode == "replace" and not force:
            exact = todo[~found]
        elif self.mode == "warmup" and self.warm and not force:
            exact = todo[:0]
        else:  # "add", or warm-up over: every output of todo exactly, heuristic columns besides
            exact = todo
        priced = super()._price(exact, W, bounds) if exact.size else []
        if priced is None:
            return None
        ts = time.perf_counter()
        if self.use_library:
            for _, v, value, _ in priced:
                if value < 0:
                    self._lib_add(v)
        self.heur_s += time.perf_counter() - ts
        self.lib_hits += int((found & (src == 1)).sum())
        self.heur_found += int(found.sum())
        self.heur_rounds += exact.size < todo.size
        self.exact_rounds += exact.size == todo.size
        out = list(priced)
        for c in np.nonzero(found)[0]:
            out.append((int(todo[c]), V[:, c].copy(), float(val[c]), None))
            if len(self.heur_cols) < 2000:
                self.heur_cols.append((int(todo[c]), V[:, c].copy()))
        self.round_log.append({"round": rnd, "todo": int(todo.size), "heuristic": int(found.sum()),
                               "exact": int(exact.size), "lib": int((found & (src == 1)).sum()),
                               "mean_apex": float(napex[found].mean())
                               if found.any() else 0.0})
        return out


@contextlib.contextmanager
def heuristic_pricing(exact_every: int = 0, mode: str = "replace", warm_frac: float = 0.5,
                      use_library: bool = True):
    """Swap :class:`HeuristicState` into the package's decomposition for the duration."""
    orig_state, orig_decompose = dec._State, omg_large.decompose

    def decompose(notion, C, **kwargs):
        HeuristicState.tents_stack.append(np.ascontiguousarray(notion.closure.T))
        try:
            return orig_decompose(notion, C, **kwargs)
        finally:
            HeuristicState.tents_stack.pop()

    HeuristicState.exact_every = exact_every
    HeuristicState.mode, HeuristicState.warm_frac = mode, warm_frac
    HeuristicState.use_library = use_library
    dec._State, omg_large.decompose = HeuristicState, decompose
    try:
        yield
    finally:
        dec._State, omg_large.decompose = orig_state, orig_decompose


def _summary(res, t, inst, eps, name, state=None) -> dict:
    res = certified_result(res, res.x.reshape(inst.K, inst.K), inst, eps, name=name)
    s = res.stats
    out = {"K": inst.K, "eps": eps, "path": name, "time_s": t, "objective": res.objective,
           "bound": res.optimality.bound, "gap": res.gap, "status": res.status,
           "realized_eps": res.certificate.realized_epsilon, "rounds": s["rounds"],
           "master_s": s["master_s"], "exact_pricing_s": s["pricing_s"], "priced": s["priced"],
           "heuristic_s": 0.0, "heuristic_cols": 0, "stop": s.get("stop"), "columns": s["columns"]}
    if state is not None:
        out.update(heuristic_s=state.heur_s, heuristic_cols=state.heur_found,
                   heuristic_rounds=state.heur_rounds, exact_rounds=state.exact_rounds)
    out["result"] = res
    return out


def solve(instance, eps: float, *, exact_every: int = 0, mode: str = "replace",
          warm_frac: float = 0.5, use_library: bool = True, **kwargs) -> dict:
    """OMG by the decomposition with heuristic multi-tent pricing, certified.

    Returns a dict: ``objective`` (of the certified, cleaned mechanism), ``bound``, ``gap``,
    ``rounds``, ``time_s``, ``master_s``, ``heuristic_s``, ``exact_pricing_s``, ``priced`` (exact
    pricing LPs solved), ``heuristic_cols``, ``result`` (the certified :class:`Result`) and
    ``state`` (the top-level :class:`HeuristicState`). ``kwargs`` go to ``solve_decomposition``.
    """
    HeuristicState.instances.clear()
    t0 = time.perf_counter()
    with heuristic_pricing(exact_every, mode, warm_frac, use_library):
        res = omg_large.solve_decomposition(instance, eps, **kwargs)
    t = time.perf_counter() - t0
    state = HeuristicState.instances[-1]  # the fine solve's state (coarse ones come first)
    out = _summary(res, t, instance, eps, "heuristic", state)
    out["state"] = state
    return out


def solve_today(instance, eps: float, **kwargs) -> dict:
    t0 = time.perf_counter()
    res = omg_large.solve_decomposition(instance, eps, **kwargs)
    return _summary(res, time.perf_counter() - t0, instance, eps, "today")


def _instance(g: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    return li.grid(g, g).with_prior(rng.dirichlet(np.ones(g * g)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[15, 20])
    ap.add_argument("--eps", type=float, nargs="+", default=[1.0])
    ap.add_argument("--repeat", type=int, nargs="+", default=[1, 2],
                    help="runs of each size, by position in --sizes (default: 1 for 15, 2 for 20)")
    ap.add_argument("--exact-every", type=int, default=0)
    ap.add_argument("--mode", default="replace", choices=["replace", "add", "warmup"])
    ap.add_argument("--no-library", action="store_true", help="multi-tents only")
    ap.add_argument("--name", default="omg_heuristic_pricing")
    ap.add_argument("--profile", action="store_true", help="cProfile one prototype run of the last size")
    args = ap.parse_args(argv)
    OUT.mkdir(exist_ok=True)
    rows = []
    head = (f"{'K':>5} {'eps':>4} {'run':>3} {'path':>9} {'time s':>7} {'rounds':>6} {'master':>7} "
            f"{'heur':>6} {'exact':>7} {'LPs':>6} {'hcols':>6} {'gap':>8} {'objective':>14} "
            f"{'ratio':>6}")
    print(head, flush=True)
    ok = True
    for pos, g in enumerate(args.sizes):
        reps = args.repeat[min(pos, len(args.repeat) - 1)]
        for eps in args.eps:
            inst = _instance(g)
            for rep in range(1, reps + 1):
                a = solve_today(inst, eps)
                b = solve(inst, eps, exact_every=args.exact_every, mode=args.mode,
                          use_library=not args.no_library)
                rel = abs(b["objective"] - a["objective"]) / abs(a["objective"])
                agree = rel <= 1e-6 and b["bound"] <= b["objective"] * (1 + 1e-9)
                ok &= agree and b["status"] == "optimal" and a["status"] == "optimal"
                for r in (a, b):
                    r.update(run=rep, ratio=a["time_s"] / b["time_s"], rel_diff=rel)
                    rows.append({k: v for k, v in r.items() if k not in ("result", "state")})
                    print(f"{r['K']:>5} {eps:>4g} {rep:>3} {r['path']:>9} {r['time_s']:>7.1f} "
                          f"{r['rounds']:>6} {r['master_s']:>7.1f} {r['heuristic_s']:>6.1f} "
                          f"{r['exact_pricing_s']:>7.1f} {r['priced']:>6} {r['heuristic_cols']:>6} "
                          f"{r['gap']:>8.1e} {r['objective']:>14.10f} "
                          f"{(r['ratio'] if r['path'] == 'heuristic' else math.nan):>6.2f}",
                          flush=True)
                print(f"      objectives agree to {rel:.1e} (certified eps {b['realized_eps']:.7f}, "
                      f"stop: today {a['stop']!r}, heuristic {b['stop']!r})", flush=True)
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
        solve(inst, args.eps[0], exact_every=args.exact_every, mode=args.mode,
              use_library=not args.no_library)
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
        pstats.Stats(prof).sort_stats("tottime").print_stats(20)
    if not ok:
        print("MISMATCH: objectives differ or a solve was not optimal", file=sys.stderr)
        return 1
    return 0


def _plot(rows, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lpmech.plotting import save_figure

    labels = [f"K={r['K']} ε={r['eps']:g} #{r['run']}" for r in rows if r["path"] == "today"]
    parts = ("master_s", "exact_pricing_s", "heuristic_s")
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(labels)), 4.5))
    x = np.arange(len(labels))
    for off, which in ((-0.2, "today"), (0.2, "heuristic")):
        rs = [r for r in rows if r["path"] == which]
        bottom = np.zeros(len(rs))
        for p, col in zip(parts, ("C0", "C1", "C2")):
            h = np.array([r[p] for r in rs])
            ax.bar(x + off, h, 0.38, bottom=bottom, color=col, alpha=1.0 if which == "heuristic" else 0.5,
                   label=f"{which}: {p[:-2]}")
            bottom += h
        other = np.array([r["time_s"] for r in rs]) - bottom
        ax.bar(x + off, other, 0.38, bottom=bottom, color="grey",
               alpha=1.0 if which == "heuristic" else 0.5, label=f"{which}: other")
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylabel("time (s)")
    ax.set_title("OMG decomposition: today (left) vs heuristic pricing (right)", fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    save_figure(fig, path)


if __name__ == "__main__":
    raise SystemExit(main())
