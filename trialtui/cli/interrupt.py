"""A person's Ctrl-C ends `trialtui`, whatever the shell or the process that started it left behind.

A process inherits an ignored SIGINT (`nohup`, a non-interactive shell's background job, a test
runner's worker) and a blocked signal mask across exec; Python then installs no KeyboardInterrupt
and Ctrl-C does nothing. The CLI takes SIGINT back first thing. A Ctrl-C raises KeyboardInterrupt as
usual (every command cancels its jobs on it) and starts a grace period: if the process is still
alive GRACE_S later, or at a second Ctrl-C, it leaves at once. Its jobs' supervisors see their pipes
close and end every process of theirs (docs/SECURITY.md), so leaving never leaves a job behind.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

GRACE_S = 10.0
EXIT_CODE = 130  # 128 + SIGINT, as a shell reports a Ctrl-C


class CtrlC:
    """The SIGINT handler: KeyboardInterrupt the first time, with a deadline; the second time, out now."""

    def __init__(self, grace_s: float = GRACE_S) -> None:
        self.grace_s = grace_s
        self.seen = False

    def install(self) -> None:
        if hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
        if signal.getsignal(signal.SIGTERM) == signal.SIG_IGN:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, self)

    def __call__(self, signum, frame) -> None:
        if self.seen:
            self.leave("a second Ctrl-C")
        self.seen = True
        threading.Thread(target=self._deadline, name="ctrl-c deadline", daemon=True).start()
        raise KeyboardInterrupt

    def _deadline(self) -> None:
        time.sleep(self.grace_s)
        self.leave(f"still shutting down {self.grace_s:g} s after Ctrl-C")

    @staticmethod
    def leave(why: str) -> None:
        try:
            from trialtui.engine.jobs import cancel_all

            cancel_all()
        except Exception:  # noqa: BLE001 - leaving anyway: the supervisors sweep their jobs when we are gone
            pass
        print(f"trialtui: {why}; leaving now", file=sys.stderr, flush=True)
        os._exit(EXIT_CODE)


def terminate_as_ctrl_c() -> None:
    """SIGTERM handled as the CLI's Ctrl-C (where that handler is in place): a `watch` a service manager or `kill`
    stops closes its engines and store as at Ctrl-C, its trials in flight left interrupted, not queued."""
    handler = signal.getsignal(signal.SIGINT)
    if isinstance(handler, CtrlC):
        signal.signal(signal.SIGTERM, handler)
