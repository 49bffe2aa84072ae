"""The app's handlers for the engine's messages and the trial tree's: each updates the model and the
widgets it touches, on the app's thread.

A mixin of `TrialApp` (tui/app.py), kept apart so app.py holds the layout, the model and its refreshes.
"""

from __future__ import annotations

from trialtui.core import provenance
from trialtui.tui import describe
from trialtui.tui.app_state import AppState
from trialtui.tui.messages import (
    DecisionMade,
    EngineFailed,
    EngineNotice,
    EngineStopped,
    FinalizeDone,
    JobPreliminary,
    JobProgress,
    NewBest,
    QueueChanged,
    ResultReady,
    SaveIgnored,
    TrialCreated,
    TrialStateChanged,
)
from trialtui.tui.widgets.trial_tree import TrialTree

_NOTICE_SEVERITY = {"info": "information", "warning": "warning", "error": "error"}


class AppMessages(AppState):
    """`on_*` handlers of TrialApp; they use its model (trials, heads, best, follow) and widgets."""

    def on_trial_created(self, message: TrialCreated) -> None:
        trial = self._reload(message.event.trial_id)
        if trial is None:
            return
        self.heads = self.store.heads
        self.tree.upsert(trial)
        self.tree.set_marks(self._best_id, self.heads)
        if self.follow or self.tree.cursor_id is None:
            self.tree.move_to(trial.id, by_user=False)
        else:
            self.unseen += 1
            self._refresh_follow_hint()
        self._soon("standing")

    def on_trial_state_changed(self, message: TrialStateChanged) -> None:
        trial = self._reload(message.event.trial_id)
        if trial is None:
            return
        state = trial.state_enum
        activity = self.status.activity
        if not state.is_final:  # the status bar names a lane's trial by the state the tree shows
            activity.states[trial.id] = state.value
        elif trial.id not in activity.lanes.values():  # a lane's entry goes when the lane frees
            activity.states.pop(trial.id, None)
        if state in describe.RUNNING:
            self.running.add(trial.id)
        else:
            self.running.discard(trial.id)
        self._changed(trial)
        if state.is_final:
            self._note_gpu(trial)
            self._best_changed.add(trial.id)
            self._soon("best", "history")
        self._soon("standing")

    def on_result_ready(self, message: ResultReady) -> None:
        trial = self._reload(message.event.trial_id)
        if trial is None:
            return
        self._changed(trial)
        self._note_gpu(trial)
        self._best_changed.add(trial.id)
        self._soon("best", "history")

    def on_new_best(self, message: NewBest) -> None:
        event = message.event
        trial = self._reload(event.trial_id)
        if trial is not None:
            self._best_changed.add(event.trial_id)
        self._soon("best")
        origin = provenance.short(trial.result) if trial is not None else event.origin
        said = f" ({origin})" if origin else ""
        if event.previous and event.previous_speedup is not None:
            gain = event.speedup - event.previous_speedup
            text = (f"{event.trial_id} beats {event.previous}: {event.previous_speedup:.2f}× → "
                    f"{event.speedup:.2f}×{said} ({gain:+.2f})")
        else:
            text = f"{event.trial_id} is the first best: {event.speedup:.2f}× vs {self.baseline}{said}"
        self.notify(text, title="★ New best", timeout=6)

    def on_decision_made(self, message: DecisionMade) -> None:
        trial = self._reload(message.event.trial_id)
        if trial is not None:
            self._changed(trial)

    def on_save_ignored(self, message: SaveIgnored) -> None:
        event = message.event
        if event.how == "checkout" and event.head:
            self.heads = self.store.heads
            self.tree.set_marks(self._best_id, self.heads)
            self.detail.set_marks(self._best_id, set(self.heads.values()))
            self.notify(f"{event.file} holds {event.head}'s source again: its next save grows from {event.head}",
                        timeout=4)

    def on_queue_changed(self, message: QueueChanged) -> None:
        event = message.event
        activity = self.status.activity
        now = self.clock()
        running = {tid for tid in event.lanes.values() if tid}
        for trial_id in running - set(activity.started):
            activity.started[trial_id] = now
        for trial_id in set(activity.started) - running:
            activity.started.pop(trial_id, None)
            activity.progress.pop(trial_id, None)
            activity.preliminary.pop(trial_id, None)
            activity.states.pop(trial_id, None)
            self.tree.set_progress(trial_id, None)
        activity.lanes = dict(event.lanes)
        activity.queued = list(event.queued)
        self.status.refresh()
        self._soon("standing")

    def on_job_progress(self, message: JobProgress) -> None:
        """Progress only records; the spinner's timer repaints it at most 8 times a second."""
        event = message.event
        self.status.activity.progress[event.trial_id] = event
        self.tree.progress[event.trial_id] = describe.progress_text(event.phase, event.i, event.n, event.runs)
        self._progress_dirty = True

    def on_job_preliminary(self, message: JobPreliminary) -> None:
        """A first median while timing goes on: on the status bar and the tree row, marked preliminary."""
        event = message.event
        self.status.activity.preliminary[event.trial_id] = describe.preliminary_text(event, self.baseline)
        self.tree.progress[event.trial_id] = describe.preliminary_text(event, self.baseline)
        self._progress_dirty = True

    def on_engine_notice(self, message: EngineNotice) -> None:
        self.notify(message.event.message, severity=_NOTICE_SEVERITY.get(message.event.level, "information"),
                    timeout=6)

    def on_engine_failed(self, message: EngineFailed) -> None:
        self.notify(message.event.message, title="Engine", severity="error", timeout=10)
        self._refresh_standing()

    def on_engine_stopped(self, message: EngineStopped) -> None:
        self.status.standing.engine_down = message.reason
        self.notify(f"the engine stopped: {message.reason}", title="Engine", severity="error", timeout=15)
        self._refresh_standing()

    def on_finalize_done(self, message: FinalizeDone) -> None:
        self.notify(message.text, title=f"Finalize {message.trial_id}",
                    severity="information" if message.ok else "error", timeout=12)
        self._refresh_standing()

    # Tree messages

    def on_trial_tree_highlighted(self, message: TrialTree.Highlighted) -> None:
        if message.by_user and self.follow:  # moving the cursor by hand ends follow mode
            self.follow = False
            self._soon("standing")
        if self.unseen and message.trial_id == self._newest_id():
            self.unseen = 0
            self._refresh_follow_hint()
        self._show(self.trials.get(message.trial_id))

    def on_trial_tree_selected(self, message: TrialTree.Selected) -> None:
        scroll = self.detail.query_one(f"#{self.detail.active}-scroll")
        scroll.focus()

    def _newest_id(self) -> str | None:
        return next(reversed(self.trials), None)  # loaded in id order, new trials appended
