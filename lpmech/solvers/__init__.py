"""Solver layer: one :class:`Result` type, a direct sparse HiGHS path, Pyomo and CVXPY wrappers."""

from .result import Result

__all__ = ["Result"]
