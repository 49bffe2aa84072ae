"""The trials tree: one line per trial, drawn like `trials status` so long runs of saves stay flat.

A lone child continues its parent's column and several children hang under their parent as
branches (`core.tree.layout`, as `trials status` draws it), so a story of thirty saves is thirty
lines, not thirty levels, and a line of work started from an older trial sits under that trial.
Rows are rendered on demand (Line API) and cached per trial, so a state change repaints one line,
a new trial re-lays out the order but keeps the cursor on its trial, and 2,000 trials cost what the
visible rows cost.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from trialtui.core import tree
from trialtui.core.executor import model_speedups
from trialtui.core.model import Trial, TrialState
from trialtui.tui import describe
from trialtui.tui.cut import cut, cut_text
from trialtui.tui.palette import Themed

BRANCH, COLUMN, LAST, BLANK = "├╴", "│ ", "└╴", "  "


@dataclass(frozen=True)
class Row:
    trial_id: str
    prefix: str
    show_file: bool


def layout(trials: Iterable[Trial]) -> list[Row]:
    """`core.tree.layout`, with the thinner graph characters the TUI uses."""
    return [Row(r.trial.id, r.prefix, r.show_file) for r in tree.layout(trials, branch=BRANCH, column=COLUMN, last=LAST, blank=BLANK)]


class TrialTree(Themed, ScrollView, can_focus=True):
    """Trials with state glyph, id, ★ best, ▸ head, strategy and outcome; the cursor is a trial id."""

    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False, id="tree.up"),
        Binding("down,j", "cursor(1)", "Down", show=False, id="tree.down"),
        Binding("pageup", "page(-1)", "Page up", show=False, id="tree.page-up"),
        Binding("pagedown", "page(1)", "Page down", show=False, id="tree.page-down"),
        Binding("home,g", "first", "First", show=False, id="tree.first"),
        Binding("end,G", "last", "Last", show=False, id="tree.last"),
        Binding("shift+left,h", "parent", "Parent", show=False, id="tree.parent"),
        Binding("enter", "select", "Open", show=False, id="tree.select"),
    ]
    COMPONENT_CLASSES = {"trial-tree--cursor", "trial-tree--graph"}

    class Highlighted(Message):
        """The cursor is on another trial; `by_user` when a key or click moved it."""

        def __init__(self, trial_id: str, by_user: bool) -> None:
            super().__init__()
            self.trial_id = trial_id
            self.by_user = by_user

        def can_replace(self, message: Message) -> bool:
            """Under key repeat only the trial the cursor lands on is drawn in the detail pane."""
            return isinstance(message, TrialTree.Highlighted) and message.by_user == self.by_user

    class Selected(Message):
        def __init__(self, trial_id: str) -> None:
            super().__init__()
            self.trial_id = trial_id

    def __init__(self, baseline: str = "eager", empty_hint: str = "No trials yet.", **kwargs) -> None:
        super().__init__(**kwargs)
        self.baseline = baseline
        self.empty_hint = empty_hint
        self.trials: dict[str, Trial] = {}
        self.rows: list[Row] = []
        self.index: dict[str, int] = {}
        self.cursor_id: str | None = None
        self.best_id: str | None = None
        self.head_ids: set[str] = set()
        self.frame = 0
        self.progress: dict[str, str] = {}  # running trial id → what its job is doing
        self._lines: dict[str, Strip] = {}

    # Data in

    def load(self, trials: Iterable[Trial], best_id: str | None, heads: dict[str, str]) -> None:
        self.trials = {t.id: t for t in trials}
        self.best_id, self.head_ids = best_id, set(heads.values())
        self._relayout()
        if self.cursor_id is None and self.rows:
            self.move_to(max(self.trials, key=tree.id_number), by_user=False)

    def upsert(self, trial: Trial) -> None:
        """A new trial re-lays out the rows; a known one repaints only its line."""
        known = trial.id in self.trials
        self.trials[trial.id] = trial
        if known:
            self._dirty(trial.id)
        else:
            self._relayout()

    def set_marks(self, best_id: str | None, heads: dict[str, str]) -> None:
        head_ids = set(heads.values())
        changed = {self.best_id, best_id} | (self.head_ids ^ head_ids)
        self.best_id, self.head_ids = best_id, head_ids
        for trial_id in changed - {None}:
            self._dirty(trial_id)

    def set_progress(self, trial_id: str, text: str | None) -> None:
        if text is None:
            self.progress.pop(trial_id, None)
        else:
            self.progress[trial_id] = text
        self._dirty(trial_id)

    def tick(self, frame: int, running: Iterable[str]) -> None:
        """Advance the spinner of the running trials."""
        if frame == self.frame:
            return
        self.frame = frame
        for trial_id in running:
            self._dirty(trial_id)

    def _relayout(self) -> None:
        top = self.scroll_y
        anchor = self.index.get(self.cursor_id) if self.cursor_id else None
        self.rows = layout(self.trials.values())
        self.index = {row.trial_id: i for i, row in enumerate(self.rows)}
        self._lines.clear()
        self.virtual_size = Size(0, len(self.rows))
        if anchor is not None and self.cursor_id in self.index:
            # keep the cursor's trial where it was on screen when rows move around it
            shift = self.index[self.cursor_id] - anchor
            self.scroll_to(y=max(0, top + shift), animate=False, immediate=True)
        self.refresh()

    def _dirty(self, trial_id: str) -> None:
        self._lines.pop(trial_id, None)
        row = self.index.get(trial_id)
        if row is not None:
            y = row - int(self.scroll_y)
            if 0 <= y < self.size.height:
                self.refresh(Region(0, y, self.size.width, 1))

    # Cursor

    @property
    def cursor_row(self) -> int | None:
        return self.index.get(self.cursor_id) if self.cursor_id else None

    def move_to(self, trial_id: str, *, by_user: bool) -> None:
        if trial_id not in self.index:
            return
        old = self.cursor_id
        self.cursor_id = trial_id
        self._scroll_to_cursor()
        if old != trial_id or by_user:
            # Straight to the app, and the cursor repainted after it is handled: the tree and the
            # detail pane then change in one frame instead of two a frame interval apart.
            self.app.post_message(self.Highlighted(trial_id, by_user))
        self.app.call_later(self._repaint_cursor, old, trial_id)

    def _repaint_cursor(self, old: str | None, new: str) -> None:
        if old is not None:
            self._dirty(old)
        self._dirty(new)

    def _scroll_to_cursor(self) -> None:
        row = self.cursor_row
        if row is None:
            return
        height = max(1, self.scrollable_content_region.height)
        top = int(self.scroll_y)
        if row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= top + height:
            self.scroll_to(y=row - height + 1, animate=False, immediate=True)

    def _move_by(self, delta: int) -> None:
        if not self.rows:
            return
        row = self.cursor_row
        target = 0 if row is None else min(max(row + delta, 0), len(self.rows) - 1)
        self.move_to(self.rows[target].trial_id, by_user=True)

    def action_cursor(self, delta: int) -> None:
        self._move_by(delta)

    def action_page(self, direction: int) -> None:
        self._move_by(direction * max(1, self.scrollable_content_region.height - 1))

    def action_first(self) -> None:
        self._move_by(-len(self.rows))

    def action_last(self) -> None:
        self._move_by(len(self.rows))

    def action_parent(self) -> None:
        trial = self.trials.get(self.cursor_id or "")
        if trial and trial.parent in self.index:
            self.move_to(trial.parent, by_user=True)

    def action_select(self) -> None:
        if self.cursor_id:
            self.post_message(self.Selected(self.cursor_id))

    def on_click(self, event: events.Click) -> None:
        row = event.y + int(self.scroll_y)
        if 0 <= row < len(self.rows):
            self.move_to(self.rows[row].trial_id, by_user=True)
            if event.chain == 2:
                self.action_select()

    # Rendering

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._restyle())

    def _restyle(self) -> None:
        self._lines.clear()
        self.refresh()

    def on_resize(self, event: events.Resize) -> None:
        self._lines.clear()
        self.virtual_size = Size(0, len(self.rows))

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._lines.clear()


    def render_line(self, y: int) -> Strip:
        row_index = int(self.scroll_y) + y
        width = self.scrollable_content_region.width
        if not self.rows and y == 1:
            hint = Text(f" {self.empty_hint}", self.color("trial-muted"))
            cut_text(hint, width)
            return Strip([s for s in hint.render(self.app.console) if s.text != "\n"]).adjust_cell_length(
                width).apply_style(self.rich_style)
        if row_index >= len(self.rows):
            return Strip.blank(width, self.rich_style)
        row = self.rows[row_index]
        cursor = row.trial_id == self.cursor_id
        key = row.trial_id
        strip = self._lines.get(key)
        if strip is None or strip.cell_length != width:
            strip = self._render_row(row, width)
            self._lines[key] = strip
        style = self.rich_style
        if cursor:
            style = style + self.get_component_rich_style("trial-tree--cursor")
        return strip.apply_style(style)

    def row_text(self, row: Row, width: int) -> Text:
        trial = self.trials[row.trial_id]
        state = trial.state_enum
        mark, var = describe.glyph(state, self.frame)
        best = trial.id == self.best_id
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(row.prefix, self.get_component_rich_style("trial-tree--graph", partial=True))
        text.append("★" if best else mark, self.color("trial-best" if best else var) + Style(bold=best))
        text.append(f" {trial.id}", Style(bold=True) + (self.color("trial-best") if best else Style()))
        if trial.id in self.head_ids:
            text.append(" ▸", self.color("accent"))
        dim = state in (TrialState.CANCELLED, TrialState.SUPERSEDED, TrialState.INTERRUPTED)
        outcome, out_var = describe.outcome(trial, self.baseline)
        if state in describe.RUNNING and self.progress.get(trial.id):
            outcome = self.progress[trial.id]
        if state is TrialState.CORRECT and model_speedups(trial.result, self.baseline):
            outcome = model_speedups(trial.result, self.baseline)  # measured on every GPU model at once
        if trial.stale and state is TrialState.CORRECT:
            outcome += " (stale)"
        if tree.disqualified(trial):  # never best: the detail pane says why
            outcome, out_var = f"⚑ flagged {outcome}", "trial-failure"
        name, outcome = self._fit(row, trial, outcome, width - text.cell_len - 3)
        room = width - text.cell_len - len(outcome) - 3
        if name and room > 3:
            text.append(f" {cut(name, room)}", self.color("trial-muted") if dim else Style())
        pad = max(1, width - text.cell_len - len(outcome) - 1)
        text.append(" " * pad)
        text.append(outcome, self.color("trial-best") + Style(bold=True) if best else self.color(out_var))
        return cut_text(text, width)

    @staticmethod
    def _fit(row: Row, trial: Trial, outcome: str, room: int) -> tuple[str, str]:
        """The name and outcome a row has room for, giving up the least telling part first: the file
        name beside a strategy, then the failure's details ("wrong", not its error), then the
        strategy's tail."""
        strategy = tree.label(trial)
        name = strategy or (trial.file if row.show_file else "")
        brief = describe.brief(trial) or outcome
        choices = [(name, outcome), (name, brief)]
        if row.show_file and strategy:
            choices.insert(0, (f"{trial.file}  {strategy}", outcome))
        return next(((n, o) for n, o in choices if len(n) + len(o) <= room), (name, brief))

    def _render_row(self, row: Row, width: int) -> Strip:
        text = self.row_text(row, width)
        segments = [seg for seg in text.render(self.app.console) if seg.text != "\n"]
        return Strip(segments).adjust_cell_length(width)

    def plain_lines(self) -> list[str]:
        """The rows as plain text, for tests and the find screen."""
        width = max(40, self.scrollable_content_region.width)
        return [self.row_text(row, width).plain.rstrip() for row in self.rows]

