"""The Textual app: the engine runs in a worker, its events become messages, handlers own the widgets.

`make_app` builds it for the CLI (`trialtui [DIR]`, `trialtui watch`), the demo and every snapshot
test. The engine's subscriber only posts messages (progress and queue messages coalesce); every
widget change happens in an `on_*` handler or an action, on the app's thread. Keys call engine
operations, which return at once; nothing here waits on a job.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from contextlib import suppress
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.events import Resize
from textual.notifications import Notify
from textual.widgets import Static
from textual.worker import Worker

from trialtui.core import provenance, tree
from trialtui.core.install import install_command
from trialtui.core.model import Trial, TrialState
from trialtui.core.problem import Problem
from trialtui.core.report import FINAL_DIR
from trialtui.core.store import Store, UnknownTrial
from trialtui.engine import events as ev
from trialtui.engine.front import EngineFront
from trialtui.engine.runner_deps import missing_runner
from trialtui.tui import describe
from trialtui.tui.app_actions import KeyActions
from trialtui.tui.app_messages import AppMessages
from trialtui.tui.attached import attached_to
from trialtui.tui.commands import TrialCommands
from trialtui.tui.messages import EngineStopped, FinalizeDone, to_message
from trialtui.tui.screens.confirm import ConfirmScreen
from trialtui.tui.themes import DEFAULT_THEME, VARIABLE_DEFAULTS, load_themes
from trialtui.tui.finalize_text import finalize_trial, held_out_note
from trialtui.tui.widgets.detail import TrialDetail
from trialtui.tui.widgets.key_footer import WIDE, KeyFooter
from trialtui.tui.widgets.next_action import NextAction
from trialtui.tui.widgets.plots import SpeedupHistory
from trialtui.tui.widgets.status_bar import StatusBar
from trialtui.tui.widgets.trial_tree import TrialTree

if TYPE_CHECKING:
    from trialtui.engine.loop import Engine

TAKE_OVER_TRIES, TAKE_OVER_PAUSE_S = 20, 0.5  # an attached window waits up to 10 s for the gone engine's lock
SHORT = 34  # rows: below this the layout is the -short one
_IN_FLIGHT = frozenset(state.value for state in TrialState if not state.is_final)
# Actions whose keys come and go with the state; the footer is told when this set changes.
_DYNAMIC_ACTIONS = ("branch_best", "finalize", "branch_cursor", "rerun", "profile", "cancel", "leave")


class Demo(Protocol):
    async def play(self, engine: Engine) -> None: ...  # on the app's own engine: cli/demo.py makes both


class TrialApp(KeyActions, AppMessages, App):
    """One problem directory, live. Key actions are in app_actions.py, message handlers in app_messages.py."""

    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute: subclasses elsewhere find it too
    TITLE = "trialtui"
    COMMANDS = App.COMMANDS | {TrialCommands}
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (WIDE, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (SHORT, "-tall")]
    BINDINGS = [
        Binding("b", "branch_best", "Best", id="branch-best",
                tooltip="branch to best: write the best trial's source into its file; the next save grows from it"),
        Binding("B", "branch_cursor", "Branch", id="branch-cursor",
                tooltip="branch from the trial under the cursor: write its source into its file"),
        Binding("r", "rerun", "Re-run", id="rerun", tooltip="queue the trial under the cursor again"),
        Binding("x", "cancel", "Cancel", id="cancel", tooltip="cancel the cursor's unfinished trial in any stage, validating and compiling too (else the running job)"),
        Binding("p", "profile", "Profile", id="profile", tooltip="profile the trial under the cursor now"),
        Binding("f", "follow", "Follow", id="follow", tooltip="follow mode: the cursor jumps to each new trial"),
        Binding("F", "finalize", "Finalize", id="finalize",
                tooltip="finalize the best trial: clean re-benchmark, final/ with REPORT.md (asks first)"),
        Binding("d", "diff", "Diff", id="diff", tooltip="Source tab: diff against the parent, or back to the source"),
        Binding("s", "summary_raw", "Raw", id="summary-raw", tooltip="Profile tab: verdicts or the raw profile"),
        Binding("space", "pause", "Pause", id="pause", key_display="space",
                tooltip="pause or resume watching (saves while paused are scored on resume)"),
        Binding("slash", "find", "Find", id="find", key_display="/", tooltip="find a trial by id, strategy or state"),
        Binding("question_mark,f1", "help", "Help", id="help", key_display="?", tooltip="this help"),
        Binding("q", "leave", "Leave", id="leave", tooltip="leave this view (the engine keeps running in its own process; trials are saved)"),
        Binding("q", "quit", "Quit", id="quit", tooltip="quit (the engine stops; trials are saved)"),
        Binding("1", "tab('metrics')", "Metrics", show=False, id="tab-metrics"),
        Binding("2", "tab('profile')", "Profile tab", show=False, id="tab-profile"),
        Binding("3", "tab('source')", "Source tab", show=False, id="tab-source"),
        Binding("4", "tab('log')", "Log tab", show=False, id="tab-log"),
        Binding("escape", "focus_tree", "Tree", show=False, id="focus-tree"),
        # b and F while they cannot act (no best): say why rather than nothing
        Binding("b", "no_best('branch to')", show=False, id="branch-best-none"),
        Binding("F", "no_best('finalize')", show=False, id="finalize-none"),
    ]

    def __init__(self, problem: Problem, engine: EngineFront, *, theme: str | None = None, demo: Demo | None = None,
                 owns_engine: bool = False, clock: Callable[[], float] = time.monotonic,
                 reopen: Callable[[], tuple[EngineFront, bool] | None] | None = None) -> None:
        super().__init__()
        self.problem = problem
        self.engine = engine
        self.owns_engine = owns_engine
        self.reopen = reopen  # an engine for this window when the one it attached to goes away (make_app's)
        self.attached = attached_to(engine, problem)
        self.store: Store = engine.store
        self.config = problem.config
        self.baseline = self.config.primary_baseline
        self.demo = demo
        self.clock = clock
        self.trials: dict[str, Trial] = {}
        self.heads: dict[str, str] = {}
        self.best: Trial | None = None
        self.follow = True
        self.unseen = 0
        self.running: set[str] = set()
        self.engine_worker: Worker | None = None
        self._find_origin: str | None = None
        # The GPU of the latest GPU result for the status bar, longest form first (StatusBar's `where`).
        self._gpu_name: tuple[str, ...] | None = None
        self._pending: set[str] = set()  # what _recompute redoes: "best", "history"
        self._best_changed: set[str] = set()  # trials whose result may change the best
        self._recompute_queued = False
        self._progress_dirty = False
        self._binding_state: tuple = ()
        themes, self.theme_problems = load_themes()
        for item in themes:
            self.register_theme(item)
        self.trialtui_themes = [item.name for item in themes]
        wanted = theme or DEFAULT_THEME
        if self.get_theme(wanted) is None:
            self.theme_problems.append(f"no theme {wanted!r}; themes: {', '.join(self.trialtui_themes)}")
            wanted = DEFAULT_THEME
        self.theme = wanted

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(VARIABLE_DEFAULTS)

    # Layout

    def compose(self) -> ComposeResult:
        yield StatusBar(self.clock, id="status")
        with Horizontal(id="body"):
            with Vertical(id="left"):
                yield TrialTree(self.baseline, f"No trials yet: save a candidate *.py in {self.problem.name}/",
                                id="tree")
                yield Static(id="follow-hint")
                yield SpeedupHistory(id="history")
            yield TrialDetail(self.store, self.config, id="detail")
        yield NextAction(id="next")
        yield KeyFooter(compact=True, show_command_palette=False)

    @cached_property
    def tree(self) -> TrialTree:
        return self.query_one(TrialTree)

    @cached_property
    def detail(self) -> TrialDetail:
        return self.query_one(TrialDetail)

    @cached_property
    def status(self) -> StatusBar:
        return self.query_one(StatusBar)

    @cached_property
    def next_action(self) -> NextAction:
        return self.query_one(NextAction)

    @cached_property
    def history(self) -> SpeedupHistory:
        return self.query_one(SpeedupHistory)

    def on_resize(self, event: Resize) -> None:
        self.query_one(KeyFooter).set_narrow(event.size.width < WIDE)

    def on_notify(self, event: Notify) -> None:
        """On a short terminal one toast at a time: a stack of them would cover the metrics.

        Runs before App's own handler adds the new toast (handlers run subclass first)."""
        if self.size.height < SHORT:
            self.clear_notifications()

    def on_mount(self) -> None:
        self.query_one(KeyFooter).set_narrow(self.size.width < WIDE)
        self._load_trials()
        self.tree.border_title = "Trials"
        self.history.border_title = "History"
        self.detail.border_title = "Trial"
        if not self.trials:
            self._show(None)
        self.tree.focus()
        for problem in self.theme_problems:
            self.notify(problem, severity="warning", timeout=8)
        self.engine.subscribe(self._on_engine_event)
        self.engine_worker = self.run_worker(self._run_engine(), name="engine", group="engine", exit_on_error=False)
        if self.demo is not None:
            self.run_worker(self.demo.play(self.engine), name="demo", group="demo", exit_on_error=False)
        self.set_interval(1 / 8, self._spin)
        self.set_interval(1.0, self._tail_log)

    def _load_trials(self) -> None:
        """Everything shown, from the store (at mount, and when another engine takes over)."""
        self.trials = {t.id: t for t in self.store.trials()}
        self.heads = self.store.heads
        self.best = tree.best(self.trials.values(), self.baseline)
        self.next_action.best_id = self._best_id
        self.running = {t.id for t in self.trials.values() if t.state_enum in describe.RUNNING}
        for trial in reversed(self.trials.values()):
            if self._note_gpu(trial):
                break
        self.tree.load(self.trials.values(), self._best_id, self.heads)
        self._refresh_standing()
        self._refresh_history()

    def _on_engine_event(self, event: ev.Event) -> None:
        """The engine's subscriber: runs wherever the engine emits, so it only posts."""
        self.post_message(to_message(event))

    async def _run_engine(self) -> None:
        while True:
            try:
                await self.engine.run()
                return
            except Exception as exc:  # the app stays open to read the trials; the status bar says why
                reason = f"{type(exc).__name__}: {exc}"
            if self.owns_engine or self.reopen is None or not await self._take_over(reason):
                self.post_message(EngineStopped(reason))
                return

    async def _take_over(self, reason: str) -> bool:
        """The engine this window attached to went away (its agent or watcher exited): run one here, or
        attach to whichever front end took the directory first, and go on as if opened now."""
        from trialtui.core.store import StoreError

        gone, successor = self.engine, None
        for _ in range(TAKE_OVER_TRIES):
            try:
                successor = await asyncio.to_thread(self.reopen)
                break
            except StoreError:  # its lock is freed as its process ends
                await asyncio.sleep(TAKE_OVER_PAUSE_S)
        if successor is None:
            return False
        gone.unsubscribe(self._on_engine_event)
        with suppress(Exception):
            gone.close()
        self.engine, self.owns_engine = successor
        self.store = self.detail.store = self.engine.store
        self.engine.subscribe(self._on_engine_event)
        self.attached = attached_to(self.engine, self.problem)
        here = "this window runs the engine now" if self.owns_engine else \
            f"attached to the engine that {getattr(self.engine, 'host', 'another front end')} runs"
        self.notify(f"{reason.removeprefix('RuntimeError: ').split(';')[0]}: {here}", title="Engine", timeout=10)
        self._load_trials()
        self._refresh_bindings()
        return True

    def on_unmount(self) -> None:
        if self.owns_engine:
            self.engine.stop()
            self.engine.close()

    async def action_quit(self) -> None:
        self.engine.stop()
        worker = self.engine_worker
        if worker is not None and worker.is_running:
            with suppress(Exception):
                await asyncio.wait_for(worker.wait(), timeout=3.0)
        self.exit()

    # Model

    @property
    def _best_id(self) -> str | None:
        return self.best.id if self.best else None

    @property
    def cursor_trial(self) -> Trial | None:
        return self.trials.get(self.tree.cursor_id or "")

    def _reload(self, trial_id: str) -> Trial | None:
        try:
            trial = self.store.get(trial_id)
        except UnknownTrial:
            return None
        self.trials[trial.id] = trial
        return trial

    def _soon(self, *parts: str) -> None:
        """Recompute `parts` once the messages already queued are handled: a burst costs one pass."""
        self._pending.update(parts)
        if not self._recompute_queued:
            self._recompute_queued = True
            self.call_later(self._recompute)

    def _recompute(self) -> None:
        self._recompute_queued = False
        parts, self._pending = self._pending, set()
        if "best" in parts:
            self._rebest()
        if "history" in parts:
            self._refresh_history()
        self._refresh_standing()
        self._refresh_bindings()

    def _rebest(self) -> None:
        """The best trial after some trials changed: only a change to the best itself needs a full scan."""
        changed, self._best_changed = self._best_changed, set()
        if self.best is not None and self.best.id in changed:
            self.best = tree.best(self.trials.values(), self.baseline)
        else:
            top = tree.rank(self.best, self.baseline) if self.best else None
            for trial_id in sorted(changed, key=tree.id_number):
                trial = self.trials.get(trial_id)
                key = tree.rank(trial, self.baseline) if trial else None
                if key is not None and (top is None or key > top):
                    self.best, top = trial, key
        self.tree.set_marks(self._best_id, self.heads)
        self.detail.set_marks(self._best_id, set(self.heads.values()))
        self.next_action.set_best(self._best_id)

    def _refresh_bindings(self) -> None:
        """Tell the footer only when the set of usable keys changed: it rebuilds itself each time."""
        state = tuple(self.check_action(action, ()) for action in _DYNAMIC_ACTIONS)
        if state != self._binding_state:
            self._binding_state = state
            self.refresh_bindings()

    def _show(self, trial: Trial | None) -> None:
        parent = self.trials.get(trial.parent or "") if trial else None
        self.detail.set_marks(self._best_id, set(self.heads.values()))
        self.detail.show(trial, parent)
        self.next_action.show(trial)
        self._refresh_bindings()

    def _changed(self, trial: Trial) -> None:
        """A known trial has newer data: its tree line, and the panes if it is the one shown."""
        self.tree.upsert(trial)
        if trial.id == self.tree.cursor_id:
            self.detail.refresh_trial(trial, self.trials.get(trial.parent or ""))
            self.next_action.show(trial)

    def _note_gpu(self, trial: Trial) -> bool:
        """Remember the GPU of a GPU result, or the recording it was replayed from; True if it had one.

        A replayed or imported number never reads as live: the header then says where it came from
        and that this machine is a CPU.
        """
        env = (trial.result.env if trial.result else None) or {}
        if env.get("device") != "cuda" or not env.get("gpu"):
            return False
        rec = describe.elsewhere(trial.result)
        here = " · this machine: CPU" if self.engine.device == "cpu" else ""
        origin = provenance.short(trial.result)
        if not rec:
            self._gpu_name = (env["gpu"],)
        elif here:
            self._gpu_name = (f"{rec}{here}", f"{env['gpu']} ({origin}){here}", here.removeprefix(" · "))
        else:
            self._gpu_name = (rec, f"{env['gpu']} ({origin})")
        return True

    def _where(self) -> tuple[str, ...]:
        """The GPU that timed the latest GPU result (and whether it was a recording), else the device,
        longest form first; jobs off this machine name where they run first (`ssh alice@gpu-box · …`)."""
        remote = getattr(self.engine, "where", "this machine")
        here = self._where_here()
        if remote != "this machine":
            return tuple(f"{remote} · {form}" for form in here) + (remote,)
        return here

    def _where_here(self) -> tuple[str, ...]:
        if self._gpu_name:
            return self._gpu_name
        if self.engine.device == "cpu":
            if getattr(self.engine, "where", "this machine") == "this machine" and missing_runner():
                return f"CPU · jobs cannot run: no runner ({install_command('runner')})", "CPU · no runner", "CPU"
            return "CPU · Triton interpreter (correctness only)", "CPU · Triton interpreter", "CPU"
        lanes = [lane.name for lane in self.engine.lanes.lanes]
        named = f"GPU lane{'s' if len(lanes) != 1 else ''} {', '.join(lanes)}"
        return f"{named} (its name comes with the first result)", named

    def _refresh_standing(self) -> None:
        standing = self.status.standing
        standing.problem = self.problem.name
        standing.where = self._where()
        standing.baseline = self.baseline
        best = self.best
        standing.best_id = best.id if best else None
        standing.best_speedup = best.speedup(self.baseline) if best else None
        standing.best_origin = provenance.short(best.result) if best else ""
        base = best.baseline(self.baseline) if best else {}
        standing.baseline_us = base.get("median_us")
        stale = sum(trial.state in _IN_FLIGHT for trial in self.trials.values())
        standing.used, standing.limit = tree.budget_used(self.trials.values()), self.config.max_trials
        standing.paused = bool(self.engine.paused)
        standing.waiting_saves = self.engine.saves_while_paused
        standing.stale = stale
        standing.follow = self.follow
        standing.attached = self.attached
        self.status.refresh()

    def _refresh_history(self) -> None:
        self.history.update(list(self.trials.values()), self.baseline, self.engine.device == "cpu")

    def _refresh_follow_hint(self) -> None:
        hint = self.query_one("#follow-hint", Static)
        shown = not self.follow and self.unseen > 0
        if shown:
            hint.update(f"↓ {self.unseen} new trial{'s' if self.unseen != 1 else ''} — f to follow", layout=False)
        if hint.display != shown:
            hint.display = shown

    # Timers

    def _spin(self) -> None:
        if self.running:
            self.tree.tick(int(self.clock() * 8), self.running)
        if self._progress_dirty:
            self._progress_dirty = False
            self.status.refresh()
            for trial_id in {**self.status.activity.progress, **self.status.activity.preliminary}:
                self.tree.set_progress(trial_id, self.tree.progress.get(trial_id))

    def _tail_log(self) -> None:
        trial = self.cursor_trial
        if trial is not None and not trial.state_enum.is_final:
            self.detail.reload_log()

    # Finalize

    def action_finalize(self, trial_id: str | None = None) -> None:
        target = self.trials.get(trial_id) if trial_id else self.best
        if target is None:
            self.notify("No correct trial to finalize yet", severity="warning")
            return

        def answer(yes: bool | None) -> None:
            if yes:
                self.finalize(target.id)

        body = (f"Re-benchmark {target.id} ({describe.outcome(target, self.baseline)[0]}) with no cached baseline, "
                f"check it on held-out cases (sizes, layouts and seeds it was never checked on){held_out_note(self.problem, target)}, "
                f"and write {FINAL_DIR}/{target.file}, {FINAL_DIR}/REPORT.md and {FINAL_DIR}/report.json.\n"
                "Watching pauses until it is done, and the GPU lane finishes its current job first.")
        self.push_screen(ConfirmScreen(f"Finalize {target.id}?", body, yes="Finalize"), answer)

    @work(group="finalize", exclusive=True, exit_on_error=False)
    async def finalize(self, trial_id: str) -> None:
        was_paused = self.engine.paused
        if not was_paused:
            self.engine.toggle_pause()
        self._refresh_standing()
        self.notify(f"finalizing {trial_id}: re-benchmarking with no cached baseline", timeout=4)
        try:
            while not self.engine.lanes.idle:
                await asyncio.sleep(0.2)
            trial = self.trials[trial_id]
            executor = getattr(self.engine, "executor", None)  # an attached viewer's finalize runs here
            ok, text = await asyncio.to_thread(finalize_trial, self.problem, self.store, trial, self.engine.device, executor)
        except Exception as exc:
            ok, text = False, f"{type(exc).__name__}: {exc}"
        finally:
            if not was_paused and self.engine.paused:
                self.engine.toggle_pause()
        self.post_message(FinalizeDone(trial_id, ok, text))


def make_app(problem: Problem, *, engine: EngineFront | None = None, device: str | None = None, theme: str | None = None,
             demo: Demo | None = None, executor: Any = None) -> TrialApp:
    """The app for one problem. Without `engine`, builds the real one (it takes the store's lock now), or
    attaches to the engine another front end runs there (`trialtui mcp`, a watcher: engine/attach.py);
    with neither, StoreLocked is raised here, before the terminal is taken over."""
    from trialtui.core.store import StoreLocked

    def open_engine() -> tuple[EngineFront, bool] | None:
        """Our own engine (taking the store's lock), else the one another front end runs; None if neither."""
        from trialtui.engine.attach import attach
        from trialtui.engine.loop import Engine

        try:
            return Engine(problem, device=device, executor=executor), True
        except StoreLocked:
            remote = attach(problem)
            if remote is None:
                raise
            return remote, False

    owns = engine is None
    if engine is None:
        engine, owns = open_engine()
    return TrialApp(problem, engine, theme=theme, demo=demo, owns_engine=owns, reopen=open_engine)
