"""The docs site builds with warnings as errors, every internal link of the built HTML resolves,
and every ``lpmech`` subcommand has a generated CLI reference page.

The build is the documented command, ``python -m sphinx -W --keep-going -b html docs
docs/_build/html``, run once per session into a scratch folder. Sphinx's own ``linkcheck`` needs
the internet; the link check here walks every ``<a href>`` and ``<img src>`` of the built HTML that
points inside the site and checks the file exists and, for ``#fragment``, that the target page has
that id.
"""

from __future__ import annotations

import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from lpmech.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def subcommands() -> set[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.choices and "omg" in a.choices)
    return set(sub.choices)


def test_every_subcommand_has_a_generated_cli_page():
    pages = {p.stem for p in (DOCS / "cli").glob("*.md")} - {"index"}
    assert subcommands() <= pages, f"add docs/cli/<name>.md for {sorted(subcommands() - pages)}"
    index = (DOCS / "cli" / "index.md").read_text()
    for name in subcommands():
        text = (DOCS / "cli" / f"{name}.md").read_text()
        assert ".. argparse::" in text and f":path: {name}" in text, name  # generated, not written
        assert f"\n{name}\n" in index, f"docs/cli/index.md's toctree lacks {name}"


@pytest.fixture(scope="session")
def built_html(tmp_path_factory):
    pytest.importorskip("sphinx")
    pytest.importorskip("myst_parser")
    pytest.importorskip("sphinxarg")
    pytest.importorskip("pydata_sphinx_theme")
    out = tmp_path_factory.mktemp("docs") / "html"
    doctrees = out.parent / "doctrees"
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                           "-d", str(doctrees), str(DOCS), str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env={**__import__("os").environ, "MPLBACKEND": "Agg"})
    assert proc.returncode == 0, f"the docs build failed:\n{proc.stderr[-6000:]}"
    return out


def test_docs_build_with_warnings_as_errors(built_html):
    assert (built_html / "index.html").is_file()
    for name in subcommands():
        page = built_html / "cli" / f"{name}.html"
        assert page.is_file(), name
        assert "--json" in page.read_text() or name == "certify", name  # options rendered
    for fig in ("omg", "lrgeo", "le", "matrix", "lip", "design"):
        assert list(built_html.rglob(f"{fig}.png")), f"figure {fig}.png is not in the site"


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        if tag == "img" and a.get("src"):
            self.links.append(a["src"])


def _parse(path: Path) -> _Links:
    p = _Links()
    p.feed(path.read_text(errors="replace"))
    return p


def test_internal_links_resolve(built_html):
    pages = {p: _parse(p) for p in built_html.rglob("*.html")}
    broken = []
    for page, parsed in pages.items():
        for href in parsed.links:
            url = urlsplit(href)
            if url.scheme or url.netloc or href.startswith(("mailto:", "javascript:")):
                continue
            target = page if not url.path else (page.parent / unquote(url.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(built_html)} -> {href}")
                continue
            if url.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(url.fragment) not in ids:
                    broken.append(f"{page.relative_to(built_html)} -> {href} (no such id)")
    assert not broken, "broken internal links:\n" + "\n".join(sorted(set(broken))[:50])
    assert len(pages) > 30
