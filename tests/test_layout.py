"""The package layout (issue 15 part 3): no import circle, the engine imports no model, one
sub-package per family, every CLI subcommand in ``lpmech/commands/``.

The import graph is read from the source with ``ast`` (module-level and function-level imports,
relative ones resolved); its strongly connected components (Tarjan) are checked against networkx's
independent cycle test, and the checker itself is tried on a small package with a known circle.
"""

from __future__ import annotations

import ast
import importlib
import pathlib
import sys

import networkx as nx
import pytest

import lpmech

ROOT = pathlib.Path(lpmech.__file__).resolve().parent
#: mechanism families: one sub-package each under lpmech/models/
FAMILIES = {"omg", "lrgeo", "le", "matrix", "lip"}
#: the only flat modules left in lpmech/models/: shared by every family
MODELS_FLAT = {"__init__", "baselines", "common"}


def modules(root: pathlib.Path) -> dict[str, tuple[pathlib.Path, bool]]:
    """``{dotted name: (path, is a package __init__)}`` of every module of the package at ``root``."""
    out = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (path, is_pkg)
    return out


def import_graph(root: pathlib.Path) -> dict[str, set[str]]:
    """Edges module -> the package's modules it imports, anywhere in its source (also inside
    functions); ``from pkg import name`` points at the submodule ``pkg.name`` when there is one."""
    mods = modules(root)
    top = root.name

    def owner(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for mod, (path, is_pkg) in mods.items():
        base = mod.split(".") if is_pkg else mod.split(".")[:-1]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets |= {owner(a.name) for a in node.names if a.name.split(".")[0] == top}
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    pkg = base[: len(base) - node.level + 1]
                    src = ".".join(pkg + ([node.module] if node.module else []))
                else:
                    src = node.module or ""
                if src.split(".")[0] != top:
                    continue
                for a in node.names:
                    sub = f"{src}.{a.name}"
                    targets.add(sub if sub in mods else owner(src))
        graph[mod] = {t for t in targets if t is not None and t != mod}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


@pytest.fixture(scope="module")
def graph():
    return import_graph(ROOT)


def test_checker_finds_a_known_circle(tmp_path):
    """A package with one circle through a function-level import and one without: the checker
    finds exactly the circle, and agrees with networkx."""
    pkg = tmp_path / "toy"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from .b import f\n")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ..c import g\n    return g\n")
    (pkg / "c.py").write_text("import toy.a\n\ndef g():\n    return 1\n")
    (pkg / "d.py").write_text("from toy import c\nfrom . import a\n")
    g = import_graph(pkg)
    assert g["toy.sub.b"] == {"toy.c"}  # the function-level, relative import is seen
    assert g["toy.d"] == {"toy.c", "toy.a"}
    assert circles(g) == [["toy.a", "toy.c", "toy.sub.b"]]
    G = nx.DiGraph([(a, b) for a, bs in g.items() for b in bs])
    assert sorted(sorted(c) for c in nx.strongly_connected_components(G) if len(c) > 1) == circles(g)


def test_the_graph_sees_known_imports(graph):
    # module level: OMG's model takes the Geo-Ind rows from the engine side
    assert "lpmech.design.geoind" in graph["lpmech.models.omg.omg"]
    # function level: omg.solve imports the large-K methods on use
    assert "lpmech.models.omg.omg_large" in graph["lpmech.models.omg.omg"]
    assert len(graph) == len(modules(ROOT)) > 40


def test_no_import_circle(graph):
    found = circles(graph)
    G = nx.DiGraph()
    G.add_nodes_from(graph)
    G.add_edges_from((a, b) for a, bs in graph.items() for b in bs)
    assert nx.is_directed_acyclic_graph(G) == (found == [])
    assert found == [], f"import circles: {found}"


def test_engine_and_solvers_import_no_model(graph):
    bad = [(a, b) for a, bs in graph.items() for b in bs
           if a.startswith(("lpmech.design", "lpmech.solvers")) and b.startswith("lpmech.models")]
    assert bad == []


def test_one_subpackage_per_family():
    models = ROOT / "models"
    flat = {p.stem for p in models.glob("*.py")}
    packages = {p.parent.name for p in models.glob("*/__init__.py")}
    assert flat == MODELS_FLAT, f"put family modules in their sub-package: {sorted(flat - MODELS_FLAT)}"
    assert packages == FAMILIES


@pytest.mark.parametrize("family", ["omg", "lrgeo", "le", "lip"])
def test_family_package_keeps_the_module_api(family):
    """``from lpmech.models import omg; omg.solve`` is the module's function, and every name of the
    family's ``__all__`` resolves to the object defined in (or imported by) its module."""
    pkg = importlib.import_module(f"lpmech.models.{family}")
    assert pkg.__all__ and len(set(pkg.__all__)) == len(pkg.__all__)
    owners = [sys.modules[m] for m in sys.modules if m.startswith(f"lpmech.models.{family}.")]
    for name in pkg.__all__:
        obj = getattr(pkg, name)
        assert any(getattr(m, name, None) is obj for m in owners), name
    assert pkg.solve.__module__.startswith(f"lpmech.models.{family}.")


def test_every_subcommand_lives_in_commands():
    from lpmech import cli

    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.choices and "omg" in a.choices)
    where = {name: p.get_default("func").__module__ for name, p in sub.choices.items()}
    assert where == {name: f"lpmech.commands.{name}" for name in where}
    assert set(where) >= {"omg", "certify", "le", "lip", "lrgeo", "mm"}
    # cli.py keeps the entry point and the plumbing: no subparser, no handler
    tree = ast.parse((ROOT / "cli.py").read_text())
    handlers = [n.name for n in ast.walk(tree)
                if isinstance(n, ast.FunctionDef) and n.name.startswith("cmd_")]
    parsers = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
               and getattr(n.func, "attr", None) == "add_parser"]
    assert handlers == [] and parsers == []
