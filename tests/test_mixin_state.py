"""A mixin names the state it shares with the class it is mixed into (issue 35: `TrialApp(KeyActions,
AppMessages, App)` and `Engine(TrialJobs)` shared theirs through `self` across files, unnamed): every name a
mixin's methods use through `self` is its own, its framework's, or declared (tui/app_state.AppState, the
annotations at the top of engine/trial_jobs.TrialJobs), and the host provides every declared name."""

from __future__ import annotations

import ast
import importlib
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MIXINS = [  # (mixin's file, mixin, where its declarations are, host, the host's framework base or None)
    ("trialtui/tui/app_actions.py", "KeyActions", "trialtui.tui.app_state:AppState", "trialtui.tui.app:TrialApp", "textual.app:App"),
    ("trialtui/tui/app_messages.py", "AppMessages", "trialtui.tui.app_state:AppState", "trialtui.tui.app:TrialApp", "textual.app:App"),
    ("trialtui/engine/trial_jobs.py", "TrialJobs", "trialtui.engine.trial_jobs:TrialJobs", "trialtui.engine.loop:Engine", None),
]


def load(name: str):
    module, _, attr = name.partition(":")
    return getattr(importlib.import_module(module), attr)


def class_node(source: str, name: str) -> ast.ClassDef:
    return next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef) and n.name == name)


def undeclared(source: str, name: str, declared: set[str], framework: type | None) -> set[str]:
    """Names class `name` of `source` uses through `self` that are neither its methods, nor declared, nor its
    framework's."""
    node = class_node(source, name)
    own = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    used = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id == "self"}
    return {u for u in used - own - declared if framework is None or not hasattr(framework, u)}


def assigned(source: str, name: str) -> set[str]:
    """Names class `name` of `source` sets through `self` in its methods."""
    targets = [t for n in ast.walk(class_node(source, name)) if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign))
               for t in (n.targets if isinstance(n, ast.Assign) else [n.target])]
    targets += [e for t in targets if isinstance(t, ast.Tuple) for e in t.elts]  # a, b = ...
    return {t.attr for t in targets if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}


@pytest.mark.parametrize("path, mixin, state, host, framework", MIXINS)
def test_a_mixin_uses_through_self_only_its_own_its_frameworks_and_declared_names(path, mixin, state, host, framework):
    module = path.removesuffix(".py").replace("/", ".")
    assert issubclass(load(f"{module}:{mixin}"), load(state)), f"{mixin} does not derive from {state}, which names its state"
    declared = set(load(state).__annotations__)
    missing = undeclared((ROOT / path).read_text(), mixin, declared, load(framework) if framework else None)
    assert not missing, f"{mixin} uses {sorted(missing)} through self without declaring them in {state}"


@pytest.mark.parametrize("path, mixin, state, host, framework", MIXINS)
def test_the_host_provides_every_declared_name(path, mixin, state, host, framework):
    host_cls = load(host)
    source = Path(importlib.import_module(host_cls.__module__).__file__).read_text()
    provided = assigned(source, host_cls.__name__) | {n for n in load(state).__annotations__ if hasattr(host_cls, n)}
    missing = set(load(state).__annotations__) - provided
    assert not missing, f"{host} never sets {sorted(missing)}, which {state} declares"


def test_an_undeclared_name_is_found():
    source = textwrap.dedent('''
        class Mixin:
            def act(self):
                return self.engine.go(self.secret, self.notify)
    ''')
    assert undeclared(source, "Mixin", {"engine"}, None) == {"secret", "notify"}
    assert undeclared(source, "Mixin", {"engine", "secret"}, type("App", (), {"notify": None})) == set()
