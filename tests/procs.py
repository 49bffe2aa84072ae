"""Waiting for processes by event, never by a fixed delay: a test that needs a process in some state
polls for that state with a generous deadline (a busy CI machine may take many seconds), and fails
saying what it waited for.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

DEADLINE_S = float(os.environ.get("TRIALTUI_TEST_DEADLINE_S", "180"))  # generous: torch imports in ~2 s on an idle machine, several times that under load


def wait_for(probe: Callable[[], T], what: str, timeout_s: float | None = None, every_s: float = 0.05) -> T:
    """Poll `probe` until it returns something truthy (returned); fail naming `what` at the deadline."""
    timeout_s = DEADLINE_S if timeout_s is None else timeout_s
    deadline = time.monotonic() + timeout_s
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout_s:g} s waiting for {what}")
        time.sleep(every_s)


def descendants(pid: int) -> list[int]:
    """Every live process below `pid` (children, grandchildren, ...)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parents[int(entry)] = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        kids = [child for child, p in parents.items() if p == parent]
        found += kids
        frontier += kids
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def blocked_reading(pid: int, fd: int | None = None) -> bool:
    """Whether the process sits in read(2) (on `fd`, if given): e.g. a warm job waiting for its spec."""
    try:
        fields = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:
        return False
    return bool(fields) and fields[0] == "0" and (fd is None or (len(fields) > 1 and int(fields[1], 16) == fd))


def children(pid: int) -> list[int]:
    """The process's children, whichever of its threads started them."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def warm_job_waiting(warm, module: str, timeout_s: float | None = None) -> int:
    """Wait until WarmChildren's job process for `module` has done its imports and blocks on stdin
    for a spec (the state the engine's warm start relies on); returns that process's pid.

    The job is the child of the supervisor's stub (supervisor, stub, job): an exec'd one or a fork
    of the fork server, whose command line is the server's."""
    supervisors = [s.process.pid for key, waiting in warm._ready.items() if key[0] == module for s in waiting]

    def waiting() -> int | None:
        for sup in supervisors:
            for stub in children(sup):
                for pid in children(stub):
                    if blocked_reading(pid, fd=0):
                        return pid
        return None

    return wait_for(waiting, f"the warm {module} job to finish its imports and wait for a spec", timeout_s)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
