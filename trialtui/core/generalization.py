"""What a held-out check found (core/heldout.py's cases, run by the checker): the card's "generalizes:" line.

One summary for finalize's report, `trials finalize --json`, `bench --generalize`, the TUI and the agent.
A case the reference itself does not accept is skipped, not counted; one the budget did not reach is
said to be not run; a failure names the first case and its first mismatch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from trialtui.core.bench_result import BenchResult
from trialtui.core.heldout import HeldOutCase

PREFIX = "generalizes:"


class Outcome(str, Enum):
    PASSED = "passed"
    FAILED = "failed"  # the candidate's output differs, it raised, crashed or hung
    SKIPPED = "skipped"  # the reference does not accept these inputs: nothing to hold the candidate to
    NOT_RUN = "not_run"  # the time budget ran out, or the candidate's process ended before it


@dataclass
class CaseOutcome:
    case: HeldOutCase
    outcome: Outcome
    message: str = ""  # why it failed, was skipped or not run

    def to_dict(self) -> dict[str, Any]:
        return {**self.case.to_dict(), "outcome": self.outcome.value, "message": self.message}


@dataclass
class Generalization:
    """The held-out check of one source. `revealed`: these very cases were checked on demand for it
    before (bench --generalize, the agent's tool), so they were not held out."""

    outcomes: list[CaseOutcome] = field(default_factory=list)
    revealed: bool = False
    error: str = ""  # the check could not run at all
    off: bool = False  # [generalize] budget_s = 0

    def count(self, outcome: Outcome) -> int:
        return sum(1 for o in self.outcomes if o.outcome is outcome)

    @property
    def checked(self) -> int:
        return self.count(Outcome.PASSED) + self.count(Outcome.FAILED)

    @property
    def first_failure(self) -> CaseOutcome | None:
        return next((o for o in self.outcomes if o.outcome is Outcome.FAILED), None)

    @property
    def fails(self) -> bool:
        """A held-out case failed: the kernel is finalized with that line at the top, never as a clean win."""
        return self.first_failure is not None

    def line(self) -> str:
        """"generalizes: 11 of 12 held-out cases; fails at dim=4099 (...)", and what else a reader must know."""
        if self.off:
            return f"{PREFIX} not checked ([generalize] budget_s = 0)"
        if self.error:
            return f"{PREFIX} not checked: {self.error}"
        held = "cases checked on demand before, not held out" if self.revealed else "held-out cases"
        text = f"{PREFIX} {self.count(Outcome.PASSED)} of {self.checked} {held}"
        failure = self.first_failure
        if failure is not None:
            text += f"; fails at {failure.case.label} ({_short(failure.message)})"
        notes = []
        if self.count(Outcome.NOT_RUN):
            reason = next(o.message for o in self.outcomes if o.outcome is Outcome.NOT_RUN)
            notes.append(f"{self.count(Outcome.NOT_RUN)} not run: {reason}")
        if self.count(Outcome.SKIPPED):
            notes.append(f"{self.count(Outcome.SKIPPED)} the reference does not accept, skipped")
        return text + (f" ({'; '.join(notes)})" if notes else "")

    def text(self) -> str:
        """The line, then one line per case: what it changed, why, and how it went."""
        rows = [self.line()]
        for o in self.outcomes:
            note = f": {_short(o.message)}" if o.message else ""
            rows.append(f"  {o.outcome.value:8} {o.case.label} (seed {o.case.seed}; {o.case.why}){note}")
        return "\n".join(rows) + "\n"

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line(), "passed": self.count(Outcome.PASSED), "checked": self.checked,
                "fails": self.fails, "revealed": self.revealed, "error": self.error or None, "off": self.off,
                "cases": [o.to_dict() for o in self.outcomes]}

    @classmethod
    def of_result(cls, cases: list[HeldOutCase], result: BenchResult, revealed: bool = False) -> Generalization:
        """From a correctness-only job's result (`correctness.heldout`: one outcome per case, in order)."""
        found = (result.correctness or {}).get("heldout") or []
        if len(found) != len(cases):
            why = result.message or f"the job ended {result.state or 'without a result'}"
            return cls(revealed=revealed, error=f"the held-out job gave no outcome per case ({why})")
        outcomes = [CaseOutcome(case, Outcome(entry.get("outcome")), str(entry.get("message") or ""))
                    for case, entry in zip(cases, found)]
        return cls(outcomes, revealed=revealed)


def _short(message: str, limit: int = 160) -> str:
    """A mismatch message's first line, cut for one line of a card."""
    first = (message.strip().splitlines() or ["no message"])[0]
    return first if len(first) <= limit else first[: limit - 1] + "…"
