"""The themes: the TOML files in the top-level themes/ are the only definition of the shipped themes,
every one carries the app's variables, and the wheel ships them all."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import trialtui.tui.themes as themes_module
from trialtui.tui.themes import SHIPPED_THEMES, VARIABLE_DEFAULTS, load_themes, read_theme_file

ROOT = Path(__file__).parents[1]
THEME_FILES = sorted((ROOT / "themes").glob("*.toml"))


def test_three_themes_ship_dark_light_and_high_contrast():
    names = {path.stem for path in THEME_FILES}
    assert {"trialtui", "trialtui-light", "trialtui-contrast"} <= names
    assert {read_theme_file(p)["name"]: read_theme_file(p)["dark"] for p in THEME_FILES}["trialtui-light"] is False


def test_the_theme_files_are_the_only_definition():
    """No copy of a theme in the code: nothing in the module spells a theme's colours."""
    source = Path(themes_module.__file__).read_text()
    for path in THEME_FILES:
        data = read_theme_file(path)
        assert data["primary"] not in source and data["background"] not in source, path.name


@pytest.mark.parametrize("path", THEME_FILES, ids=[p.stem for p in THEME_FILES])
def test_every_theme_sets_every_app_variable(path):
    assert set(read_theme_file(path)["variables"]) == set(VARIABLE_DEFAULTS)


def test_a_checkout_loads_the_themes_from_the_top_level_folder():
    assert SHIPPED_THEMES == ROOT / "themes" and not (ROOT / "trialtui" / "themes").exists()


def built_wheel(tmp_path: Path) -> tuple[Path, str]:
    """The wheel built from a copy of what it is made of, without build isolation (no index needed), and
    what the build backend said."""
    pytest.importorskip("setuptools", minversion="77")  # pyproject.toml's build requirement (an SPDX license)
    source = tmp_path / "src"
    shutil.copytree(ROOT / "trialtui", source / "trialtui", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "themes", source / "themes")
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md"):
        shutil.copy(ROOT / name, source / name)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation",
                            str(source), "-w", str(tmp_path / "wheel")],
                           check=True, capture_output=True, text=True, timeout=120)
    (wheel,) = (tmp_path / "wheel").glob("trialtui-*.whl")
    return wheel, built.stdout + built.stderr


def test_the_wheel_ships_every_theme_file(tmp_path):
    wheel, _ = built_wheel(tmp_path)
    shipped = {Path(name).name for name in zipfile.ZipFile(wheel).namelist() if name.startswith("trialtui/themes/")}
    assert shipped == {path.name for path in THEME_FILES}


def test_the_build_says_nothing_is_deprecated(tmp_path):
    """`pip install -e .` warned that the TOML-table form of `project.license` is deprecated."""
    _, said = built_wheel(tmp_path)
    assert "DeprecationWarning" not in said


def test_without_user_theme_files_the_shipped_ones_load(tmp_path):
    themes, problems = load_themes([tmp_path / "missing"])
    assert [t.name for t in themes] == [read_theme_file(p)["name"] for p in THEME_FILES] and problems == []


def test_a_user_theme_file_is_added_and_a_broken_one_is_reported(tmp_path):
    (tmp_path / "mine.toml").write_text('name = "mine"\nprimary = "#ff00ff"\n')
    (tmp_path / "broken.toml").write_text('name = "broken"\nprimary = \n')
    (tmp_path / "odd.toml").write_text('name = "odd"\nprimary = "#000000"\ncolour = "red"\n')
    themes, problems = load_themes([tmp_path])
    mine = {t.name: t for t in themes}["mine"]
    assert mine.variables["trial-best"] == VARIABLE_DEFAULTS["trial-best"]  # defaults fill what it omits
    assert any("broken.toml" in p for p in problems) and any("odd.toml" in p for p in problems)
