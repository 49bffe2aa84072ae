"""`/`: type a trial id, a strategy word or a state; the cursor jumps to the first match as you type."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static


class FindScreen(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="find.cancel")]

    def compose(self) -> ComposeResult:
        with Vertical(id="find-box"):
            yield Input(placeholder="t12, a strategy word, or a state (incorrect, queued…)", id="find-input")
            yield Static("", id="find-hint")

    def on_input_changed(self, event: Input.Changed) -> None:
        hint = self.app.find_trial(event.value)  # type: ignore[attr-defined]
        self.query_one("#find-hint", Static).update(hint)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
