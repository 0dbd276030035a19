"""Output generation: the full LP restricted to a growing set of outputs, priced output by output.

Many optimal mechanisms use few outputs (with a co-location loss 1[d_ik > 0] and a real, skewed
prior, the optimum reports only a few dense cells). Dantzig–Wolfe by extreme column
(:mod:`lpmech.design.decomposition`) then needs many rounds, because every used column is a convex
combination of many extreme columns. Here the master is the *full* LP over the outputs in a set S
(every entry z_ik, k ∈ S, a variable; the notion's rows added lazily, :class:`~lpmech.solvers.
cutting_planes.LazyLP`), so only the choice of outputs is iterative:

1. solve the restricted LP over S (its optimum is an upper bound: outputs outside S unused);
2. with its multipliers y = (μ, y_r) price every output k: min_v w_k·v over v ∈ C_k ∩ [0, 1]^K,
   w_k = C_·k − μ − Σ_r y_r A_r[·, k] (the pricing LPs of the decomposition, kept warm; an output
   whose last reduced costs, shifted by the change of w_k, cannot go below the threshold is not
   re-solved). The Lagrangian L(y) = Σ μ + Σ_r y_r·(lo|hi) + Σ_k min_v w_k·v is a valid lower bound;
3. add the outputs with the most negative prices to S, each with the rows its pricing LP holds
   (:data:`SEED_ROWS`); stop when the gap closes or none prices out.

The result is an uncertified :class:`~lpmech.solvers.result.Result` (x = the K×n matrix, raveled);
the engine certifies it like every other path.
"""

from __future__ import annotations

import logging
import math
import time

import numpy as np
import scipy.sparse as sp

from .. import stop
from ..certificate import OptimalityCertificate
from ..errors import InputError, SolverError
from ..progress import Progress
from ..solvers.cutting_planes import LazyLP
from ..solvers.result import Result, check_time_limit
from .decomposition import _Stopped, lagrangian, make_pricer
from .notion import aux_upper, start_rows

log = logging.getLogger(__name__)

__all__ = ["LP_METHODS", "restricted_lp", "solve_outputs"]

#: an output joining S starts the restricted LP with the rows of its pricing LP (which has found
#: that output's rows at its pricing optimum already), not with the notion's starting rows
SEED_ROWS = True
#: how :func:`solve_outputs` solves its restricted LP (``lp``)
LP_METHODS = ("simplex", "ipm", "clarabel", "race")


def _valid(y: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Row multipliers with the sign their finite sides allow (any such y gives a valid bound)."""
    y = y.copy()
    y[(y > 0) & ~np.isfinite(lo)] = 0.0
    y[(y < 0) & ~np.isfinite(hi)] = 0.0
    return y


def solve_outputs(problem, *, tol: float = 1e-7, start=None, time_limit: float | None = None,
                  executor=None, workers: int | None = None, max_rounds: int = 100,
                  add_per_round: int | None = None, lp: str = "simplex",
                  verbose: bool = False) -> Result:
    """Minimise the problem's loss by output generation (module docstring).

    Args:
        problem: a :class:`lpmech.design.problem.Problem`.
        tol: stop when upper − lower ≤ tol·|upper|.
        start: the outputs to start with (default: the ⌈√n⌉ outputs of smallest column cost).
        add_per_round: outputs added per round (default max(8, n/20)), most negative price first.
        executor, workers: the pricing backend (:func:`lpmech.design.decomposition.make_pricer`).
        max_rounds: cap on the rounds (status ``iteration_limit``); time_limit: seconds.
        lp: how the restricted LP is solved after each batch of lazy rows: ``"simplex"``
            (interior point with crossover first, then warm dual simplex) or ``"ipm"`` (interior
            point without crossover every time, one crossover at the end for exact multipliers:
            steadier where the rows make the LP very degenerate, as the d-privacy rows of LE's
            LP (8) do, on which dual simplex stalled at ε = 2; slower on LIP rows; measured in
            ``benchmarks/le_gap_real.py``), or ``"clarabel"`` (Clarabel's interior point every
            time, :mod:`lpmech.solvers.clarabel_lp`: its direct factorisation was 2.3× faster than
            HiGHS' on the d-privacy cores of :mod:`lpmech.models.le.le_support`), or ``"race"``
            (the interior points of :data:`lpmech.solvers.race.SOLVERS`, PIQP's, in a child
            process stopped at the deadline, HiGHS' as the fallback: :mod:`lpmech.solvers.race`).
            The restricted LP's point and multipliers need no vertex: the bound is the Lagrangian
            of the multipliers and the engine certifies (and repairs) the point.
    """
    if lp not in LP_METHODS:
        raise InputError(f"unknown restricted-LP method {lp!r}: use one of {', '.join(LP_METHODS)}")
    t0 = time.perf_counter()
    time_limit = check_time_limit(time_limit)
    deadline = None if time_limit is None else t0 + time_limit
    notion, K, n = problem.notion, problem.K, problem.n
    scale = float(np.abs(problem.C).max()) or 1.0
    Cs = problem.C / scale
    extra = list(problem.extra_rows)
    HI = problem.allowed().astype(float)
    aux = aux_upper(notion)
    if start is None:
        s0 = max(4, math.ceil(math.sqrt(n)))
        start = np.argsort((Cs * HI).sum(axis=0) + 1e-12 * np.arange(n), kind="stable")[:s0]
    S = sorted({int(k) for k in start})
    if not S or min(S) < 0 or max(S) >= n:
        raise InputError(f"start outputs must be indices in [0, {n})")
    add_per_round = max(8, n // 20) if add_per_round is None else int(add_per_round)
    rows: dict[int, sp.csr_matrix] = {}
    oracles: dict = {}
    pricer = make_pricer(notion, n, executor=executor, workers=workers)
    RHO = np.full((K, n), -np.inf)
    W_last = np.zeros((K, n))
    best_lower, upper, trace, status = -math.inf, math.inf, [], "iteration_limit"
    x = None
    prog = Progress(f"output generation K={K}", verbose=verbose, unit="round", logger=log)
    try:
        for rnd in range(1, int(max_rounds) + 1):
            for k in S:
                if k not in oracles:
                    if k not in rows:
                        rows[k] = start_rows(notion, k)
                    oracles[k] = notion.separator(k, rows[k])
            out, lazy = restricted_lp(Cs, HI, extra, S, rows, oracles, deadline, aux, lp=lp)
            if (out.status in ("error", "time_limit") and not stop.requested()
                    and (deadline is None or time.perf_counter() < deadline)):
                prog.note("restricted LP ended %s after interior point; retrying with dual simplex",
                          out.status)  # HiGHS' IPM can stop early (iteration cap) on these LPs
                out, lazy = restricted_lp(Cs, HI, extra, S, rows, oracles, deadline, aux, ipm=False)
            if out.status != "optimal":
                status = out.status
                if status == "infeasible" and len(S) < n:
                    raise SolverError("the LP restricted to the generated outputs is infeasible; use "
                                      "method='decomposition' (it proves infeasibility)")
                break
            m = len(S)
            x = np.zeros((K, n))
            x[:, S] = out.x[:K * m].reshape(K, m)
            upper = float(out.objective)
            _, lo_all, hi_all = lazy.matrix()
            y = _valid(out.duals, lo_all, hi_all)
            mu, yr = y[:K], y[K:K + len(extra)]
            W = Cs - mu[:, None]
            rhs = float(mu.sum())
            for r, (A, lo, hi) in enumerate(extra):
                W = W - yr[r] * A
                rhs += yr[r] * (lo if yr[r] > 0 else hi) if yr[r] != 0 else 0.0
            bounds = lagrangian(RHO + (W - W_last), HI)
            threshold = -tol * max(abs(upper), 1e-12) / n
            todo = np.nonzero(bounds < threshold)[0]
            try:
                priced = pricer.price(todo, W, deadline) if todo.size else []
                reason = stop.requested() or "time_limit"
            except _Stopped as stopped:  # a pricing LP or worker start saw the request
                priced, reason = None, stopped.args[0]
            if priced is None:  # past the deadline or a stop requested: the last round stands
                status = reason
                break
            cand = []
            inS = set(S)
            for k, _v, value, rho in priced:
                RHO[:, k], W_last[:, k] = rho, W[:, k]
                bounds[k] = lagrangian(rho[:, None], HI[:, k:k + 1])[0]
                if value < threshold and k not in inS:
                    cand.append((value, k))
            lower = rhs + math.fsum(np.minimum(bounds, 0.0))
            best_lower = max(best_lower, lower)
            gap = (upper - best_lower) / max(abs(upper), 1e-12)
            elapsed = time.perf_counter() - t0
            trace.append({"round": rnd, "outputs": m, "upper": upper * scale, "lower": lower * scale,
                          "gap": gap, "priced": len(priced), "candidates": len(cand),
                          "lp_rows": lazy.n_rows, "time_s": elapsed})
            prog.update(outputs=m, upper=upper * scale, lower=best_lower * scale, gap=gap,
                        priced=len(priced), added=min(len(cand), add_per_round))
            if gap <= tol or not cand:
                status = "optimal"
                break
            if deadline is not None and time.perf_counter() > deadline:
                status = "time_limit"
                break
            cand.sort()
            new = [k for _, k in cand[:add_per_round]]
            if SEED_ROWS:  # the rows its pricing LP has found already
                for k, R in zip(new, pricer.rows_of(new), strict=True):
                    rows[k] = R
            S = sorted(inS | set(new))
        pricing_rows = pricer.n_rows()
    finally:
        pricer.close()
        prog.close()
    stats = {"solver": "highs", "method": "outputs", "rounds": len(trace), "outputs_used": len(S),
             "lp_rows": trace[-1]["lp_rows"] if trace else 0, "pricing_rows": int(pricing_rows),
             "workers": pricer.workers, "max_rounds": int(max_rounds), "lp": lp, "trace": trace,
             "time_s": time.perf_counter() - t0}
    res = Result(status=status, stats=stats, x=None if x is None else x.ravel())
    if status == "optimal":
        res.optimality = OptimalityCertificate.from_values(upper * scale, best_lower * scale)
    elif x is not None:  # a stop: the last restricted optimum and the best bound, certified later
        res.optimality = OptimalityCertificate.from_values(
            upper * scale, best_lower * scale if math.isfinite(best_lower) else None)
    return res


def restricted_lp(Cs, HI, extra, S, rows, oracles, deadline, aux, ipm: bool = True,
                  lp: str = "simplex", few: int = 0):
    """The LP over the outputs S with the rows found so far; lazy rows from each output's oracle
    (``lp`` and ``ipm``: see :func:`solve_outputs`; ``ipm=False`` is dual simplex throughout;
    ``few``: see :meth:`~lpmech.solvers.cutting_planes.LazyLP.solve`).
    Variables: z_ik (i·m + s for output S[s]), then the notion's auxiliary t_ak ((K + a)·m + s,
    in [0, aux[a]])."""
    K = Cs.shape[0]
    m = len(S)
    N = K + aux.size  # entries of an extended column
    c = np.concatenate([Cs[:, S].ravel(), np.zeros(aux.size * m)])
    pad = sp.csr_matrix((1, aux.size * m))
    unit = sp.hstack([sp.kron(sp.identity(K, format="csr"), np.ones((1, m)), format="csr"),
                      sp.csr_matrix((K, aux.size * m))], format="csr")
    blocks = [unit] + [sp.hstack([sp.csr_matrix(A[:, S].reshape(1, -1)), pad], format="csr")
                       for A, _, _ in extra]
    lo = [np.ones(K)] + [[lo] for _, lo, _ in extra]
    hi = [np.ones(K)] + [[hi] for _, _, hi in extra]

    def lift(R, s):
        R = sp.coo_matrix(R)
        return sp.csr_matrix((R.data, (R.row, R.col * m + s)), shape=(R.shape[0], N * m))

    priv = [lift(rows[k], s) for s, k in enumerate(S) if rows[k].shape[0]]
    if priv:
        P = sp.vstack(priv, format="csr")
        blocks.append(P)
        lo.append(np.full(P.shape[0], -np.inf))
        hi.append(np.zeros(P.shape[0]))

    def separate(x):
        if first[0]:  # interior point (with crossover) first, then warm dual simplex
            first[0] = False
            lazy.h.setOptionValue("solver", "simplex")
        V = x.reshape(N, m)
        new = []
        for s, k in enumerate(S):
            A = oracles[k](V[:, s])
            if A is not None and A.shape[0]:
                rows[k] = sp.vstack([rows[k], A], format="csr")
                new.append(lift(A, s))
        if not new:
            return None
        P = sp.vstack(new, format="csr")
        return P, np.full(P.shape[0], -np.inf), np.zeros(P.shape[0])

    barrier = ipm and lp == "ipm"  # interior point without crossover throughout
    conic = lp in ("clarabel", "race")  # Clarabel's interior point (or the race) throughout
    first = [ipm and not barrier and not conic]
    col_hi = np.concatenate([HI[:, S].ravel(), np.repeat(aux, m)])
    lazy = LazyLP(c, np.zeros(N * m), col_hi, separate, A=sp.vstack(blocks, format="csr"),
                  method=lp if conic else "ipm" if ipm else "simplex",
                  options={"run_crossover": "off"} if barrier else None, final_crossover=barrier,
                  row_lo=np.concatenate([np.asarray(v, float) for v in lo]),
                  row_hi=np.concatenate([np.asarray(v, float) for v in hi]))
    left = None if deadline is None else max(1e-3, deadline - time.perf_counter())
    return lazy.solve(time_limit=left, few=few), lazy
