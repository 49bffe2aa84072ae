"""A problem directory as the forms fill it (`Problem`: its cases and candidates) and the AST-only
size reading the forms share. `trialtui.core.problem_dir` reads a directory into one.

Nothing of the user's is executed here.
"""

from __future__ import annotations

import ast
import fnmatch
import operator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trialtui.core.config import Config

REFERENCE_NAME = "reference.py"


class ProblemError(ValueError):
    """A directory that is not a usable problem; the message says what is missing."""


def top_level_names(tree: ast.Module) -> dict[str, ast.AST]:
    """Names a module defines at top level (functions, classes, simple assignments)."""
    names: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.Assign):
            for name in _assigned(node):
                names[name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names[(alias.asname or alias.name).split(".")[0]] = node
    return names


_ARITH = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
    ast.Div: operator.truediv, ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.Mod: operator.mod,
}


def _number(node: ast.AST, known: dict[str, Any]) -> int | float:
    """Evaluate `4096`, `1 << 26`, `2 * dim` without executing anything."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name) and node.id in known:
        return known[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_number(node.operand, known)
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
        left, right = _number(node.left, known), _number(node.right, known)
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise ValueError("exponent too large")
        return _ARITH[type(node.op)](left, right)
    raise ValueError("not a constant size")


def _size(node: ast.AST, known: dict[str, Any]) -> Any:
    """A number, or a tuple of numbers (`bias_shape = (out_features, 1, 1)`)."""
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_number(element, known) for element in node.elts)
    return _number(node, known)


def _bind(target: ast.AST, value: Any, sizes: dict[str, Any]) -> None:
    """Assign to a name or unpack into a tuple of names (`D, H, W = (16, 32, 32)`)."""
    if isinstance(target, ast.Name):
        sizes[target.id] = value
    elif isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(t, ast.Name) for t in target.elts):
        if not isinstance(value, tuple) or len(value) != len(target.elts):
            raise ValueError("cannot unpack")
        for name, element in zip(target.elts, value):
            sizes[name.id] = element
    else:
        raise ValueError("not a simple target")


def _assigned(node: ast.AST) -> list[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    names: list[str] = []
    for target in targets:
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name):
                names.append(sub.id)
    return names


def size_constants(tree: ast.Module, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Module-level numeric constants a config may override: `batch_size = 16`, `n = 1 << 20`,
    `height = width = 128`, `D, H, W = (16, 32, 32)`, `bias_shape = (out_features, 1, 1)`.

    With `overrides`, each one is re-asserted after every statement, so derived constants follow
    them: the AST twin of `trialtui.runner.constants`, which does the same by executing the block.
    """
    overrides = {k: tuple(v) if isinstance(v, list) else v for k, v in (overrides or {}).items()}
    sizes: dict[str, Any] = dict(overrides)
    for node in tree.body:
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):  # `n += 1`
            node = ast.Assign(targets=[node.target], value=ast.BinOp(ast.Name(node.target.id), node.op, node.value))
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        try:
            value = _size(node.value, sizes)
            found: dict[str, Any] = {}
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                _bind(target, value, found)
            sizes.update(found)
        except (ValueError, ZeroDivisionError, OverflowError, TypeError):
            for name in _assigned(node):  # rebound to something that is not a size
                sizes.pop(name, None)
        sizes.update(overrides)
    return sizes


def literal_sizes(tree: ast.Module) -> dict[str, Any]:
    """The size constants written as literals (`dim = 4096`, not `bias_shape = (dim,)`): the ones a
    config sets; the derived ones follow them."""
    sizes = size_constants(tree)
    literal: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            if isinstance(node, ast.AugAssign) or any(isinstance(n, ast.Name) for n in ast.walk(node.value)):
                for name in _assigned(node):
                    literal.pop(name, None)
            else:
                literal.update({name: sizes[name] for name in _assigned(node) if name in sizes})
    return literal


@dataclass
class Problem:
    """What the runner needs to know to check and time a candidate, and nothing it must execute."""

    root: Path
    form: str  # the form's name: job specs and results carry it
    entry_point: str  # what a candidate defines and the harness calls (the form's)
    config: Config
    defaults: dict[str, Any] = field(default_factory=dict)
    test_cases: list[dict[str, Any]] = field(default_factory=list)
    bench_cases: list[dict[str, Any]] = field(default_factory=list)
    support_files: list[Path] = field(default_factory=list)
    not_candidates: set[str] = field(default_factory=set)

    @property
    def reference(self) -> Path:
        return self.root / REFERENCE_NAME

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def state_dir(self) -> Path:
        return self.root / ".trialtui"

    def is_candidate(self, path: Path) -> bool:
        """Candidate files: top-level `*.py` except the reference, its support modules, private names
        and excludes."""
        return self.why_not_candidate(path) is None

    def why_not_candidate(self, path: Path) -> str | None:
        """Why `path` is not a candidate (said to whoever tried to make it one), or None when it is."""
        path = Path(path)
        try:
            rel = path.resolve().relative_to(self.root.resolve())
        except ValueError:
            return f"it is outside the problem directory {self.root}"
        name = rel.name
        if len(rel.parts) != 1 or path.suffix != ".py":
            return "a candidate is a .py file at the top of the problem directory"
        if name == REFERENCE_NAME:
            return "it is the reference"
        if name in self.not_candidates:
            return "it is a support module of the reference (imported by it, or in task.yml's files:)"
        if name.startswith(("_", ".")):
            return "names starting with _ or . are private (helpers of yours, never scored): drop the prefix"
        pattern = next((p for p in self.config.exclude if fnmatch.fnmatch(name, p)), None)
        return f"it matches exclude = [{pattern!r}] in trialtui.toml" if pattern else None

    def candidates(self) -> list[Path]:
        return sorted(p for p in self.root.glob("*.py") if self.is_candidate(p))

    def job_spec(self, **extra: Any) -> dict[str, Any]:
        """The JSON-able description of this problem that child processes receive."""
        atol, rtol = self.config.tolerance
        return {
            "root": str(self.root),
            "reference": str(self.reference),
            "form": self.form,
            "entry_point": self.entry_point,
            "dtype": self.config.dtype,
            "atol": atol,
            "rtol": rtol,
            "allow_tf32": self.config.allow_tf32,
            "explicit_tolerance": self.config.atol is not None or self.config.rtol is not None,
            "test_cases": self.test_cases,
            "bench_cases": self.bench_cases,
            "support_files": [str(p) for p in self.support_files],
            **extra,
        }
