"""`trialtui watch --headless`: one stable, greppable line per event on stdout (JSON lines with --json)."""

from __future__ import annotations

import json
import sys
import time
from typing import TextIO

from trialtui.core.text import fmt_us
from trialtui.engine import events as ev


class HeadlessPrinter:
    def __init__(self, out: TextIO | None = None, as_json: bool = False, progress: bool = False,
                 problem: str | None = None):
        self.out = out if out is not None else sys.stdout  # now: a default bound at import goes stale
        self.as_json = as_json
        self.progress = progress
        self.problem = problem  # named on every line when one watcher scores several problems

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, (ev.Progress, ev.QueueChanged)) and not self.progress:
            return
        if self.as_json:
            named = {"problem": self.problem} if self.problem else {}
            line = json.dumps({"time": round(time.time(), 3), **named, **event.to_dict()}, default=str)
        else:
            named = f"[{self.problem}] " if self.problem else ""
            line = f"{time.strftime('%H:%M:%S')} {named}{self.text(event)}"
        self.out.write(line + "\n")
        self.out.flush()

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
