"""Data sets: synthetic generators and readers for real third-party data.

Real data is never bundled: every reader takes a path (see ``../shared/data/README.md``) and raises
:class:`~lpmech.errors.InputError` with a clear message when the files are missing or malformed.

Sections: Rome road grid and synthetic road grids (seed 002, LR-Geo); SNAP check-in files (Gowalla;
seeds 000 and 001/004).
"""

from __future__ import annotations

# ------------------------------------------------------------------ Rome road grid (seed 002)


# ------------------------------------------------------------------ SNAP check-ins (Gowalla)
