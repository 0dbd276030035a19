"""One LP solved by interior points in forked processes, each stopped at the deadline: the racers
of :data:`SOLVERS` at once (the first optimal answer wins and the others are stopped), then, if
none ends optimal, those of :data:`FALLBACK`.

PIQP (:mod:`lpmech.solvers.piqp_lp`) and Clarabel (:mod:`lpmech.solvers.clarabel_lp`) factor
their KKT systems directly (sparse LDLᵀ after a fill-reducing ordering); HiGHS' IPX solves the
normal equations by preconditioned conjugate gradients. On the cores of LE's support generation
(Gowalla 32×32, ε = 0.7) Clarabel's time jumped with the fill of its factor: one core took
Clarabel 12.1 s and IPX 26.6 s, and the same core with 349 more rows took Clarabel 88.5 s and IPX
25.0 s. PIQP took 3.6–10.5 s on the cores of that run where Clarabel took 6.3–84 s and IPX 25–45 s,
and raced against IPX it ran 1.4× slower (13.7 s against 9.6 s alone: the two share the memory
bus), so PIQP runs alone, with IPX as the fallback. The child process also enforces the deadline
of a solver without a time limit (PIQP). Racing several solvers makes the winner depend on the
machine's load, so two runs can then take different paths to the same certified optimum.

Every racer returns the row multipliers in HiGHS' sign convention, so the caller reads them alike.
"""

from __future__ import annotations

import multiprocessing as mp
import time
from multiprocessing.connection import wait

import numpy as np

from .. import stop
from . import clarabel_lp, piqp_lp
from . import highs as highs_lp

#: the racers, started together ("piqp", "clarabel", "ipx"). PIQP took 3.6–10.5 s on the ε = 0.7
#: cores of Gowalla 32×32 where Clarabel took 6.3–84 s and IPX 25–45 s; raced against IPX it took
#: 13.7 s on a core it solves alone in 9.6 s (the two share the memory bus), so it runs alone
SOLVERS = ("piqp",)
#: started if no racer of :data:`SOLVERS` ends optimal: IPX (iterative, not a factorisation)
FALLBACK = ("ipx",)
#: LPs with fewer variables are solved by the first racer alone, in this process: a fork costs
#: more than they do, and their runs stay reproducible (PIQP has no time limit: these are small)
MIN_VARIABLES = 2000


def _solve(which: str, lp: tuple, time_limit: float | None, tol: float):
    if which == "piqp":
        return piqp_lp.solve_lp(*lp, tol=tol)
    if which == "clarabel":
        return clarabel_lp.solve_lp(*lp, time_limit=time_limit, tol=tol)
    res = highs_lp.solve_lp(*lp, method="ipm", time_limit=time_limit,
                            options={"run_crossover": "off", "ipm_optimality_tolerance": tol})
    if res.status != "optimal":
        return res.status, None, None
    return res.status, np.asarray(res.x), np.asarray(res.duals)


def _child(conn, which: str, lp: tuple, time_limit: float | None, tol: float) -> None:
    try:
        conn.send(_solve(which, lp, time_limit, tol))
    except Exception:  # a failed racer: the parent waits for the other
        conn.send(("error", None, None))
    finally:
        conn.close()


def solve_lp(c, A, row_lo, row_hi, col_lo, col_hi, *, time_limit: float | None = None,
             tol: float = clarabel_lp.TOL):
    """Solve the LP ``min c·x, row_lo ≤ A x ≤ row_hi, col_lo ≤ x ≤ col_hi`` by the racers of
    :data:`SOLVERS` at once, then, if none ends optimal (nor proves the LP infeasible or
    unbounded) within the time left, by those of :data:`FALLBACK`: ``(status, x, y, solver)``,
    from the first racer that reports ``"optimal"`` (else the last status). Each racer runs in a
    child process stopped at ``time_limit`` (status ``"time_limit"``). ``tol``: PIQP's and
    Clarabel's tolerances, and IPX's optimality tolerance (IPX runs without crossover). Under
    :data:`MIN_VARIABLES` the racers run one after another in this process."""
    lp = (c, A, row_lo, row_hi, col_lo, col_hi)
    t0 = time.perf_counter()
    out = ("error", None, None, None)
    for group in (SOLVERS, FALLBACK):
        left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
        if not group or (left is not None and left <= 0):
            continue
        out = _race(group, lp, left, tol)
        if out[0] in ("optimal", "infeasible", "unbounded"):
            break
    return out


def _race(racers, lp, time_limit, tol):
    if len(lp[0]) < MIN_VARIABLES:
        for which in racers:
            try:
                out = (*_solve(which, lp, time_limit, tol), which)
            except Exception:  # a failed racer loses, as in a child process
                out = ("error", None, None, which)
            if out[0] == "optimal":
                break
        return out
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    ctx = mp.get_context("fork")
    pipes, procs = {}, []
    for which in racers:
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(send, which, lp, time_limit, tol), daemon=True)
        proc.start()
        send.close()
        pipes[recv] = which
        procs.append(proc)
    last = ("error", None, None, None)
    try:
        while pipes:
            left = None if deadline is None else max(0.0, deadline - time.perf_counter()) + 1.0
            ready = wait(list(pipes), timeout=0.1 if left is None else min(left, 0.1))
            if stop.requested():  # Ctrl-C or the command's deadline: the racers are stopped
                return (stop.requested(), None, None, None)
            if not ready:
                if deadline is not None and time.perf_counter() > deadline + 1.0:
                    return ("time_limit", None, None, None)  # past the deadline (a second's grace)
                continue
            for recv in ready:
                which = pipes.pop(recv)
                try:
                    status, x, y = recv.recv()
                except EOFError:  # the racer died (killed for memory, say)
                    status, x, y = "error", None, None
                if status == "optimal":
                    return status, x, y, which
                last = (status, None, None, which)
        return last
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
            proc.join()
