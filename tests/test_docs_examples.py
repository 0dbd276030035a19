"""Every Python example of README.md and of the docs (``docs/**/*.md``) runs, and every output it
prints is the output the text states.

The documents are read with sybil's Markdown parsers: a ```` ```python ```` block runs as code, a
block of ``>>>`` lines runs as a doctest (its printed output compared, with ``...`` as a wildcard
and whitespace normalised), and ``<!-- skip: next ... -->`` skips the next block. All blocks of one
document share one namespace and run in order, in a scratch directory where ``../shared/data`` is
the shared data folder when this checkout has one. Blocks that need the Rome or Gowalla data skip
themselves through ``ROME`` / ``GOWALLA`` (``<!-- skip: next if(not ROME, ...) -->``).

The CLI examples (```` ```bash ```` blocks) run in ``tests/test_readme.py``.
"""

from __future__ import annotations

import doctest
import os
import unittest
from pathlib import Path

import pytest

sybil = pytest.importorskip("sybil")
from sybil import Sybil  # noqa: E402
from sybil.parsers.markdown import PythonCodeBlockParser, SkipParser  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
DOCUMENTS = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md")
                                         if "_build" not in p.parts and "_generated" not in p.parts)]
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

SYBIL = Sybil(parsers=[PythonCodeBlockParser(doctest_optionflags=FLAGS), SkipParser()])


def _examples(path: Path):
    return list(SYBIL.parse(path))


def test_every_document_is_collected():
    names = {p.relative_to(ROOT).as_posix() for p in DOCUMENTS}
    assert {"README.md", "docs/getting-started.md", "docs/guides/omg.md", "docs/guides/lrgeo.md",
            "docs/guides/le.md", "docs/guides/matrix.md", "docs/guides/lip.md",
            "docs/guides/design.md", "docs/numerics.md"} <= names


def test_readme_examples_state_their_output():
    """The README's examples are doctests: each family's example prints what the text says, so a
    changed result fails here (the parser finds at least one checked output per family)."""
    text = (ROOT / "README.md").read_text()
    assert text.count("\n>>> print(") >= 6


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_examples_run(path, tmp_path, monkeypatch):
    work = tmp_path / "main"
    work.mkdir()
    if DATA.is_dir():
        (tmp_path / "shared").symlink_to(DATA.parent)  # ../shared/data as seen from the repository
    monkeypatch.chdir(work)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    os.environ.setdefault("LPMECH_TRACEBACK", "1")
    examples = _examples(path)
    if not examples:
        pytest.skip("no Python example in this document")
    document = examples[0].document
    document.namespace.update(ROME=(DATA / "rome").is_dir(), GOWALLA=(DATA / "gowalla").is_dir())
    ran = skipped = 0
    for example in examples:
        try:
            example.evaluate()
        except unittest.SkipTest:
            skipped += 1
            continue
        except Exception as exc:  # name the block: the traceback alone points into sybil
            raise AssertionError(f"{path.name}, line {example.line}: {exc}") from exc
        ran += 1
    assert ran + skipped == len(examples)
    import matplotlib.pyplot as plt

    plt.close("all")


#: public entry points whose docstrings carry an Examples section (numpydoc): run as doctests. A
#: class is collected with its methods (doctest's finder), so a method's example runs with it.
DOCSTRING_EXAMPLES = [
    "lpmech.models.omg.omg.solve",
    "lpmech.models.le.le_mechanism.solve",
    "lpmech.models.le.le_mechanism.le",
    "lpmech.models.le.le_mechanism.kkt",
    "lpmech.models.le.le_mechanism.le_grid",
    "lpmech.models.lip.lip_solve.solve",
    "lpmech.models.lip.lip_solve.lh_lip",
    "lpmech.models.lrgeo.lrgeo.solve",
    "lpmech.models.lrgeo.lrgeo.solve_relaxed",
    "lpmech.models.lrgeo.lrgeo.constopt",
    "lpmech.models.matrix.matrix_mechanism.solve",
    "lpmech.models.matrix.matrix_mechanism.solve_frequency",
    "lpmech.models.matrix.range_mechanism.encode",
    "lpmech.models.matrix.range_mechanism.frequencies",
    "lpmech.models.matrix.range_mechanism.range_query",
    "lpmech.models.matrix.range_mechanism.quantile",
    "lpmech.design.engine.solve",
    "lpmech.solvers.result.Result",
    "lpmech.instance.grid",
    "lpmech.instance.from_matrix",
    "lpmech.instance.read_points",
    "lpmech.instance.read_distances",
    "lpmech.instance.read_edges",
    "lpmech.instance.Instance.with_prior",
    "lpmech.instance.Instance.with_counts",
    "lpmech.instance.Instance.with_gamma",
    "lpmech.mechanism.Mechanism",
    "lpmech.mechanism.certify",
    "lpmech.mechanism.realized_epsilon",
]


def _docstring_object(name: str):
    """The object a dotted name points at: a module attribute, or a class's attribute."""
    import importlib

    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(name)


def test_docstring_examples_listed_once():
    assert len(set(DOCSTRING_EXAMPLES)) == len(DOCSTRING_EXAMPLES)


@pytest.mark.parametrize("name", DOCSTRING_EXAMPLES)
def test_docstring_examples_run(name):
    import inspect

    obj = _docstring_object(name)
    doc = inspect.cleandoc(obj.__doc__ or "")
    assert "\nExamples\n--------\n" in doc, f"{name}: no numpydoc Examples section"
    assert "\nParameters\n----------\n" in doc or "\nAttributes\n----------\n" in doc, \
        f"{name}: no Parameters (or Attributes) section"
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(optionflags=FLAGS)
    tests = [t for t in finder.find(obj, name, globs={}) if t.examples]
    # at least one example states its output, so a changed result fails here
    assert tests and any(ex.want for t in tests for ex in t.examples), f"{name}: no checked output"
    for t in tests:
        runner.run(t)
    assert runner.failures == 0, f"{name}: {runner.failures} docstring example(s) failed"
