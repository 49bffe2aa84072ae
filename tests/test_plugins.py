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
