"""The job's processes as the supervisor sees them through /proc: every descendant (the supervisor is their
subreaper), the sweep that kills them all at the end, and the limits set on a running job."""

from __future__ import annotations

import os
import resource
import signal
import time
from pathlib import Path
from typing import Any


def descendants(root: int) -> list[int]:
    """Every live process below `root`, from one pass over /proc."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_bytes()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        parents.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def reap() -> None:
    """Collect exited children: the job's orphans are ours (we are their subreaper)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def sweep() -> int:
    """SIGKILL every descendant until none is left (a fork loop races the first passes); returns how many."""
    killed: set[int] = set()
    for _ in range(200):
        reap()
        alive = descendants(os.getpid())
        if not alive:
            break
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
        time.sleep(0.005)
    reap()
    return len(killed)


def uid_tasks() -> int:
    """Tasks (processes and threads) of this user: RLIMIT_NPROC counts them all, so the limit is on top."""
    uid, total = os.getuid(), 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            status = Path(f"/proc/{entry}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields.get("Uid", "-1").split()[0]) == uid:
            total += int(fields.get("Threads", "1"))
    return total


def apply_limits(pid: int, limits: dict[str, Any]) -> None:
    """Set the job's limits on a running process: a warm one waited without them, its imports done."""
    for which, value in rlimits(limits):
        if which == resource.RLIMIT_CPU:
            value += cpu_seconds(pid)  # the imports a warm process did are not the job's
        try:
            hard = resource.prlimit(pid, which)[1]
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.prlimit(pid, which, (value, value))
        except (ProcessLookupError, PermissionError):
            return  # gone already: its exit is reported as such


def cpu_seconds(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return 0
    fields = stat[stat.rindex(b")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) // os.sysconf("SC_CLK_TCK") + 1


def rlimits(limits: dict[str, Any]) -> list[tuple[int, int]]:
    """(resource, value) pairs from the engine's limits; None leaves a limit as inherited."""
    mb = 1 << 20
    pairs = []
    if limits.get("cpu_s"):
        pairs.append((resource.RLIMIT_CPU, int(limits["cpu_s"])))
    if limits.get("address_space_mb"):
        pairs.append((resource.RLIMIT_AS, int(limits["address_space_mb"]) * mb))
    if limits.get("file_size_mb"):
        pairs.append((resource.RLIMIT_FSIZE, int(limits["file_size_mb"]) * mb))
    if limits.get("open_files"):
        pairs.append((resource.RLIMIT_NOFILE, int(limits["open_files"])))
    if limits.get("processes"):
        pairs.append((resource.RLIMIT_NPROC, uid_tasks() + int(limits["processes"])))
    return pairs
