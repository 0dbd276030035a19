"""Deprecated import paths, kept for one minor version (0.2.x; removed in 0.3.0).

Version 0.2.0 moved the model modules into one sub-package per family (``lpmech.models.omg``,
``.lrgeo``, ``.le``, ``.matrix``, ``.lip``). The old flat paths still import, with a
``DeprecationWarning`` naming the new one, and give the very module of the new path (so
attributes, monkeypatching and ``isinstance`` checks behave the same). A finder on ``sys.meta_path``
serves them, so no stub file sits in ``lpmech/models/``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

#: old module path -> new module path
MOVED = {
    "lpmech.models.omg_large": "lpmech.models.omg.omg_large",
    "lpmech.models.omg_sweep": "lpmech.models.omg.omg_sweep",
    "lpmech.models.matrix_mechanism": "lpmech.models.matrix.matrix_mechanism",
    "lpmech.models.range_mechanism": "lpmech.models.matrix.range_mechanism",
    "lpmech.models.lip_optimize": "lpmech.models.lip.lip_optimize",
    "lpmech.models.lip_closed_forms": "lpmech.models.lip.lip_closed_forms",
    "lpmech.models.lip_estimation": "lpmech.models.lip.lip_estimation",
}
REMOVED_IN = "0.3.0"


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, new: str):
        self.new = new

    def create_module(self, spec):
        warnings.warn(f"{spec.name} is deprecated and will be removed in lpmech {REMOVED_IN}; "
                      f"import {self.new} instead", DeprecationWarning, stacklevel=2)
        return importlib.import_module(self.new)

    def exec_module(self, module):  # the module of the new path is already executed
        pass


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(new))


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.append(_AliasFinder())
