"""The command palette's trialtui commands: go to or branch from any trial, export, finalize, themes."""

from __future__ import annotations

from functools import partial
from typing import Protocol

from textual.command import DiscoveryHit, Hit, Hits, Provider

from trialtui.core import tree
from trialtui.core.model import Trial
from trialtui.tui import describe


class PaletteSource(Protocol):
    """What the palette offers from the app (`TrialApp`, which lists this provider): named here so
    that this module need not import the app."""

    trials: dict[str, Trial]
    best: Trial | None
    baseline: str
    trialtui_themes: list[str]

    def export(self, fmt: str) -> None: ...

    def action_finalize(self, trial_id: str | None = None) -> None: ...

    def switch_theme(self, name: str) -> None: ...

    def go_to(self, trial_id: str) -> None: ...

    def branch_from(self, trial_id: str) -> None: ...


class TrialCommands(Provider):
    @property
    def trial_app(self) -> PaletteSource:
        return self.app  # type: ignore[return-value]

    def _commands(self) -> list[tuple[str, object, str]]:
        app = self.trial_app
        found: list[tuple[str, object, str]] = [
            ("Export trials as markdown", partial(app.export, "md"), "write trials.md: a table for a pull request"),
            ("Export trials as JSON lines", partial(app.export, "jsonl"), "write trials.jsonl: every record"),
        ]
        best = app.best
        if best is not None:
            found.append((f"Finalize best {best.id}", partial(app.action_finalize, best.id),
                          "re-benchmark it cleanly and write final/ with its report"))
        for name in app.trialtui_themes:
            found.append((f"Switch theme: {name}", partial(app.switch_theme, name), "trialtui theme"))
        for trial in sorted(app.trials.values(), key=lambda t: -tree.id_number(t.id)):
            outcome, _ = describe.outcome(trial, app.baseline)
            label = tree.label(trial)
            about = f"{trial.file} · {outcome}" + (f" · {label}" if label else "")
            found.append((f"Go to trial {trial.id}", partial(app.go_to, trial.id), about))
            found.append((f"Branch from trial {trial.id}", partial(app.branch_from, trial.id),
                          f"write {trial.id}'s source into {trial.file}; the next save grows from it"))
        return found

    async def discover(self) -> Hits:
        for name, callback, help_text in self._commands()[:24]:
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, callback, help_text in self._commands():
            score = matcher.match(f"{name} {help_text}")
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)
