"""Theme colours for Rich text: widgets that draw their own text colour it with the theme's
variables (`success`, `trial-best`, `trial-failure`…), so every theme, and a theme switch, applies."""

from __future__ import annotations

from typing import Any

from rich.style import Style
from textual.color import Color


class Themed:
    """Mixin for widgets: `self.color("trial-best", bold=True)` is a Rich Style in the current theme."""

    _styles: dict[tuple, Style]

    def color(self, var: str, **extra: Any) -> Style:
        app = self.app  # type: ignore[attr-defined]
        key = (app.theme, var, tuple(sorted(extra.items())))
        cache = self.__dict__.setdefault("_styles", {})
        style = cache.get(key)
        if style is None:
            variables = app.theme_variables
            value = variables.get(var) or variables.get("foreground", "white")
            style = cache[key] = Style(color=Color.parse(value).rich_color, **extra)
        return style
