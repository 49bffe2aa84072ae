"""Two lines at the top: what is being optimised and how far (line 1), what is happening now (line 2).

Line 1: problem, GPU, baseline time, best trial and speedup (and where it came from when it was not
measured here), budget. Line 2: watching or paused, whose engine it is when another process runs it,
the running job with its elapsed time and progress, the queue, and a stale badge while saves wait
for results. Elapsed time ticks from the app's clock, not from the job, so it moves between events.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from trialtui.engine import events as ev
from trialtui.core.text import fmt_us
from trialtui.tui import describe
from trialtui.tui.cut import cut_text
from trialtui.tui.palette import Themed


@dataclass
class Activity:
    """The engine's moving parts as the status bar draws them."""

    lanes: dict[str, str | None] = field(default_factory=dict)
    queued: list[str] = field(default_factory=list)
    started: dict[str, float] = field(default_factory=dict)  # trial id → clock() when it started running
    progress: dict[str, ev.Progress] = field(default_factory=dict)
    preliminary: dict[str, str] = field(default_factory=dict)  # running trial id → its first median, as text
    states: dict[str, str] = field(default_factory=dict)  # unfinished trial id → its state, as the tree shows it


@dataclass
class Standing:
    problem: str = ""
    # Where numbers come from, longest form first, down to the few words a narrow header keeps:
    # ("replayed from a recording on NVIDIA H200, 2026-11-29 · this machine: CPU", …, "this machine: CPU")
    where: tuple[str, ...] = ()
    baseline: str = "eager"
    baseline_us: float | None = None
    best_id: str | None = None
    best_speedup: float | None = None
    best_origin: str = ""  # "replayed", "imported from hf": the best's number was not measured here
    used: int = 0
    limit: int = 0
    paused: bool = False
    waiting_saves: int = 0  # saves seen while paused
    stale: int = 0  # trials saved but without a result yet
    follow: bool = True
    engine_down: str = ""
    attached: str = ""  # whose engine this window watches when another process runs it (tui/attached.py)


class StatusBar(Themed, Widget):
    DEFAULT_CSS = "StatusBar { height: 2; }"

    def __init__(self, clock, **kwargs) -> None:
        super().__init__(**kwargs)
        self.clock = clock
        self.standing = Standing()
        self.activity = Activity()

    def on_mount(self) -> None:
        self.set_interval(1.0, self._tick)
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.refresh())

    def _tick(self) -> None:
        if any(self.activity.lanes.values()):
            self.refresh()


    def render(self) -> Text:
        text = Text("\n").join([self._identity(), self._activity()])
        text.no_wrap, text.overflow = True, "ellipsis"
        return text

    def _sep(self, text: Text) -> None:
        text.append("  │  ", self.color("trial-muted"))

    def _identity(self) -> Text:
        """Problem and where on the left, best and budget on the right: when the line is too long
        the left part gives way, least telling first (the baseline's time, then where's long form),
        so the best, the budget and "this machine: CPU" show."""
        s = self.standing
        standing = self._standing()
        room = self.size.width - standing.cell_len if self.size.width else None
        base = f" · {s.baseline} {fmt_us(s.baseline_us)}" if s.baseline_us is not None else ""
        forms = s.where or ("",)
        choices = [(True, forms[0], base)] + [(True, where, "") for where in forms] + [(False, forms[-1], "")]
        for badge, where, tail in choices:
            text = Text(no_wrap=True, overflow="ellipsis")
            if badge:
                text.append(" trialtui ", Style(bold=True, reverse=True) + self.color("primary"))
            text.append(f" {s.problem}", Style(bold=True))
            if where:
                text.append(f" · {where}{tail}", self.color("trial-muted"))
            if room is None or text.cell_len <= room:
                return text + standing
        return cut_text(text, max(room, 10)) + standing

    def _standing(self) -> Text:
        s = self.standing
        text = Text(no_wrap=True)
        self._sep(text)
        if s.best_id:
            text.append(f"★ {s.best_id} {s.best_speedup:.2f}×", self.color("trial-best", bold=True))
            if s.best_origin:
                text.append(f" ({s.best_origin})", self.color("warning"))
        else:
            text.append("★ no best yet", self.color("trial-muted"))
        self._sep(text)
        if s.limit:
            spent = s.used >= s.limit
            text.append("budget ", self.color("trial-muted"))
            text.append(f"{s.used}/{s.limit}", self.color("trial-failure" if spent else "foreground", bold=spent))
            if self.size.width >= 100:  # the bar is the first thing a narrow header drops
                text.append(" " + describe.bar(s.used / s.limit, 8), self.color("trial-failure" if spent else "primary"))
            if spent:
                text.append(" spent", self.color("trial-failure", bold=True))
        return text

    def _activity(self) -> Text:
        s, a = self.standing, self.activity
        text = Text(no_wrap=True, overflow="ellipsis")
        if s.engine_down:
            text.append(f" ✗ engine stopped: {s.engine_down}", self.color("trial-failure", bold=True))
            return text
        if s.paused:
            text.append(" ⏸ paused", self.color("warning", bold=True))
            if s.waiting_saves:
                text.append(f" · {s.waiting_saves} save{'s' if s.waiting_saves != 1 else ''} waiting", self.color("warning"))
        else:
            text.append(" ● watching", self.color("success"))
        if s.attached:  # before any job: q here leaves that engine running, which a reader must know
            self._sep(text)
            text.append(f"⇄ attached to {s.attached}", self.color("accent"))
        running = [(lane, tid) for lane, tid in a.lanes.items() if tid]
        for lane, trial_id in running:
            self._sep(text)
            state = a.states.get(trial_id, "running")
            text.append(f"▶ {trial_id} {state}", self.color("trial-running", bold=True))
            if len(a.lanes) > 1:
                text.append(f" on {lane}", self.color("trial-muted"))
            started = a.started.get(trial_id)
            if started is not None:
                text.append(f" {describe.clock(self.clock() - started)}")
            progress = a.progress.get(trial_id)
            if progress is not None:
                text.append(" ")
                self._progress(text, progress)
            if trial_id in a.preliminary:
                text.append(f" {a.preliminary[trial_id]}", self.color("trial-running"))
        idle = [lane for lane, tid in a.lanes.items() if not tid]
        if len(a.lanes) > 1 and idle:  # with several GPUs, every lane's state is visible
            self._sep(text)
            text.append(" ".join(f"{lane} idle" for lane in idle), self.color("trial-muted"))
        if a.queued:
            self._sep(text)
            text.append(f"{len(a.queued)} queued", self.color("trial-muted"))
        if s.stale:
            self._sep(text)
            text.append(f" {s.stale} save{'s' if s.stale != 1 else ''} since last result ",
                        Style(reverse=True) + self.color("warning"))
        if not s.follow:
            self._sep(text)
            text.append("follow off (f)", self.color("trial-muted"))
        return text

    def _progress(self, text: Text, progress: ev.Progress) -> None:
        if progress.i is not None and progress.n:
            text.append("▕" + describe.bar(progress.i / progress.n, 10) + "▏ ", self.color("trial-running"))
        text.append(describe.progress_text(progress.phase, progress.i, progress.n, progress.runs),
                    self.color("trial-muted"))
