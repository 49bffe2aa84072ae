"""What the checker's modules know of the candidate's process: the link they are handed (`CandidateLink`),
the failure a request raises, and the job's deadline. They take the link as an object; only the job
that starts the process imports runner/candidate_link.py."""

from __future__ import annotations

import time
from typing import Any, Callable, Protocol


class CandidateFailed(Exception):
    """The candidate's process failed a request: it raised, died, hung or sent something malformed."""

    def __init__(self, message: str, state: str = "error", traceback: str = ""):
        super().__init__(message)
        self.state = state
        self.traceback = traceback


class Running(Protocol):
    """The candidate's process as `subprocess.Popen` gives it (or a fork that behaves so)."""

    def poll(self) -> int | None: ...


class CandidateLink(Protocol):
    """The checker's handle on the candidate's process (runner/candidate_link.CandidateProcess)."""

    @property
    def process(self) -> Running: ...

    def request(self, op: str, payload: Any = None, *, timeout_s: float, into: str = "cpu",
                max_bytes: int | None = None, meanwhile: Callable[[Callable[[], bool], float], None] | None = None,
                **header: Any) -> tuple[dict[str, Any], Any]:
        """Send one request and wait for its reply; failures become CandidateFailed. `meanwhile(answered,
        deadline)`: run once the request is sent (the checker watches its landing pad: runner/landing.py)."""
        ...

    def hold(self) -> None:
        """The candidate's processes stopped until the next request, while the checker measures."""
        ...


class Deadline:
    """The job's time left, so a hang is reported as the step that hung, before the parent's hard kill.

    `until` is that kill's time (the spec's `deadline`): the total counts back from it, so the seconds the
    job took to start (a cold torch import) are not granted twice. The margin, at most a quarter of the
    total, is the job's time to report the hang before that kill."""

    def __init__(self, total_s: float, margin_s: float = 3.0, *, until: float | None = None):
        kill = time.monotonic() + total_s if until is None else until
        self.end = kill - min(margin_s, total_s / 4)

    def left(self) -> float:
        return max(0.0, self.end - time.monotonic())
