"""Text cut to fit ends in "…", so a reader knows there was more: every cut in the TUI goes through here."""

from __future__ import annotations

from rich.text import Text


def cut_text(text: Text, width: int) -> Text:
    """`text` in at most `width` cells, in place (its styles kept); when it had to be cut, its last cell is "…"."""
    if width > 0:
        text.truncate(width, overflow="ellipsis")
    else:
        text.plain = ""
    return text


def cut(text: str, width: int) -> str:
    """The same for plain text."""
    return cut_text(Text(text), width).plain
