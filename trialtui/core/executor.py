"""The executor seam: where a problem's jobs run (this machine's lanes, a GPU box over SSH, a Ray cluster).

The engine asks an `Executor` for its slots (one lane each, one job at a time) and hands it jobs in the
shape `bench_file`, `validate_file`, `profile_file` and `analyze` have, so the loop is the same wherever
jobs run. Off this machine a job travels as `JobData` (what it needs, as bytes: no shared file system)
and its outcome comes back as data. Implementations live in `trialtui.engine.executors`, one module
each, registered under `trialtui.executors` (third parties through entry points of that group).
"""

from __future__ import annotations

import base64
import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from trialtui.core.analysis_result import AnalysisResult
from trialtui.core.bench_result import BenchResult
from trialtui.core.config import ExecutorSettings
from trialtui.core.job_options import OPTIONS, BenchOptions, JobOptions
from trialtui.core.problem import Problem
from trialtui.core.profile_result import ProfileResult
from trialtui.core.validation_report import ValidationReport

GROUP = "trialtui.executors"
JOB_VERSION = 2  # 2: a job's options are typed (core/job_options.py), read strictly

Progress = Callable[[dict[str, Any]], None]  # a running bench job's progress events, as they come


class ExecutorError(RuntimeError):
    """An executor that cannot be used (unknown, unreachable, missing its package); the message says how to fix it."""


@dataclass(frozen=True)
class Target:
    """`--executor` or `[executor] url`: `local`, `ssh://user@host[:port]`, `ray://ADDRESS`."""

    scheme: str
    address: str = ""
    user: str | None = None
    host: str | None = None
    port: int | None = None

    def __str__(self) -> str:
        return f"{self.scheme}://{self.address}" if self.address else self.scheme


def parse_target(text: str | None) -> Target:
    """A Target, or ExecutorError naming what is wrong; no text means this machine."""
    text = (text or "local").strip()
    if "://" not in text:
        if text == "local":
            return Target("local")
        raise ExecutorError(f"executor {text!r}: expected local, ssh://user@host[:port] or ray://ADDRESS")
    scheme, address = text.split("://", 1)
    if scheme != "ssh":
        if not address:
            raise ExecutorError(f"executor {text!r} names no address")
        return Target(scheme, address)
    parts = urlsplit(text)
    try:
        port = parts.port
    except ValueError as exc:
        raise ExecutorError(f"executor {text!r}: {exc}") from exc
    if not parts.hostname or parts.path not in ("", "/") or parts.password:
        raise ExecutorError(f"executor {text!r}: expected ssh://user@host[:port] (no password: keys or an agent)")
    return Target("ssh", address.rstrip("/"), parts.username, parts.hostname, port)


@dataclass(frozen=True)
class Slot:
    """Where one job at a time runs: a GPU (or the CPU) of a host; the engine makes a lane of each."""

    name: str  # the lane's name, as the status bar shows it
    gpu: str | None  # the CUDA_VISIBLE_DEVICES value its jobs get on their host; None for a CPU slot
    host: str = ""
    model: str | None = None  # the GPU's model, when the executor knows it before the first result


class Executor(ABC):
    """Runs a problem's jobs somewhere, behind the same supervisor, limits and checker/candidate split.

    `open` connects and says where the lanes are; the job methods block (the engine calls them from
    threads), take a cancel handle (anything with `cancelled`) and return what the local functions of
    the same name return, with files (logs, profile reports) already written under the problem's
    `.trialtui/`. A remote result's `env` names its `host` and `executor`.
    """

    scheme: ClassVar[str]

    def __init__(self, target: Target, settings: ExecutorSettings, device: str | None = None) -> None:
        self.target = target
        self.settings = settings
        self.requested_device = device
        self.device = device or "cpu"
        self.slots: list[Slot] = []  # what `open` found

    @abstractmethod
    def open(self) -> list[Slot]:
        """Connect (or look at this machine), set `device` and `slots`, and return the slots; raises ExecutorError."""

    @abstractmethod
    def describe(self) -> str:
        """Where jobs run, in a few words for the status bar: `this machine`, `ssh alice@gpu-box`."""

    @abstractmethod
    def bench(self, problem: Problem, path: Path | str, *, device: str | None = None, seeds: int | None = None,
              baseline_us: float | None = None, use_cache: bool = True, log_path: Path | None = None,
              handle: Any = None, on_progress: Progress | None = None, cuda_graph: bool = False,
              env: dict[str, str] | None = None, warm: Any = None, name: str | None = None,
              heldout: list[dict[str, Any]] | None = None) -> BenchResult:
        """Check and time one candidate, in a job of its own.

        device: "cuda" or "cpu" (None: the executor's); seeds: correctness seeds (None: the config's);
        baseline_us: a baseline time given rather than measured; use_cache: reuse baselines measured
        before; log_path: the job's log (None: one under .trialtui/logs/); handle: cancels the job;
        on_progress: called with each progress event; cuda_graph: time as CUDA graph replays; env: extra
        environment of the job (a lane's CUDA_VISIBLE_DEVICES); warm: the engine's warm job processes,
        used where the job runs on this machine; name: the candidate's name as the user knows it (a
        snapshot runs under it); heldout: held-out cases (core/heldout.py) to check instead, timing nothing."""

    @abstractmethod
    def validate(self, problem: Problem, path: Path | str, *, arch: str | list[str] | None = None,
                 compile: bool = True, timeout_s: float | None = None, name: str | None = None,
                 warm: Any = None, handle: Any = None) -> ValidationReport:
        """Static checks, then the compile stage.

        arch: the archs to build for (None: the config's, or the candidate's own); compile: run the compile
        stage, not only the static checks; timeout_s: the compile stage's limit (None: the config's); name:
        the candidate's name as the user knows it; warm: as `bench`'s; handle: cancels the compile stage."""

    @abstractmethod
    def profile(self, problem: Problem, path: Path | str, *, name: str, env: dict[str, str] | None = None,
                handle: Any = None, device: str = "cuda") -> ProfileResult:
        """The candidate under the best profiler that runs there.

        name: the report's name under .trialtui/profiles/ (the trial's id); env: extra environment of the
        job (the lane's GPU); handle: cancels the job; device: where the profilers look for counters."""

    @abstractmethod
    def analyze(self, problem: Problem, *, gpu: str | None = None, driver: str | None = None,
                use_cache: bool = True, warm: Any = None) -> AnalysisResult:
        """The reference's FLOPs, bytes and roofline.

        gpu: the GPU whose ceilings the roofline uses (None: no roofline); driver: its driver, for
        calibrated ceilings; use_cache: reuse the analysis of the same reference and sizes; warm: as `bench`'s."""

    def close(self) -> None:
        """Hang up; jobs still running there are cancelled and swept."""


def encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def decode(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)


@dataclass
class JobData:
    """One job as it travels: the problem's files (paths relative to its root, `../` allowed for files a
    GPU MODE task keeps beside it), the candidate, state files that seed the far side's `.trialtui/`
    (the baseline cache), and the job's options, whose type says its kind. Bytes are base64 in the JSON."""

    problem: str  # the problem directory's name
    options: JobOptions  # the kind's options (core/job_options.py)
    files: dict[str, bytes] = field(default_factory=dict)
    candidate: str | None = None  # its path relative to the root (a snapshot under .trialtui/snapshots/)
    state: dict[str, bytes] = field(default_factory=dict)  # relative to .trialtui/

    @property
    def kind(self) -> str:
        return self.options.kind

    def digest(self) -> str:
        """Of the problem's files only: jobs of one problem share a directory on the far side."""
        h = hashlib.sha256(self.problem.encode())
        for name in sorted(self.files):
            if name != self.candidate:
                h.update(name.encode() + b"\0" + hashlib.sha256(self.files[name]).digest())
        return h.hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        return {"version": JOB_VERSION, "kind": self.kind, "problem": self.problem,
                "files": {k: encode(v) for k, v in self.files.items()}, "candidate": self.candidate,
                "state": {k: encode(v) for k, v in self.state.items()}, "options": self.options.to_wire()}

    @classmethod
    def from_dict(cls, data: Any) -> JobData:
        """Checked on read, like a job's result: a ValueError says what is wrong."""
        if not isinstance(data, dict) or data.get("version") != JOB_VERSION:
            raise ValueError(f"not a job of version {JOB_VERSION}")
        if data.get("kind") not in OPTIONS:
            raise ValueError(f"unknown job kind {data.get('kind')!r}")
        files, state = data.get("files"), data.get("state")
        if not isinstance(files, dict) or not isinstance(state, dict):
            raise ValueError("files and state must be objects")
        name = data.get("problem")
        if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
            raise ValueError(f"bad problem name {name!r}")
        for path in [*files, *state]:
            if not relative_path_ok(path):
                raise ValueError(f"bad path {path!r}")
        options = OPTIONS[data["kind"]].from_wire(data.get("options"))
        if isinstance(options, BenchOptions) and not relative_path_ok(options.log, ups=False):
            raise ValueError(f"bad log path {options.log!r}")  # written below the far side's .trialtui/, nowhere else
        return cls(name, options, {k: decode(v) for k, v in files.items()}, data.get("candidate"),
                   {k: decode(v) for k, v in state.items()})


def relative_path_ok(path: str, *, ups: bool = True) -> bool:
    """A path a job may carry: relative, no empty or `.` parts, `..` only leading (and only if `ups`)."""
    if not isinstance(path, str) or not path or path.startswith("/") or "\\" in path or "\0" in path:
        return False
    parts = path.split("/")
    leading = 0
    while leading < len(parts) and parts[leading] == "..":
        leading += 1
    rest = parts[leading:]
    return bool(rest) and (ups or leading == 0) and all(p not in ("", ".", "..") for p in rest)


def ups(path: str) -> int:
    """How many leading `..` a carried path has."""
    count = 0
    for part in path.split("/"):
        if part != "..":
            break
        count += 1
    return count


def ran_on(result: BenchResult | None) -> str:
    """Where a job ran, for views and reports: '' on this machine; else `gpu-box · NVIDIA H200 (ssh://…)`."""
    env = (result.env if result else None) or {}
    executor = env.get("executor")
    if not executor:
        return ""
    device = env.get("gpu") or ("CPU" if env.get("device") == "cpu" else env.get("device") or "unknown device")
    return f"{env.get('host') or 'unknown host'} · {device} ({executor})"


def model_speedups(result: BenchResult | None, baseline: str) -> str:
    """A trial measured on every GPU model at once (Ray, `models = "every"`): `H200 1.31× · A100 1.12×`."""
    models = (result.models if result else None) or {}
    parts = []
    for model, outcome in models.items():
        speed = ((outcome or {}).get("speedup") or {}).get(baseline)
        parts.append(f"{model} {speed:.2f}×" if isinstance(speed, (int, float)) else f"{model} {(outcome or {}).get('state')}")
    return " · ".join(parts)
