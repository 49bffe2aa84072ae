"""The front ends hold an `EngineFront` (issue 35: no `engine: Any`): the engine of this process and one attached
to over its control socket both have every member the type names, and take every call the way it names it."""

from __future__ import annotations

import ast
import inspect
import textwrap
import typing
from pathlib import Path

import pytest

import trialtui
from trialtui.engine.attach import RemoteEngine
from trialtui.engine.front import EngineFront
from trialtui.engine.loop import Engine
from trialtui.tui.app import TrialApp, make_app

PACKAGE = Path(trialtui.__file__).parent
METHODS = [name for name, value in vars(EngineFront).items() if inspect.isfunction(value) and not name.startswith("_")]
ATTRIBUTES = list(EngineFront.__annotations__)  # names only: its types are imported for checkers alone


def _attributes_set(cls: type) -> set[str]:
    """The attributes a class's __init__ sets on self (and its class body's)."""
    found = set(vars(cls))
    for klass in cls.__mro__:
        init = vars(klass).get("__init__")
        if not inspect.isfunction(init):
            continue
        tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
        found |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                  and n.value.id == "self" and isinstance(n.ctx, ast.Store)}
    return found


@pytest.mark.parametrize("cls", [Engine, RemoteEngine], ids=lambda c: c.__name__)
def test_both_engines_are_what_a_front_end_drives(cls):
    assert METHODS and ATTRIBUTES
    assert set(ATTRIBUTES) <= _attributes_set(cls), set(ATTRIBUTES) - _attributes_set(cls)
    for name in METHODS:
        want = inspect.signature(getattr(EngineFront, name))
        have = inspect.signature(getattr(cls, name))
        args = ["self", *("x" for _ in list(want.parameters)[1:])]
        have.bind(*args)  # the Protocol's call shape is one this engine takes
        assert inspect.iscoroutinefunction(getattr(cls, name)) == inspect.iscoroutinefunction(getattr(EngineFront, name)), name


def test_the_front_ends_name_the_type():
    assert typing.get_type_hints(TrialApp.__init__)["engine"] is EngineFront
    assert typing.get_type_hints(make_app)["engine"] == EngineFront | None
    tree = ast.parse((PACKAGE / "agent" / "session.py").read_text())
    held = [n for n in ast.walk(tree) if isinstance(n, ast.AnnAssign) and ast.unparse(n.target) == "self.engine"]
    assert [ast.unparse(n.annotation) for n in held] == ["EngineFront | None"]


def test_no_front_end_holds_an_engine_as_any():
    found = []
    for part in ("tui", "agent", "demo"):
        for path in sorted((PACKAGE / part).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                name = (node.arg if isinstance(node, ast.arg) else ast.unparse(node.target) if isinstance(node, ast.AnnAssign) else None)
                annotation = getattr(node, "annotation", None)
                if name and "engine" in name and annotation is not None and ast.unparse(annotation) == "Any":
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {name}")
    assert not found, found
