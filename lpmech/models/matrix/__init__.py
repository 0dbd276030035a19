"""The matrix mechanism under metric LDP (Xiang et al., metric LDP).

* :mod:`.matrix_mechanism` — the Laplace matrix mechanism of §3: programs (1) and (2), E_S /
  prefix closed forms, strategy heuristic;
* :mod:`.range_mechanism` — the §4 E_{L¹}-LDP mechanism for D-dimensional range counting,
  weighted queries and quantiles.

Use the modules: ``from lpmech.models.matrix import matrix_mechanism as mm``.
"""

from . import matrix_mechanism, range_mechanism

__all__ = ["matrix_mechanism", "range_mechanism"]
