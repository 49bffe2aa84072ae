"""Imports point down: core < runner < engine < tui < cli. trialtui.core and trialtui.engine stay fast
and headless (no textual, no torch, no triton), and the TUI and engine use neither the CLI nor `render`."""

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
LAYERS = {"__init__": 0, "core": 0, "runner": 1, "engine": 2, "tui": 3, "agent": 3, "cli": 4, "render": 4, "__main__": 4}


@pytest.mark.parametrize("package", ["trialtui.core", "trialtui.engine"])
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


def layer_violations(package: Path) -> list[str]:
    problems = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package.parent).with_suffix("")
        mine = part_of(".".join(rel.parts))
        if mine not in LAYERS:
            problems.append(f"{rel}: trialtui.{mine} has no layer; add it to LAYERS in this test")
            continue
        for line, module in imported(ast.parse(path.read_bytes(), filename=str(path))):
            theirs = part_of(module)
            if theirs is None or theirs == mine:
                continue
            if theirs not in LAYERS:
                if (package / theirs).exists() or (package / f"{theirs}.py").exists():
                    problems.append(f"{rel}:{line}: imports {module}, and trialtui.{theirs} has no layer")
                continue
            if LAYERS[theirs] > LAYERS[mine]:
                problems.append(f"{rel}:{line}: {mine} imports {module}, which is above it")
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
    found = "\n".join(layer_violations(package))
    assert "core/bad:2: core imports trialtui.engine" in found
    assert "tui/bad:1: tui imports trialtui.render" in found
    assert "engine/bad:1: engine imports trialtui.cli.trials" in found
    assert "trialtui.extras has no layer" in found
    assert "core/ok" not in found
