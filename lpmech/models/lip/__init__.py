"""LIP (seeds 001, 004): ε-LIP, latent-secret and bounded-prior LIP, LDP, Pufferfish, DI.

* :mod:`.lip` — the notions' linear rows per output column, their certifiers, and :func:`solve`;
* :mod:`.lip_optimize` — the optimisers (exact vertex method, column generation with exact pricing,
  local SLP, the Pyomo model for SCIP, the LPs of linear losses);
* :mod:`.lip_closed_forms` — the papers' closed forms (paper mode, with their feasibility report)
  and certified warm starts;
* :mod:`.lip_estimation` — MMSE and unbiased estimators and their exact MSE.

``from lpmech.models import lip`` then ``lip.solve(...)``: the package re-exports the public API of
:mod:`.lip` (its ``__all__``) and forwards any other attribute to that module. To monkeypatch an
internal, patch the module (``lpmech.models.lip.lip``).
"""

from . import lip, lip_closed_forms, lip_estimation, lip_optimize  # noqa: F401 (the submodules)
from .lip import *  # noqa: F403

__all__ = [*lip.__all__]


def __getattr__(name: str):  # PEP 562: the rest of lip.py's namespace
    return getattr(lip, name)
