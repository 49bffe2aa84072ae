"""The job's processes as the supervisor sees them through /proc: every descendant (the supervisor is their
subreaper), the sweep that kills them all at the end, the limits set on a running job, and a process tree held
still (SIGSTOP) while the checker measures between the candidate's batches."""

from __future__ import annotations

import os
import resource
import signal
import time
from pathlib import Path
from typing import Any

from trialtui.core.prctl import marked


def descendants(root: int) -> list[int]:
    """Every live process below `root`, from one pass over /proc."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        ppid = _parent(int(entry))
        if ppid is not None:
            parents.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def subtree(root: int) -> list[int]:
    """The processes under `root`, from its tasks' children (fast: no pass over /proc), else `descendants`."""
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        try:
            children = _children(pid)
        except FileNotFoundError:
            return descendants(root) if pid == root and Path(f"/proc/{root}").exists() else found
        except OSError:
            continue
        found += children
        todo += children
    return found


def strays(root: int, spawner: int | None = None) -> list[int]:
    """What left `root`'s tree for this process (a subreaper: a double fork re-parents here, to its main thread;
    `clone(CLONE_PARENT)` makes a sibling of root, a child of `spawner`, the thread that started it), and
    everything under it: those children that carry the candidate's mark (core.prctl.marked), where root carries
    it and this process does not. The checker's own children (a torch.compile worker) carry none."""
    if not marked(root) or marked(os.getpid()) is not False:
        return []
    mine: list[int] = []
    for tid in dict.fromkeys([os.getpid(), spawner or os.getpid()]):
        try:
            mine += [int(c) for c in Path(f"/proc/{os.getpid()}/task/{tid}/children").read_text().split()]
        except OSError:  # no children files: the pass over /proc
            mine = [pid for pid in descendants(os.getpid()) if _parent(pid) == os.getpid()]
            break
    found = []
    for child in dict.fromkeys(mine):
        if child != root and marked(child):
            found += [child, *subtree(child)]
    return found


def _children(pid: int) -> list[int]:
    return [int(c) for t in os.listdir(f"/proc/{pid}/task") for c in Path(f"/proc/{pid}/task/{t}/children").read_text().split()]


def _parent(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return int(stat[stat.rindex(b")") + 2:].split()[1])


def hold(root: int, settle_s: float = 0.05, spawner: int | None = None) -> list[int]:
    """SIGSTOP `root`, every process under it and its `strays`, and wait (up to `settle_s`) until they are
    stopped: the pids stopped, for `release`. A stopped process runs nothing on the CPU, queues nothing more
    for the GPU and sends no SIGCONT to the others."""
    held: list[int] = []
    for _ in range(3):  # a fork in flight shows on the next pass
        new = [pid for pid in dict.fromkeys([root, *subtree(root), *strays(root, spawner)]) if pid not in held]
        for pid in new:
            try:
                os.kill(pid, signal.SIGSTOP)
                held.append(pid)
            except (ProcessLookupError, PermissionError):
                pass
        if not new:
            break
    until = time.monotonic() + settle_s
    while time.monotonic() < until and not all(_stopped(pid) for pid in held):
        time.sleep(0.0002)
    return held


def release(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGCONT)
        except (ProcessLookupError, PermissionError):
            pass


def _stopped(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return True  # gone
    return stat[stat.rindex(b")") + 2:stat.rindex(b")") + 3] in (b"T", b"t", b"Z", b"X")


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
