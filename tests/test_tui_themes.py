"""The themes: the TOML files under themes/ are the ones shipped, and every one carries the app's variables."""

from __future__ import annotations

import pytest

from trialtui.tui.themes import BUILTIN, REPO_THEMES, VARIABLE_DEFAULTS, load_themes, read_theme_file

THEME_FILES = sorted(REPO_THEMES.glob("*.toml"))


def test_three_themes_ship_dark_light_and_high_contrast():
    names = {path.stem for path in THEME_FILES}
    assert {"trialtui", "trialtui-light", "trialtui-contrast"} <= names
    assert {read_theme_file(p)["name"]: read_theme_file(p)["dark"] for p in THEME_FILES}["trialtui-light"] is False


@pytest.mark.parametrize("path", THEME_FILES, ids=[p.stem for p in THEME_FILES])
def test_builtin_copy_matches_the_theme_file(path):
    """A wheel has no themes/ directory: the package's copies must say exactly what the files say."""
    data = read_theme_file(path)
    assert BUILTIN[data["name"]] == data


@pytest.mark.parametrize("path", THEME_FILES, ids=[p.stem for p in THEME_FILES])
def test_every_theme_sets_every_app_variable(path):
    assert set(read_theme_file(path)["variables"]) == set(VARIABLE_DEFAULTS)


def test_without_theme_files_the_builtins_load(tmp_path):
    themes, problems = load_themes([tmp_path / "missing"])
    assert [t.name for t in themes] == list(BUILTIN) and problems == []


def test_a_user_theme_file_is_added_and_a_broken_one_is_reported(tmp_path):
    (tmp_path / "mine.toml").write_text('name = "mine"\nprimary = "#ff00ff"\n')
    (tmp_path / "broken.toml").write_text('name = "broken"\nprimary = \n')
    (tmp_path / "odd.toml").write_text('name = "odd"\nprimary = "#000000"\ncolour = "red"\n')
    themes, problems = load_themes([tmp_path])
    mine = {t.name: t for t in themes}["mine"]
    assert mine.variables["trial-best"] == VARIABLE_DEFAULTS["trial-best"]  # defaults fill what it omits
    assert any("broken.toml" in p for p in problems) and any("odd.toml" in p for p in problems)
