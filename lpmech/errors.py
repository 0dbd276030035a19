"""The package's exception types.

Every error raised on purpose by lpmech derives from :class:`LpmechError`, and each kind carries the
exit code the CLI uses for it (2 bad input, 3 infeasible model, 4 time limit without a certified
optimum, 5 a mechanism that fails its privacy certificate, 1 anything else).
"""

from __future__ import annotations


class LpmechError(Exception):
    """Base class of lpmech's errors."""

    exit_code = 1

    def __init__(self, message: str, *, result=None):
        super().__init__(message)
        #: the partial :class:`~lpmech.solvers.result.Result`, when a solve got that far
        self.result = result


class InputError(LpmechError, ValueError):
    """Bad input: a non-metric distance matrix, NaN, ε ≤ 0, a prior not summing to 1, ..."""

    exit_code = 2


class InfeasibleError(LpmechError):
    """The model has no feasible point."""

    exit_code = 3


class NotOptimalError(LpmechError):
    """A solve stopped without a certified optimum (exit code 4); ``result`` holds what it had."""

    exit_code = 4


class TimeLimitError(NotOptimalError):
    """The solver stopped at its time limit without an optimal, certified solution."""


class IterationLimitError(NotOptimalError):
    """An iterative method (rounds, Benders iterations, pricing passes) hit its iteration cap first."""


class CertificationError(LpmechError):
    """A mechanism violates the privacy it was built for by more than the stated tolerance."""

    exit_code = 5


class SolverError(LpmechError):
    """The solver failed for another reason (numerical trouble, unbounded model, ...)."""

    exit_code = 1
