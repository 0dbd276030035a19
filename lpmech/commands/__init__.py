"""The subcommands of the ``lpmech`` command line, one module each.

Each module here defines ``register(sub, common)``: it adds one subparser to ``sub`` (an argparse
sub-parsers action; ``common`` is the parent parser with ``--json`` and ``-v``) and sets
``func=<handler>``; the handler takes the parsed args and returns the exit code. A module's
``ORDER`` (default 100) places it in ``lpmech --help`` (then the name). Shared plumbing
(instance flags, JSON on error, solver output to stderr) is in :mod:`lpmech.cli`.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


def modules() -> list[ModuleType]:
    """The subcommand modules of this package, by ``ORDER`` then name."""
    found = [importlib.import_module(f"{__name__}.{info.name}")
             for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_")]
    return sorted(found, key=lambda m: (getattr(m, "ORDER", 100), m.__name__))
