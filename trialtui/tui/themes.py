"""trialtui's Textual themes: `themes/*.toml` at the repository root, user themes, built-in copies.

The TOML files beside the code are the ones to edit. A wheel carries no repository root, so the
same three themes are also kept here as data (`BUILTIN`); a test proves the two never drift.
Users add their own themes as TOML files in `$XDG_CONFIG_HOME/trialtui/themes/`; a file there
with a built-in name replaces it.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from textual.theme import Theme

DEFAULT_THEME = "trialtui"
REPO_THEMES = Path(__file__).resolve().parents[2] / "themes"

# The app's own theme variables: every theme sets them; these defaults serve Textual's themes.
VARIABLE_DEFAULTS = {
    "trial-best": "#ffd75f",
    "trial-failure": "#f7768e",
    "trial-running": "#7dcfff",
    "trial-invalid": "#ff9e64",
    "trial-muted": "#6c7086",
}

BUILTIN: dict[str, dict[str, Any]] = {
    "trialtui": {
        "name": "trialtui",
        "dark": True,
        "primary": "#7aa2f7",
        "secondary": "#bb9af7",
        "accent": "#7dcfff",
        "warning": "#e0af68",
        "error": "#f7768e",
        "success": "#9ece6a",
        "foreground": "#c0caf5",
        "background": "#13161f",
        "surface": "#1a1e2a",
        "panel": "#222738",
        "variables": {
            "trial-best": "#ffd75f",
            "trial-failure": "#f7768e",
            "trial-running": "#7dcfff",
            "trial-invalid": "#ff9e64",
            "trial-muted": "#565f89",
        },
    },
    "trialtui-light": {
        "name": "trialtui-light",
        "dark": False,
        "primary": "#0969da",
        "secondary": "#8250df",
        "accent": "#0550ae",
        "warning": "#9a6700",
        "error": "#cf222e",
        "success": "#1a7f37",
        "foreground": "#1f2328",
        "background": "#f6f8fa",
        "surface": "#ffffff",
        "panel": "#e7ecf2",
        "variables": {
            "trial-best": "#b35900",
            "trial-failure": "#cf222e",
            "trial-running": "#0550ae",
            "trial-invalid": "#bc4c00",
            "trial-muted": "#8c959f",
        },
    },
    "trialtui-contrast": {
        "name": "trialtui-contrast",
        "dark": True,
        "primary": "#00d7ff",
        "secondary": "#ff87ff",
        "accent": "#00ffff",
        "warning": "#ffff00",
        "error": "#ff3030",
        "success": "#00ff5f",
        "foreground": "#ffffff",
        "background": "#000000",
        "surface": "#000000",
        "panel": "#262626",
        "luminosity_spread": 0.25,
        "variables": {
            "trial-best": "#ffff00",
            "trial-failure": "#ff3030",
            "trial-running": "#00ffff",
            "trial-invalid": "#ff8700",
            "trial-muted": "#b2b2b2",
        },
    },
}


class ThemeFileError(ValueError):
    """A theme file that Textual cannot use; the message names the file."""


def user_theme_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "trialtui" / "themes"


def theme_from_data(data: dict[str, Any]) -> Theme:
    fields = set(Theme.__dataclass_fields__)
    unknown = set(data) - fields
    if unknown or "name" not in data or "primary" not in data:
        raise ValueError(f"needs name and primary; unknown keys: {', '.join(sorted(unknown)) or 'none'}")
    return Theme(**{**data, "variables": {**VARIABLE_DEFAULTS, **data.get("variables", {})}})


def read_theme_file(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ThemeFileError(f"{path}: {exc}") from exc


def load_themes(dirs: list[Path] | None = None) -> tuple[list[Theme], list[str]]:
    """The themes to register, built-ins first, and one message per theme file that was skipped.

    Later directories override earlier ones by name: repository files replace the built-in copies
    (the same themes while they agree), user files replace both.
    """
    found: dict[str, dict[str, Any]] = {name: data for name, data in BUILTIN.items()}
    problems: list[str] = []
    for directory in dirs if dirs is not None else [REPO_THEMES, user_theme_dir()]:
        for path in sorted(directory.glob("*.toml")) if directory.is_dir() else []:
            try:
                data = read_theme_file(path)
                theme_from_data(data)
            except (ThemeFileError, ValueError, TypeError) as exc:
                problems.append(f"theme {path.name} skipped: {exc}")
                continue
            found[data["name"]] = data
    return [theme_from_data(data) for data in found.values()], problems
