"""Subcommands of the ``lpmech`` command line beyond ``omg`` and ``certify``.

Each module here defines ``register(sub, common)``: it adds one subparser to ``sub`` (an argparse
sub-parsers action; ``common`` is the parent parser with ``--json`` and ``-v``) and sets
``func=<handler>``; the handler takes the parsed args and returns the exit code. Shared plumbing
(instance flags, JSON on error, solver output to stderr) is in :mod:`lpmech.cli`.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def modules() -> list[ModuleType]:
    """The subcommand modules of this package, in name order."""
    return [importlib.import_module(f"{__name__}.{info.name}")
            for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name)
            if not info.name.startswith("_")]
