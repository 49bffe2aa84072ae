"""The selected trial in four tabs that stay chosen as the cursor moves: Metrics, Profile, Source, Log.

Only the visible tab is rendered; the others catch up when they are shown. Each number names the
GPU, dtype and sizes it was measured with, and where it came from when not measured here (the
recording, each import); a CPU run shows correctness and no speed.
"""

from __future__ import annotations

import difflib
from dataclasses import replace
from pathlib import Path

from rich import box
from rich.console import Group, RenderableType
from rich.style import Style
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static, TabbedContent, TabPane

from trialtui.core import kernel_split, tree
from trialtui.core.config import Config
from trialtui.core.model import Trial, TrialState
from trialtui.core.phases import breakdown_lines
from trialtui.core.profile_result import ProfileResult
from trialtui.core.profilers import get_profiler, source_of
from trialtui.core.store import Store
from trialtui.core.text import fmt_us
from trialtui.core.untrusted_text import printable
from trialtui.tui import describe
from trialtui.tui.palette import Themed
from trialtui.tui.widgets.metrics_grid import MetricsGrid
from trialtui.tui.widgets.plots import RooflinePlot, TimingSpread

TABS = ("metrics", "profile", "source", "log")
LOG_TAIL_BYTES = 64 * 1024
_SEVERITY = {"error": ("✗", "trial-failure"), "warning": ("▲", "warning"), "info": ("●", "accent")}


class TrialDetail(Themed, Vertical):
    """Header line plus tabs for one trial; `show` swaps the trial, `refresh_trial` repaints it."""

    def __init__(self, store: Store, config: Config, **kwargs) -> None:
        super().__init__(**kwargs)
        self.store = store
        self.config = config
        self.trial: Trial | None = None
        self.parent_trial: Trial | None = None
        self.best_id: str | None = None
        self.head_ids: set[str] = set()
        self.diff = False
        self.raw = False
        self._fresh: set[str] = set()

    def compose(self) -> ComposeResult:
        yield Static(id="detail-header")
        with TabbedContent(id="tabs", initial="metrics"):
            with TabPane("Metrics", id="metrics"):
                with VerticalScroll(id="metrics-scroll"):
                    yield Static(id="metrics-text")
                    yield TimingSpread(id="timing-plot")
                    yield RooflinePlot(id="roofline-plot")
            with TabPane("Profile", id="profile"):
                with VerticalScroll(id="profile-scroll"):
                    yield Static(id="profile-text")
            with TabPane("Source", id="source"):
                with VerticalScroll(id="source-scroll"):
                    yield Static(id="source-text")
            with TabPane("Log", id="log"):
                with VerticalScroll(id="log-scroll"):
                    yield Static(id="log-text")

    # Driving it

    @property
    def active(self) -> str:
        return self.query_one(TabbedContent).active

    def show(self, trial: Trial | None, parent: Trial | None) -> None:
        changed = self.trial is None or trial is None or trial.id != self.trial.id
        self.trial, self.parent_trial = trial, parent
        self._fresh.clear()
        self._render_header()
        self._render_tab(self.active)
        if changed:
            for scroll in self.query(VerticalScroll):
                scroll.scroll_home(animate=False, immediate=True)

    def refresh_trial(self, trial: Trial, parent: Trial | None = None) -> None:
        """The same trial, newer data (a state change, a result): repaint without moving anything."""
        if self.trial is not None and trial.id == self.trial.id:
            self.trial = trial
            self.parent_trial = parent if parent is not None else self.parent_trial
            self._fresh.clear()
            self._render_header()
            self._render_tab(self.active)

    def set_marks(self, best_id: str | None, head_ids: set[str]) -> None:
        if (best_id, head_ids) != (self.best_id, self.head_ids):
            self.best_id, self.head_ids = best_id, head_ids
            self._render_header()

    def activate(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        self._render_tab(tab)

    def toggle_diff(self) -> None:
        self.diff = not self.diff if self.active == "source" else True
        self._fresh.discard("source")
        self.activate("source")

    def toggle_raw(self) -> None:
        self.raw = not self.raw if self.active == "profile" else self.raw
        self._fresh.discard("profile")
        self.activate("profile")

    def reload_log(self) -> None:
        if self.active == "log":
            self._fresh.discard("log")
            self._render_tab("log")

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        event.stop()
        self._render_tab(event.pane.id or "metrics")

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._restyle())

    def _restyle(self) -> None:
        self._fresh.clear()
        self._render_header()
        self._render_tab(self.active)

    # Rendering


    @property
    def baseline(self) -> str:
        return self.config.primary_baseline

    def _render_header(self) -> None:
        header = self.query_one("#detail-header", Static)
        trial = self.trial
        if trial is None:
            header.update(Text("No trial yet: save a candidate file and it appears here.", self.color("trial-muted")),
                          layout=False)
            return
        mark, var = describe.glyph(trial.state_enum)
        best = trial.id == self.best_id
        top = Text(no_wrap=True, overflow="ellipsis")
        top.append(f"{'★' if best else mark} ", self.color("trial-best" if best else var, bold=True))
        top.append(trial.id, Style(bold=True))
        if best:
            top.append(" best", self.color("trial-best", bold=True))
        if trial.id in self.head_ids:
            top.append(" ▸ head", self.color("accent"))
        top.append(f"  {tree.label(trial) or '(no strategy comment)'}", Style(bold=True))
        line = Text(no_wrap=True, overflow="ellipsis")
        state = trial.state_enum
        if state is TrialState.CORRECT:
            line.append(describe.speed_text(trial, self.baseline), self.color("success"))
        elif state.is_failure:
            line.append(f"{state.value}: {describe.failing_check(trial)}",
                        self.color("trial-invalid" if state is TrialState.INVALID else "trial-failure"))
        else:
            line.append(state.value, self.color(var))
        grown = f" from {trial.parent}" if trial.parent else ", a new root"
        line.append(f" · {trial.file}{grown} · saved {describe.saved_at(trial)}", self.color("trial-muted"))
        header.update(Text("\n").join([top, line]), layout=False)  # fixed height: no layout pass

    def _render_tab(self, tab: str) -> None:
        if tab in self._fresh or not self.is_mounted:
            return
        self._fresh.add(tab)
        trial = self.trial
        if tab == "metrics":
            self.query_one("#metrics-text", Static).update(self.metrics(trial) if trial else "")
            timed = trial is not None and trial.state_enum is TrialState.CORRECT and not describe.cpu_run(trial)
            timing, roof = self.query_one(TimingSpread), self.query_one(RooflinePlot)
            timing.display = roof.display = timed
            timing.show(trial if timed else None)
            roof.show(trial if timed else None)
        elif tab == "profile":
            self.query_one("#profile-text", Static).update(self.profile(trial) if trial else "")
        elif tab == "source":
            self.query_one("#source-text", Static).update(self.source(trial) if trial else "")
        elif tab == "log":
            self.query_one("#log-text", Static).update(self.log(trial) if trial else "")

    def metrics(self, trial: Trial) -> RenderableType:
        return MetricsGrid(self.color, self.baseline, self.config).render(trial)

    def profile(self, trial: Trial) -> RenderableType:
        if self.raw:
            return self._raw_profile(trial, trial.profile)
        verdicts = trial.verdicts
        if not verdicts:
            if describe.cpu_run(trial):
                why = f"{describe.CPU_CORRECT}: counters and roofline verdicts come from a GPU run."
            elif trial.state_enum is TrialState.CORRECT:
                why = ("No profile yet: correct GPU trials are profiled on the first correct result, a new best "
                       "and a plateau. p profiles this one now.")
            else:
                why = f"Nothing to profile: {trial.id} is {trial.state}."
            return Text(why, self.color("trial-muted"))
        sources = {v.source for v in verdicts}
        title = Text(f"{len(verdicts)} verdict(s) for {trial.id}", Style(bold=True))
        title.append(f" from {' and '.join(sorted(s for s in sources if s))}", self.color("trial-muted"))
        if trial.result:
            title.append(f" · {describe.measured_on(trial.result)}", self.color("trial-muted"))
        title.append("   s: raw profile", self.color("trial-muted"))
        table = Table.grid(padding=(0, 1), expand=True)
        table.add_column(width=1, no_wrap=True)
        table.add_column(ratio=1)
        for verdict in verdicts:
            mark, var = _SEVERITY.get(verdict.severity or "info", ("●", "accent"))
            body = Text(verdict.title or "?", self.color(var, bold=True))
            body.append(f"  {verdict.severity} · {verdict.source}", self.color("trial-muted"))
            if verdict.evidence:
                body.append(f"\n{verdict.evidence}", self.color("trial-muted"))
            if verdict.hint:
                body.append("\n→ ", self.color(var))
                body.append(verdict.hint)
            table.add_row(Text(mark, self.color(var, bold=True)), body)
            table.add_row("", "")
        return Group(title, Text(""), table)

    def _raw_profile(self, trial: Trial, profile: ProfileResult | None) -> RenderableType:
        title = Text(f"raw profile of {trial.id}", Style(bold=True))
        title.append("   s: back to verdicts", self.color("trial-muted"))
        if not profile:
            return Group(title, Text("No profile recorded.", self.color("trial-muted")))
        parts: list[RenderableType] = [title]
        for skipped in profile.skipped or []:
            parts.append(Text(f"{skipped.get('source')} unavailable: {skipped.get('reason')}", self.color("warning")))
        if profile.available is False or profile.reason:
            parts.append(Text(f"counters unavailable: {profile.reason or profile.message}", self.color("warning")))
        profiler = get_profiler(source_of(profile))
        if profiler is not None:
            parts.append(Text(f"profiler: {profiler.label}", self.color("trial-muted")))
        if profile.report:
            parts.append(Text(f"report: {profile.report}", self.color("trial-muted")))
        weighed = kernel_split.of_trial(replace(trial, profile=profile), self.store)
        if weighed is not None:  # the library's share, as the `fallback` flag reads it
            parts.append(Text(weighed.line(), self.color("warning" if weighed.fallback() else "trial-muted")))
        kernels = profiler.kernels(profile) if profiler is not None else []
        main = profiler.dominant(profile) if kernels else None
        for kernel in kernels:
            head = Text(kernel.get("name", "?"), Style(bold=True))
            if kernel == main:
                head.append(" (dominant)", self.color("trial-best"))
            if kernel.get("grid") is not None:
                head.append(f"  grid {kernel.get('grid')} block {kernel.get('block')}", self.color("trial-muted"))
            if kernel.get("duration_ns") is not None:
                head.append(f"  {fmt_us(kernel['duration_ns'] / 1000)}")
            table = Table(box=box.SIMPLE, show_header=False, show_edge=False, pad_edge=False, expand=True)
            table.add_column(style=self.color("trial-muted"), ratio=3)
            table.add_column(justify="right", ratio=1)
            for name, value in sorted((kernel.get("metrics") or {}).items()):
                table.add_row(name, (f"{value:,.0f}" if abs(value) >= 1e4 else f"{value:.4g}") if isinstance(value, float) else str(value))
            parts += [Text(""), head, table]
            for rule in kernel.get("rules") or []:
                line = Text(f"{rule.get('rule')} [{rule.get('type')}] ", self.color("warning"))
                line.append(rule.get("description", ""))
                parts.append(line)
        if not kernels:
            shown = {k: v for k, v in profile.items() if k not in ("kernels", "roofline")}
            parts.append(Text("\n".join(f"{k}: {v}" for k, v in shown.items()), self.color("trial-muted")))
        return Group(*parts)

    # Source

    def _syntax_theme(self) -> str:
        return "monokai" if self.app.current_theme.dark else "default"

    def source(self, trial: Trial) -> RenderableType:
        try:
            text = self.store.read_source(trial)
        except OSError as exc:
            return Text(f"The snapshot of {trial.id} is missing: {exc}", self.color("trial-failure"))
        if self.diff:
            return self._diff(trial, text)
        lines = {f["line"] for f in (trial.validation.errors if trial.validation else []) if f.get("line")}
        title = Text(f"{trial.file} @ {trial.id}", Style(bold=True))
        against = f"vs {trial.parent}" if trial.parent else "(a new root: every line is new)"
        title.append(f"  sha {trial.sha256[:12]}   d: diff {against}", self.color("trial-muted"))
        syntax = Syntax(text, "python", theme=self._syntax_theme(), line_numbers=True, word_wrap=False,
                        background_color="default", highlight_lines=lines)
        return Group(title, syntax)

    def _diff(self, trial: Trial, text: str) -> RenderableType:
        parent = self.parent_trial
        try:
            old = self.store.read_source(parent) if parent else ""
        except OSError:
            old = ""
        lines = list(difflib.unified_diff(old.splitlines(), text.splitlines(), lineterm="", n=3,
                                          fromfile=f"{parent.id}/{parent.file}" if parent else "/dev/null",
                                          tofile=f"{trial.id}/{trial.file}"))
        added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
        removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
        title = Text(f"diff {parent.id if parent else '(root)'} → {trial.id}", Style(bold=True))
        title.append(f"  +{added}", self.color("success"))
        title.append(f" −{removed}", self.color("trial-failure"))
        title.append("   d: back to source", self.color("trial-muted"))
        if not lines:
            return Group(title, Text("No change from the parent.", self.color("trial-muted")))
        body = Text()
        for line in lines[2:]:
            if line.startswith("@@"):
                body.append(line + "\n", self.color("accent"))
            elif line.startswith("+"):
                body.append(line + "\n", self.color("success"))
            elif line.startswith("-"):
                body.append(line + "\n", self.color("trial-failure"))
            else:
                body.append(line + "\n", self.color("trial-muted"))
        return Group(title, body)

    # Log

    def log_path(self, trial: Trial) -> Path | None:
        """The job's captured output; a running job writes to logs/<id>.log before the trial records it."""
        rel = trial.log or (f"logs/{trial.id}.log" if trial.state_enum.reached_gpu else None)
        if rel:
            return self.store.state_dir / rel
        validation_log = trial.validation.log if trial.validation else None
        return Path(validation_log) if validation_log else None

    def log(self, trial: Trial) -> RenderableType:
        path = self.log_path(trial)
        if path is None:
            return Text(f"No job log for {trial.id}: it is {trial.state}.", self.color("trial-muted"))
        try:
            with path.open("rb") as handle:
                size = handle.seek(0, 2)
                handle.seek(max(0, size - LOG_TAIL_BYTES))
                data = handle.read().decode("utf-8", errors="replace")
        except OSError:
            return Text(f"{path.name}: no output yet", self.color("trial-muted"))
        title = Text(str(path.relative_to(self.store.state_dir) if path.is_relative_to(self.store.state_dir) else path),
                     Style(bold=True))
        if size > LOG_TAIL_BYTES:
            title.append(f"  (last {LOG_TAIL_BYTES // 1024} KiB of {size // 1024} KiB)", self.color("trial-muted"))
        phases = breakdown_lines(trial.result.phases_s if trial.result else None)
        timeline = Text("\n".join(["Where the seconds went", *phases]) + "\n", self.color("trial-muted")) if phases else Text()
        return Group(timeline, title, Text(printable(data.rstrip()) or "(empty)"))  # the candidate printed it
