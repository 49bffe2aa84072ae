"""The far side of a remote executor: jobs in as data, run by the same job functions as on a local lane.

`python -m trialtui.engine.executors.host` is what the SSH executor starts on the remote host (JSON lines
on stdin and stdout); a Ray task calls `run_job` itself. A job's problem files are written into a
directory of their own under the work directory (one per problem and content, reused by the next job of
that problem), and the job runs exactly as it would locally: `bench_file` → `run_child` → the supervisor
with its limits and sweep, the checker and the candidate in processes of their own. So containment is
the same off the local machine; and when the connection goes (EOF on stdin, SIGHUP), every job is
cancelled and swept before this process exits.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, BinaryIO

from trialtui import __version__
from trialtui.core.executor import JOB_VERSION, JobData, encode, relative_path_ok, ups
from trialtui.core.job_options import BenchOptions, ProfileOptions, ValidateOptions
from trialtui.core.problem import Problem
from trialtui.core.problem_dir import load_problem
from trialtui.engine.bench import BENCH_MODULE, bench_file, child_env, detect_device
from trialtui.engine.jobs import ChildHandle, WarmChildren, cancel_all, use_sandbox
from trialtui.engine.lanes import visible_gpus
from trialtui.engine.profile import analyze, profile_file
from trialtui.engine.runner_deps import missing_runner
from trialtui.engine.validate import validate_file

RETURNED = ("logs", "profiles")  # the folders of .trialtui/ whose new files go back with the outcome


class Workspace:
    """Problem directories under one base, written from jobs' data; a job's files never land outside its own."""

    def __init__(self, base: Path) -> None:
        self.base = Path(base)
        self._lock = threading.Lock()

    def materialize(self, job: JobData) -> tuple[Problem, Path | None]:
        """The job's problem as a directory here, and its candidate's path."""
        depth = max((ups(p) for p in job.files), default=0)
        top = self.base / f"{job.problem}-{job.digest()}"
        root = top.joinpath(*[f"up{i}" for i in range(1, depth)], job.problem)
        with self._lock:
            for rel, data in job.files.items():
                _write(_inside(top, root / rel), data)
            for rel, data in job.state.items():
                if relative_path_ok(rel, ups=False):
                    _write(_inside(top, root / ".trialtui" / rel), data)
        candidate = None
        if job.candidate is not None:
            if not relative_path_ok(job.candidate, ups=False) or job.candidate not in job.files:
                raise ValueError(f"bad candidate path {job.candidate!r}")
            candidate = root / job.candidate
        return load_problem(root), candidate


def _inside(top: Path, path: Path) -> Path:
    resolved = Path(os.path.normpath(path))
    if resolved != top and top not in resolved.parents:
        raise ValueError(f"{path} is outside the job's directory")
    return resolved


def _write(path: Path, data: bytes) -> None:
    try:
        if path.read_bytes() == data:
            return
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.trialtui-job")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _listing(state_dir: Path) -> dict[str, tuple[int, int]]:
    found = {}
    for folder in RETURNED:
        for path in (state_dir / folder).rglob("*"):
            try:
                if path.is_file() and not path.is_symlink():
                    st = path.stat()
                    found[path.relative_to(state_dir).as_posix()] = (st.st_mtime_ns, st.st_size)
            except OSError:
                continue
    return found


def run_job(job: JobData, workspace: Workspace, *, on_progress: Callable[[dict[str, Any]], None] | None = None,
            handle: ChildHandle | None = None, warm: WarmChildren | None = None) -> dict[str, Any]:
    """One job, as the local functions run it; `{"result", "root", "files"}` or `{"error"}`."""
    try:
        problem, candidate = workspace.materialize(job)
    except Exception as exc:  # noqa: BLE001 - a job that cannot be laid out is this job's error, not the host's end
        return {"error": f"the job's files could not be laid out on {socket.gethostname()}: {type(exc).__name__}: {exc}"}
    state_dir = problem.state_dir
    before = _listing(state_dir)
    o = job.options
    if o.sandbox:
        use_sandbox()  # from this job on, every job of this process runs under bubblewrap
    handle = handle or ChildHandle()
    try:
        if isinstance(o, BenchOptions):
            bench = bench_file(problem, candidate, device=o.device, seeds=o.seeds, baseline_us=o.baseline_us,
                               use_cache=o.use_cache, log_path=state_dir / o.log, handle=handle,
                               on_progress=on_progress, cuda_graph=o.cuda_graph, env=o.env, warm=warm,
                               name=o.name, heldout=o.heldout)
            result = replace(bench, env={**(bench.env or {}), "host": socket.gethostname()}).to_json()  # travels as JSON
        elif isinstance(o, ValidateOptions):
            result = validate_file(problem, candidate, arch=o.arch, compile=True, timeout_s=o.timeout_s,
                                   name=o.name, warm=warm).to_json()
        elif isinstance(o, ProfileOptions):
            result = profile_file(problem, candidate, name=o.name, env=o.env, handle=handle,
                                  device=o.device).to_json()  # travels as JSON
        else:  # AnalyzeOptions, the one kind left
            result = analyze(problem, gpu=o.gpu, driver=o.driver, use_cache=False).to_json()
    except Exception as exc:  # noqa: BLE001 - reported to the engine, which marks the trial errored
        return {"error": f"trialtui failed on {socket.gethostname()}: {type(exc).__name__}: {exc}",
                "traceback": traceback.format_exc()}
    after = _listing(state_dir)
    files = {}
    for rel, seen in after.items():
        if before.get(rel) != seen:
            try:
                files[rel] = encode((state_dir / rel).read_bytes())
            except OSError:
                continue
    return {"result": result, "root": str(problem.root), "files": files}


def gpus() -> list[dict[str, str | None]]:
    """This host's GPUs as lanes see them (CUDA_VISIBLE_DEVICES or the device nodes), with names when
    nvidia-smi can say them; nothing imports torch or touches CUDA."""
    names: dict[str, str] = {}
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index,name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout
        for line in out.splitlines():
            index, _, name = line.partition(",")
            names[index.strip()] = name.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return [{"index": g, "name": names.get(g)} for g in visible_gpus()]


def hello() -> dict[str, Any]:
    device = detect_device()
    return {"event": "hello", "version": JOB_VERSION, "trialtui": __version__, "host": socket.gethostname(),
            "pid": os.getpid(), "device": device, "gpus": gpus() if device == "cuda" else [],
            "runner": missing_runner(), "python": sys.version.split()[0]}


class Host:
    """The stdin/stdout loop: jobs run in threads of their own, replies are whole lines under one lock."""

    def __init__(self, out: BinaryIO, workspace: Workspace) -> None:
        self.out = out
        self.workspace = workspace
        self.warm = WarmChildren()
        self.handles: dict[str, ChildHandle] = {}
        self.threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message, separators=(",", ":"), default=str) + "\n").encode()
        with self._lock:
            try:
                self.out.write(data)
                self.out.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass  # the engine hung up; EOF on stdin ends this process

    def handle(self, message: dict[str, Any]) -> None:
        op = message.get("op")
        if op == "job":
            job_id = str(message.get("id"))
            self.handles[job_id] = ChildHandle()
            thread = threading.Thread(target=self._job, args=(job_id, message.get("job")), daemon=True)
            self.threads.append(thread)
            thread.start()
        elif op == "cancel":
            handle = self.handles.get(str(message.get("id")))
            if handle is not None:
                handle.cancel()
        elif op == "prime":  # each lane's next job, and the next compile stage, find their imports done
            device = str(message.get("device") or "cpu")
            for env in message.get("lanes") or [{}]:
                self.warm.prime(BENCH_MODULE, {**child_env(device), **env})

    def _job(self, job_id: str, data: Any) -> None:
        try:
            job = JobData.from_dict(data)
        except ValueError as exc:
            self.send({"id": job_id, "event": "done", "outcome": {"error": f"a job this host cannot read: {exc}"}})
            return
        outcome = run_job(job, self.workspace, handle=self.handles[job_id], warm=self.warm,
                          on_progress=lambda event: self.send({"id": job_id, "event": "progress", "data": event}))
        self.handles.pop(job_id, None)
        self.send({"id": job_id, "event": "done", "outcome": outcome})

    def close(self) -> None:
        """The engine is gone: every job is cancelled (its supervisor sweeps it), then the warm pairs go."""
        cancel_all()
        for handle in list(self.handles.values()):
            handle.cancel()
        for thread in self.threads:
            thread.join(timeout=30)
        self.warm.close()


def serve(workdir: str | None = None) -> int:
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever else prints goes to stderr; stdout carries only this protocol
    created = not workdir
    base = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="trialtui-host-"))
    base.mkdir(parents=True, exist_ok=True)
    host = Host(out, Workspace(base))
    signal.signal(signal.SIGHUP, lambda *_: os.close(0))  # a hung-up session: as EOF
    host.send(hello())
    try:
        for line in sys.stdin.buffer:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict):
                host.handle(message)
    except (OSError, ValueError):
        pass
    finally:
        host.close()
        if created:
            shutil.rmtree(base, ignore_errors=True)
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description="trialtui's job host: what a remote executor runs (docs/SCALING.md)")
    parser.add_argument("--workdir", default=None, help="where job directories go (default: a temporary one, removed at exit)")
    args = parser.parse_args()
    sys.exit(serve(args.workdir))


if __name__ == "__main__":
    main()
