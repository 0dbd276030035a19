"""Draw the guides' figures from the guides' own code (run by ``conf.py`` at every build).

A guide marks a self-contained Python block with ``<!-- figure: NAME.png -->`` on the line before
it; that block saves ``NAME.png`` in the current directory. This script runs each marked block in
``docs/_generated`` (where the pages look for the figures), so a figure is always the output of the
code printed beside it; ``tests/test_docs_examples.py`` runs the same blocks as examples.

    python docs/make_figures.py            # all figures, into docs/_generated
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MARK = re.compile(r"<!-- figure: (?P<name>[\w.-]+\.png) -->\n```python\n(?P<code>.*?)^```", re.S | re.M)


def figure_blocks(root: Path = HERE) -> list[tuple[Path, str, str]]:
    """(page, figure name, code) of every marked block under ``root``."""
    out = []
    for page in sorted(root.rglob("*.md")):
        if "_build" in page.parts:
            continue
        out += [(page, m["name"], m["code"]) for m in MARK.finditer(page.read_text())]
    return out


@contextlib.contextmanager
def _cwd(path: Path):
    old = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def main(out: Path = HERE / "_generated") -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    made = []
    for page, name, code in figure_blocks():
        with _cwd(out), contextlib.redirect_stdout(io.StringIO()):
            exec(compile(code, f"{page.name}:{name}", "exec"), {"__name__": "__docs__"})
        plt.close("all")
        if not (out / name).is_file():
            raise RuntimeError(f"{page.name}: the block marked {name} did not save {name}")
        made.append(out / name)
    return made


if __name__ == "__main__":
    for p in main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "_generated"):
        print(p)
