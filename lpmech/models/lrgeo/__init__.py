"""LR-Geo (Qiu et al., LR-Geo §4): LR sets, LR-OMG, exponential ties, CLR-Geo by Benders (:mod:`.lrgeo`).

``from lpmech.models import lrgeo`` then ``lrgeo.solve(...)``: the package re-exports the public API
of :mod:`.lrgeo` (its ``__all__``) and forwards any other attribute to that module. To monkeypatch an
internal, patch the module (``lpmech.models.lrgeo.lrgeo``).
"""

from . import lrgeo
from .lrgeo import *  # noqa: F403

__all__ = [*lrgeo.__all__]


def __getattr__(name: str):  # PEP 562: the rest of lrgeo.py's namespace
    return getattr(lrgeo, name)
