"""LIP (Jiang, Li & Tandon's LIP papers): ε-LIP, latent-secret and bounded-prior LIP, LDP, Pufferfish, DI.

* :mod:`.lip` — the notions' linear rows per output column and their certifiers;
* :mod:`.lip_solve` — :func:`solve`, the certified optimum (above the other modules), and LH;
* :mod:`.lip_optimize` — the optimisers (exact vertex method, column generation with exact pricing,
  local SLP, the Pyomo model for SCIP, the LPs of linear losses);
* :mod:`.lip_closed_forms` — the papers' closed forms (paper mode, with their feasibility report)
  and certified warm starts;
* :mod:`.lip_estimation` — MMSE and unbiased estimators and their exact MSE;
* :mod:`.lip_cip` — centralized information privacy ([001] §IV-D) on the sum.

``from lpmech.models import lip`` then ``lip.solve(...)``: the package re-exports the public API of
:mod:`.lip` and :mod:`.lip_solve` (their ``__all__``) and forwards any other attribute to them. To
monkeypatch an internal, patch the module (``lpmech.models.lip.lip`` or ``.lip_solve``).
"""

from . import lip, lip_cip, lip_closed_forms, lip_estimation, lip_optimize, lip_solve  # noqa: F401 (submodules)
from .lip import *  # noqa: F403
from .lip_solve import *  # noqa: F403

__all__ = [*lip.__all__, *lip_solve.__all__]


def __getattr__(name: str):  # PEP 562: the rest of lip.py's and lip_solve.py's namespaces
    for module in (lip, lip_solve):
        if hasattr(module, name):
            return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
