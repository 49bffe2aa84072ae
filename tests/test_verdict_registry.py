"""The verdict registry is complete: every verdict has a rule, a remedy and documented thresholds,
and every verdict id that the rules emit or that strategies and decide use is registered."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from trialtui.core import decide, strategies
from trialtui.core.model import Severity
from trialtui.core.verdict_registry import (
    ABOUT_THE_PROFILE,
    REMEDIES,
    THRESHOLDS,
    VERDICTS,
    VerdictId,
    kind,
)
from trialtui.core.verdicts import make_verdict

CORE = Path(decide.__file__).parent
IDS = {v.value for v in VerdictId}
# Modules holding verdict rules, and every module that could act on verdict ids (strategies and
# decide among them, wherever decide's parts move).
RULE_MODULES = [CORE / "verdicts.py", *sorted((CORE / "profilers").glob("*.py"))]
USERS = sorted(p for p in CORE.parent.rglob("*.py") if p.name != "verdict_registry.py")
FACT_KEYS = {"spills"}  # also the compile job's key for spilled registers: not a verdict id there


def test_every_id_has_exactly_one_entry():
    assert set(VERDICTS) == set(VerdictId)
    assert all(k.id is key for key, k in VERDICTS.items())


@pytest.mark.parametrize("id", sorted(IDS))
def test_every_verdict_has_a_rule_a_remedy_and_docs(id):
    entry = kind(id)
    assert entry.rule.strip() and entry.docs.strip() and entry.advice.strip()
    assert entry.about in ("kernel", "profile")
    if entry.about == "kernel":  # advice through named strategies decide can offer
        assert entry.remedy.tweaks and entry.remedy.approaches
        for name in entry.remedy.tweaks + entry.remedy.approaches:
            assert name in strategies.BY_NAME, f"{id}: unknown strategy {name!r}"
    else:  # about the profile itself: evidence, never a strategy
        assert entry.remedy.tweaks == entry.remedy.approaches == ()


@pytest.mark.parametrize("id", sorted(IDS - ABOUT_THE_PROFILE))
def test_every_kernel_verdict_has_documented_thresholds(id):
    entry = kind(id)
    assert entry.thresholds, f"{id} names no threshold"
    for name in entry.thresholds:
        threshold = THRESHOLDS[name]
        assert threshold.unit and len(threshold.origin) > 20, f"{name} is undocumented"
        assert threshold.origin.startswith(("NVIDIA", "project choice", "the config's"))


def test_every_threshold_belongs_to_a_verdict():
    used = {name for k in VERDICTS.values() for name in k.thresholds}
    assert set(THRESHOLDS) == used


def test_the_profile_verdicts_are_exactly_those_about_the_profile():
    assert ABOUT_THE_PROFILE == {"counters_unavailable"}
    assert decide._ABOUT_THE_PROFILE == ABOUT_THE_PROFILE
    assert set(REMEDIES) == IDS - ABOUT_THE_PROFILE


def test_an_unregistered_id_cannot_become_a_verdict():
    with pytest.raises(ValueError):
        make_verdict("made_up", Severity.INFO, "t", [], "h", "ncu")
    with pytest.raises(KeyError, match="verdict_registry.py"):
        kind("made_up")


def _tree(path: Path) -> ast.AST:
    return ast.parse(path.read_text(), filename=str(path))


def _emitted(path: Path) -> list[ast.expr]:
    """The id argument of every make_verdict(...) and add(...) call in a rule module."""
    found = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in (
                "make_verdict", "add") and node.args:
            found.append(node.args[0])
    return found


@pytest.mark.parametrize("path", RULE_MODULES, ids=lambda p: p.name)
def test_rules_emit_only_registered_ids_by_name(path):
    for arg in _emitted(path):
        if isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name) and arg.value.id in ("V", "VerdictId"):
            assert arg.attr in VerdictId.__members__, f"{path.name}:{arg.lineno}: VerdictId.{arg.attr}"
        else:  # a name bound to an id inside the rule (e.g. `def add(id, ...)`) is checked by make_verdict
            assert not isinstance(arg, ast.Constant), f"{path.name}:{arg.lineno}: bare id {arg.value!r}"
    assert sum(1 for p in RULE_MODULES for _ in _emitted(p)) >= len(IDS) - 1


def test_strategies_and_decide_are_among_the_modules_checked():
    names = {p.relative_to(CORE.parent).as_posix() for p in USERS}
    assert {"core/strategies.py", "core/verdicts.py"} <= names and any(n.startswith("core/decide") for n in names)


@pytest.mark.parametrize("path", USERS, ids=lambda p: p.relative_to(CORE.parent).as_posix())
def test_verdicts_are_named_only_through_the_registry(path):
    """A verdict id written as a bare string could drift from the registry: ids are VerdictId members,
    and every comparison against a verdict's `id` uses a registered one."""
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            assert node.value not in IDS - FACT_KEYS, f"{path.name}:{node.lineno}: bare verdict id {node.value!r}"
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "VerdictId":
            assert node.attr in VerdictId.__members__, f"{path.name}:{node.lineno}: VerdictId.{node.attr}"
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            reads_id = any(isinstance(s, ast.Call) and getattr(s.func, "attr", "") == "get" and s.args
                           and isinstance(s.args[0], ast.Constant) and s.args[0].value == "id" for s in sides)
            for side in sides:
                if reads_id and isinstance(side, ast.Constant) and isinstance(side.value, str):
                    assert side.value in IDS, f"{path.name}:{node.lineno}: unknown verdict id {side.value!r}"
