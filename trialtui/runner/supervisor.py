"""The disposable process between the engine and one job: limits, a capped log, and a sweep at the end.

`python -m trialtui.runner.supervisor`, started by trialtui.engine.jobs in a session of its own. It
imports no torch, so it starts in tens of milliseconds. It is a child subreaper: whatever the job
starts (setsid, double fork) is re-parented here when its parent dies, and is killed by the sweep
when the job ends, times out, is cancelled, or the engine goes away (EOF on stdin). A candidate that
kills its parent kills this process, not the engine; the engine then kills the pids reported here.

Protocol, one JSON object per line. Engine to supervisor (stdin): a launch {"module", "env",
"sandbox", "binds", "warm"}, then {"token"} (read after the job's parent is forked, so no job ever
holds it, an exec'd one or a fork), maybe {"prepare": {...}} lines (the problem part of the next job,
passed to a waiting warm job), then a job {"spec", "timeout_s", "log_path", "limits"}, then maybe
{"cancel": true}. Supervisor to engine (stdout): {"event": "pids", "pids":
[[pid, start_ticks], ...]}, {"event": "progress", "data": {...}}, and last {"event": "done", ...},
each with the launch's token.
The job gets its spec on stdin and its result and progress channels as inherited pipes whose
numbers are inside the spec: no path in argv, env or the working directory leads to the result.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from typing import Any, Iterator

from trialtui.core.prctl import PR_SET_CHILD_SUBREAPER, PR_SET_DUMPABLE, PR_SET_PDEATHSIG, prctl, seal, start_ticks
from trialtui.runner.child import WARM_FLAG
from trialtui.runner.job_log import Log
from trialtui.runner.job_start import sandbox_command, stub
from trialtui.runner.process_tree import apply_limits, descendants, sweep

PIDS_EVERY_S = 0.25
TOKEN = ""  # the engine's secret for this supervisor, echoed in every event so a forged line is ignored
FORKED_MODULE: str | None = None  # set in a fork of trialtui.runner.forkserver: its jobs are forks too


class Supervisor:
    def __init__(self, launch: dict[str, Any]) -> None:
        self.sel = selectors.DefaultSelector()
        self.log = Log()
        self.result = bytearray()
        self.progress = bytearray()
        self.inbox = bytearray()
        self.scratch = tempfile.mkdtemp(prefix="trialtui-scratch-")
        self.deadline: float | None = None
        self.started_at = 0.0
        self.cancelled = False
        self.returncode: int | None = None
        self.parent_killed = False
        self.engine_gone = False
        self.reported: list[list[int]] = []
        self.job: dict[str, Any] | None = None
        self._start(launch)

    def _start(self, launch: dict[str, Any]) -> None:
        spec_r, self.spec_w = os.pipe()
        out_r, out_w = os.pipe()
        res_r, self.res_w = os.pipe()
        prog_r, self.prog_w = os.pipe()
        def in_child() -> None:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL, strict=True)
            if os.getppid() == 1:  # the stub died before the prctl
                os._exit(1)

        # -P: the job's folder is not put on its import path (the checker imports nothing a candidate can plant)
        args = [WARM_FLAG] if launch.get("warm") else []
        command = [sys.executable, "-P", "-m", launch["module"], *args]
        if launch.get("sandbox"):
            command = sandbox_command(command, self.scratch, launch.get("binds") or [])
        env = {**os.environ, **(launch.get("env") or {}), "PYTHONUNBUFFERED": "1"}
        if launch.get("sandbox"):
            env["TRITON_CACHE_DIR"] = os.path.join(self.scratch, ".triton")
            env["TMPDIR"] = self.scratch
        forked = (launch["module"], args) if launch["module"] == FORKED_MODULE and not launch.get("sandbox") else None
        status_r, status_w = os.pipe()
        self.stub = os.fork()
        if self.stub == 0:
            stub(command, env, self.scratch, in_child, (spec_r, out_w, status_w), (self.res_w, self.prog_w), forked)
        for fd in (spec_r, out_w, status_w, self.res_w, self.prog_w):
            os.close(fd)  # the job holds the write ends, under the same numbers (pass_fds)
        for fd in (out_r, res_r, prog_r):
            os.set_blocking(fd, False)
        self.status_r = status_r
        self.status = b""
        self.pidfd = os.pidfd_open(self.stub)
        self.sel.register(out_r, selectors.EVENT_READ, "log")
        self.sel.register(res_r, selectors.EVENT_READ, "result")
        self.sel.register(prog_r, selectors.EVENT_READ, "progress")
        self.sel.register(0, selectors.EVENT_READ, "engine")
        self.sel.register(self.pidfd, selectors.EVENT_READ, "exit")

    def _status(self, word: str) -> int | None:
        """The stub's `pid N` or `exit N` line (blocking until it is written); None if the stub died first."""
        while True:
            for line in self.status.decode().splitlines():
                name, _, value = line.partition(" ")
                if name == word:
                    return int(value)
                if name == "exit":  # no job process was started
                    return None
            data = os.read(self.status_r, 64)
            if not data:
                return None
            self.status += data

    def _stub_ended(self) -> None:
        """The job's return code, as its parent (the stub) wrote it; none if the stub itself was killed."""
        try:
            os.waitpid(self.stub, 0)
        except ChildProcessError:
            pass  # reaped by a sweep
        code = self._status("exit")
        self.parent_killed = code is None
        self.returncode = -signal.SIGKILL if code is None else code

    def _take_job(self, job: dict[str, Any]) -> None:
        self.job = job
        self.log.open(job["log_path"])
        pid = self._status("pid")
        if pid is not None:  # the job process, and whatever it started already (bwrap's inner process,
            # a warm checker's candidate process), stopped meanwhile: a fork it is making (a torch-sized
            # process takes milliseconds to copy, its limits copied first) is over, and no other begins
            with stopped(pid):
                for target in [pid, *descendants(pid)]:
                    apply_limits(target, job.get("limits") or {})
        self.started_at = time.monotonic()
        self.deadline = self.started_at + float(job["timeout_s"])
        spec = {**job["spec"], "result_fd": self.res_w, "progress": f"/dev/fd/{self.prog_w}", "deadline": self.deadline}
        self._write_spec(json.dumps(spec).encode())
        os.close(self.spec_w)

    def _write_spec(self, data: bytes) -> None:
        """To the job's stdin: a `prepare` line while it waits, then its spec."""
        try:
            while data:
                data = data[os.write(self.spec_w, data):]
        except BrokenPipeError:
            pass  # the job died while waiting: its exit is reported as such

    def receive(self, data: bytes) -> None:
        if not data:
            self.engine_gone = True
            return
        self.inbox += data
        while b"\n" in self.inbox:
            line, _, rest = bytes(self.inbox).partition(b"\n")
            self.inbox = bytearray(rest)
            message = json.loads(line)
            if message.get("cancel"):
                self.cancelled = True
            elif "prepare" in message and self.job is None:
                line = {"prepare": message["prepare"], "progress": f"/dev/fd/{self.prog_w}"}
                self._write_spec(json.dumps(line).encode() + b"\n")
            elif "spec" in message and self.job is None:
                self._take_job(message)

    def _forward_progress(self) -> None:
        while b"\n" in self.progress:
            line, _, rest = bytes(self.progress).partition(b"\n")
            self.progress = bytearray(rest)
            try:
                send({"event": "progress", "data": json.loads(line)})
            except ValueError:
                continue

    def _report_pids(self) -> None:
        pids = [[pid, start_ticks(pid)] for pid in descendants(os.getpid())]
        pids = [p for p in pids if p[1] is not None]
        if pids != self.reported:
            self.reported = pids
            send({"event": "pids", "pids": pids})

    def _pump(self, timeout: float) -> None:
        """Handle what is ready; the job's exit sets its return code."""
        for key, _ in self.sel.select(timeout):
            what = key.data
            if what == "exit":
                self.sel.unregister(self.pidfd)
                self._stub_ended()
                continue
            try:
                data = os.read(key.fd, 1 << 20)
            except BlockingIOError:
                continue
            if what == "engine":
                self.receive(data)
                if not data:
                    self.sel.unregister(0)
            elif not data:
                self.sel.unregister(key.fd)
                os.close(key.fd)
            elif what == "log":
                self.log.write(data)
            elif what == "result":
                self.result += data
            else:
                self.progress += data
                self._forward_progress()

    def run(self) -> None:
        """Pump until the job has exited (after its spec was sent), times out, is cancelled or orphaned."""
        next_report = 0.0
        while self.returncode is None or self.job is None:
            self._pump(0.05)
            now = time.monotonic()
            if self.engine_gone or self.cancelled or (self.deadline is not None and now > self.deadline):
                break
            if now >= next_report:
                self._report_pids()
                next_report = now + PIDS_EVERY_S
        timed_out = self.returncode is None and not self.cancelled and not self.engine_gone
        swept = sweep()
        self._drain()
        cut = self.log.close()
        shutil.rmtree(self.scratch, ignore_errors=True)
        if self.engine_gone:
            return
        send({
            "event": "done", "returncode": self.returncode, "timed_out": timed_out, "cancelled": self.cancelled,
            "parent_killed": self.parent_killed,
            "result": self.result.decode("utf-8", "replace") if self.result else None,
            "swept": swept, "log_cut": cut,
            "wall_s": round(time.monotonic() - self.started_at, 3) if self.job else None,
        })

    def _drain(self) -> None:
        """Read what the job left in its pipes (non-blocking: a writer may survive in another session)."""
        for key in list(self.sel.get_map().values()):
            if key.data in ("engine", "exit"):
                continue
            while data := _read_ready(key.fd):
                if key.data == "log":
                    self.log.write(data)
                elif key.data == "result":
                    self.result += data
                else:
                    self.progress += data
        self._forward_progress()


def _read_ready(fd: int) -> bytes:
    try:
        return os.read(fd, 1 << 20)
    except BlockingIOError:
        return b""


@contextmanager
def stopped(pid: int, wait_s: float = 2.0) -> Iterator[None]:
    """SIGSTOP the process until the block ends; it is stopped (any system call it was in has returned)
    before the block runs, unless it does not stop within `wait_s` (then the block runs regardless)."""
    try:
        os.kill(pid, signal.SIGSTOP)
    except ProcessLookupError:
        yield
        return
    try:
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and process_state(pid) not in ("T", "t", "Z", None):
            time.sleep(0.001)
        yield
    finally:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


def process_state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    return stat[stat.rindex(b")") + 2:].split()[0].decode()


def send(message: dict[str, Any]) -> None:
    data = (json.dumps({**message, "token": TOKEN}) + "\n").encode()
    try:
        while data:
            data = data[os.write(1, data):]
    except BrokenPipeError:
        pass  # the engine is gone; the sweep still runs


def main() -> None:
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    prctl(PR_SET_CHILD_SUBREAPER, 1, strict=True)
    # not dumpable: other processes of the user (the job) cannot open /proc/<us>/fd/* or read our memory,
    # so they cannot write events into the engine's pipe or learn the token (root still can)
    prctl(PR_SET_DUMPABLE, 0, strict=True)
    seal()  # the result pipe's read end is not reachable through /proc/PID/fd
    line = read_line()
    if line is None:
        return
    try:
        supervisor, error = Supervisor(json.loads(line)), None  # forks the job's parent: before the token is read
    except (OSError, subprocess.SubprocessError) as exc:
        supervisor, error = None, exc
    line = read_line()
    global TOKEN
    TOKEN = json.loads(line).get("token", "") if line else ""
    if supervisor is None:
        send({"event": "done", "error": f"could not start the job: {error}"})
        return
    supervisor.run()


def read_line() -> bytes | None:
    """One line of stdin, a byte at a time: nothing after it is read, so the job forked next holds none
    of it (the token comes on the line after the launch); the selector reads the rest."""
    line = bytearray()
    while not line.endswith(b"\n"):
        data = os.read(0, 1)
        if not data:
            return None
        line += data
    return bytes(line)


if __name__ == "__main__":
    main()
