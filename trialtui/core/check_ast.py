"""The syntax-tree reading the static checks share: scopes, bindings, dotted names, positions.

Pure `ast`; the checks in `static_checks` and the Triton checks in `languages/triton_checks` build on it.
"""

from __future__ import annotations

import ast
from collections import ChainMap
from collections.abc import Iterator

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
# Node kinds that carry no check and no name: skipping them makes the one pass a third cheaper.
SILENT_NODES = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
MAX_DEPTH = 40  # cap for the recursive expression readers; real kernel expressions are shallow
MAX_VALUES = 64  # the most values one expression is followed with (a sweep of block sizes is a few)

# A name's bindings in one scope: each assigned expression with the scope it is read in, or None
# when the name is also bound some other way (a parameter, a loop, an augmented assignment).
Bindings = dict[str, "list[tuple[ast.expr, ChainMap]] | None"]
# Where a node sits: its scope, the scope's kind, the class bindings `self.X = ...` goes to (in a
# method), and the enclosing function.
Context = tuple[ChainMap, str, "Bindings | None", "ast.AST | None"]


def dotted_name(node: ast.AST) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def unpacked_targets(targets: list[ast.expr]) -> Iterator[ast.expr]:
    """The names and attributes an assignment writes, out of tuple and starred targets."""
    stack = list(reversed(targets))
    while stack:
        target = stack.pop()
        if isinstance(target, (ast.Tuple, ast.List)):
            stack.extend(reversed(target.elts))
        elif isinstance(target, ast.Starred):
            stack.append(target.value)
        else:
            yield target


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """`ast.iter_child_nodes` without the context and operator nodes."""
    children = []
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, list):
            children += [item for item in value if isinstance(item, ast.AST)]
        elif isinstance(value, ast.AST) and not isinstance(value, SILENT_NODES):
            children.append(value)
    return children


def bind_name(bound: Bindings, name: str, value: ast.expr | None, env: ChainMap) -> None:
    if value is None or (name in bound and bound[name] is None):
        bound[name] = None
    else:
        bound.setdefault(name, []).append((value, env))


def keyword_value(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def position_of(node: ast.AST | None) -> tuple[int | None, int | None]:
    if node is None or not hasattr(node, "lineno"):
        return None, None
    return node.lineno, node.col_offset + 1


def param_list(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> list[ast.arg]:
    a = fn.args
    extra = [arg for arg in (a.vararg, a.kwarg) if arg]
    return a.posonlyargs + a.args + a.kwonlyargs + extra
