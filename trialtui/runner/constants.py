"""KernelBench sizes in the child: a case's overrides applied to the reference's module namespace.

`get_inputs` and `get_init_inputs` read module constants when called, so overriding `out_features`
alone would leave `bias_shape = (out_features, 1, 1)` at its old size. The module's top-level
assignments are re-run in order with the overrides re-asserted after each one, so constants
derived from a size follow it (`trialtui.core.problem.size_constants` is the AST-only twin).
Only the statements that read a name the case changes (directly or through another constant), or
bind one, run again: a statement that depends on nothing the case changed keeps the value it had.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from types import CodeType
from typing import Any

_MISSING = object()


@dataclass(frozen=True)
class Statement:
    """One top-level assignment: the names it binds and reads, compiled once."""

    binds: frozenset[str]
    reads: frozenset[str]
    code: CodeType


def constant_block(path: str | Path, source: str | None = None) -> list[Statement]:
    """The module's top-level assignments, in order (`a = b = 1`, `x, y = (1, 2)`, `n += 1` included);
    from `source` when given (the text the module was loaded from), else from the file."""
    path = Path(path)
    tree = ast.parse(path.read_bytes() if source is None else source, filename=str(path))
    block = []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        elif isinstance(node, ast.AugAssign):
            targets, value = [node.target], node
        else:
            continue
        binds = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        reads = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
        if isinstance(node, ast.AugAssign):
            reads |= binds
        code = compile(ast.Module(body=[node], type_ignores=[]), str(path), "exec")
        block.append(Statement(frozenset(binds), frozenset(reads), code))
    return block


def _like(default: Any, value: Any) -> Any:
    """TOML has no tuples: a list given for a tuple constant becomes a tuple."""
    return tuple(value) if isinstance(default, tuple) and isinstance(value, list) else value


def apply(namespace: dict[str, Any], block: list[Statement], case: dict[str, Any]) -> dict[str, Any]:
    """Set the case's sizes in `namespace` and re-run what depends on them; returns what `restore` needs."""
    saved: dict[str, Any] = {}

    def remember(name: str) -> None:
        saved.setdefault(name, namespace.get(name, _MISSING))

    overrides = {key: _like(namespace.get(key), value) for key, value in case.items()}
    for key, value in overrides.items():
        remember(key)
        namespace[key] = value
    changed = _depending(block, set(overrides))
    for statement in block:
        if not (statement.reads & changed or (statement.binds & changed) - overrides.keys()):
            continue
        for name in statement.binds:
            remember(name)
        exec(statement.code, namespace)  # noqa: S102 - the reference's own statement, in its child
        namespace.update(overrides)
    return saved


def _depending(block: list[Statement], names: set[str]) -> set[str]:
    """`names` and every name bound from them, directly or not (`n += height` makes n depend)."""
    names = set(names)
    grown = True
    while grown:
        grown = False
        for statement in block:
            if statement.reads & names and not statement.binds <= names:
                names |= statement.binds
                grown = True
    return names


def restore(namespace: dict[str, Any], saved: dict[str, Any]) -> None:
    """Put back what `apply` changed."""
    for name, value in saved.items():
        if value is _MISSING:
            namespace.pop(name, None)
        else:
            namespace[name] = value
