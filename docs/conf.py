"""Sphinx configuration of the lpmech docs.

Build (from the repository root, with the docs extra installed: ``pip install -e ".[docs]"``)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

The figures of the guides are drawn at build time by :mod:`make_figures` (into ``docs/_generated``),
from the same code the guides show, so a figure cannot go stale.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import lpmech  # noqa: E402

project = "lpmech"
author = "lpmech contributors"
copyright = "2026, lpmech contributors"
release = lpmech.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.intersphinx",
    "sphinxarg.ext",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "_generated/*.py", "Thumbs.db", ".DS_Store"]
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# napoleon reads both the numpydoc sections of the public entry points (Parameters, Returns,
# Raises, Examples) and the Google-style "Args:" sections of the internal helpers.
napoleon_google_docstring = True
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_use_ivar = True

autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False,
                           "member-order": "bysource"}
autodoc_typehints = "none"
autodoc_mock_imports: list[str] = []
autosummary_generate = False

intersphinx_mapping: dict[str, tuple[str, None]] = {}  # offline builds: no inventories fetched

html_theme = "pydata_sphinx_theme"
html_title = f"lpmech {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 8,
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_sidebars = {"index": [], "changelog": []}
html_last_updated_fmt = None

nitpicky = False
suppress_warnings = ["myst.header"]


def _figures(app):
    if os.environ.get("LPMECH_DOCS_NO_FIGURES"):
        return
    import make_figures

    make_figures.main(HERE / "_generated")




# ---------------------------------------------------------------------------------------- docstrings
# The docstrings write plain-text maths: |x| is an absolute value and z_ a subscript, not the
# reStructuredText substitution |x| or the link target z_. Outside inline literals, escape both.
_LITERAL = re.compile(r"(``.+?``|`[^`]+`)")
_TARGET = re.compile(r"(?<=\w)_(?=[^\w{]|$)")
_TABLE_RULE = re.compile(r"^\s*=+(\s+=+)+\s*$")


def _escape_plain_maths(line: str) -> str:
    parts = _LITERAL.split(line)
    for i in range(0, len(parts), 2):  # the even parts lie outside inline literals
        parts[i] = _TARGET.sub(r"\\_", parts[i].replace("|", r"\|"))
    return "".join(parts)


def _process_docstring(app, what, name, obj, options, lines):
    in_block = in_table = False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if _TABLE_RULE.match(line):
            in_table = not in_table if not in_table else (i + 1 < len(lines) and bool(lines[i + 1].strip()))
            continue
        if in_table:
            continue
        if stripped.startswith(">>>") or stripped.startswith("..."):
            continue
        if stripped.endswith("::") or stripped.startswith(".. "):
            in_block = True
            continue
        if in_block and stripped and not line.startswith(" "):
            in_block = False
        if not in_block:
            lines[i] = _escape_plain_maths(line)


def setup(app):
    app.connect("builder-inited", _figures)
    app.connect("autodoc-process-docstring", _process_docstring)

# help texts name flags ("--grid"): no typographic dashes or quotes in the generated pages
smartquotes = False
