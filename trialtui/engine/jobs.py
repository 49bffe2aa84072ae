"""Run one child job: its own process group, a JSON spec in, a JSON result out, a hard timeout.

Whatever the child does (raise, hang, crash the CUDA context, os._exit, print megabytes), the
parent gets a result dict with a state and the essential message, and the engine goes on.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from trialtui.core.result import RESULT_VERSION, ResultError, check_result

LOG_TAIL_BYTES = 4000


@dataclass
class ChildHandle:
    """A running child: lets the engine cancel it from another thread."""

    process: subprocess.Popen | None = None
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True
        if self.process is not None and self.process.poll() is None:
            kill_group(self.process)


def kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


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


WAIT_FLAG = "--wait"


class WarmChildren:
    """Children started ahead of their job: torch and triton imported, CUDA untouched, waiting for a spec.

    Each job still runs in a fresh process (a crashed CUDA context dies with it), but the seconds of
    imports are spent while the previous job runs or the user edits. One warm child per module and
    environment (a lane's CUDA_VISIBLE_DEVICES, the interpreter flag).
    """

    def __init__(self) -> None:
        self._ready: dict[tuple, subprocess.Popen] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(module: str, env: dict[str, str]) -> tuple:
        return (module, tuple(sorted(env.items())))

    def prime(self, module: str, env: dict[str, str]) -> None:
        key = self._key(module, env)
        with self._lock:
            if key in self._ready and self._ready[key].poll() is None:
                return
            self._ready[key] = subprocess.Popen(
                [sys.executable, "-m", module, WAIT_FLAG],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env={**os.environ, **env, "PYTHONUNBUFFERED": "1"}, start_new_session=True,
            )

    def take(self, module: str, env: dict[str, str]) -> subprocess.Popen | None:
        with self._lock:
            process = self._ready.pop(self._key(module, env), None)
        return process if process is not None and process.poll() is None else None

    def close(self) -> None:
        with self._lock:
            for process in self._ready.values():
                kill_group(process)
            self._ready.clear()


def run_child(
    module: str,
    spec: dict[str, Any],
    *,
    timeout_s: float,
    log_path: Path,
    env: dict[str, str] | None = None,
    handle: ChildHandle | None = None,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    warm: WarmChildren | None = None,
) -> dict[str, Any]:
    """Run `python -m MODULE SPEC RESULT` and return its checked result, or a failure result.

    Progress lines the child writes to its progress file are passed to `on_progress` as dicts.
    With `warm`, a pre-started child takes the job if one is ready, and the next one is primed.
    """
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = env or {}
    with tempfile.TemporaryDirectory(prefix="trialtui-job-") as tmp:
        spec_path = Path(tmp) / "spec.json"
        result_path = Path(tmp) / "result.json"
        progress_path = Path(tmp) / "progress.jsonl"
        spec_path.write_text(json.dumps({**spec, "progress": str(progress_path)}))
        started = time.monotonic()
        process = warm.take(module, env) if warm is not None else None
        if process is not None:
            process.stdin.write(f"{spec_path}\t{result_path}\t{log_path}\n".encode())
            process.stdin.close()
        else:
            with open(log_path, "wb") as log:
                process = subprocess.Popen(
                    [sys.executable, "-m", module, str(spec_path), str(result_path)],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env={**os.environ, **env, "PYTHONUNBUFFERED": "1"},
                    start_new_session=True,
                )
        if warm is not None:
            warm.prime(module, env)
        if handle is not None:
            handle.process = process
        returncode = _wait(process, timeout_s, progress_path, on_progress)
        elapsed = time.monotonic() - started
        if returncode is None:
            return failure("timeout", f"timed out after {timeout_s:g} s; the child was killed", log_tail(log_path))
        if handle is not None and handle.cancelled:
            return failure("cancelled", "cancelled", log_tail(log_path))
        return _read_result(result_path, returncode, log_path, elapsed)


def _wait(process, timeout_s, progress_path: Path, on_progress) -> int | None:
    deadline = time.monotonic() + timeout_s
    offset = 0
    while True:
        try:
            code = process.wait(timeout=0.05)
        except subprocess.TimeoutExpired:
            code = None
        if on_progress is not None:
            offset = _pump_progress(progress_path, offset, on_progress)
        if code is not None:
            kill_group(process)  # leftovers the kernel may have spawned
            return code
        if time.monotonic() > deadline:
            kill_group(process)
            process.wait()
            return None


def _pump_progress(path: Path, offset: int, on_progress) -> int:
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            chunk = fh.read()
    except OSError:
        return offset
    end = chunk.rfind(b"\n") + 1
    for line in chunk[:end].splitlines():
        try:
            on_progress(json.loads(line))
        except ValueError:
            continue
    return offset + end


def _read_result(result_path: Path, returncode: int, log_path: Path, elapsed: float) -> dict[str, Any]:
    tail = log_tail(log_path)
    if returncode < 0:
        name = signal.Signals(-returncode).name
        return failure("error", f"the child died from {name}: {essential_line(tail)}".rstrip(": "), tail)
    try:
        result = json.loads(result_path.read_text())
    except FileNotFoundError:
        why = f"exited with code {returncode} before writing a result"
        line = essential_line(tail)
        return failure("error", f"{why}: {line}" if line else why, tail)
    except ValueError as exc:
        return failure("error", f"unreadable result JSON: {exc}", tail)
    try:
        check_result(result)
    except ResultError as exc:
        return failure("error", f"malformed result from child: {exc}", tail)
    result.setdefault("log_tail", tail)
    result["wall_s"] = round(elapsed, 3)
    return result
