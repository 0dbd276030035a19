"""Every command in the README and the docs runs as written (issue 11 §5), and the README's Python
snippets are complete.

The shell code blocks of README.md and of the docs (``docs/**/*.md``, in file order after the
README) are read line by line: ``lpmech ...`` and ``python -m lpmech ...``
commands run in-process (``lpmech.cli.main``) in a scratch directory, after the block's own
file-making lines (``printf ... > f``, ``python -c ...``) ran there. The exit code must be the one
the README promises: 0, or ``N`` where the line's comment says ``exit N``. Inline commands of the
prose (``lpmech ...`` in backticks) run the same way. The independent check of each command is the
README's own claim (exit code, and for the ``exit N`` lines the message it quotes).

By default a few slow commands run at a smaller size (:data:`SMALLER`: same subcommand, same path
through the code, fewer locations or users); ``-m slow`` runs every command exactly as written.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lpmech.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: the documents whose shell blocks run: the README first, then the docs pages
DOCUMENTS = [README, *sorted(p for p in (ROOT / "docs").rglob("*.md")
                             if "_build" not in p.parts and "_generated" not in p.parts)]
DATA = ROOT.parent / "shared" / "data"
TIMES: dict[str, float] = {}

#: slow command -> the same command at a smaller size (the default test run)
SMALLER = {
    "--grid 20x20 --prior random:0": "--grid 5x5 --prior random:0",
    "--rome-dir ../shared/data/rome --users 10": "--rome-dir ../shared/data/rome --users 1",
    "--grid 8x8 --cell 0.5": "--grid 5x5 --cell 0.5",
    "--grid 6x6 --prior random:1 --plot": "--grid 5x5 --prior random:1 --plot",
    "--grid 500x500 --metric manhattan": "--grid 40x40 --metric manhattan",
    "--grid 100x100": "--grid 31x31",  # still the FFT/CG grid path (961 > 900 cells)
}


def _blocks(text: str):
    """(language, lines) of every fenced code block."""
    for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, flags=re.S | re.M):
        yield m[1], m[2].splitlines()


def _strip_comment(line: str) -> tuple[str, str]:
    """(command, comment) of a shell line; a comment starts at an unquoted '#'."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].strip(), line[i + 1:].strip()
    return line.strip(), ""


def readme_steps() -> list[tuple[str, str, str]]:
    """(kind, command, comment) in document order (README, then the docs pages); kind is
    "lpmech" or "shell" (file-making)."""
    steps = []
    for path in DOCUMENTS:
        steps += _steps(path.read_text(), prose=path == README)
    return steps


def _steps(text: str, *, prose: bool) -> list[tuple[str, str, str]]:
    """The steps of one document: its shell blocks, and with ``prose`` its inline commands."""
    steps = []
    for lang, lines in _blocks(text):
        if lang == "python":
            continue
        for raw in lines:
            cmd, comment = _strip_comment(raw)
            for part in (p.strip() for p in cmd.split("&&")):
                if part.startswith(("lpmech ", "python -m lpmech ")):
                    steps.append(("lpmech", part, comment))
                elif part.startswith(("printf ", "python -c ")):
                    steps.append(("shell", part, comment))
    if not prose:
        return steps
    outside = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    for span in re.findall(r"`(lpmech [^`]*)`", outside):  # a bare `lpmech` names the script
        if "|" not in span and "..." not in span and "FILE" not in span:
            steps.append(("lpmech", span, ""))
    return steps


def _argv(cmd: str, smaller: bool) -> list[str]:
    if smaller:
        for slow, small in SMALLER.items():
            cmd = cmd.replace(slow, small)
    words = shlex.split(cmd)
    words = words[3:] if words[:3] == ["python", "-m", "lpmech"] else words[1:]
    return words


def _expected_exit(comment: str) -> int:
    m = re.search(r"\bexit (\d+)", comment)
    return int(m[1]) if m else 0


def _run_all(tmp_path, monkeypatch, capsys, *, smaller: bool):
    work = tmp_path / "main"
    work.mkdir()
    if DATA.is_dir():
        (tmp_path / "shared").symlink_to(DATA.parent)  # ../shared/data as seen from the repository
    monkeypatch.chdir(work)
    steps = readme_steps()
    ran = 0
    for kind, cmd, comment in steps:
        if kind == "shell":
            shell_cmd = cmd.replace("python -c", f"{shlex.quote(sys.executable)} -c", 1)
            subprocess.run(shell_cmd, shell=True, check=True, cwd=work, timeout=120)
            continue
        if "../shared/data" in cmd and not DATA.is_dir():
            continue  # the real data is not next to this checkout (e.g. a fresh clone elsewhere)
        argv = _argv(cmd, smaller)
        t0 = time.perf_counter()
        code = main(argv)
        TIMES[cmd] = time.perf_counter() - t0
        _, err = capsys.readouterr()
        assert code == _expected_exit(comment), f"{cmd!r} exited {code}: {err[-2000:]}"
        assert "Traceback" not in err
        if code:
            quoted = re.search(r'"\.\.\. ([^"]+)"', comment)
            if quoted:
                assert quoted[1] in err, (cmd, err)
        ran += 1
    return steps, ran


def test_readme_has_the_commands_the_issue_names():
    cmds = [c for k, c, _ in readme_steps() if k == "lpmech"]
    assert any(c.startswith("python -m lpmech omg --grid 6x6") for c in cmds)
    subcommands = {shlex.split(c)[3 if c.startswith("python") else 1] for c in cmds
                   if len(shlex.split(c)) > 1}
    assert {"omg", "certify", "lrgeo", "le", "mm", "lip"} <= subcommands
    assert any("--synthetic 39x39 --K 400" in c for c in cmds)
    assert any("--correlation" in c for c in cmds)


def test_readme_commands_run(tmp_path, monkeypatch, capsys):
    steps, ran = _run_all(tmp_path, monkeypatch, capsys, smaller=True)
    needs_data = sum(k == "lpmech" and "../shared/data" in c for k, c, _ in steps)
    assert ran == sum(k == "lpmech" for k, _, _ in steps) - (0 if DATA.is_dir() else needs_data) >= 28


@pytest.mark.slow
def test_readme_commands_run_as_written(tmp_path, monkeypatch, capsys):
    if not DATA.is_dir():
        pytest.skip("the shared data folder (../shared/data) is not there")
    steps, ran = _run_all(tmp_path, monkeypatch, capsys, smaller=False)
    assert ran == sum(k == "lpmech" for k, _, _ in steps)


def test_python_snippets_import_what_they_use():
    """Each Python block of the README imports the names it uses (np, li, omg, le, ...), so it runs
    when pasted alone: checked by compiling it (the source lines of a ``>>>`` block) and looking up
    every free name. The blocks run, and their output is checked, in test_docs_examples.py."""
    import builtins
    import symtable

    for lang, lines in _blocks(README.read_text()):
        if lang != "python":
            continue
        if lines and lines[0].startswith(">>>"):
            lines = [ln[4:] for ln in lines if ln.startswith((">>> ", "... ", ">>>", "..."))]
        src = "\n".join(lines)
        table = symtable.symtable(src, "<readme>", "exec")
        defined = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}
        used = {s.get_name() for s in table.get_symbols() if s.is_referenced()}
        missing = used - defined - set(dir(builtins))
        assert not missing, f"README snippet uses {sorted(missing)} without defining them:\n{src[:300]}"
