"""The checker's handle on the candidate's process: start it, ask it one thing at a time, read replies as data.

The candidate's process gets no path, argument, descriptor or environment variable that leads to
the result: its argv names only the exchange directories for tensor bytes, its environment is the
job's minus trialtui's own variables, its descriptors are the two protocol pipes and the log.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from trialtui.core.prctl import prepare_candidate_child
from trialtui.runner.wire import Channel, ChannelClosed, WireError, exchange_dirs

class CandidateFailed(Exception):
    """The candidate's process failed a request: it raised, died, hung or sent something malformed."""

    def __init__(self, message: str, state: str = "error", traceback: str = ""):
        super().__init__(message)
        self.state = state
        self.traceback = traceback


class CandidateProcess:
    """A fresh process per job; its imports overlap with the checker loading the reference."""

    def __init__(self, env: dict[str, str] | None = None):
        self.exchange = exchange_dirs()
        self.scratch = Path(tempfile.mkdtemp(prefix="trialtui-cwd-"))
        child_env = {k: v for k, v in (env or os.environ).items() if not k.startswith("TRIALTUI_")}
        child_env["PYTHONUNBUFFERED"] = "1"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "trialtui.runner.candidate", *map(str, self.exchange)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, cwd=self.scratch,
            env=child_env, close_fds=True, preexec_fn=prepare_candidate_child,
        )
        self.channel = Channel(self.process.stdout, self.process.stdin, self.exchange, "chk")

    def request(self, op: str, payload: Any = None, *, timeout_s: float, into: str = "cpu",
                max_bytes: int | None = None, **header: Any) -> tuple[dict[str, Any], Any]:
        """Send one request and wait for its reply; failures become CandidateFailed with a clear message."""
        try:
            self.channel.send({"op": op, **header}, payload)
        except ChannelClosed:
            raise CandidateFailed(self._death(f"before {op}")) from None
        ready, _, _ = select.select([self.process.stdout], [], [], max(0.0, timeout_s))
        if not ready:
            self.kill()
            raise CandidateFailed(f"the candidate did not answer {op!r} in time; its process was killed", state="timeout")
        try:
            reply, out = self.channel.recv(device=into, max_bytes=max_bytes)
        except ChannelClosed:
            raise CandidateFailed(self._death(f"during {op}")) from None
        except WireError as exc:
            raise CandidateFailed(f"the candidate's process sent a malformed reply: {exc}") from None
        if reply.get("ok") is not True:
            raise CandidateFailed(str(reply.get("error") or "failed")[:2000], traceback=str(reply.get("traceback") or "")[:4000])
        return reply, out

    def _death(self, when: str) -> str:
        try:
            code = self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.kill()
            return f"the candidate's process closed its channel {when}"
        if code < 0:
            return f"the candidate's process died from {signal.Signals(-code).name} {when}"
        return f"the candidate's process exited with code {code} {when}"

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def close(self) -> None:
        try:
            if self.process.poll() is None:
                self.channel.send({"op": "exit"})
                self.process.wait(timeout=2)
        except (ChannelClosed, subprocess.TimeoutExpired):
            pass
        self.kill()
        for directory in self.exchange:
            shutil.rmtree(directory, ignore_errors=True)
        shutil.rmtree(self.scratch, ignore_errors=True)


class Deadline:
    """The job's time left, so a hang is reported as the step that hung, before the parent's hard kill."""

    def __init__(self, total_s: float, margin_s: float = 3.0):
        self.end = time.monotonic() + max(1.0, total_s - margin_s)

    def left(self) -> float:
        return max(0.0, self.end - time.monotonic())
