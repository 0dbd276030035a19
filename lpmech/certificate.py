"""Optimality certificates: primal value, a dual (lower) bound, and the gap between them.

The bound is not the solver's word for it. For an LP

    min c·x  s.t.  r_lo ≤ A x ≤ r_hi,  x_lo ≤ x ≤ x_hi

*any* row multipliers y give the Lagrangian lower bound (weak duality)

    g(y) = Σ_i (y_i r_lo_i if y_i > 0 else y_i r_hi_i) + Σ_j min(ρ_j x_lo_j, ρ_j x_hi_j),  ρ = c − Aᵀy,

so :func:`lagrangian_bound` turns the solver's duals into a bound that holds whatever tolerances the
solver used (multipliers of the wrong sign for an infinite side are set to 0). With finite variable
bounds the bound is always finite.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np


@dataclasses.dataclass(frozen=True)
class OptimalityCertificate:
    """Primal objective of the certified (cleaned) point, a valid lower bound, and their gap.

    ``gap_rel`` is |objective − bound| / |objective| (0 when both are 0, ``inf`` when only the
    objective is): at an optimum near 0 (an MSE of 1e-100) it says honestly that no relative gap is
    proved, and the absolute floor of :func:`lpmech.solvers.result.gap_status` decides. ``None``
    fields mean the solver gave no bound.
    """

    objective: float
    bound: float | None
    gap_abs: float | None
    gap_rel: float | None
    source: str = "lagrangian"

    @classmethod
    def from_values(cls, objective: float, bound: float | None, source: str = "lagrangian"):
        if bound is None or not math.isfinite(bound):
            return cls(objective, None, None, None, source)
        gap = objective - bound
        rel = abs(gap) / abs(objective) if objective != 0 else (0.0 if gap == 0 else math.inf)
        return cls(objective, bound, gap, rel, source)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def lagrangian_bound(c, A, row_lo, row_hi, col_lo, col_hi, y, *, rc_tol: float = 1e-9) -> float:
    """Weak-duality lower bound g(y) of ``min c·x, row_lo ≤ Ax ≤ row_hi, col_lo ≤ x ≤ col_hi``.

    ``A`` may be dense or scipy-sparse; ``y`` are row multipliers (positive on active lower sides).
    A reduced cost pushing towards an infinite variable bound makes the bound ``-inf``, except
    round-off: |ρ_j| ≤ ``rc_tol``·(1 + |c_j|) counts as 0 there (with finite variable bounds, as in
    every mechanism LP, no tolerance is used at all).
    """
    c = np.asarray(c, float)
    y = np.asarray(y, float).copy()
    row_lo, row_hi = np.asarray(row_lo, float), np.asarray(row_hi, float)
    col_lo, col_hi = np.asarray(col_lo, float), np.asarray(col_hi, float)
    y[(y > 0) & ~np.isfinite(row_lo)] = 0.0
    y[(y < 0) & ~np.isfinite(row_hi)] = 0.0
    row_part = np.where(y > 0, y * np.where(np.isfinite(row_lo), row_lo, 0.0), 0.0) + np.where(
        y < 0, y * np.where(np.isfinite(row_hi), row_hi, 0.0), 0.0)
    rho = c - A.T @ y
    roundoff = np.abs(rho) <= rc_tol * (1.0 + np.abs(c))
    rho[roundoff & (((rho > 0) & ~np.isfinite(col_lo)) | ((rho < 0) & ~np.isfinite(col_hi)))] = 0.0
    with np.errstate(invalid="ignore"):
        col_part = np.where(rho > 0, rho * col_lo, np.where(rho < 0, rho * col_hi, 0.0))
    total = math.fsum(row_part) + math.fsum(np.nan_to_num(col_part, nan=0.0, neginf=-np.inf))
    return float(total)


def trivial_bound(C) -> float:
    """Σ_i min_k C_ik: a lower bound on Σ_ik C_ik z_ik over every row-stochastic z. A Lagrangian bound
    from solver duals loses ~1e-7 (dual tolerance × K² variables), which can put it below this one
    when the optimum is near 0 (ε·d in the tens); the certificate keeps the larger of the two."""
    C = np.asarray(C, float)
    return math.fsum(C.min(axis=1)) if C.size else 0.0
