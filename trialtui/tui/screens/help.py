"""`?` / F1: every key by what it does, the glyphs, and where the numbers come from."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

GLYPHS = [
    ("●", "correct: the speedup vs the primary baseline, or 'correct (CPU)' from the interpreter"),
    ("★", "best: the fastest correct GPU trial (never an incorrect or CPU one)"),
    ("▸", "head: the next save of that file grows from this trial"),
    ("✗", "incorrect, error or timeout: the failing check is shown"),
    ("!", "invalid: failed the fast checks, cost no budget"),
    ("◌", "queued for the GPU lane"),
    ("⠋", "benchmarking or profiling"),
    ("…", "validating"),
    ("–", "cancelled, superseded or interrupted"),
]
TREE_KEYS = [
    ("↑ ↓  k j", "move"),
    ("g G  home end", "first, last trial"),
    ("h  shift+←", "to the parent"),
    ("enter", "open the trial's detail (esc returns to the tree)"),
    ("1 2 3 4", "Metrics, Profile, Source, Log"),
]


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss", "Close", id="help.close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body") as body:
            body.border_title = "trialtui help"
            body.border_subtitle = "esc, q or ? closes"
            yield Static(self._content())

    def _listed(self) -> list[Binding]:
        """The app's shown keys (hidden ones, 1–4 and esc, are in TREE_KEYS); a key with two meanings (q:
        Leave or Quit) once, as the footer has it: the first its check_action does not rule out."""
        shown = [b for b in self.app.BINDINGS if isinstance(b, Binding) and b.description and b.id and b.show]
        twice = {b.key for b in shown if sum(other.key == b.key for other in shown) > 1}
        listed: list[Binding] = []
        for binding in shown:
            if binding.key in twice and (binding.key in {b.key for b in listed}
                                         or self.app.check_action(binding.action, ()) is False):
                continue
            listed.append(binding)
        return listed

    def _content(self) -> Table:
        keys = Table(box=None, show_header=False, padding=(0, 2), expand=True)
        keys.add_column(style="bold", no_wrap=True)
        keys.add_column(ratio=1)
        keys.add_row(Text("Keys", style="bold underline"), "")
        for key, what in TREE_KEYS:
            keys.add_row(key, what)
        for binding in self._listed():
            shown = binding.key_display or ", ".join(k.replace("question_mark", "?").replace("slash", "/")
                                                     for k in binding.key.split(","))
            keys.add_row(shown, binding.tooltip or binding.description)
        keys.add_row("ctrl+p", "command palette: go to trial, branch from trial, export, finalize, switch theme")
        keys.add_row("", "")
        keys.add_row(Text("Glyphs", style="bold underline"), "")
        for mark, what in GLYPHS:
            keys.add_row(mark, what)
        keys.add_row("", "")
        keys.add_row(Text("Numbers", style="bold underline"), "")
        keys.add_row("", "Every time and speedup names its GPU, dtype and sizes. On a machine without a GPU the "
                         "candidate runs in Triton's CPU interpreter: correctness only, never a speed. A replayed "
                         "result says where and when it was recorded.")
        keys.add_row("", "Every key has a binding id (b is branch-best, F is finalize…), so a keymap can remap it.")
        return keys
