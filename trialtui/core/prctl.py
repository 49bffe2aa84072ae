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
PR_SET_SECCOMP = 22
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_MODE_FILTER = 2
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


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


_ALLOW_ALL = (_SockFilter * 1)(_SockFilter(0x06, 0, 0, 0x7FFF0000))  # BPF_RET | BPF_K, SECCOMP_RET_ALLOW


def mark_lineage() -> bool:
    """One seccomp filter that allows every system call, on this thread and every process started from it.
    No process can take a filter off, so the count of filters (`lineage`) tells the candidate's processes
    from the checker's own even after a double fork has re-parented them (runner/process_tree.strays). It
    needs no_new_privs, which is as lasting: a candidate gains nothing by running a setuid program."""
    if _prctl is None or not prctl(PR_SET_NO_NEW_PRIVS, 1):
        return False
    prog = _SockFprog(1, _ALLOW_ALL)
    return _prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) == 0


def lineage(pid: int) -> int | None:
    """How many seccomp filters a process carries (no_new_privs, 0 or 1, on kernels before 5.9, which do not
    count them); None when it is gone. Filters are only ever added, and inherited by every child."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    count = fields.get("Seccomp_filters", fields.get("NoNewPrivs"))
    return int(count) if count is not None and count.strip().isdigit() else None


def start_ticks(pid: int) -> int | None:
    """A process's start time in clock ticks since boot: with the pid, it names one process (pids are reused)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return int(stat[stat.rindex(b")") + 2:].split()[19])
