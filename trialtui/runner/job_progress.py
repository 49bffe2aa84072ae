"""What a job tells its parent while it runs: progress lines and the seconds each step took."""

from __future__ import annotations

import json
import time
from typing import Any


class Splits:
    """Seconds per step of a phase, summed over cases and seeds (`phases_s`): where a save's time goes."""

    def __init__(self, sync: bool):
        self.sync = sync  # on a GPU the marks wait for the queued work, so each step is charged its own
        self.started = time.perf_counter()
        self.seconds: dict[str, float] = {}

    def add(self, name: str, seconds: float) -> None:
        """A step timed inside a marked one (the timed batches' request and copy): summed, no clock moved."""
        self.seconds[name] = round(self.seconds.get(name, 0.0) + seconds, 3)

    def mark(self, name: str) -> None:
        if self.sync:
            import torch

            torch.cuda.synchronize()
        now = time.perf_counter()
        self.seconds[name] = round(self.seconds.get(name, 0.0) + now - self.started, 3)
        self.started = now


class Progress:
    """Progress lines for the parent (seed i/n, timing runs), one JSON object per line."""

    def __init__(self, path: str | None):
        self.fh = open(path, "a", buffering=1) if path else None

    def __call__(self, **event: Any) -> None:
        if self.fh:
            self.fh.write(json.dumps(event) + "\n")

