"""An LP in the package's row form solved by PIQP's proximal interior point (sparse LDLᵀ).

``min c·x  s.t.  row_lo ≤ A x ≤ row_hi,  col_lo ≤ x ≤ col_hi`` goes to PIQP as equality rows
(``row_lo = row_hi``), two-sided inequality rows and a box. The row multipliers come back in
HiGHS' convention (``c = Aᵀy + reduced costs``; ``y ≥ 0`` on an active lower side, ``≤ 0`` on an
upper one), so the caller's Lagrangian bound (:func:`lpmech.certificate.lagrangian_bound`) reads
them like HiGHS' own.

On the cores of LE's support generation (Gowalla 32×32, ε = 0.7; 10k–16k columns, 90k–150k
d-privacy rows) PIQP took 3.6–10.5 s where Clarabel took 6.3–84 s and HiGHS' IPX 25–45 s, to the
same objective (to 4e-10). PIQP has no time limit of its own: :mod:`lpmech.solvers.race` runs it
in a child process that is stopped at the deadline.
"""

from __future__ import annotations

import numpy as np
import piqp
import scipy.sparse as sp

#: PIQP's status → the package's
_STATUS = {"PIQP_SOLVED": "optimal", "PIQP_PRIMAL_INFEASIBLE": "infeasible",
           "PIQP_DUAL_INFEASIBLE": "unbounded", "PIQP_MAX_ITER_REACHED": "iteration_limit"}

#: PIQP's absolute and relative tolerances (its defaults are 1e-8 and 1e-9)
TOL = 1e-9


def solve_lp(c, A, row_lo, row_hi, col_lo, col_hi, *, time_limit: float | None = None,
             tol: float = TOL):
    """Solve the LP: ``(status, x, y)``, ``y`` the row multipliers (HiGHS' sign convention);
    ``x`` and ``y`` are None unless the status is ``"optimal"``. ``time_limit`` is not enforced
    here (PIQP has none): run it through :func:`lpmech.solvers.race.solve_lp` for a deadline."""
    c = np.asarray(c, float)
    n = c.size
    A = sp.csr_matrix(A, dtype=float)
    row_lo, row_hi = np.asarray(row_lo, float), np.asarray(row_hi, float)
    eq = np.isfinite(row_lo) & (row_lo == row_hi)
    solver = piqp.SparseSolver()
    solver.settings.verbose = False
    solver.settings.eps_abs = solver.settings.eps_rel = float(tol)
    solver.setup(sp.csc_matrix((n, n)), c, sp.csc_matrix(A[eq]), row_lo[eq],
                 sp.csc_matrix(A[~eq]), row_lo[~eq], row_hi[~eq],
                 np.asarray(col_lo, float), np.asarray(col_hi, float))
    status = _STATUS.get(str(solver.solve()).rsplit(".", 1)[-1], "error")
    if status != "optimal":
        return status, None, None
    res = solver.result
    y = np.zeros(A.shape[0])
    y[eq] = -np.asarray(res.y)
    y[~eq] = np.asarray(res.z_l) - np.asarray(res.z_u)
    return status, np.asarray(res.x), y
