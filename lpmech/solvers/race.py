"""One LP solved by two interior points at once, in forked processes: the first optimal answer
wins and the other solver is stopped.

Clarabel (:mod:`lpmech.solvers.clarabel_lp`) factors its KKT system directly (sparse LDLᵀ after a
fill-reducing ordering); HiGHS' IPX solves the normal equations by preconditioned conjugate
gradients. On the cores of LE's support generation neither dominates, and Clarabel's time jumps
with the fill of its factor: on Gowalla 32×32 at ε = 0.7 one core took Clarabel 12.1 s and IPX
26.6 s, and the same core with 349 more rows took Clarabel 88.5 s (0.86 s per iteration against
0.12 s) and IPX 25.0 s; a 245-point core took Clarabel 158 s and IPX 61 s. The race costs a second
core and gives the faster of the two on each LP. Which one wins depends on the machine's load, so
two runs can take different paths to the same certified optimum.

Both return the row multipliers in HiGHS' sign convention, so the caller reads them alike.
"""

from __future__ import annotations

import multiprocessing as mp
from multiprocessing.connection import wait

import numpy as np

from . import clarabel_lp
from . import highs as highs_lp

#: the racers, in the order they are started
SOLVERS = ("clarabel", "ipx")
#: LPs with fewer variables are solved by Clarabel alone, in this process: a fork costs more than
#: they do, and their runs stay reproducible
MIN_VARIABLES = 2000


def _solve(which: str, lp: tuple, time_limit: float | None, tol: float):
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
    """Solve the LP ``min c·x, row_lo ≤ A x ≤ row_hi, col_lo ≤ x ≤ col_hi`` by Clarabel and by
    HiGHS' IPX (no crossover) at once: ``(status, x, y, solver)``, from the first racer that
    reports ``"optimal"`` (else the last status). ``tol``: Clarabel's gap and feasibility
    tolerance, and IPX's optimality tolerance. Under :data:`MIN_VARIABLES` the first racer runs
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
