"""The plug-in registry: built-ins by `register`, third parties by entry points, broken ones reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from trialtui.core import plugins

PLUGIN_DIR = Path(__file__).parent / "plugins"


@pytest.fixture
def third_party(monkeypatch):
    """Put the test plug-in's dist-info on sys.path, as `pip install` would, and reread entry points."""
    monkeypatch.syspath_prepend(str(PLUGIN_DIR))
    plugins.reload_entry_points()
    yield
    plugins.reload_entry_points()


def test_unknown_group_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown plug-in group"):
        plugins.registry("trialtui.nope")
    with pytest.raises(ValueError, match="unknown plug-in group"):
        plugins.register("trialtui.nope", "x", object())


def test_entry_point_plugins_of_every_group_are_found(third_party):
    from trialtui_testplugin.form import FORM
    from trialtui_testplugin.language import LANGUAGE
    from trialtui_testplugin.profiler import PROFILER

    assert plugins.registry("trialtui.forms")["scalarfn"] is FORM
    assert plugins.registry("trialtui.languages")["testlang"] is LANGUAGE
    assert plugins.registry("trialtui.profilers")["testprof"] is PROFILER


def test_broken_plugin_is_reported_not_fatal(third_party):
    profilers = plugins.registry("trialtui.profilers")
    assert "broken" not in profilers and "testprof" in profilers
    (msg,) = plugins.errors("trialtui.profilers")
    assert "broken" in msg and "ModuleNotFoundError" in msg
    assert plugins.errors() == [f"trialtui.profilers: {msg}"]


def test_builtin_wins_over_a_plugin_of_the_same_name(third_party, monkeypatch):
    builtin = object()
    monkeypatch.setitem(plugins._builtin["trialtui.languages"], "testlang", builtin)
    assert plugins.registry("trialtui.languages")["testlang"] is builtin
    assert any("shadows a built-in" in m for m in plugins.errors("trialtui.languages"))


def test_without_the_plugin_on_the_path_it_is_absent():
    plugins.reload_entry_points()
    assert "scalarfn" not in plugins.registry("trialtui.forms")


# --- a third-party problem form, end to end ------------------------------------------------------

SCALAR_REFERENCE = '''
import torch

SIZES = [5, 33]


def make_input(n, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, generator=g)


def reference(x):
    return x * 2 + 1
'''
SCALAR_GOOD = "def solution(x):\n    return x + x + 1\n"
SCALAR_WRONG = "def solution(x):\n    return x * 2\n"


def scalar_problem(root: Path, candidate: str) -> Path:
    root.mkdir()
    (root / "reference.py").write_text(SCALAR_REFERENCE)
    (root / "cand.py").write_text(candidate)
    (root / "trialtui.toml").write_text("seeds = 2\nbench_timeout_s = 90\n")  # a bound on hangs, not speed
    return root


def test_a_plugin_form_is_detected_loaded_and_checked(third_party, tmp_path):
    from trialtui.core.problem_dir import load_problem
    from trialtui.core.static_checks import check_source

    problem = load_problem(scalar_problem(tmp_path / "p", "x = 1\n"))
    assert problem.form == "scalarfn" and problem.entry_point == "solution"
    assert problem.test_cases == [{"n": 5}, {"n": 33}] and problem.bench_cases == [{"n": 33}]
    (finding,) = [f for f in check_source("x = 1\n", form="scalarfn") if f.code == "no-entry-point"]
    assert "ScalarFn harness" in finding.message and "def solution(x)" in finding.hint


def test_without_the_plugin_its_problem_is_not_a_problem(tmp_path):
    from trialtui.core.problem import ProblemError
    from trialtui.core.problem_dir import load_problem

    plugins.reload_entry_points()
    with pytest.raises(ProblemError, match="missing"):
        load_problem(scalar_problem(tmp_path / "p", SCALAR_GOOD))


def test_a_plugin_that_is_not_a_problem_form_is_reported(third_party, monkeypatch):
    from trialtui.core.forms import all_forms

    monkeypatch.setitem(plugins._external, "trialtui.forms", {"odd": object()})
    assert "odd" not in all_forms() and "kernelbench" in all_forms()
    assert any("'odd' is a" in m and "not a ProblemForm" in m for m in plugins.errors("trialtui.forms"))


@pytest.mark.slow
def test_a_plugin_form_is_benched_in_child_processes(third_party, tmp_path, monkeypatch):
    """The engine's jobs import the plug-in's runner half in their own processes."""
    import os

    from trialtui.core.problem_dir import load_problem
    from trialtui.engine.bench import bench_file

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(PLUGIN_DIR), os.environ.get("PYTHONPATH", "")]))
    good = load_problem(scalar_problem(tmp_path / "good", SCALAR_GOOD))
    result = bench_file(good, good.root / "cand.py", device="cpu").to_json()
    assert result["state"] == "correct", result["message"]
    assert result["correctness"]["cases"] == 2 and result["correctness"]["seeds"] == 2
    wrong = load_problem(scalar_problem(tmp_path / "wrong", SCALAR_WRONG))
    result = bench_file(wrong, wrong.root / "cand.py", device="cpu").to_json()
    assert result["state"] == "incorrect" and "case 1" in result["message"]
