"""Prototype: output generation whose restricted problem is solved by the decomposition.

Output generation (:mod:`lpmech.design.outputs`) solves the full LP over a growing set S of
outputs; at K = 400 with Geo-Ind ∧ LIP (ε_LIP = 2) that LP (16,000 entries and their lazy rows at
|S| = 40) takes minutes a round. Here the problem restricted to S is solved by the Dantzig–Wolfe
decomposition instead (:func:`lpmech.design.decomposition.decompose`: the dense master and |S|
warm pricing LPs a round), started from the previous round's optimum (its columns sum to one in
every row, so the master starts feasible at the last upper bound) and priced first at the last
multipliers. Between restricted solves every output is priced at the restricted optimum's
multipliers μ (one pricing LP per output, kept warm across rounds): L(μ) = Σ μ + Σ_k min_v
(C_k − μ)·v is a valid lower bound on the whole problem, and the outputs with the most negative
prices join S.

Both paths in one process, on a W×W grid over the Gowalla NYC box (the prior of
``benchmarks/design_composed.py``) or a Dirichlet(1) prior:

    python benchmarks/prototypes/outputs_by_decomposition.py --size 10 20 --eps-lip 2
"""

from __future__ import annotations

import argparse
import copy
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from lpmech.design import LIP, DPrivacy, solve
from lpmech.design.decomposition import decompose, lagrangian, make_pricer
from lpmech.design.problem import Problem, certified_result
from lpmech.errors import LpmechError


def restricted(notion, S):
    """The notion seen through the outputs S: output s of the restricted problem is output S[s]
    (only the per-output hints, the starting rows and the forced zeros, depend on it)."""
    base = type(notion)
    S = list(S)

    class Restricted(base):
        def zeros(self, k):
            return base.zeros(self, S[k])

        def initial_rows(self, k=None):
            return base.initial_rows(self, None if k is None else S[k])

        def separator(self, k, *args, **kwargs):
            return base.separator(self, S[k], *args, **kwargs)

    view = copy.copy(notion)
    view.__class__ = Restricted
    return view


def solve_outputs_dw(problem: Problem, *, tol: float = 9e-7, time_limit: float = 900.0,
                     workers=None, verbose: bool = False, add_per_round: int | None = None):
    """(x, upper, lower, rounds, trace): output generation with restricted problems by the
    decomposition (module docstring); x the K×n matrix of the last restricted optimum."""
    t0 = time.perf_counter()
    deadline = t0 + time_limit
    notion, C, K, n = problem.notion, problem.C, problem.K, problem.n
    if len(problem.extra_rows):
        raise ValueError("the prototype takes problems without extra rows")
    HI = problem.allowed().astype(float)
    S = sorted(np.argsort((C * HI).sum(axis=0) + 1e-12 * np.arange(n),
                          kind="stable")[:max(4, math.ceil(math.sqrt(n)))].tolist())
    add = max(8, n // 20) if add_per_round is None else add_per_round
    pricer = make_pricer(notion, n, workers=workers)
    cols: dict[int, list[np.ndarray]] = {}
    mu = None
    best_lower, trace, x, upper = -math.inf, [], None, math.inf
    try:
        for rnd in range(1, 200):
            left = deadline - time.perf_counter()
            if left <= 0:
                break
            start = [(s, v) for s, k in enumerate(S) for v in cols.get(k, [])]
            res = decompose(restricted(notion, S), C[:, S], columns=start, tol=tol / 10,
                            workers=workers, time_limit=left, dual_start=mu, check_columns=False,
                            name=f"restricted K={K} |S|={len(S)}", verbose=verbose)
            if res.x is None or res.duals is None:
                break
            xs = res.x.reshape(K, len(S))
            upper = float((C[:, S] * xs).sum())
            mu = np.asarray(res.duals, float)[:K]
            x = np.zeros((K, n))
            x[:, S] = xs
            for s, k in enumerate(S):  # the optimum's columns start the next restricted master
                top = xs[:, s].max()
                cols[k] = [xs[:, s] / top] if top > 1e-12 else []
            W = C - mu[:, None]
            priced = pricer.price(np.arange(n), W, deadline)
            if priced is None:
                break
            terms = np.zeros(n)
            cand = []
            inS = set(S)
            for k, v, value, rho in priced:
                terms[k] = lagrangian(rho[:, None], HI[:, k:k + 1])[0]
                if k not in inS and value < -tol * abs(upper) / n:
                    cand.append((value, k))
                    cols[k] = [v]
            lower = float(mu.sum()) + math.fsum(np.minimum(terms, 0.0))
            best_lower = max(best_lower, lower)
            gap = (upper - best_lower) / max(abs(upper), 1e-12)
            trace.append(dict(round=rnd, outputs=len(S), upper=upper, lower=lower, gap=gap,
                              dw_rounds=res.stats.get("rounds"), time_s=time.perf_counter() - t0))
            print(f"  round {rnd}: |S| {len(S)}, restricted {res.stats.get('rounds')} rounds, "
                  f"upper {upper:.6f}, lower {lower:.6f}, gap {gap:.2e} "
                  f"({time.perf_counter() - t0:.1f} s)", flush=True)
            if gap <= tol or not cand:
                break
            cand.sort()
            S = sorted(inS | {k for _, k in cand[:add]})
    finally:
        pricer.close()
    return x, upper, best_lower, len(trace), trace


def gowalla_instance(size: int, prior: str, seed: int):
    from design_composed import DEFAULT_FILE, gowalla_grid

    inst = gowalla_grid(DEFAULT_FILE, size)
    if prior == "dirichlet":
        inst = inst.with_prior(np.random.default_rng(seed).dirichlet(np.ones(inst.K)))
    return inst


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, nargs="+", default=[10])
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--eps-lip", type=float, default=2.0)
    ap.add_argument("--prior", default="gowalla", choices=["gowalla", "dirichlet"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=900.0)
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    for size in args.size:
        inst = gowalla_instance(size, args.prior, args.seed)
        notion = DPrivacy(inst, args.eps) & LIP(inst.prior, args.eps_lip)
        problem = Problem.make(notion, prior=inst.prior, loss=inst.loss)
        print(f"K = {inst.K}, {args.prior} prior, eps {args.eps}, eps_lip {args.eps_lip}", flush=True)
        t0 = time.perf_counter()
        x, upper, lower, rounds, _ = solve_outputs_dw(problem, time_limit=args.time_limit,
                                                      verbose=args.verbose)
        t_new = time.perf_counter() - t0
        cert = None
        if x is not None:
            from lpmech.certificate import OptimalityCertificate
            from lpmech.solvers.result import Result

            res = Result(status="optimal" if (upper - lower) <= 9e-7 * abs(upper) else "time_limit",
                         x=x.ravel(), stats={})
            res.optimality = OptimalityCertificate.from_values(upper, lower)
            try:
                cert = certified_result(res, problem, x.ravel())
            except LpmechError as exc:
                print("  not certified:", exc)
        print(f"outputs by decomposition: {t_new:.1f} s, {rounds} rounds, upper {upper:.7f}, "
              f"lower {lower:.7f}" + ("" if cert is None else
                                      f", certified {cert.objective:.7f} gap {cert.gap:.1e}"), flush=True)
        if args.no_baseline:
            continue
        t0 = time.perf_counter()
        try:
            ref = solve(notion, prior=inst.prior, loss=inst.loss, method="outputs",
                        time_limit=args.time_limit)
            t_ref = time.perf_counter() - t0
            print(f"output generation (restricted LP by HiGHS): {t_ref:.1f} s, "
                  f"{ref.stats.get('rounds')} rounds, {ref.objective:.7f}; ratio {t_ref / t_new:.2f}",
                  flush=True)
        except LpmechError as exc:
            print(f"output generation (restricted LP by HiGHS): {type(exc).__name__} after "
                  f"{time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
