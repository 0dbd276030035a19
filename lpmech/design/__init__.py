"""The mechanism-design engine: a notion (rows per output column) + a linear loss + master rows.

See :mod:`lpmech.design.notion` for the interface every notion implements, :mod:`.notions` for the
concrete ones, :mod:`.engine` for :func:`solve` and :mod:`.pyomo` for the declarative model.
"""

from .engine import Problem, loss_cap, solve, truth_floor
from .notion import Intersection, Notion, NotionCertificate
from .notions import LDP, LIP, DPrivacy, Exclusion, Factor, Rows

__all__ = ["LDP", "LIP", "DPrivacy", "Exclusion", "Factor", "Intersection", "Notion",
           "NotionCertificate", "Problem", "Rows", "loss_cap", "solve", "truth_floor"]
