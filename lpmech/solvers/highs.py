"""Direct sparse path to HiGHS (highspy): bulk arrays in, :class:`Result` out.

The LP is ``min c·x + offset  s.t.  row_lo ≤ A x ≤ row_hi,  col_lo ≤ x ≤ col_hi`` with ``A`` a scipy
sparse (or dense) matrix; it is passed to HiGHS column-wise in one call, with exact zeros stripped.
The lower bound in the result is the Lagrangian bound of the returned duals
(:func:`lpmech.certificate.lagrangian_bound`), not the solver's own claim.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import sys
import threading
import time

import highspy
import numpy as np
import scipy.sparse as sp

from .. import stop
from ..certificate import OptimalityCertificate, lagrangian_bound
from ..errors import InputError
from .result import Result, check_time_limit

log = logging.getLogger(__name__)

METHODS = ("simplex", "ipm", "choose", "pdlp")

#: HiGHS options used unless overridden: tight feasibility so certificates rarely need repair
DEFAULT_OPTIONS = {
    "primal_feasibility_tolerance": 1e-9,
    "dual_feasibility_tolerance": 1e-9,
}

#: an LP that HiGHS ends optimal but whose Lagrangian bound lags its objective by more than this
#: (relative, scale at least 1) is solved once more from scratch with :data:`POLISH_OPTIONS`
#: (:func:`needs_polish`, :func:`tighten`). Measured: near-duplicate points (rows with factors
#: e^{−ε·1e-13}) left a basis whose bound lagged by 1.0e-6; after the re-solve, by 2e-9.
POLISH_GAP = 1e-7
#: 1e-10 is HiGHS' floor for the dual tolerance: a smaller value (this was 1e-11) is refused with an
#: error message and the previous value stays, so the polish ran at the model's own tolerance
POLISH_OPTIONS = {"dual_feasibility_tolerance": 1e-10, "primal_feasibility_tolerance": 1e-10,
                  "presolve": "off"}


def needs_polish(objective: float, bound: float | None) -> bool:
    """Whether an optimal LP's certified bound lags its objective by more than :data:`POLISH_GAP`."""
    return bound is not None and objective - bound > POLISH_GAP * max(1.0, abs(objective))


def tighten(h: highspy.Highs) -> None:
    """Set :data:`POLISH_OPTIONS` on ``h`` and drop its basis: the next run solves from scratch,
    without presolve. (Measured on near-duplicate points, rows with factors 1 − 1e-13: the
    postsolved duals had c − Aᵀy = −6e-7 on a column at its lower bound, while HiGHS' own reduced
    costs passed its tolerances, so a run from that basis stops at once; a cold solve without
    presolve, at the default tolerances or tighter, ends with a bound 1e-9 from the optimum.)"""
    for k, v in POLISH_OPTIONS.items():
        h.setOptionValue(k, v)
    h.clearSolver()


_STATUS = {
    highspy.HighsModelStatus.kOptimal: "optimal",
    highspy.HighsModelStatus.kInfeasible: "infeasible",
    highspy.HighsModelStatus.kUnbounded: "unbounded",
    highspy.HighsModelStatus.kUnboundedOrInfeasible: "infeasible",
    highspy.HighsModelStatus.kTimeLimit: "time_limit",
    highspy.HighsModelStatus.kIterationLimit: "iteration_limit",
    highspy.HighsModelStatus.kModelEmpty: "optimal",
    highspy.HighsModelStatus.kInterrupt: "interrupted",
    highspy.HighsModelStatus.kHighsInterrupt: "interrupted",
}


def model_status(h: highspy.Highs) -> str:
    """The :data:`~lpmech.solvers.result.STATUSES` name of ``h``'s model status; an interrupted
    run takes the reason of the stop request (``"time_limit"`` from the CLI's deadline). So does
    a run ended "time limit" while a stop is requested: HiGHS' interior point (highspy 1.16)
    reports a stop by its interrupt callback as ``kTimeLimit``."""
    status = _STATUS.get(h.getModelStatus(), "error")
    if status in ("interrupted", "time_limit"):
        status = stop.requested() or status
    return status


def _inf(a) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    return np.where(np.isposinf(a), highspy.kHighsInf, np.where(np.isneginf(a), -highspy.kHighsInf, a))


_QUIET = threading.Lock()


def flush_c_stdio() -> None:
    """Flush the C library's stdio buffers (what HiGHS printed but did not flush yet)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).fflush(None)


def quiet_highs() -> highspy.Highs:
    """``highspy.Highs()`` with output off, without the banner HiGHS ≥ 1.16 prints to file
    descriptor 1 when it is constructed (it would corrupt ``--json`` output on stdout). Every
    ``Highs`` of the package is made here."""
    with _QUIET:
        sys.stdout.flush()
        try:
            saved = os.dup(1)
        except OSError:  # no fd 1 (an embedding): nothing to protect
            h = highspy.Highs()
        else:
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                os.close(devnull)
                h = highspy.Highs()
                flush_c_stdio()
            finally:
                os.dup2(saved, 1)
                os.close(saved)
    h.setOptionValue("output_flag", False)
    return h


def new_highs(method: str = "simplex", *, time_limit: float | None = None,
              options: dict | None = None, verbose: bool = False) -> highspy.Highs:
    """A ``highspy.Highs`` with the package's default options, ``method`` and ``time_limit`` set."""
    if method not in METHODS:
        raise InputError(f"unknown HiGHS method {method!r}: use one of {METHODS}")
    h = quiet_highs()
    h.setOptionValue("output_flag", bool(verbose))
    for k, v in {**DEFAULT_OPTIONS, "solver": method, **(options or {})}.items():
        h.setOptionValue(k, v)
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    return h


def _stop_requested(event) -> None:
    if stop.requested():
        event.interrupt()


def run_highs(h: highspy.Highs, *, interruptible: bool = True) -> None:
    """``h.run()``, stoppable: the one way the package runs HiGHS.

    A stop request (:mod:`lpmech.stop`) interrupts the run through HiGHS' interrupt callbacks
    (simplex, interior point, MIP: the run ends within an iteration with model status
    ``kInterrupt``, reported as ``"interrupted"``). ``interruptible=False`` leaves the callbacks
    off, for the many short runs of a caller that checks :func:`lpmech.stop.requested` between
    them (the decomposition's pricing LPs: a Python callback at every simplex iteration took
    about 10 % of their HiGHS time). In the main thread of a Python session, Ctrl-C during the run becomes a
    stop request instead of a ``KeyboardInterrupt``: a handler that only requests the stop is in
    place while HiGHS runs (the next callback, or the return, runs it; an exception must not
    cross HiGHS' C++ frames).
    """
    if interruptible and not getattr(h, "_lpmech_stoppable", False):
        h.cbSimplexInterrupt += _stop_requested
        h.cbIpmInterrupt += _stop_requested
        h.cbMipInterrupt += _stop_requested
        h._lpmech_stoppable = True
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) not in (signal.default_int_handler, stop._sigint)):
        h.run()  # a worker thread or process, or a handler of the caller's in place
        return
    previous = signal.signal(signal.SIGINT, _interrupt)
    try:
        h.run()
    finally:  # (signal.signal runs a pending handler first: a Ctrl-C at the end is a request too)
        signal.signal(signal.SIGINT, previous)


def _interrupt(signum, frame) -> None:
    stop.request("interrupted")


def set_time_left(h: highspy.Highs, seconds: float) -> None:
    """Let the next ``h.run()`` last at most ``seconds``: HiGHS compares its ``time_limit`` with
    the *total* run time of the model object over all its runs, so the limit is that total plus
    ``seconds``."""
    h.setOptionValue("time_limit", float(h.getRunTime()) + max(float(seconds), 1e-3))


def add_rows(h: highspy.Highs, A, lo, hi) -> None:
    """Append the rows ``lo ≤ A x ≤ hi`` (``A`` scipy-sparse, ±inf allowed) to a HiGHS model."""
    A = sp.csr_matrix(A, dtype=float)
    A.eliminate_zeros()
    h.addRows(A.shape[0], _inf(lo), _inf(hi), A.nnz, A.indptr[:-1].astype(np.int32),
              A.indices.astype(np.int32), A.data)


def highs_lp(c, A, row_lo, row_hi, col_lo, col_hi, *, offset: float = 0.0) -> highspy.HighsLp:
    """The ``highspy.HighsLp`` of min c·x + offset, row_lo ≤ A x ≤ row_hi, col_lo ≤ x ≤ col_hi
    (``A`` dense or scipy-sparse, ±inf for a missing side), column-wise: the one builder of the
    package's bulk models."""
    A = sp.csc_matrix(A, dtype=float)
    A.eliminate_zeros()
    A.sort_indices()
    m, n = A.shape
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n, m
    lp.col_cost_ = np.asarray(c, float)
    lp.offset_ = float(offset)
    lp.col_lower_, lp.col_upper_ = _inf(col_lo), _inf(col_hi)
    lp.row_lower_, lp.row_upper_ = _inf(row_lo), _inf(row_hi)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n, m
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data
    return lp


def solve_lp(c, A, row_lo, row_hi, col_lo, col_hi, *, offset: float = 0.0,
             method: str = "simplex", time_limit: float | None = None, warm_start=None,
             want_ray: bool = False, options: dict | None = None, verbose: bool = False) -> Result:
    """Solve an LP with HiGHS and return a :class:`Result` with ``x``, ``duals`` and a certified bound.

    Args:
        c, A, row_lo, row_hi, col_lo, col_hi: the LP in bulk arrays (±inf for a missing side).
        offset: constant added to the objective.
        method: ``"simplex"`` (dual simplex), ``"ipm"`` (interior point with crossover),
            ``"choose"`` (HiGHS decides) or ``"pdlp"``.
        time_limit: seconds; reaching it gives status ``"time_limit"``.
        warm_start: a ``highspy.HighsBasis`` from an earlier ``Result.stats["basis"]``, or a primal
            vector (HiGHS ``setSolution``).
        want_ray: on infeasibility, fetch a dual ray (Farkas certificate) into ``Result.ray``.
        options: further HiGHS options (names as in the HiGHS docs).
        verbose: show HiGHS' log.
    """
    time_limit = check_time_limit(time_limit)
    if method not in METHODS:
        raise InputError(f"unknown HiGHS method {method!r}: use one of {METHODS}")
    A = sp.csc_matrix(A, dtype=float)
    A.eliminate_zeros()
    A.sort_indices()
    m, n = A.shape
    c = np.asarray(c, float)
    if c.shape != (n,) or len(row_lo) != m or len(row_hi) != m or len(col_lo) != n or len(col_hi) != n:
        raise InputError(f"LP arrays do not fit A of shape {A.shape}")

    t0 = time.perf_counter()
    lp = highs_lp(c, A, row_lo, row_hi, col_lo, col_hi, offset=offset)

    h = new_highs(method, time_limit=time_limit, options=options, verbose=verbose)
    h.passModel(lp)
    if warm_start is not None:
        if isinstance(warm_start, highspy.HighsBasis):
            h.setBasis(warm_start)
        else:
            sol = highspy.HighsSolution()
            sol.col_value = np.asarray(warm_start, float)
            sol.value_valid = True
            h.setSolution(sol)
    t_build = time.perf_counter() - t0
    run_highs(h)
    t_solve = time.perf_counter() - t0 - t_build

    highs_status = h.getModelStatus()
    status = model_status(h)
    info = h.getInfo()
    stats = {
        "solver": "highs", "method": method, "rows": m, "cols": n, "nnz": int(A.nnz),
        "build_s": t_build, "solve_s": t_solve, "time_s": t_build + t_solve,
        "highs_status": h.modelStatusToString(highs_status),
        "simplex_iterations": int(info.simplex_iteration_count),
        "ipm_iterations": int(info.ipm_iteration_count),
        "max_primal_infeasibility": float(info.max_primal_infeasibility),
        "max_dual_infeasibility": float(info.max_dual_infeasibility),
    }
    res = Result(status=status, stats=stats)
    sol = h.getSolution()
    if sol.value_valid:
        res.x = np.array(sol.col_value)
    if sol.dual_valid:
        res.duals = np.array(sol.row_dual)
    if status == "optimal" and res.x is not None:
        bound = None
        if res.duals is not None:
            bound = lagrangian_bound(c, A, row_lo, row_hi, col_lo, col_hi, res.duals) + offset
        if res.duals is not None and needs_polish(float(c @ res.x) + offset, bound):
            tighten(h)  # once, from scratch: the bound of either solve is valid
            run_highs(h)
            sol = h.getSolution()
            if model_status(h) == "optimal" and sol.value_valid and sol.dual_valid:
                res.x, res.duals = np.array(sol.col_value), np.array(sol.row_dual)
                bound = max(bound, lagrangian_bound(c, A, row_lo, row_hi, col_lo, col_hi,
                                                    res.duals) + offset)
                stats["polished"] = True
        res.optimality = OptimalityCertificate.from_values(float(c @ res.x) + offset, bound)
        stats["basis"] = h.getBasis()
    if status == "infeasible" and want_ray:
        _, has_ray, ray = h.getDualRay()
        if has_ray:
            res.ray = np.array(ray)
    log.info("HiGHS %s: %s in %.2fs (%d rows, %d cols, %d nnz)", method, stats["highs_status"],
             t_solve, m, n, A.nnz)
    return res
