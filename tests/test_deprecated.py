"""The import paths that 0.2.0 moved still work for one minor version, with a DeprecationWarning
naming the new path, and give the very module of the new path."""

from __future__ import annotations

import subprocess
import sys

import pytest

import lpmech
from lpmech._deprecated import MOVED, REMOVED_IN

CHECK = """
import importlib, sys, warnings
old, new = sys.argv[1], sys.argv[2]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    mod = importlib.import_module(old)
assert mod is importlib.import_module(new), (mod, new)
assert sys.modules[old] is mod
parent, _, leaf = old.rpartition(".")
assert getattr(importlib.import_module(parent), leaf) is mod
msgs = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
assert any(old in m and new in m for m in msgs), msgs
print("ok")
"""


def test_the_moved_modules_are_the_ones_git_moved():
    assert set(MOVED) == {f"lpmech.models.{m}" for m in (
        "omg_large", "omg_sweep", "matrix_mechanism", "range_mechanism", "lip_optimize",
        "lip_closed_forms", "lip_estimation")}
    assert REMOVED_IN == "0.3.0" and lpmech.__version__.startswith("0.2.")


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_path_warns_and_is_the_new_module(old):
    out = subprocess.run([sys.executable, "-c", CHECK, old, MOVED[old]], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_from_import_of_an_old_name_works():
    code = ("import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
            "try:\n    from lpmech.models import matrix_mechanism\nexcept DeprecationWarning as e:\n"
            "    print('warned', e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "warned lpmech.models.matrix_mechanism is deprecated" in out.stdout, out.stderr[-2000:]


def test_the_family_packages_still_import_without_a_warning():
    code = ("import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
            "from lpmech.models import omg, lrgeo, le, lip\n"
            "from lpmech.models.matrix import matrix_mechanism\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]
