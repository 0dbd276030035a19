"""OMG (Qiu et al., LR-Geo §2.3): the optimal (ε, γ)-Geo-Ind mechanism of least expected loss.

* :mod:`.omg` — the full LP (vectorised sparse fast path and declarative Pyomo model) and
  :func:`solve`, which picks the method;
* :mod:`.omg_large` — the exact large-K methods (cutting planes, Dantzig–Wolfe decomposition by
  output column, a client of :mod:`lpmech.design`) and the δ-spanner;
* :mod:`.omg_sweep` — the robustness sweep's instance families and agreement checks.

``from lpmech.models import omg`` then ``omg.solve(...)``: the package re-exports the public API of
:mod:`.omg` (its ``__all__``) and forwards any other attribute to that module. To monkeypatch an
internal, patch the module (``lpmech.models.omg.omg``), not the package.
"""

import importlib

from . import omg
from .omg import *  # noqa: F403

__all__ = [*omg.__all__]

#: imported on first use (``omg.omg_large``): ``import lpmech`` stays light for the CLI's first line
_LAZY = ("omg_large", "omg_sweep")


def __getattr__(name: str):  # PEP 562: the lazy submodules, then the rest of omg.py's namespace
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{name}")
    return getattr(omg, name)
