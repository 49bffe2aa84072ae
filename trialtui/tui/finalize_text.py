"""What the TUI's finalize says: the dialog's note on the held-out cases, and the engine's finalize as a
notification's (ok, text). Split from tui/app.py, which asks and runs it."""

from __future__ import annotations

from typing import Any

from trialtui.core import revealed
from trialtui.core.model import Trial
from trialtui.core.problem import Problem
from trialtui.core.store import Store


def finalize_trial(problem: Problem, store: Store, trial: Trial, device: str | None,
                   executor: Any = None) -> tuple[bool, str]:
    """The engine's finalize, as (ok, what happened) for a notification; through `executor` where the engine has one."""
    from trialtui.engine.finalize import FinalizeError, finalize

    try:
        done = finalize(problem, store, trial, device=device, bench=executor.bench if executor is not None else None,
                        profile=executor.profile if executor is not None else None)
    except FinalizeError as exc:
        return False, str(exc)
    out_dir = done.out_dir
    return True, (f"{done.card.generalizes or ''}\n"
                  f"wrote {out_dir / trial.file}, {out_dir / 'REPORT.md'} and {out_dir / 'report.json'}").lstrip()


def held_out_note(problem: Problem, trial: Trial) -> str:
    """What the finalize dialog adds when the held-out cases are not held out for this source."""
    if problem.config.generalize.budget_s <= 0:
        return " (off: [generalize] budget_s = 0)"
    if revealed.was_revealed(problem.state_dir, trial.sha256):
        return " (checked on demand for this source before: the card says they were not held out)"
    return f" (at most {problem.config.generalize.budget_s:g} s)"
