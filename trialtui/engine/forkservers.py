"""The engine's end of the fork servers (trialtui.runner.forkserver): warm supervisors in milliseconds.

A warm job used to be a new interpreter that imported torch while it waited: seconds of CPU for
every job, two per save on the CPU (the compile stage and the checker), and on a GPU lane the wait
between short jobs. A fork server per warm key (module and environment) pays that import once;
each warm supervisor is a fork of it, and so is its job.

The servers belong to the process, not to one engine: `server()` keeps them for every engine and
host loop the process runs (a test session runs hundreds), and a module's server is a fork of a base
that imported torch once (runner/forkserver.py), so the compile stage's server and the checker's cost
one torch import between them. A server left over from an environment no longer asked for is closed
once more than KEEP are kept; supervisors it forked run on.

`Forked` stands in for the `subprocess.Popen` of a supervisor: the same pipes, `poll`, `wait` and
`pid`. The supervisor is not the engine's child (the kernel reaps it for the server), so its exit
is watched through a pidfd. Its pid arrives when the server has forked it; nothing here blocks on
that except `pid`, which only a kill needs. A module's server, forked by a base, is watched the same way.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque

from trialtui.core import job_kinds
from trialtui.runner.forkserver import PID, REQUEST, SERVER

FORKSERVER = job_kinds.FORKSERVER
PID_WAIT_S = 120.0  # a kill waits this long for a server still importing torch to say which pid it forked
LATE_ENV = ("TRITON_INTERPRET", "CUDA_VISIBLE_DEVICES")  # read after torch's import (at triton's, at CUDA's init): a base need not have them
KEEP = 8  # servers kept for the process: bases and modules' servers of every environment lately asked for


def job_environment(env: dict[str, str]) -> dict[str, str]:
    """What a server's jobs get: this process's environment, the job's on top."""
    return {**os.environ, **env, "PYTHONUNBUFFERED": "1"}


class ForkServer:
    """One server process; `spawn()` gives a supervisor forked from it, or None once it is gone.

    Module "" is a base: it imports torch only, and `fork_server()` makes a module's server of it."""

    def __init__(self, module: str, env: dict[str, str], base: "ForkServer | None" = None) -> None:
        """The server's environment is its jobs' (a lane's GPU, the interpreter flag): set from its start,
        for what reads it then (PYTHONPATH) or at import (@triton.jit reads TRITON_INTERPRET when it decorates).
        With `base`, a fork of it that sets that environment before its module's imports."""
        self._sock, theirs = socket.socketpair()
        self._pending: deque[Forked] = deque()
        self._lock = threading.Lock()
        self._reply = b""
        with theirs:
            if base is None:
                self.process: subprocess.Popen | Forked = subprocess.Popen(
                    [sys.executable, "-P", "-m", FORKSERVER, *([module] if module else [])], stdin=theirs,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=job_environment(env),
                    start_new_session=True,
                )
            else:
                self.process = base.fork_server(theirs, module, job_environment(env))

    def alive(self) -> bool:
        return self.process.poll() is None

    def spawn(self) -> "Forked | None":
        if not self.alive():
            return None
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        forked = Forked(self, in_w, out_r)
        try:
            self._request(REQUEST, forked, [in_r, out_w])
        except OSError:
            return None
        finally:
            os.close(in_r)
            os.close(out_w)
        return forked

    def fork_server(self, sock: socket.socket, module: str, env: dict[str, str]) -> "Forked":
        """A base's child that becomes MODULE's server on `sock`, with `env` as its whole environment."""
        forked = Forked(self)
        launch_r, launch_w = os.pipe()
        try:
            with os.fdopen(launch_w, "wb") as fh:  # a few kB: the pipe holds it without a reader
                fh.write(json.dumps({"module": module, "env": env}).encode())
            self._request(SERVER, forked, [sock.fileno(), launch_r])
        except OSError:
            pass  # abandoned: the server is dead
        finally:
            os.close(launch_r)
        return forked

    def _request(self, kind: bytes, forked: "Forked", fds: list[int]) -> None:
        try:
            with self._lock:
                socket.send_fds(self._sock, [kind], fds)
                self._pending.append(forked)
        except OSError:
            forked.abandon()
            raise

    def read_replies(self, timeout: float) -> None:
        """Give each pending supervisor its pid, as the replies arrive (0: none was forked). With no
        timeout it never waits, not even for another thread that is reading them."""
        if not self._lock.acquire(timeout=-1 if timeout else 0):
            return
        try:
            deadline = time.monotonic() + timeout
            while self._pending:
                left = deadline - time.monotonic()
                try:
                    if not select.select([self._sock], [], [], max(0.0, left))[0]:
                        return
                    data = self._sock.recv(PID.size * len(self._pending) - len(self._reply))
                except (OSError, ValueError):  # the server was killed, or closed here: as EOF
                    data = b""
                if not data:
                    for forked in self._pending:
                        forked.set_pid(0)
                    self._pending.clear()
                    return
                self._reply += data
                while len(self._reply) >= PID.size and self._pending:
                    (pid,), self._reply = PID.unpack(self._reply[:PID.size]), self._reply[PID.size:]
                    self._pending.popleft().set_pid(pid)
                if left <= 0:
                    return
        finally:
            self._lock.release()

    def close(self) -> None:
        """EOF on its socket: the server exits; supervisors it forked run on to the end of their jobs."""
        self._sock.close()
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


_servers: dict[tuple, ForkServer] = {}  # the process's servers, the one asked for last at the end
_servers_lock = threading.Lock()


def server(module: str, env: dict[str, str]) -> ForkServer:
    """A live server for MODULE's warm jobs in `env` (over this process's environment), forked from
    a base of the same environment but for LATE_ENV; either is started if it is not running."""
    key = (module, tuple(sorted(job_environment(env).items())))
    with _servers_lock:
        found = _servers.pop(key, None)
        if found is None or not found.alive():
            early = {name: value for name, value in env.items() if name not in LATE_ENV}
            base_key = ("", tuple(sorted(job_environment(early).items())))
            base = _servers.pop(base_key, None)
            if base is None or not base.alive():
                base = ForkServer("", early)
            _servers[base_key] = base
            found = ForkServer(module, env, base)
        _servers[key] = found
        stale = []
        while len(_servers) > KEEP:
            stale.append(_servers.pop(next(iter(_servers))))
    for old in stale:
        old.close()
    return found


def running(module: str, env: dict[str, str]) -> ForkServer | None:
    """The process's live server for MODULE in `env`, if one was started; none is started here."""
    key = (module, tuple(sorted(job_environment(env).items())))
    with _servers_lock:
        found = _servers.get(key)
    return found if found is not None and found.alive() else None


@atexit.register
def close_servers() -> None:
    """Every server of this process (each would exit at the EOF of this process's end anyway)."""
    with _servers_lock:
        servers = sorted(_servers.values(), key=lambda each: isinstance(each.process, subprocess.Popen))  # bases last
        _servers.clear()
    for each in servers:
        each.close()


class Forked:
    """A supervisor (or a module's server) forked by a `ForkServer`, shaped like its `subprocess.Popen`.

    Threads share it (a lane's job, the warm pool's checks): its state only ever moves forward
    (pid unknown, known, exited) and its pidfd stays open until it is dropped.
    """

    def __init__(self, server: ForkServer, stdin_fd: int | None = None, stdout_fd: int | None = None) -> None:
        self._server = server
        self.stdin = os.fdopen(stdin_fd, "wb") if stdin_fd is not None else None
        self.stdout = os.fdopen(stdout_fd, "rb") if stdout_fd is not None else None
        self._pidfd: int | None = None
        self._pid: int | None = None
        self.returncode: int | None = None

    def set_pid(self, pid: int) -> None:
        """Called under the server's lock as its reply arrives; the pidfd is set before the pid."""
        if pid:
            try:
                self._pidfd = os.pidfd_open(pid)
            except OSError:  # already gone and reaped
                self.returncode = 0
        else:
            self.returncode = -9  # none was forked
        self._pid = pid

    def abandon(self) -> None:
        self.returncode, self._pid = -9, 0

    @property
    def pid(self) -> int:
        if self._pid is None:
            self._server.read_replies(PID_WAIT_S)
        return self._pid or 0

    def kill(self) -> None:
        if self.pid > 0 and self.poll() is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def poll(self) -> int | None:
        if self.returncode is None and self._pid is None:
            self._server.read_replies(0)
            if self._pid is None and not self._server.alive():
                self.returncode = -9
        pidfd = self._pidfd
        if self.returncode is None and pidfd is not None and select.select([pidfd], [], [], 0)[0]:
            self.returncode = 0  # the kernel reaped it for the server: how it ended, its events said
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(f"supervisor {self._pid}", timeout)
            pidfd = self._pidfd
            if pidfd is None:
                self._server.read_replies(min(0.05, left) if left is not None else 0.05)
            else:
                select.select([pidfd], [], [], left)
        return self.returncode

    def __del__(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
