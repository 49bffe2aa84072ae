"""Work on a daemon thread whose outcome the engine's loop may await but never waits for when it stops:
the reference's analysis runs so, off the lanes (a child job, 13 s a problem on the H200 while the GPU
sat idle), and an engine that stops first leaves it to its supervisor's sweep."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any


def in_background(loop: asyncio.AbstractEventLoop, fn: Callable[..., Any], *args: Any) -> asyncio.Future:
    """`fn(*args)` on a daemon thread; the future holds its outcome, or None where it raised (the lane job
    computes it again and reports why)."""
    future = loop.create_future()

    def settle(outcome: Any) -> None:
        if not future.done():
            future.set_result(outcome)

    def work() -> None:
        try:
            outcome = fn(*args)
        except Exception:  # noqa: BLE001 - None: the lane job computes it again and reports why
            outcome = None
        try:
            loop.call_soon_threadsafe(settle, outcome)
        except RuntimeError:  # the engine's loop is closed: nobody waits for it
            pass

    threading.Thread(target=work, name="analysis", daemon=True).start()
    return future
