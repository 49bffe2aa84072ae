"""`trialtui watch --headless`: one stable, greppable line per event on stdout (JSON lines with --json).

As text a line is written only where it adds to what this trial's lines said: a new trial validates at
once (its `created` line says so), a result is said once (the `result` line, not the state it ends in
as well), a `queued` line only when the trial waits, and the next action without the result's message.
JSON lines carry every event as it is.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable, TextIO

from trialtui.core.decide_evidence import first_line
from trialtui.core.model import FINAL_STATES, TrialState
from trialtui.core.problem import Problem
from trialtui.core.text import fmt_us
from trialtui.core.untrusted_text import printable
from trialtui.engine import events as ev

_FINAL = frozenset(state.value for state in FINAL_STATES)


def opening(root: Path, problems: list[Problem], once: bool) -> str:
    """The first line: what is watched, and how the watch ends."""
    if len(problems) > 1:
        what = f"{len(problems)} problems under {root} ({', '.join(p.name for p in problems)})"
    else:
        files = ", ".join(p.name for p in problems[0].candidates()) or "no candidate yet"
        what = f"{root} ({files})"
    if once:
        return f"scoring what is new in {what}, then exiting; Ctrl-C stops sooner"
    return f"watching {what}: every save of a candidate is scored; Ctrl-C stops"


class HeadlessPrinter:
    def __init__(self, out: TextIO | None = None, as_json: bool = False, progress: bool = False,
                 problem: str | None = None, on_closed: Callable[[], None] | None = None):
        self.out = out if out is not None else sys.stdout  # now: a default bound at import goes stale
        self.on_closed = on_closed  # called once when the reader of `out` leaves (`| head`)
        self.closed = False
        self.as_json = as_json
        self.progress = progress
        self.problem = problem  # named on every line when one watcher scores several problems
        self._seen: dict[str, tuple[str, str]] = {}  # trial id -> the state and message its events last gave
        self._held: tuple[str, ev.StateChanged] | None = None  # a line the next event may make redundant

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, (ev.Progress, ev.QueueChanged)) and not self.progress:
            return
        if self.as_json:
            named = {"problem": self.problem} if self.problem else {}
            self._write(json.dumps({"time": round(time.time(), 3), **named, **event.to_dict()}, default=str))
            return
        held, self._held = self._held, None
        if held is not None and not _redundant(held[1], event):
            self._write(held[0])
        before = self._seen.get(getattr(event, "trial_id", ""))
        told = self._told(event, before)
        if told is None:
            return
        named = f"[{self.problem}] " if self.problem else ""
        line = f"{time.strftime('%H:%M:%S')} {named}{self.text(told)}"
        if _may_be_redundant(told, before):
            self._held = (line, told)
        else:
            self._write(line)

    def _write(self, line: str) -> None:
        if self.closed:
            return
        try:
            self.out.write(printable(line) + "\n")  # file names too are the candidate's to choose
            self.out.flush()
        except BrokenPipeError:  # the reader left (`| head -5`): no more lines, and no traceback for each event
            self.closed = True
            _to_devnull(self.out)
            if self.on_closed is not None:
                self.on_closed()

    def _told(self, event: ev.Event, before: tuple[str, str] | None) -> ev.Event | None:
        """The event as worth a line, or None when it adds nothing to what this trial's lines said."""
        match event:
            case ev.TrialCreated():
                self._seen[event.trial_id] = ("created", "")
            case ev.StateChanged():
                self._seen[event.trial_id] = (event.state, event.message)
                repeated = before is not None and before[0] == event.state and event.message in ("", before[1])
                implied = before == ("created", "") and (event.state, event.message) == (TrialState.VALIDATING.value, "")
                if repeated or implied:
                    return None
            case ev.ResultReady():
                self._seen[event.trial_id] = (event.state, event.summary)
            case ev.DecisionMade() if before is not None:
                return replace(event, reason=_unquoted(event.reason, before[1]))
        return event

    @staticmethod
    def text(event: ev.Event) -> str:
        match event:
            case ev.TrialCreated():
                parent = f" from {event.parent}" if event.parent else " (new root)"
                strategy = f" — {event.strategy}" if event.strategy else ""
                return f"{event.trial_id} {event.file} created{parent}{strategy}"
            case ev.SaveIgnored():
                return f"-- {event.file} {event.how} (head {event.head})"
            case ev.StateChanged():
                return f"{event.trial_id} {event.state}" + (f": {event.message}" if event.message else "")
            case ev.ResultReady():
                return f"{event.trial_id} result {event.state}: {event.summary}"
            case ev.NewBest():
                prev = f" (was {event.previous} {event.previous_speedup:.2f}×)" if event.previous else ""
                origin = f" ({event.origin})" if event.origin else ""
                return f"{event.trial_id} NEW BEST {event.speedup:.2f}×{origin}{prev}"
            case ev.DecisionMade():
                key = f" [{event.key}]" if event.key else ""
                return f"{event.trial_id} next: {event.action}{key} — {event.reason}"
            case ev.Preliminary():
                versus = "".join(f" {r:.2f}× {name}" for name, r in event.speedup.items())
                return (f"{event.trial_id} preliminary {fmt_us(event.median_us)} ±{event.spread:.1%} (n={event.n}){versus}; "
                        "the final number follows")
            case ev.Progress():
                return f"{event.trial_id} progress {event.phase} {event.i or ''}/{event.n or ''} runs={event.runs or ''}"
            case ev.QueueChanged():
                return f"queue running={event.lanes} queued={event.queued}"
            case ev.Notice():
                return f"!! {event.message}"
            case ev.EngineError():
                return f"ERROR {event.message}"
        return str(event.to_dict())


def _to_devnull(out: TextIO) -> None:
    """The closed pipe's descriptor pointed at /dev/null: the lines still buffered, flushed at exit, go there
    instead of into one more BrokenPipeError (as Python's documentation on SIGPIPE advises)."""
    try:
        fd = out.fileno()
    except (OSError, ValueError):  # a stream of no descriptor (a test's StringIO): nothing is flushed at exit
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _may_be_redundant(event: ev.Event, before: tuple[str, str] | None) -> bool:
    """A bare `queued` (the trial may start at once) or a job's end (its result line follows at once)."""
    if not isinstance(event, ev.StateChanged):
        return False
    if event.state == TrialState.QUEUED.value:
        return not event.message
    ran = before is not None and before[0] == TrialState.BENCHMARKING.value
    return ran and event.state in _FINAL


def _redundant(held: ev.StateChanged, event: ev.Event) -> bool:
    """Whether `event` says all the held line would: the trial moved on from `queued` at once, or its result."""
    if getattr(event, "trial_id", None) != held.trial_id:
        return False
    if held.state == TrialState.QUEUED.value:
        return isinstance(event, ev.StateChanged)
    return isinstance(event, ev.ResultReady)


def _unquoted(reason: str, said: str) -> str:
    """A decision's reason without the result's message it quotes (decide quotes its first line)."""
    quoted = first_line(said)
    return reason.replace(f" — {quoted}", "", 1) if quoted else reason
