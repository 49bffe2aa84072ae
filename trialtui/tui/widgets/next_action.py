"""The next-action pane: the decision for the trial under the cursor, its evidence, and its key."""

from __future__ import annotations


from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from trialtui.core.decide import naming_current_best
from trialtui.core.model import Action, Trial, TrialState
from trialtui.tui.palette import Themed

ACTION_WORDS = {
    Action.FINALIZE.value: ("Finalize", "success"),
    Action.CONTINUE.value: ("Continue", "primary"),
    Action.BRANCH_BACK.value: ("Branch back", "warning"),
    Action.FIX.value: ("Fix", "trial-failure"),
    Action.PROFILE.value: ("Profile", "trial-running"),
    Action.SWITCH_APPROACH.value: ("Switch approach", "secondary"),
    Action.BUDGET_SPENT.value: ("Budget spent", "trial-best"),
    Action.WAIT.value: ("Waiting", "trial-muted"),
    Action.INSTALL.value: ("Install", "warning"),
    Action.FIX_REFERENCE.value: ("Fix reference.py", "warning"),
}
KEY_WORDS = {"b": "branch to best", "B": "branch from here", "F": "finalize", "p": "profile now", "r": "re-run"}


class NextAction(Themed, Static):
    """One sentence, the numbers behind it, the first hints, and the key that acts on it.

    Its height is fixed (app.tcss), so a new decision repaints it without a layout pass.
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.trial: Trial | None = None
        self.best_id: str | None = None  # the best that `b` goes to now, which the shown decision names

    def set_best(self, best_id: str | None) -> None:
        if best_id != self.best_id:
            self.best_id = best_id
            self.show(self.trial)

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.show(self.trial))


    def _mark(self, action: str) -> None:
        for name in (*ACTION_WORDS, "invalid"):
            self.set_class(name == action, f"-{name}")

    def show(self, trial: Trial | None) -> None:
        self.trial = trial
        decision = naming_current_best(trial.decision if trial else None, self.best_id)
        if trial is None:
            self.update(Text("Save a candidate file: each save becomes a trial, validated, checked, timed and "
                             "given a next step here.", self.color("trial-muted")), layout=False)
            self.border_title = "Next"
            self._mark("wait")
            return
        if decision is None:
            self._mark("wait")
            self.border_title = f"Next · {trial.id}"
            why = (f"{trial.id} is {trial.state}; the next step comes with its result."
                   if not trial.state_enum.is_final else f"{trial.id} has no decision recorded.")
            self.update(Text(why, self.color("trial-muted")), layout=False)
            return
        word, var = ACTION_WORDS.get(decision.action, (decision.action or "?", "primary"))
        self.border_title = f"Next · {trial.id} · {word}"
        invalid = trial.state_enum is TrialState.INVALID
        self._mark("invalid" if invalid else decision.action)
        if invalid:
            var = "trial-invalid"
        body = Text()
        reason = decision.reason
        lead, sep, rest = reason.partition(": ")
        if sep and len(lead) < 20:  # the decision's own lead word ("Regressed:", "Done:"), in its colour
            body.append(lead + sep, self.color(var, bold=True))
            body.append(rest)
        else:
            body.append(reason)
        evidence = decision.evidence
        if evidence:
            body.append("\n")
            body.append(" · ".join(str(e) for e in evidence), self.color("trial-muted"))
        for hint in decision.hints[:2]:
            body.append("\n→ ", self.color(var))
            body.append(str(hint))
        key = decision.key
        if not key:
            self.update(body, layout=False)
            return
        badge = Text()
        badge.append(f" {key} ", Style(reverse=True, bold=True) + self.color(var))
        badge.append(f" {KEY_WORDS.get(key, '')}", self.color(var, bold=True))
        grid = Table.grid(expand=True, padding=(0, 1))
        grid.add_column(ratio=1)
        grid.add_column(no_wrap=True, justify="right")
        grid.add_row(body, badge)
        self.update(grid, layout=False)
