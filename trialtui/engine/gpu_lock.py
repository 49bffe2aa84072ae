"""One GPU's lane across the host: every trialtui process takes it before GPU work on that GPU.

Two processes timing on one GPU give each other's noise (three `trialtui bench` at once turned a 420 µs
matmul into 1,372 µs on the H200), so the lanes of one process are not enough. The lock is an
`flock` on a file in a per-user runtime directory, named by the GPU's identity (its UUID where the
driver says it, else its index); the kernel frees it when its holder dies. The file says who holds it,
for whoever waits. Within one process a thread lock does the same, and a context variable marks what
the current chain of calls already holds (a lane job, then its `run_child` in a thread), so holding
is never nested.
"""

from __future__ import annotations

import contextvars
import fcntl
import json
import os
import re
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import ContextManager

RUNTIME_ENV = "TRIALTUI_RUNTIME_DIR"  # where the lock files live; tests point it at their own directory
POLL_S = 0.05  # how often a waiter tries again (flock has no timeout)
REPORT_S = 1.0  # how often a waiter says what it waits for
STALE_S = 5.0  # a waiter's file untouched this long belongs to a process that is gone
NVIDIA_PROC = Path("/proc/driver/nvidia/gpus")

_held: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("trialtui_gpus_held", default=frozenset())
_mutexes: dict[str, threading.Lock] = {}
_mutexes_lock = threading.Lock()

Wait = Callable[[str], None]  # told "waiting for gpu0: held by …" about once a second


@dataclass(frozen=True)
class Holder:
    """Who holds a GPU: what is written in its lock file."""

    what: str
    pid: int
    since: float  # epoch seconds

    def describe(self) -> str:
        return f"{self.what}, pid {self.pid}, since {max(0.0, time.time() - self.since):.0f} s"


def process_name(argv: list[str] | None = None) -> str:
    """This process as a person knows it: `trialtui watch`, `trialtui bench`, `trialtui` (the TUI)."""
    argv = sys.argv if argv is None else argv
    program = Path(argv[0]) if argv and argv[0] else Path("python")
    name = program.parent.name if program.name == "__main__.py" else program.name  # `python -m trialtui`
    if name in ("", "-c", "-m"):
        name = "python"
    sub = next((a for a in argv[1:2] if re.fullmatch(r"[a-z][a-z-]*", a) and not Path(a).exists()), None)
    return f"{name} {sub}" if sub else name


def runtime_dir() -> Path:
    """$TRIALTUI_RUNTIME_DIR, else $XDG_RUNTIME_DIR/trialtui, else /tmp/trialtui-$UID: ours alone (0700)."""
    given = os.environ.get(RUNTIME_ENV)
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    path = Path(given) if given else Path(xdg) / "trialtui" if xdg else Path(f"/tmp/trialtui-{os.getuid()}")
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise PermissionError(f"{path} is not a private directory of this user; trialtui will not put its GPU locks there")
    return path


def gpu_identity(visible: str) -> str:
    """A GPU named as CUDA_VISIBLE_DEVICES names it, as one name for every process of the host: its UUID
    where it is one, or where the driver lists the GPUs in the order CUDA counts them, else `index-N`."""
    visible = visible.strip()
    if not visible.isdigit():
        return re.sub(r"[^A-Za-z0-9_.-]", "_", visible)  # GPU-…/MIG-… already
    uuids = _uuids_in_cuda_order()
    index = int(visible)
    return uuids[index] if index < len(uuids) else f"index-{index}"


def _uuids_in_cuda_order() -> list[str]:
    """UUIDs in PCI bus order, which is CUDA's own order when asked for, or when all GPUs are one model."""
    gpus = []
    try:
        for entry in sorted(NVIDIA_PROC.iterdir()):
            facts = dict(line.split(":", 1) for line in (entry / "information").read_text().splitlines() if ":" in line)
            gpus.append((facts.get("Model", "").strip(), facts.get("GPU UUID", "").strip()))
    except OSError:
        return []
    same_model = len({model for model, _ in gpus}) <= 1
    if not (same_model or os.environ.get("CUDA_DEVICE_ORDER") == "PCI_BUS_ID") or not all(u for _, u in gpus):
        return []
    return [re.sub(r"[^A-Za-z0-9_.-]", "_", uuid) for _, uuid in gpus]


def first_visible(env: dict[str, str] | None) -> str | None:
    """The GPU a job started with `env` uses first (its CUDA_VISIBLE_DEVICES, else ours), or None when it sees none."""
    value = (env or {}).get("CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES"))
    if value is None:
        return "0" if Path("/dev/nvidiactl").exists() else None
    first = value.split(",")[0].strip()
    return None if first in ("", "-1") or not Path("/dev/nvidiactl").exists() else first


class GpuLock:
    """The host-wide lane of one GPU: `acquire` waits (saying for what) until no other holder is left."""

    def __init__(self, gpu: str, name: str | None = None):
        self.gpu = gpu
        self.name = name or f"gpu{gpu}"
        self.key = gpu_identity(gpu)
        self._fd: int | None = None
        with _mutexes_lock:
            self._mutex = _mutexes.setdefault(self.key, threading.Lock())

    @property
    def path(self) -> Path:
        return runtime_dir() / f"gpu-{self.key}.lock"

    def holder(self) -> Holder | None:
        """Who wrote the lock file last (the holder, while the file is locked)."""
        try:
            data = json.loads(self.path.read_text())
            return Holder(str(data["what"]), int(data["pid"]), float(data["since"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def waiting_text(self) -> str:
        holder = self.holder()
        return f"waiting for {self.name}: held by {holder.describe() if holder else 'another process'}"

    def acquire(self, what: str | None = None, on_wait: Wait | None = None,
                give_up: Callable[[], bool] | None = None) -> bool:
        """Take the GPU; False when `give_up` said so first. Blocks the calling thread."""
        reported = [0.0]

        def waiting() -> bool:
            if give_up is not None and give_up():
                return False
            if on_wait is not None and time.monotonic() - reported[0] >= REPORT_S:
                reported[0] = time.monotonic()
                on_wait(self.waiting_text())
            return True

        while not self._mutex.acquire(timeout=POLL_S):  # another thread of this process holds it
            if not waiting():
                return False
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            self._mutex.release()
            raise
        place, marker = (time.time(), os.getpid()), None
        try:
            while True:
                if not self._ahead_of(place):  # first come, first served: flock alone favours whoever polls first
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        pass
                if not waiting():
                    os.close(fd)
                    self._mutex.release()
                    return False
                marker = self._queued(marker, place)
                time.sleep(POLL_S)
        finally:
            if marker is not None:
                marker.unlink(missing_ok=True)
        record = json.dumps({"what": what or process_name(), "pid": os.getpid(), "since": time.time()}).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, record, 0)
        self._fd = fd
        return True

    def _queued(self, marker: Path | None, place: tuple[float, int]) -> Path:
        """This process's place among the waiters: a file with its first wait's time, touched while it waits."""
        if marker is None:
            marker = runtime_dir() / f"gpu-{self.key}.wait-{os.getpid()}"
            marker.write_text(repr(place[0]))
        else:
            os.utime(marker)
        return marker

    def _ahead_of(self, place: tuple[float, int]) -> bool:
        """Whether another process has waited for this GPU longer (a waiter that stopped touching its file is gone)."""
        now = time.time()
        for marker in runtime_dir().glob(f"gpu-{self.key}.wait-*"):
            try:
                pid = int(marker.name.rsplit("-", 1)[1])
                if pid != os.getpid() and now - marker.stat().st_mtime < STALE_S and (float(marker.read_text()), pid) < place:
                    return True
            except (OSError, ValueError):
                continue
        return False

    def others_waiting(self) -> bool:
        """Whether another process waits for this GPU now (an engine's optional work lets it go first)."""
        return self._ahead_of((float("inf"), 0))

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        os.close(fd)  # the flock goes with the last descriptor of its open file
        self._mutex.release()

    @contextmanager
    def owned(self) -> Iterator[None]:
        """Mark the GPU held for this chain of calls (threads started from it with its context included)."""
        token = _held.set(_held.get() | {self.key})
        try:
            yield
        finally:
            _held.reset(token)

    def holds(self) -> bool:
        """Whether this chain of calls already holds this GPU."""
        return self.key in _held.get()

    @contextmanager
    def held(self, what: str | None = None, on_wait: Wait | None = None,
             give_up: Callable[[], bool] | None = None) -> Iterator[bool]:
        """Hold the GPU for the block (yields False, holding nothing, when `give_up` said so first)."""
        if self.holds():
            yield True
            return
        if not self.acquire(what, on_wait, give_up):
            yield False
            return
        try:
            with self.owned():
                yield True
        finally:
            self.release()


def held_for(env: dict[str, str] | None, on_wait: Wait | None = None,
             give_up: Callable[[], bool] | None = None) -> ContextManager[bool]:
    """Hold the GPU a job started with `env` would use, unless it sees none or this chain holds it already."""
    gpu = first_visible(env)
    return GpuLock(gpu).held(on_wait=on_wait, give_up=give_up) if gpu is not None else nullcontext(True)
