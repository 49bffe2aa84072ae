"""The footer, narrowed with care: below 110 columns the keys that `?` lists anyway leave it, so
`? Help` and `q Quit` are never the ones cut off at the right edge of an 80-column terminal."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

WIDE = 110  # the app's wide breakpoint
NARROW_HIDDEN = frozenset({"diff", "summary_raw", "follow", "find", "pause"})


class KeyFooter(Footer):
    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.narrow = False

    def set_narrow(self, narrow: bool) -> None:
        """Called on resize; rebuilds only when the width crosses the breakpoint."""
        if narrow != self.narrow:
            self.narrow = narrow
            self.call_later(self.recompose)

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            if self.narrow and isinstance(widget, FooterKey) and widget.action in NARROW_HIDDEN:
                continue
            yield widget
