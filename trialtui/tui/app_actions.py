"""The app's key actions (and the command palette's find, theme and export): each calls an engine
operation that returns at once, or moves the view.

A mixin of `TrialApp` (tui/app.py), whose BINDINGS name these actions; finalize, which waits on a
worker, stays in app.py.
"""

from __future__ import annotations

from trialtui.core import tree
from trialtui.core.interchange import markdown_table, trials_jsonl
from trialtui.core.model import Trial, TrialState
from trialtui.core.store import StoreError, atomic_write
from trialtui.tui import describe
from trialtui.tui.app_state import AppState
from trialtui.tui.screens.find import FindScreen
from trialtui.tui.screens.help import HelpScreen
from trialtui.tui.widgets.detail import TABS


class KeyActions(AppState):
    """`action_*` methods and `check_action` of TrialApp; they use its model and widgets."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys that need a best trial or a running job leave the footer (False) until they work.

        Keys about the trial under the cursor (B, r, p) stay: hiding them as the cursor moves would
        rebuild the footer on every key press, so they say why when they cannot act. But p is never
        offered where it can never run: gone while the engine has no GPU, dimmed (None) on a trial the
        CPU interpreter ran. q is Leave while another process runs the engine (it runs on), else Quit.
        """
        if action in ("branch_best", "finalize"):
            return self.best is not None
        if action == "no_best":
            return self.best is None
        if action == "leave":
            return bool(self.attached)
        if action == "cancel":  # any unfinished trial: validating and compiling ones too
            status = self.status if self.is_mounted else None
            return status is not None and bool(any(status.activity.lanes.values()) or status.activity.queued
                                               or status.standing.stale)
        if action == "profile":
            if self.engine.device == "cpu":
                return False
            trial = self.cursor_trial if self.trials else None
            if trial is not None and describe.cpu_run(trial):
                return None
        if action in ("branch_cursor", "rerun", "profile"):
            return bool(self.trials)
        return True

    def branch_from(self, trial_id: str) -> None:
        """Write a trial's source into its file (atomically) and make it the file's head."""
        try:
            self.engine.branch(trial_id)
        except (StoreError, OSError) as exc:
            self.notify(f"could not branch from {trial_id}: {exc}", severity="error")
            return
        self.heads = self.store.heads
        self.tree.set_marks(self._best_id, self.heads)
        self.detail.set_marks(self._best_id, set(self.heads.values()))
        self.go_to(trial_id)

    def go_to(self, trial_id: str) -> None:
        if trial_id in self.trials:
            self.tree.move_to(trial_id, by_user=True)
            self.tree.focus()

    def action_no_best(self, what: str) -> None:
        self.notify(f"No best trial to {what} yet: {tree.no_best_reason(self.trials.values(), self.baseline)}",
                    severity="warning")

    def action_branch_best(self) -> None:
        if self.best is not None:
            self.branch_from(self.best.id)

    def action_branch_cursor(self) -> None:
        if self.tree.cursor_id:
            self.branch_from(self.tree.cursor_id)

    def action_rerun(self) -> None:
        trial = self.cursor_trial
        if trial is None:
            return
        if not trial.state_enum.is_final:
            self.notify(f"{trial.id} is {trial.state}: it already has a job", timeout=3)
        elif trial.state_enum is TrialState.INVALID:
            self.notify(f"{trial.id} is invalid: fix the file and save again (r re-runs measured trials)",
                        severity="warning", timeout=4)
        else:
            self.engine.rerun(trial.id)

    def action_cancel(self) -> None:
        """Cancel the cursor's trial if it has not finished (validating, compiling, queued or running),
        else the running job, else the first queued; always with a message."""
        activity = self.status.activity
        cursor = self.cursor_trial
        running = [tid for tid in activity.lanes.values() if tid]
        if cursor is not None and not cursor.state_enum.is_final:
            target = cursor.id
        else:
            target = (running or activity.queued or [None])[0]
        if target is None:
            self.notify("nothing to cancel: no trial is validating, queued or running", timeout=3)
            return
        state = self.trials[target].state if target in self.trials else "running"
        if self.engine.cancel(target):
            self.notify(f"cancelling {target} ({state})", timeout=3)
        else:
            self.notify(f"{target} has no job to cancel any more ({state})", severity="warning", timeout=3)

    def action_profile(self) -> None:
        trial = self.cursor_trial
        if trial is None:
            return
        if trial.state_enum is not TrialState.CORRECT:
            self.notify(f"{trial.id} is {trial.state}: only a correct trial is worth profiling", timeout=4)
        else:
            self.engine.profile_now(trial.id)
            self.notify(f"{trial.id} queued for profiling", timeout=3)

    async def action_leave(self) -> None:
        """q in a window attached to another process's engine: quitting hangs up and leaves that engine running."""
        await self.action_quit()

    def action_follow(self) -> None:
        self.follow = not self.follow
        if self.follow:
            self.unseen = 0
            newest = self._newest_id()
            if newest:
                self.tree.move_to(newest, by_user=False)
        self._refresh_follow_hint()
        self._refresh_standing()

    def action_diff(self) -> None:
        self.detail.toggle_diff()

    def action_summary_raw(self) -> None:
        self.detail.toggle_raw()

    def action_tab(self, tab: str) -> None:
        if tab in TABS:
            self.detail.activate(tab)

    def action_focus_tree(self) -> None:
        self.tree.focus()

    def action_pause(self) -> None:
        paused = self.engine.toggle_pause()
        self.notify("watching paused: saves are counted, scored on resume" if paused else "watching resumed",
                    timeout=3)
        self._refresh_standing()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_find(self) -> None:
        self._find_origin = self.tree.cursor_id

        def done(query: str | None) -> None:
            if query is None and self._find_origin:
                self.tree.move_to(self._find_origin, by_user=True)
            self.tree.focus()

        self.push_screen(FindScreen(), done)

    def find_trial(self, query: str) -> str:
        """Move the cursor to the first trial matching `query`; returns a line for the find box."""
        query = query.strip().lower()
        if not query:
            return ""
        ids = sorted(self.trials, key=tree.id_number)
        wanted = query if query.startswith("t") else f"t{query}"
        if wanted in self.trials:
            match = [wanted]
        else:
            match = [tid for tid in ids if query in self._haystack(self.trials[tid])]
        if not match:
            return f"no trial matches {query!r}"
        self.tree.move_to(match[0], by_user=True)
        more = f" (+{len(match) - 1} more)" if len(match) > 1 else ""
        return f"{match[0]}{more}: enter keeps it, esc goes back"

    def _haystack(self, trial: Trial) -> str:
        outcome, _ = describe.outcome(trial, self.baseline)
        return f"{trial.id} {trial.file} {trial.state} {tree.label(trial)} {outcome}".lower()

    def switch_theme(self, name: str) -> None:
        self.theme = name

    def export(self, fmt: str) -> None:
        found = sorted(self.trials.values(), key=lambda t: tree.id_number(t.id))
        if fmt == "md":
            path, text = self.problem.root / "trials.md", markdown_table(self.problem.name, found, self.baseline)
        else:
            path, text = self.problem.root / "trials.jsonl", trials_jsonl(found)
        try:
            atomic_write(path, text.encode())
        except OSError as exc:
            self.notify(f"export failed: {exc}", severity="error")
            return
        self.notify(f"wrote {len(found)} trials to {path}", title="Export", timeout=6)
