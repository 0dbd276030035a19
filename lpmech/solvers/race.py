"""One LP solved by two interior points at once, in forked processes: the first optimal answer
wins and the other solver is stopped.

PIQP (:mod:`lpmech.solvers.piqp_lp`) and Clarabel (:mod:`lpmech.solvers.clarabel_lp`) factor
their KKT systems directly (sparse LDLᵀ after a fill-reducing ordering); HiGHS' IPX solves the
normal equations by preconditioned conjugate gradients. On the cores of LE's support generation
(Gowalla 32×32, ε = 0.7) Clarabel's time jumped with the fill of its factor: one core took
Clarabel 12.1 s and IPX 26.6 s, and the same core with 349 more rows took Clarabel 88.5 s and IPX
25.0 s. PIQP took 3.6–10.5 s on the cores of that run where Clarabel took 6.3–84 s and IPX
25–45 s, so the racers are PIQP and IPX (:data:`SOLVERS`). The race costs a second core; it also
enforces the deadline of a solver without a time limit (PIQP): the child is stopped. Which racer
wins can depend on the machine's load, so two runs can take different paths to the same
certified optimum.

Every racer returns the row multipliers in HiGHS' sign convention, so the caller reads them alike.
"""

from __future__ import annotations

import multiprocessing as mp
from multiprocessing.connection import wait

import numpy as np

from . import clarabel_lp, piqp_lp
from . import highs as highs_lp

#: the racers, in the order they are started ("piqp", "clarabel", "ipx"). PIQP took 3.6–10.5 s on
#: the ε = 0.7 cores of Gowalla 32×32 where the earlier pair took 6.3–84 s (Clarabel) and 25–45 s
#: (IPX): IPX stays in the race as the other algorithm (iterative, not a factorisation)
SOLVERS = ("piqp", "ipx")
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
    :data:`SOLVERS` at once (IPX without crossover): ``(status, x, y, solver)``, from the first
    racer that reports ``"optimal"`` (else the last status). ``tol``: PIQP's and Clarabel's
    tolerances, and IPX's optimality tolerance. Under :data:`MIN_VARIABLES` the first racer runs
    alone."""
    lp = (c, A, row_lo, row_hi, col_lo, col_hi)
    if len(c) < MIN_VARIABLES:
        return (*_solve(SOLVERS[0], lp, time_limit, tol), SOLVERS[0])
    ctx = mp.get_context("fork")
    pipes, procs = {}, []
    for which in SOLVERS:
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(send, which, lp, time_limit, tol), daemon=True)
        proc.start()
        send.close()
        pipes[recv] = which
        procs.append(proc)
    last = ("error", None, None, None)
    try:
        while pipes:
            for recv in wait(list(pipes)):
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
