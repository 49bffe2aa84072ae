"""Linux process controls trialtui relies on to keep a candidate away from the processes that judge it.

Pure ctypes, no torch: the engine, the supervisor and the checker all use it. Elsewhere than Linux
every call is a no-op that returns False.
"""

from __future__ import annotations

import ctypes
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


def prctl(option: int, value: int) -> bool:
    """True when the kernel took it."""
    return _prctl is not None and _prctl(option, value, 0, 0, 0) == 0


def seal() -> bool:
    """Non-dumpable: another process of the same user can no longer open this one's /proc/PID/fd (its
    pipes), read /proc/PID/mem or ptrace it, unless it holds CAP_SYS_PTRACE."""
    return prctl(PR_SET_DUMPABLE, 0)


def prepare_candidate_child() -> None:
    """Before exec in a candidate's process: SIGKILL when its parent dies, and, where it runs as root,
    no CAP_SYS_PTRACE, which would let it past every seal."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    prctl(PR_CAPBSET_DROP, CAP_SYS_PTRACE)


def start_ticks(pid: int) -> int | None:
    """A process's start time in clock ticks since boot: with the pid, it names one process (pids are reused)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return int(stat[stat.rindex(b")") + 2:].split()[19])
