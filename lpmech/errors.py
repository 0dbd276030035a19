"""The package's exception types.

Every error raised on purpose by lpmech derives from :class:`LpmechError`, and each kind carries the
exit code the CLI uses for it (2 bad input, 3 infeasible model, 4 a stop without a certified
optimum: time limit, iteration cap, Ctrl-C, or optimality not proved; 5 a mechanism that fails its
privacy certificate, 1 anything else), and the ``status`` the CLI's JSON reports for it (a Result
status where the error stands for one, e.g. ``infeasible``; ``input_error`` and
``certification_failed`` otherwise): see :func:`error_status`. An error that ends a solve carries
what the solve had in ``result``: after a stop, the incumbent mechanism (certified), its objective
and the best valid bound.
"""

from __future__ import annotations


class LpmechError(Exception):
    """Base class of lpmech's errors."""

    exit_code = 1
    status = "error"

    def __init__(self, message: str, *, result=None):
        super().__init__(message)
        #: the partial :class:`~lpmech.solvers.result.Result`, when a solve got that far
        self.result = result


class InputError(LpmechError, ValueError):
    """Bad input: a non-metric distance matrix, NaN, ε ≤ 0, a prior not summing to 1, ..."""

    exit_code = 2
    status = "input_error"


class InfeasibleError(LpmechError):
    """The model has no feasible point."""

    exit_code = 3
    status = "infeasible"


class NotOptimalError(LpmechError):
    """A solve stopped without a certified optimum (exit code 4); ``result`` holds what it had."""

    exit_code = 4
    status = "feasible"


class TimeLimitError(NotOptimalError):
    """The solver stopped at its time limit without an optimal, certified solution."""

    status = "time_limit"


class IterationLimitError(NotOptimalError):
    """An iterative method (rounds, Benders iterations, pricing passes) hit its iteration cap first."""

    status = "iteration_limit"


class InterruptError(NotOptimalError):
    """A stop was requested (Ctrl-C) before a certified optimum; ``result`` holds the incumbent."""

    status = "interrupted"


class CertificationError(LpmechError):
    """A mechanism violates the privacy it was built for by more than the stated tolerance."""

    exit_code = 5
    status = "certification_failed"


class SolverError(LpmechError):
    """The solver failed for another reason (numerical trouble, unbounded model, ...)."""

    exit_code = 1


def error_status(exc: BaseException) -> str:
    """The status a report gives for ``exc``: the error's own (``input_error``, ``infeasible``,
    ``certification_failed``, ...), or, for a stop without a certified optimum, the partial result's
    status when it names that stop (``feasible``, ``time_limit``, ``iteration_limit``,
    ``interrupted``). Never
    ``optimal``: an error's status is the error's."""
    if not isinstance(exc, LpmechError):
        return "error"
    res_status = getattr(exc.result, "status", None)
    if isinstance(exc, NotOptimalError) and res_status in ("feasible", "time_limit", "iteration_limit",
                                                           "interrupted"):
        return res_status
    return exc.status
