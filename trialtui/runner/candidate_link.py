"""The checker's handle on the candidate's process: start it, ask it one thing at a time, read replies as data.

The candidate's process gets no path, argument, descriptor or environment variable that leads to
the result: its argv names only the exchange directories for tensor bytes, its environment is the
job's minus trialtui's own variables, its descriptors are the two protocol pipes and the log.
"""

from __future__ import annotations

import gc
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

from trialtui.core.prctl import PR_SET_CHILD_SUBREAPER, drop_ptrace_now, prctl, prepare_candidate_child
from trialtui.runner import process_tree
from trialtui.runner.candidate_requests import CandidateFailed

SHM = Path("/dev/shm")


class CandidateProcess:
    """A fresh process per job; its imports overlap with the checker loading the reference.

    With `fork`, where nothing here uses CUDA (the interpreter on the CPU), it is a fork of this
    process: torch is imported once, not twice. Only the checker's job process asks for it, and only
    before it has run a torch op or loaded the reference (a fork inherits OpenMP's state and the
    memory). On a GPU it is a new interpreter: the CUDA driver is not fork-safe.

    `module` is what the process runs (its `main()`): the bench job names runner/candidate.py, so the
    job that starts the candidate's process is the one that depends on it, not every module handed the link.
    """

    def __init__(self, module: str, env: dict[str, str] | None = None, *, fork: bool = False):
        """Starts the process; nothing here imports torch, so a GPU job starts it before its own imports."""
        self.exchange = exchange_dirs()
        self.scratch = Path(tempfile.mkdtemp(prefix="trialtui-cwd-"))
        child_env = {k: v for k, v in (env or os.environ).items() if not k.startswith("TRIALTUI_")}
        child_env["PYTHONUNBUFFERED"] = "1"
        prctl(PR_SET_CHILD_SUBREAPER, 1)  # what the candidate's tree orphans comes here, within `hold`'s reach
        self.spawner = threading.get_native_id()  # the thread whose children its CLONE_PARENT siblings become
        if fork and may_fork():
            self.process = ForkedProcess(module, self.exchange, self.scratch, child_env)
        else:
            self.process = subprocess.Popen(
                [sys.executable, "-m", module, *map(str, self.exchange)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, cwd=self.scratch,
                env=child_env, close_fds=True, preexec_fn=prepare_candidate_child,
            )
        self._channel = None
        self.op_s: dict[str, float] = {}
        self._owed = 0  # replies to requests sent ahead (`warm_up`), read before the next request
        self._held: list[int] = []  # its processes stopped by `hold`, until the next request

    @property
    def channel(self):
        if self._channel is None:  # torch comes with the wire format: imported by the first request, not the spawn
            from trialtui.runner.wire import Channel

            self._channel = Channel(self.process.stdout, self.process.stdin, self.exchange, "chk", isolate=True)
        return self._channel

    def warm_up(self) -> None:
        """Ask the process to make its CUDA context and launch Triton once, without waiting for its answer:
        a job that holds its GPU lane does it while it loads the reference (3 s off a cold bench on the
        H200); never before the job, when another job may be timing on that GPU."""
        from trialtui.runner.wire import ChannelClosed

        if "ready" in self.op_s or self._owed:
            return
        try:
            self.channel.send({"op": "ready", "device": "cuda"})
            self._owed += 1
        except ChannelClosed:
            pass  # the next request says how it died

    def _settle(self, deadline: float) -> None:
        from trialtui.runner.wire import ChannelClosed, ChannelTimeout, WireError

        while self._owed:
            self._owed -= 1
            try:
                self.channel.recv(deadline=deadline)  # its outcome is not the job's: a failed warm-up only costs time
            except ChannelTimeout:
                self.kill()
                raise CandidateFailed("the candidate's process did not make its CUDA context in time; it was killed",
                                      state="timeout") from None
            except ChannelClosed:
                raise
            except WireError:
                pass
            self.op_s.setdefault("ready", 0.0)

    def request(self, op: str, payload: Any = None, *, timeout_s: float, into: str = "cpu",
                max_bytes: int | None = None, meanwhile: Callable[[Callable[[], bool], float], None] | None = None,
                **header: Any) -> tuple[dict[str, Any], Any]:
        """Send one request and wait for its reply; failures become CandidateFailed with a clear message.
        `meanwhile(answered, deadline)` runs once the request is sent, before the reply is read."""
        from trialtui.runner.wire import ChannelClosed, ChannelTimeout, WireError

        self._release()
        try:
            self._settle(time.monotonic() + max(0.0, timeout_s))
            self.channel.send({"op": op, **header}, payload)
        except ChannelClosed:
            raise CandidateFailed(self._death(f"before {op}")) from None
        if meanwhile is not None:
            meanwhile(self.channel.readable, time.monotonic() + max(0.0, timeout_s))
        try:
            reply, out = self.channel.recv(device=into, max_bytes=max_bytes, deadline=time.monotonic() + max(0.0, timeout_s))
        except ChannelTimeout:
            self.kill()
            raise CandidateFailed(f"the candidate did not answer {op!r} in time; its process was killed", state="timeout") from None
        except ChannelClosed:
            raise CandidateFailed(self._death(f"during {op}")) from None
        except WireError as exc:
            raise CandidateFailed(f"the candidate's process sent a malformed reply: {exc}") from None
        if reply.get("ok") is not True:
            raise CandidateFailed(str(reply.get("error") or "failed")[:2000], traceback=str(reply.get("traceback") or "")[:4000])
        steps = reply.get("steps_s") if isinstance(reply.get("steps_s"), dict) else {}
        for name, took in [(op, reply.get("op_s")), *((f"{op}.{k}", v) for k, v in list(steps.items())[:16])]:
            if isinstance(took, (int, float)) and 0 <= took < 1e6 and len(name) < 64:
                self.op_s[name] = self.op_s.get(name, 0.0) + float(took)
        return reply, out

    def hold(self) -> None:
        """Stop the candidate's process and every process under it until the next request: what the checker
        measures meanwhile (its own loops, the baselines) shares neither the CPU nor the GPU's queue with the
        candidate (docs/SECURITY.md, "The GPU between the checker's calls")."""
        if not self._held and self.process.poll() is None:
            self._held = process_tree.hold(self.process.pid, spawner=self.spawner)

    def _release(self) -> None:
        process_tree.release(self._held)
        self._held = []

    def breakdown(self) -> dict[str, float]:
        """Seconds per step as `phases_s` shows them: each op as the candidate's process timed it (a claim,
        for diagnosis only), and this side's tensor exchange, which overlaps the splits it happened in."""
        stats = self.channel.stats
        steps = {f"candidate.{op}": round(s, 3) for op, s in self.op_s.items()}
        steps["exchange.send"] = round(stats["send_s"], 3)
        steps["exchange.recv"] = round(stats["recv_s"], 3)
        steps["exchange.mb"] = round((stats["send_bytes"] + stats["recv_bytes"]) / 2**20, 3)
        return steps

    def _death(self, when: str) -> str:
        try:
            code = self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.kill()
            return f"the candidate's process closed its channel {when}"
        if code < 0:
            return f"the candidate's process died from {signal.Signals(-code).name} {when}"
        return f"the candidate's process exited with code {code} {when}"

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def close(self, *, wait: bool = True) -> None:
        """End the process and remove its directories. Without `wait` (the job's end) it is killed and
        left to the supervisor, which reaps and sweeps it: the result need not wait for a CUDA context's
        teardown."""
        self._release()
        if not wait:
            self.process.kill()  # SIGKILL, no wait
            self._remove_dirs()
            return
        try:
            if self.process.poll() is None:
                self.process.stdin.write(b'{"op": "exit", "payload": {"v": null}, "tensors": []}\n')
                self.process.stdin.flush()
                self.process.wait(timeout=2)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
        self.kill()
        self._remove_dirs()

    def _remove_dirs(self) -> None:
        for directory in self.exchange:
            shutil.rmtree(directory, ignore_errors=True)
        shutil.rmtree(self.scratch, ignore_errors=True)


def exchange_dirs() -> list[Path]:
    """Private directories for tensor bytes: shared memory first where there is some, then the temp dir
    for what does not fit there (a container's /dev/shm is often small)."""
    dirs = []
    try:
        if SHM.is_dir() and shutil.disk_usage(SHM).free > 2**26:
            dirs.append(Path(tempfile.mkdtemp(prefix="trialtui-x-", dir=SHM)))
    except OSError:
        pass
    dirs.append(Path(tempfile.mkdtemp(prefix="trialtui-x-")))
    return dirs


def may_fork() -> bool:
    """The interpreter on the CPU, torch imported, CUDA never touched: a fork is the same process, sooner."""
    torch = sys.modules.get("torch")
    return os.environ.get("TRITON_INTERPRET") == "1" and torch is not None and not torch.cuda.is_initialized()


class ForkedProcess:
    """The candidate's process as a fork of the checker: what `subprocess.Popen` would give, without exec.

    The child keeps nothing of the checker's descriptors but the two protocol pipes and the log
    (stderr), runs in the scratch directory with the job's environment minus trialtui's variables,
    and never returns into the checker's code.
    """

    def __init__(self, module: str, exchange: list[Path], scratch: Path, env: dict[str, str]):
        to_r, to_w = os.pipe()
        from_r, from_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        self.pid = os.fork()
        if self.pid == 0:
            code = 1
            try:
                gc.freeze()  # the checker's objects are never walked here: a collection would copy every page it touches
                os.dup2(to_r, 0)
                os.dup2(from_w, 1)
                os.closerange(3, os.sysconf("SC_OPEN_MAX"))
                os.chdir(scratch)
                os.environ.clear()
                os.environ.update(env)
                prepare_candidate_child()
                if not drop_ptrace_now():  # no exec to apply the bounding set: without this it could open the checker's pipes
                    raise OSError("could not drop CAP_SYS_PTRACE")
                import importlib

                candidate = importlib.import_module(module)
                sys.argv = [candidate.__file__, *map(str, exchange)]
                candidate.main()
                code = 0
            finally:
                os._exit(code)
        os.close(to_r)
        os.close(from_w)
        self.stdin = os.fdopen(to_w, "wb")
        self.stdout = os.fdopen(from_r, "rb")
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: gone, and how is unknown
                self.returncode = -signal.SIGKILL
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"candidate process {self.pid}", timeout)
            time.sleep(0.005)
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
