"""The TUI as `trialtui serve` runs it: one `trialtui open` per browser tab, behind textual-serve's pipes.

Such a process must end when its tab or its server goes, or on a signal, even while it starts: textual's
web driver ignores the end of its input, blocks the app on a pipe nobody reads, and listens to no SIGHUP,
and a process left behind holds the problem's lock. `ServedDriver` leaves on any of those, and a process
that has not ended `GRACE_S` after it was told to (a job's shutdown that hangs) ends then: the kernel
drops the lock with it, job supervisors see their pipe close and kill their jobs, and every trial is
already journaled.
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import sys
import threading
import time
from typing import Any

from textual import messages
from textual.app import App
from textual.drivers.web_driver import WebDriver

from trialtui.core.prctl import PR_SET_PDEATHSIG, prctl

WEB_DRIVER = "textual.drivers.web_driver:WebDriver"  # what textual-serve sets in TEXTUAL_DRIVER
GRACE_S = 10.0  # from "leave" to the end of the process, whatever the app is doing
LEAVE_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def served() -> bool:
    """Whether this process is a tab of `trialtui serve` (or of any textual-serve)."""
    return os.environ.get("TEXTUAL_DRIVER") == WEB_DRIVER


def serve_app(app: App[Any]) -> None:
    """Make `app` a served tab's: it dies with the server (its parent: the serve command execs us)."""
    prctl(PR_SET_PDEATHSIG, signal.SIGHUP)
    app.driver_class = ServedDriver


class ServedDriver(WebDriver):
    """textual's web driver that leaves when its server says quit, its input ends, its output's reader is
    gone, or a signal comes; it never blocks the app on output once it is leaving."""

    def __init__(self, app: App[Any], **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self._write = self._write_all
        self._leaving = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        os.set_blocking(self.fileno, False)  # a full pipe waits in _write_all, where leaving can stop it

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view and not self._leaving.is_set():
            try:
                view = view[os.write(self.fileno, view):]
            except BlockingIOError:
                select.select([], [self.fileno], [], 0.25)
            except BrokenPipeError:  # the server is gone
                self.leave()

    def start_application_mode(self) -> None:
        self._loop = asyncio.get_running_loop()
        super().start_application_mode()
        for number in LEAVE_SIGNALS:  # a Python handler: it runs even while the loop is stuck
            signal.signal(number, self._on_signal)

    def _on_signal(self, number: int, _frame: Any) -> None:
        if self._leaving.is_set():  # told twice: no more waiting
            os._exit(128 + number)
        self.leave()

    def on_meta(self, packet_type: str, payload: dict[str, object]) -> None:
        if packet_type == "quit":  # the tab closed (textual-serve says so for every way it ends)
            self.leave()
        else:
            super().on_meta(packet_type, payload)

    def run_input_thread(self) -> None:
        super().run_input_thread()
        if not self.exit_event.is_set():  # stdin ended before the app did: the server is gone
            self.leave()

    def leave(self) -> None:
        """Quit the app, and end the process GRACE_S later if quitting has not ended it."""
        if self._leaving.is_set():
            return
        self._leaving.set()
        threading.Thread(target=_end_after, args=(GRACE_S,), name="trialtui-leave", daemon=True).start()
        if self._loop is not None and not self._loop.is_closed():
            asyncio.run_coroutine_threadsafe(self._app._post_message(messages.ExitApp()), loop=self._loop)


def _end_after(seconds: float) -> None:
    time.sleep(seconds)
    sys.stderr.write(f"trialtui open: still running {seconds:g} s after its tab or server went; ending now\n")
    sys.stderr.flush()
    os._exit(1)
