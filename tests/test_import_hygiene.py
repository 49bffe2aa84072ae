"""Imports point down: core < runner < engine < demo, tui, agent < cli. trialtui.core, trialtui.engine
and the demo stay fast and headless (no textual, no torch, no triton), and the TUI and engine use
neither the CLI nor `render`.
A string that names a module of trialtui (a job started as `python -m trialtui.runner.bench_job`, a
`module:attribute`) points the same way as an import, but in the two places that name what runs in a
child process: core/job_kinds.py (every job kind's module) and a core form's runner half."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import trialtui

FORBIDDEN = ("textual", "torch", "triton")
PACKAGE = Path(trialtui.__file__).parent
# Each part of trialtui and its rank: a module may import only from its own rank or below.
# The demo drives the engine, and the agent imports it (a story, `editor_save`, a replay label): beside the agent.
LAYERS = {"__init__": 0, "core": 0, "runner": 1, "engine": 2, "demo": 3, "tui": 3, "agent": 3,
          "cli": 4, "render": 4, "__main__": 4}
# The files that may name a module above them in a string: what the engine starts in a child process.
NAMED_ABOVE = {"trialtui/core/job_kinds.py": "the job kinds' registry",
               "trialtui/core/forms/": "a form's runner half (`runner = \"module:FORM\"`), the plug-in point"}


@pytest.mark.parametrize("package", ["trialtui.core", "trialtui.engine", "trialtui.demo"])
def test_package_imports_without_ui_or_torch(package):
    code = (
        "import importlib, pkgutil, sys\n"
        f"pkg = importlib.import_module({package!r})\n"
        "for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
        "    importlib.import_module(m.name)\n"
        f"print(','.join(sorted(n for n in {FORBIDDEN!r} if n in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"{package} pulled in {out.stdout.strip()}"


def part_of(module: str) -> str | None:
    """`trialtui.core.store` → "core"; None for modules outside trialtui."""
    parts = module.split(".")
    if parts[0] != "trialtui":
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def imported(tree: ast.Module) -> list[tuple[int, str]]:
    """Every module an import statement names, at any depth (function-level and TYPE_CHECKING imports too)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]  # from trialtui import render
    return found


def named(tree: ast.Module, package: Path) -> list[tuple[int, str]]:
    """Every module of `package` a string names: `trialtui.x.y` or `trialtui.x.y:attribute`, never prose,
    the program's name or a file name such as trialtui.toml."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            module = node.value.strip().partition(":")[0]
            if not module.startswith("trialtui.") or not module.replace(".", "").replace("_", "").isalnum():
                continue
            where = package.parent.joinpath(*module.split("."))
            if where.with_suffix(".py").exists() or (where / "__init__.py").exists():
                found.append((node.lineno, module))
    return found


def may_name_above(rel: Path) -> bool:
    text = rel.with_suffix(".py").as_posix()
    return any(text == place or (place.endswith("/") and text.startswith(place)) for place in NAMED_ABOVE)


def layer_violations(package: Path) -> list[str]:
    problems = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent).with_suffix("")
        mine = part_of(".".join(rel.parts))
        if mine not in LAYERS:
            problems.append(f"{rel}: trialtui.{mine} has no layer; add it to LAYERS in this test")
            continue
        tree = ast.parse(path.read_bytes(), filename=str(path))
        uses = [(line, module, "imports") for line, module in imported(tree)]
        uses += [(line, module, "names") for line, module in named(tree, package) if not may_name_above(rel)]
        for line, module, how in uses:
            theirs = part_of(module)
            if theirs is None or theirs == mine:
                continue
            if theirs not in LAYERS:
                if (package / theirs).exists() or (package / f"{theirs}.py").exists():
                    problems.append(f"{rel}:{line}: {how} {module}, and trialtui.{theirs} has no layer")
                continue
            if LAYERS[theirs] > LAYERS[mine]:
                problems.append(f"{rel}:{line}: {mine} {how} {module}, which is above it")
    return problems


def test_every_import_points_down():
    assert layer_violations(PACKAGE) == []


def test_an_upward_import_is_caught(tmp_path):
    package = tmp_path / "trialtui"
    (package / "core").mkdir(parents=True)
    (package / "tui").mkdir()
    (package / "engine").mkdir()
    (package / "render.py").write_text("")
    (package / "core" / "ok.py").write_text("from trialtui.core import other\n")
    (package / "core" / "bad.py").write_text("def f():\n    from trialtui.engine import loop\n")
    (package / "tui" / "bad.py").write_text("from trialtui import render\n")
    (package / "engine" / "bad.py").write_text("import trialtui.cli.trials\n")
    (package / "extras").mkdir()
    (package / "extras" / "x.py").write_text("")
    (package / "runner").mkdir()
    (package / "runner" / "job.py").write_text("")
    (package / "core" / "starts.py").write_text('MODULE = "trialtui.runner.job"\nPROSE = "see trialtui.runner.job docs"\n')
    (package / "core" / "job_kinds.py").write_text('JOB = "trialtui.runner.job"\n')
    (package / "core" / "forms").mkdir()
    (package / "core" / "forms" / "mine.py").write_text('runner = "trialtui.runner.job:FORM"\n')
    (package / "engine" / "names.py").write_text('BACK = "trialtui.render:render_bench"\nFILE = "trialtui.toml"\n')
    found = "\n".join(layer_violations(package))
    assert "core/bad:2: core imports trialtui.engine" in found
    assert "tui/bad:1: tui imports trialtui.render" in found
    assert "engine/bad:1: engine imports trialtui.cli.trials" in found
    assert "trialtui.extras has no layer" in found
    assert "core/ok" not in found
    assert "core/starts:1: core names trialtui.runner.job, which is above it" in found
    assert "core/starts:2" not in found and "core/job_kinds" not in found and "core/forms" not in found
    assert "engine/names:1: engine names trialtui.render, which is above it" in found
    assert "engine/names:2" not in found
