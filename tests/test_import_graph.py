"""No import circles between trialtui's files, a runner no more than a few floors deep, and no module
over 500 lines: a circle makes import order matter and hides which module owns what, a staircase of
modules each above the last makes every change at the bottom move the whole stair, and a long module
holds more than one role. The graph is read from the source with `ast`
(nothing of trialtui is imported): every import statement at any depth (function-level and
TYPE_CHECKING ones too), relative imports resolved, and `from pkg import name` counting as an import of
`pkg.name` when that is a module (else of `pkg`). In the runner a string that names a module of trialtui
counts too (`"trialtui.runner.candidate"` started as a process, `"module:attribute"`, a warm import's
name): a job that starts another depends on it as much as one that imports it.
Importing `a.b.c` counts as an edge to `a.b.c` alone: the packages above it are run first by
Python, but a package that imports its own submodules is no circle between files."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parents[1] / "trialtui"
RUNNER = "trialtui.runner"
MAX_FLOORS = 4  # issue 35: the runner at most four imports deep (a job, what it runs, their helpers, leaves)
MAX_LINES = 500  # a module longer than this holds more than one role


def module_names(package: Path) -> dict[str, Path]:
    """Every module under `package` by dotted name (a package by its `__init__.py`)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def named_module(text: str, modules: dict[str, Path]) -> str | None:
    """The module of `modules` a string names, as `trialtui.x.y` or `trialtui.x.y:attribute`; None for
    anything else (prose, the program's name, a file name)."""
    name = text.strip().partition(":")[0]
    return name if "." in name and name in modules else None


def imports_of(name: str, path: Path, modules: dict[str, Path], *, strings: bool = False) -> dict[str, int]:
    """The modules of `modules` that `name` imports (with `strings`, or names in a string), each with the
    line of its first import."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    named: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
        if strings and isinstance(node, ast.Constant) and isinstance(node.value, str):
            if (module := named_module(node.value, modules)) is not None:
                named.append((node.lineno, module))
        elif isinstance(node, ast.Import):
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


def import_graph(package: Path, *, strings: bool = False) -> dict[str, dict[str, int]]:
    modules = module_names(package)
    return {name: imports_of(name, path, modules, strings=strings) for name, path in modules.items()}


def part(graph: dict[str, dict[str, int]], prefix: str) -> dict[str, dict[str, int]]:
    """The modules under `prefix` and their edges to one another."""
    inside = {name for name in graph if name == prefix or name.startswith(prefix + ".")}
    return {name: {t: line for t, line in graph[name].items() if t in inside} for name in sorted(inside)}


def floors(graph: dict[str, dict[str, int]]) -> dict[str, int]:
    """Each module's floor in a graph without circles: 1 for one that imports none of the graph, else one
    above the highest module it imports."""
    found: dict[str, int] = {}

    def floor(node: str) -> int:
        if node not in found:
            found[node] = 0  # being counted: a circle would read it before it is set
            found[node] = 1 + max((floor(nxt) for nxt in graph[node]), default=0)
        return found[node]

    for node in graph:
        floor(node)
    return found


def staircase(graph: dict[str, dict[str, int]], top: str, level: dict[str, int]) -> list[str]:
    """The longest way down from `top`: one module per floor."""
    steps = [top]
    while graph[steps[-1]]:
        steps.append(max(sorted(graph[steps[-1]]), key=level.__getitem__))
    return steps


def runner_graph() -> dict[str, dict[str, int]]:
    return part(import_graph(PACKAGE, strings=True), RUNNER)


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


def test_the_runner_has_no_circle_through_the_modules_it_imports_or_starts():
    graph = runner_graph()
    assert [describe(c, graph) for c in cycles(graph)] == []


def describe_floors(graph: dict[str, dict[str, int]]) -> str:
    level = floors(graph)
    top = max(sorted(level), key=level.__getitem__)
    return f"{level[top]} floors: " + " -> ".join(f"{m.removeprefix(RUNNER + '.')} ({level[m]})"
                                                   for m in staircase(graph, top, level))


def test_the_runner_is_at_most_four_floors_deep():
    graph = runner_graph()
    assert max(floors(graph).values()) <= MAX_FLOORS, describe_floors(graph)


def test_no_job_module_imports_or_starts_another():
    """A `*_job.py` is run, never imported: what two jobs share lives in a helper module of the runner."""
    graph = runner_graph()
    jobs = {name for name in graph if name.endswith("_job")}
    assert [f"{name} -> {other} (line {line})" for name in sorted(jobs)
            for other, line in graph[name].items() if other in jobs] == []


def long_modules(package: Path) -> dict[str, int]:
    found = {}
    for path in sorted(package.rglob("*.py")):
        lines = len(path.read_bytes().splitlines())
        if lines > MAX_LINES:
            found[path.relative_to(package.parent).as_posix()] = lines
    return found


def test_no_module_is_over_500_lines():
    assert long_modules(PACKAGE) == {}


def test_a_module_counts_one_floor_above_all_it_imports_or_names(tmp_path):
    package = tmp_path / "trialtui"
    (package / "runner").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "runner" / "__init__.py").write_text("")
    (package / "runner" / "leaf.py").write_text('"""Named in prose: trialtui.runner.job is not an edge."""\n')
    (package / "runner" / "lib.py").write_text("from trialtui.runner import leaf\n")
    (package / "runner" / "child.py").write_text("def run():\n    from trialtui.runner.lib import x\n")
    (package / "runner" / "job.py").write_text('START = ["-m", "trialtui.runner.child"]\nfrom . import leaf\n'
                                               'WARM = "trialtui.runner.lib:thing"\nNAME = "trialtui"\n')
    graph = part(import_graph(package, strings=True), "trialtui.runner")
    assert graph["trialtui.runner.job"] == {"trialtui.runner.child": 1, "trialtui.runner.leaf": 2,
                                           "trialtui.runner.lib": 3}
    assert floors(graph) == {"trialtui.runner": 1, "trialtui.runner.leaf": 1, "trialtui.runner.lib": 2,
                             "trialtui.runner.child": 3, "trialtui.runner.job": 4}
    assert import_graph(package)["trialtui.runner.job"] == {"trialtui.runner.leaf": 2}


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
