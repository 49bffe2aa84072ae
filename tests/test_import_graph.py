"""No import circles between trialtui's files: a circle makes import order matter and hides which
module owns what. The graph is read from the source with `ast` (nothing of trialtui is imported):
every import statement at any depth (function-level and TYPE_CHECKING ones too), relative imports
resolved, and `from pkg import name` counting as an import of `pkg.name` when that is a module
(else of `pkg`).
Importing `a.b.c` counts as an edge to `a.b.c` alone: the packages above it are run first by
Python, but a package that imports its own submodules is no circle between files."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[1] / "trialtui"


def module_names(package: Path) -> dict[str, Path]:
    """Every module under `package` by dotted name (a package by its `__init__.py`)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> dict[str, int]:
    """The modules of `modules` that `name` imports, each with the line of its first import."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    named: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
        if isinstance(node, ast.Import):
            named += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                named.append((node.lineno, submodule if submodule in modules else base))
    edges: dict[str, int] = {}
    for line, target in named:
        if target in modules and target != name:
            edges.setdefault(target, line)
    return edges


def import_graph(package: Path) -> dict[str, dict[str, int]]:
    modules = module_names(package)
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One circle through each strongly connected group of modules (Tarjan's algorithm, then the
    shortest way back to the group's first module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    found = []
    for group in groups:
        start, members = group[0], set(group)
        paths = {start: [start]}
        frontier = [start]
        while frontier and start not in {n for f in frontier for n in graph[f]}:
            nxt_frontier = []
            for node in frontier:
                for nxt in sorted(graph[node]):
                    if nxt in members and nxt not in paths:
                        paths[nxt] = paths[node] + [nxt]
                        nxt_frontier.append(nxt)
            frontier = nxt_frontier
        last = next(f for f in frontier if start in graph[f])
        found.append(paths[last] + [start])
    return found


def describe(cycle: list[str], graph: dict[str, dict[str, int]]) -> str:
    steps = [f"{a} (line {graph[a][b]})" for a, b in zip(cycle, cycle[1:])]
    return " -> ".join(steps + [cycle[-1]])


def test_no_module_imports_itself_through_others():
    graph = import_graph(PACKAGE)
    assert [describe(c, graph) for c in cycles(graph)] == []


def test_a_circle_is_found_through_lazy_relative_and_submodule_imports(tmp_path):
    package = tmp_path / "trialtui"
    (package / "core" / "forms").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "core" / "__init__.py").write_text("")
    (package / "core" / "problem.py").write_text("def load():\n    from trialtui.core.forms import detect\n")
    (package / "core" / "forms" / "__init__.py").write_text("from . import base\n")
    (package / "core" / "forms" / "base.py").write_text("from ..problem import load\n")
    (package / "core" / "plain.py").write_text("from trialtui.core import problem\n")
    (package / "core" / "alone.py").write_text("import trialtui.core.forms.base\n")
    graph = import_graph(package)
    assert graph["trialtui.core.plain"] == {"trialtui.core.problem": 1}
    assert graph["trialtui.core.alone"] == {"trialtui.core.forms.base": 1}
    assert [describe(c, graph) for c in cycles(graph)] == [
        "trialtui.core.forms (line 1) -> trialtui.core.forms.base (line 1) -> trialtui.core.problem (line 2)"
        " -> trialtui.core.forms"
    ]
