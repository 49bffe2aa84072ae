"""trialtui's Textual themes: the TOML files in the repository's top-level `themes/`, then the user's own.

Those files are the only definition of the shipped themes; a wheel carries them as package data in
`trialtui/themes/` (setup.py copies them in). Users add their own themes as TOML files in
`$XDG_CONFIG_HOME/trialtui/themes/`; a file there with a shipped name replaces it.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from textual.theme import Theme

DEFAULT_THEME = "trialtui"
_PACKAGE = Path(__file__).resolve().parents[1]
# an installed wheel's package data, else (a checkout, an editable install) the top-level themes/
SHIPPED_THEMES = _PACKAGE / "themes" if (_PACKAGE / "themes").is_dir() else _PACKAGE.parent / "themes"

# The app's own theme variables: every shipped theme sets them; these defaults serve Textual's own
# themes and user themes that leave some out.
VARIABLE_DEFAULTS = {
    "trial-best": "#ffd75f",
    "trial-failure": "#f7768e",
    "trial-running": "#7dcfff",
    "trial-invalid": "#ff9e64",
    "trial-muted": "#6c7086",
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
    """The themes to register, shipped ones first, and one message per theme file that was skipped.

    `dirs` (default: the user's theme directory) are read after the shipped files; later files
    replace earlier ones by name.
    """
    found: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    for directory in [SHIPPED_THEMES, *(dirs if dirs is not None else [user_theme_dir()])]:
        for path in sorted(directory.glob("*.toml")) if directory.is_dir() else []:
            try:
                data = read_theme_file(path)
                theme_from_data(data)
            except (ThemeFileError, ValueError, TypeError) as exc:
                problems.append(f"theme {path.name} skipped: {exc}")
                continue
            found[data["name"]] = data
    return [theme_from_data(data) for data in found.values()], problems
