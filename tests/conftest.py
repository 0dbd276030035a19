"""Test-suite settings.

Hypothesis property tests run derandomized by default, so that a clean clone (CI) sees the same
examples on every run and a landing cannot fail on a draw nobody has seen. To explore new
examples, run with ``HYPOTHESIS_PROFILE=explore`` (random draws, more examples).
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False, max_examples=200)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def load_prototype(name: str):
    """``benchmarks/prototypes/<name>.py`` imported as a module (the prototypes are scripts)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "prototypes" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
