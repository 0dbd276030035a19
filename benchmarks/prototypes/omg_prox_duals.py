"""Prototype: the dual point priced each round as the master's proximal point around the centre.

Today each round prices at a Wentges-smoothed point y = α·centre + (1 − α)·y_m between the
best-bound centre and the restricted master's optimal duals y_m (an interior point's: central on
the master's large optimal dual face). Here the priced point is the proximal point

    y_p = argmax_y  Σ y − ‖y − centre‖² / (2t)   s.t.   Vᵀ y ≤ c

(the restricted master's dual with a quadratic pull to the centre; proximal bundle methods price
there): of the dual-feasible points it trades objective against the distance to the centre, so in
a degenerate master it picks the point of (nearly) optimal face nearest the centre. Solved by
CVXOPT's ``coneqp`` with the dense master's own normal-equations KKT solver plus I/t. The step t
self-adjusts: t = β·‖y_m − centre‖/√K, β × 1.5 after a round that raised the best bound, × 0.5
otherwise. The lower bound stays L(y_p) (valid at any y); the upper and the stop are the master's.

    python benchmarks/prototypes/omg_prox_duals.py [--sizes 15 20] [--seeds 0] [--arms today prox prox=100]

``--arms``: ``today`` (the package's smoothing), ``prox`` (self-adjusting β from 1), ``prox=B``
(β fixed at B). Measured (ε = 1, Dirichlet(1) prior seed 0, one process per call, a 2-core
machine whose speed moved by 1.3× between calls), not kept:

=======  ==========================  =====================================================
K        today                       proximal point
=======  ==========================  =====================================================
100      20 rounds, 1.8 s            self-adjusting: 16 rounds, 1.6 s
225      31 rounds, 12.3–16.7 s      self-adjusting 27 rounds, 16.6 s; fixed β = 0.3, 1, 3,
                                     10, 30, 100, 1,000: 187, 108, 62, 41, 47, 26, 30 rounds
400      27 rounds, 47.9 s           self-adjusting: 28 rounds, 53.4 s (the QPs 17.5 s)
=======  ==========================  =====================================================

A short step (small β) keeps the priced point near a centre that is itself far from the optimum,
and the rounds grow; the self-adjusting β climbs to its cap within ten rounds, where the
proximal point is the master's optimal dual point nearest the centre, and the rounds are those of
today's smoothing at K = 400. Each QP costs as much as a master solve (it cannot be warm-started
either), so a round costs more for the same rounds.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from lpmech import instance as li
from lpmech.design import decomposition as dec
from lpmech.models.omg import omg_large
from lpmech.solvers import dense_lp


def prox_point(V: np.ndarray, c: np.ndarray, centre: np.ndarray, t: float, tol: float = 1e-8):
    """argmax Σy − ‖y − centre‖²/(2t) s.t. Vᵀy ≤ c (CVXOPT coneqp, numpy normal equations)."""
    from cvxopt import matrix, solvers

    K = V.shape[0]
    Gt = np.asarray(V, float).T

    def P(x, y, alpha=1.0, beta=0.0):
        r = alpha * np.asarray(x).ravel() / t
        if beta != 0.0:
            r += beta * np.asarray(y).ravel()
        y[:] = matrix(r)

    q = matrix(-np.ones(K) - centre / t)
    opts = {"show_progress": False, "abstol": tol, "reltol": tol, "feastol": tol, "maxiters": 100}
    sol = solvers.coneqp(P, q, dense_lp._products(Gt), matrix(np.asarray(c, float)),
                         kktsolver=dense_lp._normal_kkt(Gt, shift=1.0 / t), options=opts)
    if sol["x"] is None:
        return None, 0
    return np.asarray(sol["x"]).ravel(), int(sol["iterations"])


class ProxState(dec._State):
    """Phase 2 with the priced point the proximal point around the best-bound centre."""

    beta = 1.0
    fixed = False
    prox_iters = 0
    prox_s = 0.0

    def run(self, phase: int) -> str:
        if phase != 2:
            return super().run(phase)
        m = self.master
        smooth_next = True
        while True:
            rnd = len(self.trace) + 1
            m.now = rnd
            if self.purge_after and rnd % self.purge_after == 0:
                m.purge(rnd, self.purge_after)
            y_m, upper = m.run()
            self.upper = upper
            W_m = m.pricing_costs(y_m)
            smoothed = smooth_next and self.center is not None and m.m == m.K
            y = None
            if smoothed:
                K = m.K
                dist = float(np.linalg.norm(y_m - self.center))
                t = max(self.beta * dist / math.sqrt(K), 1e-12)
                ts = time.perf_counter()
                y, it = prox_point(np.column_stack(m.vs), np.asarray(m.costs, float),
                                   self.center, t)
                ProxState.prox_s += time.perf_counter() - ts
                ProxState.prox_iters += it
            if y is None:
                smoothed, y, W = False, y_m, W_m
            else:
                W = m.pricing_costs(y)
            self.y = y_m
            floor = max(self.tol * abs(upper), self.abs_floor)
            thr = floor / W.shape[1]
            bounds = dec.lagrangian(self.RHO + (W - self.W_last), self.HI)
            todo = np.nonzero(bounds < -thr)[0]
            priced = self._price(todo, W, bounds)
            added = improving = 0
            for k, v, value, _ in priced or ():
                rc = W_m[:, k] @ v
                if (rc < -thr or value < -thr) and m.add(k, v, rnd):
                    added += 1
                    improving += rc < -thr
            lower = m.rhs_term(y) + math.fsum(np.minimum(bounds, 0.0))
            if lower > self.best_lower:
                self.best_lower, self.center = lower, y
                if not ProxState.fixed:
                    ProxState.beta = min(self.beta * 1.5, 100.0)
            elif smoothed and not ProxState.fixed:
                ProxState.beta = max(self.beta * 0.5, 1e-3)
            gap_abs = upper - self.best_lower
            gap = gap_abs / max(abs(upper), 1e-12)
            self.trace.append({"round": rnd, "phase": phase, "upper": upper * self.cscale,
                               "lower": lower * self.cscale, "gap": gap, "added": added,
                               "priced": len(priced), "smoothed": smoothed, "columns": len(m.ks),
                               "master_s": m.run_s, "time_s": self.prog.elapsed})
            print(f"  round {rnd}: gap {gap:.3g} beta {self.beta:.3g} added {added}", flush=True)
            if gap_abs <= floor:
                self.stop = "gap"
                return "optimal"
            if rnd > 400:
                return "iteration_limit"
            if improving == 0 and not smoothed:
                self.stop = "no improving column"
                return "optimal"
            smooth_next = improving > 0


def solve(inst, eps: float, prox: bool):
    old = dec._State
    dec._State = ProxState if prox else old
    try:
        t = time.perf_counter()
        r = omg_large.solve_decomposition(inst, eps)
        return r, time.perf_counter() - t
    finally:
        dec._State = old


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[15, 20])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--arms", nargs="+", default=["today", "prox"])
    args = ap.parse_args(argv)
    for g in args.sizes:
        for seed in args.seeds:
            inst = li.grid(g, g).with_prior(np.random.default_rng(seed).dirichlet(np.ones(g * g)))
            for arm in args.arms:
                ProxState.beta, ProxState.prox_iters, ProxState.prox_s = 1.0, 0, 0.0
                ProxState.fixed = arm.startswith("prox=")
                if ProxState.fixed:
                    ProxState.beta = float(arm.removeprefix("prox="))
                r, s = solve(inst, args.eps, arm.startswith("prox"))
                st = r.stats
                print(f"K={g * g} seed={seed} {arm}: {s:.1f} s, {st['rounds']} rounds, "
                      f"objective {r.objective:.9g}, master {st['master_s']:.1f} s, pricing "
                      f"{st['pricing_s']:.1f} s, prox {ProxState.prox_s:.1f} s "
                      f"({ProxState.prox_iters} QP iterations)", flush=True)


if __name__ == "__main__":
    main()
