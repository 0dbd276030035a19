"""LE (Gu et al., LE §IV–V): the linear-equations mechanism, LP (8)+(12), the KKT certificate of
Theorem 1, and the grid (FFT/CG, Kronecker) paths (:mod:`.le_mechanism`).

``from lpmech.models import le`` then ``le.solve(...)``, ``le.le(...)``: the package re-exports the
public API of :mod:`.le_mechanism` (its ``__all__``) and forwards any other attribute to that module.
To monkeypatch an internal, patch the module (``lpmech.models.le.le_mechanism``).
"""

from . import le_mechanism
from .le_mechanism import *  # noqa: F403

__all__ = [*le_mechanism.__all__]


def __getattr__(name: str):  # PEP 562: the rest of le_mechanism.py's namespace
    return getattr(le_mechanism, name)
