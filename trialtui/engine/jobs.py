"""Run one child job behind a disposable supervisor: a JSON spec in, a checked result dict out.

Whatever the job does (raise, hang, crash the CUDA context, os._exit, print megabytes, fork
processes that call setsid, kill its parent, edit the reference), the engine gets a result dict with a
state and the essential message, and goes on. The supervisor (trialtui.runner.supervisor) holds
the limits, the capped log and the sweep; this side holds the deadline, the snapshot of the problem's
files, and the pids the supervisor reported, which it kills itself if the supervisor was killed.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from trialtui.core import job_kinds
from trialtui.core.prctl import seal, start_ticks
from trialtui.core.config import ConfigError, Limits, load_config
from trialtui.core.job_spec import BenchSpec, JobSpec
from trialtui.core.result import RESULT_VERSION, ResultError, check_result
from trialtui.core.untrusted_text import untrusted
from trialtui.engine import gpu_lock, guard
from trialtui.engine import forkservers
from trialtui.engine.forkservers import Forked
from trialtui.engine.runner_deps import missing_runner

LOG_TAIL_BYTES = 4000
SUPERVISOR = job_kinds.SUPERVISOR
GRACE_S = 5.0  # past the job's timeout, the engine stops waiting for a supervisor that does not answer
CANCEL_GRACE_S = 1.0  # after a cancel, the supervisor has this long to sweep before it is killed
PREPARE_POLL_S = 0.05  # how often a waiting `prepare` asks whether a job wants the lane
NO_FORKSERVER_ENV = "TRIALTUI_NO_FORKSERVER"  # warm jobs as new interpreters, each importing torch
SANDBOX_ENV = "TRIALTUI_SANDBOX"  # set by `--sandbox`; [limits] sandbox = true does the same per problem


def log_tail(log_path: Path, limit: int = LOG_TAIL_BYTES) -> str:
    """The end of the child's log, where the traceback or CUDA error is."""
    try:
        with open(log_path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - limit))
            return fh.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""


def essential_line(text: str) -> str:
    """The line a kernel engineer needs: the last exception or CUDA error line of a log."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        if "Error" in line or "error" in line or "Exception" in line:
            return line[:500]
    return lines[-1][:500] if lines else ""


def failure(state: str, message: str, log: str = "", **extra: Any) -> dict[str, Any]:
    return {"version": RESULT_VERSION, "state": state, "message": message, "log_tail": log, **extra}


def sees_gpu(env: dict[str, str]) -> bool:
    visible = env.get("CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES"))
    return visible not in ("", "-1") and Path("/dev/nvidiactl").exists()


def use_sandbox() -> None:
    """`--sandbox`: every job this process starts runs under bubblewrap (the variable is the switch)."""
    os.environ[SANDBOX_ENV] = "1"


def sandbox_wanted(limits: Limits) -> bool:
    return limits.sandbox or os.environ.get(SANDBOX_ENV) == "1"


class Supervised:
    """The engine's end of one supervisor process: messages in, events out, and a last-resort kill."""

    def __init__(self, launch: dict[str, Any], process: Forked | None = None) -> None:
        """A new supervisor process, or `process`, one a fork server made (engine/forkservers.py)."""
        # os.environ, as a fork server gets, not what a C library set behind its back (readline's COLUMNS)
        self.process = process or subprocess.Popen(
            [sys.executable, "-m", SUPERVISOR], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, start_new_session=True, env=dict(os.environ))
        self.pids: list[list[int]] = []
        self.cancelled_at: float | None = None
        self._lock = threading.Lock()
        self._buffer = b""
        self.token = secrets.token_hex(16)
        self.send(launch)
        self.send({"token": self.token})  # after the launch: the supervisor forks its job before it reads this

    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, message: dict[str, Any]) -> None:
        with self._lock:
            try:
                self.process.stdin.write((json.dumps(message) + "\n").encode())
                self.process.stdin.flush()
            except (BrokenPipeError, ValueError, OSError):
                pass  # the supervisor is gone; its EOF tells the reader

    def cancel(self) -> None:
        self.cancelled_at = time.monotonic()
        self.send({"cancel": True})

    def events(self, deadline: float) -> Iterator[dict[str, Any]]:
        """Events until EOF or the deadline (a cancel shortens it); the last is "done", "eof" or "late"."""
        fd = self.process.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                now = time.monotonic()
                limit = deadline if self.cancelled_at is None else min(deadline, self.cancelled_at + CANCEL_GRACE_S)
                if now > limit:
                    yield {"event": "late"}
                    return
                if not sel.select(min(0.1, limit - now)):
                    continue
                data = os.read(fd, 1 << 16)
                if not data:
                    yield {"event": "eof"}
                    return
                self._buffer += data
                while b"\n" in self._buffer:
                    line, self._buffer = self._buffer.split(b"\n", 1)
                    event = _event(line, self.token)
                    if event is None:
                        continue  # not the supervisor's: forged or garbled
                    if event.get("event") == "pids":
                        self.pids = event["pids"]
                    yield event
                    if event.get("event") == "done":
                        return

    def kill(self) -> int:
        """Kill the supervisor and every process it last reported that is still the same process."""
        pid = self.process.pid
        try:
            if pid > 0:  # a fork server's supervisor that was never forked has none; killpg(0) would be our own group
                os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.process.wait()
        killed = 0
        for pid, ticks in self.pids:
            if start_ticks(pid) == ticks:
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
                except ProcessLookupError:
                    pass
        return killed

    def close(self) -> None:
        """EOF on the supervisor's stdin: it sweeps its job and exits; then make sure of it."""
        with self._lock:
            try:
                self.process.stdin.close()
            except OSError:
                pass
        try:
            self.process.wait(timeout=CANCEL_GRACE_S)
        except subprocess.TimeoutExpired:
            self.kill()
        self.process.stdout.close()


def _event(line: bytes, token: str) -> dict[str, Any] | None:
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) and event.get("token") == token else None


@dataclass(eq=False)
class ChildHandle:
    """A running job: lets the engine cancel it from another thread."""

    supervised: Supervised | None = None
    cancelled: bool = False

    def attach(self, supervised: Supervised) -> None:
        self.supervised = supervised
        if self.cancelled:
            supervised.cancel()

    def cancel(self) -> None:
        self.cancelled = True
        if self.supervised is not None:
            self.supervised.cancel()


_running: set[ChildHandle] = set()
_running_lock = threading.Lock()


def cancel_all() -> None:
    """Cancel every job this process is running (validations too), e.g. when it is shutting down."""
    with _running_lock:
        handles = list(_running)
    for handle in handles:
        handle.cancel()


@contextmanager
def cancel_on_interrupt() -> Iterator[None]:
    """Ctrl-C cancels every running job, so threads waiting on them return within a couple of seconds."""
    try:
        yield
    except KeyboardInterrupt:
        cancel_all()
        raise


def launch_message(module: str, env: dict[str, str], *, warm: bool, sandbox: bool = False,
                   binds: list[str] | None = None) -> dict[str, Any]:
    return {"module": module, "env": env, "warm": warm, "sandbox": sandbox, "binds": binds or []}


class WarmChildren:
    """Supervised jobs started ahead: torch and triton imported, CUDA untouched, waiting for a spec.

    Each job still runs in a fresh process (a crashed CUDA context dies with it), forked from the
    process's fork server for its module and environment, which imported torch once (engine/forkservers.py),
    so a warm job costs milliseconds, not an interpreter's imports. Per module and environment (a lane's
    CUDA_VISIBLE_DEVICES, the interpreter flag) `depth` of them wait: one, or two for a GPU lane's
    checker, whose candidate process is still a new interpreter (CUDA is not fork-safe) that imports
    torch while it waits.
    """

    def __init__(self) -> None:
        self._ready: dict[tuple, list[Supervised]] = {}
        self._depth: dict[tuple, int] = {}
        self._lock = threading.Lock()

    @staticmethod
    def started(module: str, env: dict[str, str]) -> Supervised:
        """A warm supervisor from the process's fork server for the module and environment (started on
        first use), or a new interpreter if TRIALTUI_NO_FORKSERVER=1 (benches/fork_server.py compares the two)."""
        if os.environ.get(NO_FORKSERVER_ENV) == "1":
            return Supervised(launch_message(module, env, warm=True))
        return Supervised(launch_message(module, env, warm=True), forkservers.server(module, env).spawn())

    @staticmethod
    def from_running_server(module: str, env: dict[str, str]) -> Supervised | None:
        """A supervisor forked from the process's fork server for the module and environment, if an engine
        started one; None otherwise (the job is then a new interpreter)."""
        server = None if os.environ.get(NO_FORKSERVER_ENV) == "1" else forkservers.running(module, env)
        return Supervised(launch_message(module, env, warm=True), server.spawn()) if server is not None else None

    @staticmethod
    def _key(module: str, env: dict[str, str]) -> tuple:
        return (module, tuple(sorted(env.items())))

    def prime(self, module: str, env: dict[str, str], depth: int | None = None, *, kept_only: bool = False) -> None:
        if os.environ.get(SANDBOX_ENV) == "1" or missing_runner():
            return  # sandboxed jobs start cold: bubblewrap wraps the job process from its start
        key = self._key(module, env)
        with self._lock:
            if kept_only and key not in self._ready:  # after a job: none after a one-off (the analysis) or close()
                return
            if depth is not None:
                self._depth[key] = depth
            waiting = self._ready[key] = [s for s in self._ready.get(key, []) if s.alive()]
            while len(waiting) < self._depth.get(key, 1):
                waiting.append(self.started(module, env))

    def prepare(self, module: str, env: dict[str, str], problem: BenchSpec, timeout_s: float,
                give_up: Callable[[], bool] | None = None) -> dict[str, Any] | None:
        """Hand the first waiting job the problem part of the next one and wait until it is made ready.

        Call it only from a lane job (runner/prepared.py says what is made ready): that work runs on
        the GPU, and the lane stays taken until it is done, so it never overlaps another job's timing.
        Once `give_up` says a job waits for the lane, it stops waiting: that job `take`s this very
        process, which finishes preparing before it reads the spec, so the GPU is still never shared.
        Returns the job's `prepared` progress line, or None (given up, sandboxed, died, or not done in time).
        """
        self.prime(module, env)
        with self._lock:
            waiting = self._ready.get(self._key(module, env))
            if not waiting:
                return None
            supervised = waiting[0]
            supervised.send({"prepare": guard.with_sibling_modules(problem.to_wire())})  # as run_child's
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if give_up is not None and give_up():
                return None
            for event in supervised.events(min(deadline, time.monotonic() + PREPARE_POLL_S)):
                data = event.get("data") if event.get("event") == "progress" else None
                if isinstance(data, dict) and data.get("phase") == "prepared":
                    return data
                if event.get("event") in ("done", "eof"):
                    return None
        return None

    def take(self, module: str, env: dict[str, str]) -> Supervised | None:
        """The longest-waiting one (the one `prepare` made ready), if it is still alive."""
        with self._lock:
            waiting = self._ready.get(self._key(module, env)) or []
            supervised = waiting.pop(0) if waiting else None
        if supervised is not None and not supervised.alive():
            supervised.close()  # died waiting (or its fork server did): the job starts a new one
            return None
        return supervised

    def close(self) -> None:
        """The waiting jobs end; the fork servers stay for the process's next engine (engine/forkservers.py)."""
        with self._lock:
            ready, self._ready = [s for waiting in self._ready.values() for s in waiting], {}
        for supervised in ready:
            supervised.close()


def job_limits(spec: dict[str, Any]) -> Limits:
    """The problem's [limits], or the defaults for jobs without a problem (calibrate)."""
    try:
        return load_config(Path(spec["root"])).limits if "root" in spec else Limits()
    except ConfigError:
        return Limits()


def rlimit_message(limits: Limits, timeout_s: float, env: dict[str, str]) -> dict[str, Any]:
    """What the supervisor sets on the job: the CPU time follows the timeout; no address-space limit on a GPU."""
    values = asdict(limits)
    values.pop("sandbox")
    if sees_gpu(env):
        values["address_space_mb"] = 0  # the CUDA driver reserves huge virtual ranges
    values["cpu_s"] = math.ceil(timeout_s * (os.cpu_count() or 1)) + 10
    return values


def run_child(module: str, spec: JobSpec, *, timeout_s: float, log_path: Path, env: dict[str, str] | None = None,
              handle: ChildHandle | None = None, on_progress: Callable[[dict[str, Any]], None] | None = None,
              warm: WarmChildren | None = None, limits: Limits | None = None) -> dict[str, Any]:
    """Run `python -m MODULE` behind a supervisor and return its checked result (its strings printable: the
    candidate's text reaches terminals and logs, core/untrusted_text.py), or a failure result.

    Progress lines the job writes are passed to `on_progress` as dicts. With `warm`, a pre-started
    pair takes the job if one is ready, and the next one is primed; without, the job is still a fork
    where an engine of this process runs a fork server for its module and environment. `limits` default to the problem's.
    A job that sees a GPU holds that GPU's host-wide lane (engine/gpu_lock.py) unless the lane job it
    runs in holds it already; while another process holds it, it says so (`waiting` progress, or stderr).
    """
    if not isinstance(spec, JobSpec):  # a dict's keys and defaults would be the engine's guess at what the job reads
        raise TypeError(f"run_child takes a job's spec type (core/job_spec.py), not {type(spec).__name__}")
    handle = handle or ChildHandle()
    with gpu_lock.held_for(env, _waiting(on_progress), lambda: handle.cancelled) as took:
        if not took:
            return failure("cancelled", "cancelled while waiting for the GPU")
        return untrusted(_run_held(module, spec.to_wire(), timeout_s=timeout_s, log_path=log_path, env=env,
                                   handle=handle, on_progress=on_progress, warm=warm, limits=limits))


def _waiting(on_progress: Callable[[dict[str, Any]], None] | None) -> gpu_lock.Wait:
    """Where a job waiting for its GPU says so: its progress lines, else stderr (`trialtui bench`)."""
    if on_progress is not None:
        return lambda text: on_progress({"phase": "waiting", "message": text})
    return lambda text: print(f"trialtui: {text}", file=sys.stderr, flush=True)


def _run_held(module: str, spec: dict[str, Any], *, timeout_s: float, log_path: Path, env: dict[str, str] | None,
              handle: ChildHandle, on_progress: Callable[[dict[str, Any]], None] | None, warm: WarmChildren | None,
              limits: Limits | None) -> dict[str, Any]:
    """run_child's job, its spec the wire (JSON) by now, once the job's GPU, if it sees one, is held."""
    seal()  # a job's processes cannot open this process's pipes or memory through /proc
    if missing_runner():  # a laptop install: say so, rather than a job that dies importing torch
        return failure("error", missing_runner(), needs_runner=True)
    log_path = Path(log_path)
    env = env or {}
    limits = limits or job_limits(spec)
    sandbox = sandbox_wanted(limits)
    if sandbox and shutil.which("bwrap") is None:
        return failure("error", "the sandbox needs bubblewrap (bwrap), which is not installed: apt-get install bubblewrap")
    spec = guard.with_sibling_modules(spec)
    token, snapshot = guard.begin(spec)
    spec = guard.with_reference_source(spec, snapshot)
    started = time.monotonic()
    supervised = warm.take(module, env) if warm is not None and not sandbox else None
    if supervised is None and not sandbox:  # none was waiting (two saves at once), or a job outside the warm
        # pool (the finalize, the held-out check): a fork where the process has a server for it, not a torch import
        supervised = warm.started(module, env) if warm is not None else WarmChildren.from_running_server(module, env)
    if supervised is None:
        binds = [str(Path(spec["report"]).parent)] if sandbox and spec.get("report") else []
        supervised = Supervised(launch_message(module, env, warm=False, sandbox=sandbox, binds=binds))
    with _running_lock:
        _running.add(handle)
    try:
        handle.attach(supervised)
        supervised.send({"spec": spec, "timeout_s": timeout_s, "log_path": str(log_path),
                         "limits": rlimit_message(limits, timeout_s, env)})
        done = _wait(supervised, started + timeout_s + GRACE_S, on_progress)
    finally:
        with _running_lock:
            _running.discard(handle)
        supervised.close()
    if warm is not None and not sandbox:  # after the job: its timing never shares the host with the next one's imports
        warm.prime(module, env, kept_only=True)
    result = _result(done, timeout_s, log_path, handle, time.monotonic() - started)
    changed, shared = guard.end(token, snapshot, log_path.with_name(log_path.name + ".changed"))
    if changed:
        result = failure("error", _tamper_message(changed, shared), result.get("log_tail", ""),
                         restored=changed, containment=result.get("containment"))
    return result


def _tamper_message(changed: list[dict[str, str]], shared: set[Path]) -> str:
    planted = [Path(c["file"]).name for c in changed if c["how"].startswith("created")]
    names = ", ".join(Path(c["file"]).name for c in changed if not c["how"].startswith("created"))
    maybe = (" (another job of this problem ran at the same time: either may have written it)"
             if any(Path(c["file"]) in shared for c in changed) else "")
    parts = [f"{names} changed while the job ran{maybe}; restored from the copy taken before the job"] if names else []
    if planted:
        parts.append(f"{', '.join(planted)} created in the problem directory while the job ran, under the name of "
                     "a module the checker or a baseline may import; taken away")
    return "; ".join(parts) + " (what was written is kept beside the log)"


def _wait(supervised: Supervised, deadline: float, on_progress) -> dict[str, Any]:
    step = None  # the last step the job's progress named, for a hang's message
    for event in supervised.events(deadline):
        kind = event.get("event")
        if kind == "progress":
            data = event.get("data")
            step = str(data["phase"])[:60] if isinstance(data, dict) and data.get("phase") else step
            if on_progress is not None:
                on_progress(data)
        elif kind in ("done", "eof", "late"):
            if kind != "done":
                event["killed"] = supervised.kill()
                event["returncode"] = supervised.process.returncode
            return {**event, "step": step}
    return {"event": "eof", "killed": supervised.kill(), "step": step}


def _result(done: dict[str, Any], timeout_s: float, log_path: Path, handle: ChildHandle,
            elapsed: float) -> dict[str, Any]:
    tail = log_tail(log_path)
    facts = {key: done[key] for key in ("swept", "log_cut", "killed") if key in done}
    if handle.cancelled:
        return failure("cancelled", "cancelled", tail, containment=facts)
    kind = done["event"]
    if kind == "late":
        return failure("timeout", f"timed out after {timeout_s:g} s, and its supervisor stopped answering; "
                       "both were killed", tail, containment=facts)
    if kind == "eof":
        code = done.get("returncode")
        how = f"killed by {signal.Signals(-code).name}" if code is not None and code < 0 else f"exit code {code}"
        return failure("error", f"the job's supervisor died ({how}); the processes it reported were killed: "
                       f"{essential_line(tail)}".rstrip(": "), tail, containment=facts)
    if done.get("error"):
        return failure("error", done["error"], tail)
    if done["timed_out"]:
        step = f"its last step reported: {done['step']}" if done.get("step") else "before it reported any step"
        return failure("timeout", f"timed out after {timeout_s:g} s ({step}); the job was killed", tail, containment=facts)
    returncode = done["returncode"]
    if done.get("parent_killed"):
        return failure("error", "the job killed its parent process (a disposable stub; the engine and the "
                       "supervisor are unharmed)", tail, containment=facts)
    if returncode < 0:
        name = signal.Signals(-returncode).name
        return failure("error", f"the child died from {name}: {essential_line(tail)}".rstrip(": "), tail,
                       containment=facts)
    if done["result"] is None:
        why = f"exited with code {returncode} before writing a result"
        line = essential_line(tail)
        return failure("error", f"{why}: {line}" if line else why, tail, containment=facts)
    try:
        result = json.loads(done["result"])
    except ValueError as exc:
        return failure("error", f"unreadable result JSON: {exc}", tail, containment=facts)
    try:
        check_result(result)
    except ResultError as exc:
        return failure("error", f"malformed result from child: {exc}", tail, containment=facts)
    result.setdefault("log_tail", tail)
    result["containment"] = facts
    result["wall_s"] = round(done.get("wall_s") or elapsed, 3)
    return result
