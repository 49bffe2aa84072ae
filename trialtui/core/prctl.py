"""Linux process controls trialtui relies on to keep a candidate away from the processes that judge it.

Pure ctypes, no torch: the engine, the supervisor and the checker all use it. Elsewhere than Linux
every call is a no-op that returns False.
"""

from __future__ import annotations

import ctypes
import resource
import signal
from pathlib import Path

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
CAP_SYS_PTRACE = 19

try:
    _libc = ctypes.CDLL(None, use_errno=True)
    _prctl = _libc.prctl
except (OSError, AttributeError):
    _prctl = None


def prctl(option: int, value: int, *, strict: bool = False) -> bool:
    """True when the kernel took it; with `strict` (a process that must not run without it: the supervisor,
    the job's stub), OSError when it did not."""
    if _prctl is not None and _prctl(option, value, 0, 0, 0) == 0:
        return True
    if strict:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")
    return False


def seal() -> bool:
    """Non-dumpable: another process of the same user can no longer open this one's /proc/PID/fd (its
    pipes), read /proc/PID/mem or ptrace it, unless it holds CAP_SYS_PTRACE."""
    return prctl(PR_SET_DUMPABLE, 0)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


_CAP_V3 = 0x20080522


def drop_ptrace_now() -> bool:
    """CAP_SYS_PTRACE out of this process's effective and permitted sets at once (dropping it from the
    bounding set takes effect only at exec; a forked candidate's process never execs). True when it
    is gone, or was never held."""
    if _prctl is None or not hasattr(_libc, "capget"):
        return False
    header, data = _CapHeader(_CAP_V3, 0), (_CapData * 2)()
    if _libc.capget(ctypes.byref(header), data) != 0:
        return False
    bit = 1 << CAP_SYS_PTRACE
    if not (data[0].effective | data[0].permitted | data[0].inheritable) & bit:
        return True
    data[0].effective &= ~bit
    data[0].permitted &= ~bit
    data[0].inheritable &= ~bit
    return _libc.capset(ctypes.byref(header), data) == 0


def prepare_candidate_child() -> None:
    """Before exec in a candidate's process: SIGKILL when its parent dies, where it runs as root no
    CAP_SYS_PTRACE (which would let it past every seal), and the candidate's mark (`mark_lineage`)."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    prctl(PR_CAPBSET_DROP, CAP_SYS_PTRACE)
    mark_lineage()


MARK = 10**18  # µs of real-time CPU: no limit in practice (unprivileged processes cannot run real-time), and a value


def mark_lineage() -> bool:
    """A hard limit of MARK on real-time CPU time (RLIMIT_RTTIME), on this process and every process started
    from it. Without privilege a hard limit can only be lowered, so a limit at or under MARK (`marked`) tells
    the candidate's processes from the checker's own (unlimited) even after a double fork has re-parented them
    (runner/process_tree.strays); it changes nothing else, since only real-time scheduling is held to it."""
    try:
        resource.setrlimit(resource.RLIMIT_RTTIME, (MARK, MARK))
        return True
    except (ValueError, OSError, AttributeError):
        return False


def marked(pid: int) -> bool | None:
    """Whether a process carries the mark (None when it is gone or cannot be read)."""
    try:
        hard = resource.prlimit(pid, resource.RLIMIT_RTTIME)[1]
    except (ProcessLookupError, PermissionError, OSError, AttributeError):
        return None
    return hard != resource.RLIM_INFINITY and hard <= MARK


def start_ticks(pid: int) -> int | None:
    """A process's start time in clock ticks since boot: with the pid, it names one process (pids are reused)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return int(stat[stat.rindex(b")") + 2:].split()[19])
