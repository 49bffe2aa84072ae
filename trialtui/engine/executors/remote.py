"""What every executor that runs jobs off this machine shares: a job packed as data, its outcome unpacked.

A job carries the problem's files (the reference, its support files and sibling modules, task.yml and the
files it names, trialtui.toml, other files of the folder such as CUDA sources; never other candidates),
the candidate and the baseline cache, so the far side needs no shared file system. What comes back is the
result (its paths moved to this machine's), and the files the job wrote under its `.trialtui/logs/` and
`.trialtui/profiles/`, which land in this problem's `.trialtui/`. A connection lost during a job gives a
result in state `interrupted`; the engine marks the trial so and tries once more.
"""

from __future__ import annotations

import json
import os
import time
from abc import abstractmethod
from dataclasses import replace
from pathlib import Path
from typing import Any

from trialtui.core.analysis_result import AnalysisResult
from trialtui.core.baselines import CACHE_NAME, BaselineCache
from trialtui.core.bench_result import BenchResult
from trialtui.core.executor import Executor, JobData, Progress, decode, relative_path_ok
from trialtui.core.job_options import AnalyzeOptions, BenchOptions, JobOptions, ProfileOptions, ValidateOptions
from trialtui.core.problem import Problem
from trialtui.core.profile_result import ProfileResult
from trialtui.core.result import RESULT_VERSION, ResultError
from trialtui.core.state_dir import make_dirs
from trialtui.core.store import atomic_write
from trialtui.core.validation_report import ValidationReport
from trialtui.engine import guard
from trialtui.engine.bench import baseline_key
from trialtui.engine.jobs import SANDBOX_ENV
from trialtui.engine.profile import cached_analysis, store_analysis
from trialtui.engine.validate import finding, validate_file

INTERRUPTED = "interrupted"
MAX_FILE_BYTES = 8 << 20  # a file of the problem's folder larger than this stays home (datasets are not sources)
MAX_JOB_BYTES = 64 << 20
BACKSTOP_S = 120.0  # past twice the job's own timeout plus this, a silent far side counts as lost


class Interrupted(Exception):
    """The connection to where the job ran was lost before its outcome came back."""


class RemoteExecutor(Executor):
    """Jobs as `JobData` to `run`, which each remote executor implements; the job functions around it."""

    @abstractmethod
    def run(self, job: JobData, *, on_progress: Progress | None, handle: Any) -> dict[str, Any]:
        """Run one job there; its outcome `{"result", "root", "files"}`, or `{"error": why}`.

        Raises Interrupted when the connection is lost meanwhile; polls `handle.cancelled` and cancels there."""

    def result_env(self) -> dict[str, Any]:
        """What a result's `env` says of where it ran, beside the host's own name."""
        return {"executor": str(self.target)}

    # The job functions

    def bench(self, problem: Problem, path: Path | str, *, device: str | None = None, seeds: int | None = None,
              baseline_us: float | None = None, use_cache: bool = True, log_path: Path | None = None,
              handle: Any = None, on_progress: Progress | None = None, cuda_graph: bool = False,
              env: dict[str, str] | None = None, warm: Any = None, name: str | None = None,
              heldout: list[dict[str, Any]] | None = None) -> BenchResult:
        """`bench_file` there, as `bench_job` sends it."""
        del warm  # the far side keeps its own warm job processes
        log_path = Path(log_path or problem.state_dir / "logs" / f"bench-{Path(path).stem}-{int(time.time() * 1000)}.log")
        timeout_s = problem.config.bench_timeout_s + (problem.config.generalize.budget_s if heldout else 0.0)
        options = BenchOptions(device=device or self.device, seeds=seeds, baseline_us=baseline_us, use_cache=use_cache,
                               cuda_graph=cuda_graph, env=env or {}, name=name, log=state_rel(problem, log_path),
                               timeout_s=timeout_s, heldout=heldout or None)
        return self.bench_job(problem, path, options, log_path, handle=handle, on_progress=on_progress)

    def bench_job(self, problem: Problem, path: Path | str, options: BenchOptions, log_path: Path, *,
                  handle: Any, on_progress: Progress | None) -> BenchResult:
        """One bench job with these options, its log at `log_path` here; the baselines it measured on a GPU
        join this machine's cache, per GPU model."""
        cache = problem.state_dir / CACHE_NAME
        state = {CACHE_NAME: cache.read_bytes()} if options.use_cache and cache.is_file() else {}
        try:
            outcome = self.run(pack(problem, path, options, state), on_progress=on_progress, handle=handle)
        except Interrupted as exc:
            return self._lost(f"the connection was lost while the job ran ({exc})", options.device)
        result = replace(self._unpacked(problem, outcome, options.device), log=str(log_path))
        env = result.env or {}
        if result.state == "correct" and result.baselines and env.get("device") == "cuda":
            cases = problem.bench_cases
            BaselineCache(problem.state_dir).record(baseline_key(problem, cases[0], options.cuda_graph), env,
                                                    result.baselines)  # this machine's cache, per GPU model
        return result

    def validate(self, problem: Problem, path: Path | str, *, arch: str | list[str] | None = None,
                 compile: bool = True, timeout_s: float | None = None, name: str | None = None,
                 warm: Any = None, handle: Any = None) -> ValidationReport:
        """The static stage here (pure Python, milliseconds); the compile stage there (`handle` cancels it)."""
        del warm  # the far side keeps its own warm job processes
        if not compile:
            return validate_file(problem, path, compile=False, name=name, arch=arch)
        options = ValidateOptions(arch=arch, name=name, timeout_s=timeout_s or problem.config.validate_timeout_s)
        try:
            outcome = self.run(pack(problem, path, options), on_progress=None, handle=handle)
        except Interrupted as exc:
            return self._not_compiled(problem, path, name, arch, finding(
                "error", "interrupted", f"the compile stage did not finish: {exc}; the benchmark job runs the candidate again"))
        if "error" in outcome:
            return self._not_compiled(problem, path, name, arch, finding("error", "executor", outcome["error"]))
        try:
            return ValidationReport.from_json(self._relocated(problem, outcome))
        except ResultError as exc:
            return self._not_compiled(problem, path, name, arch, finding(
                "error", "executor", f"malformed validation from {self.describe()}: {exc}"))

    @staticmethod
    def _not_compiled(problem: Problem, path: Path | str, name: str | None, arch: Any,
                      why: dict[str, Any]) -> ValidationReport:
        """The static stage's report, with why the compile stage gave nothing: an error of running, not of the file."""
        report = validate_file(problem, path, compile=False, name=name, arch=arch)
        return replace(report, errors=[*report.errors, {**why, "runtime": True}], ok=False, invalid=False)

    def profile(self, problem: Problem, path: Path | str, *, name: str, env: dict[str, str] | None = None,
                handle: Any = None, device: str = "cuda") -> ProfileResult:
        options = ProfileOptions(name=name, env=env or {}, device=device)
        try:
            outcome = self.run(pack(problem, path, options), on_progress=None, handle=handle)
        except Interrupted as exc:
            return ProfileResult.unavailable(f"the connection was lost while profiling ({exc})")
        if "error" in outcome:
            return ProfileResult.unavailable(outcome["error"])
        try:
            return ProfileResult.from_json(self._relocated(problem, outcome))
        except ResultError as exc:
            return ProfileResult.unavailable(f"malformed profile from {self.describe()}: {exc}")

    def analyze(self, problem: Problem, *, gpu: str | None = None, driver: str | None = None,
                use_cache: bool = True, warm: Any = None) -> AnalysisResult:
        """Cached here per reference and sizes, as the local analysis is; computed there when not."""
        del warm  # the far side keeps its own warm job processes
        cached = cached_analysis(problem) if use_cache else None
        if cached is not None:
            return cached
        try:
            outcome = self.run(pack(problem, None, AnalyzeOptions(gpu=gpu, driver=driver)), on_progress=None, handle=None)
        except Interrupted as exc:
            return AnalysisResult.failure(f"the connection was lost ({exc})")
        if "error" in outcome:
            return AnalysisResult.failure(outcome["error"])
        result = AnalysisResult.read(self._relocated(problem, outcome))
        if result.ok:
            store_analysis(problem, result)
        return result

    # Outcomes

    def _lost(self, why: str, device: str | None) -> BenchResult:
        return BenchResult.failure(INTERRUPTED, f"{self.describe()}: {why}",
                                   env={"device": device or self.device, **self.result_env()})

    def _unpacked(self, problem: Problem, outcome: dict[str, Any], device: str | None) -> BenchResult:
        if "error" in outcome:
            return BenchResult.failure("error", f"{self.describe()}: {outcome['error']}",
                                       env={"device": device or self.device, **self.result_env()})
        try:
            result = BenchResult.from_json(self._relocated(problem, outcome))
        except ResultError as exc:
            return BenchResult.failure("error", f"malformed result from {self.describe()}: {exc}",
                                       env={"device": device or self.device, **self.result_env()})
        return replace(result, env={**(result.env or {}), **self.result_env()})

    def _relocated(self, problem: Problem, outcome: dict[str, Any]) -> dict[str, Any]:
        """The files the job wrote, into this problem's .trialtui/; the result's paths pointed at them."""
        for rel, data in (outcome.get("files") or {}).items():
            if not relative_path_ok(rel, ups=False) or rel.split("/")[0] not in ("logs", "profiles"):
                continue  # the far side writes logs and profile reports here, nothing else
            target = problem.state_dir / rel
            make_dirs(target.parent)
            atomic_write(target, decode(data))
        result = outcome.get("result")
        if not isinstance(result, dict):
            return {"version": RESULT_VERSION, "state": "error", "message": f"{self.describe()} sent no result"}
        there = outcome.get("root")
        return relocate(result, str(there), str(problem.root)) if isinstance(there, str) and there else result


def pack(problem: Problem, candidate: Path | str | None, options: JobOptions,
         state: dict[str, bytes] | None = None) -> JobData:
    """The job as data: the problem's files relative to its root, the candidate, the options (whose type is its kind)."""
    root = problem.root.resolve()
    wanted: dict[Path, None] = {}
    spec = guard.with_sibling_modules(problem.job_spec(candidate=str(Path(candidate).resolve()) if candidate else None))
    for path in guard.protected_files(spec):
        wanted[Path(path).resolve()] = None
    for path in sorted(root.iterdir()):
        if path.is_file() and not path.name.startswith(".") and not problem.is_candidate(path):
            wanted.setdefault(path.resolve(), None)
    files: dict[str, bytes] = {}
    rel_candidate = None
    total = 0
    for path in wanted:
        if not path.is_file() or (path.stat().st_size > MAX_FILE_BYTES and path != Path(problem.reference).resolve()):
            continue
        rel = _rel(path, root)
        if rel is None:
            continue
        data = path.read_bytes()
        total += len(data)
        files[rel] = data
    if candidate is not None:
        cand = Path(candidate).resolve()
        data = cand.read_bytes()
        rel_candidate = _rel(cand, root, ups=False) or f".trialtui/jobs/{cand.name}"
        files[rel_candidate] = data
        total += len(data)
    if total > MAX_JOB_BYTES:
        raise ValueError(f"the problem's files come to {total >> 20} MB, more than a job carries ({MAX_JOB_BYTES >> 20} MB)")
    options = replace(options, sandbox=os.environ.get(SANDBOX_ENV) == "1")  # `--sandbox` holds there too
    return JobData(problem.root.name, options, files, rel_candidate, state or {})


def _rel(path: Path, root: Path, *, ups: bool = True) -> str | None:
    rel = os.path.relpath(path, root).replace(os.sep, "/")
    return rel if relative_path_ok(rel, ups=ups) else None


def state_rel(problem: Problem, path: Path) -> str:
    """A log's path as the job names it: relative to the problem's .trialtui/, where it comes back to."""
    try:
        rel = Path(path).resolve().relative_to(problem.state_dir.resolve()).as_posix()
    except ValueError:
        rel = f"logs/{Path(path).name}"
    return rel if relative_path_ok(rel, ups=False) else f"logs/{Path(path).name}"


def relocate(value: Any, there: str, here: str) -> Any:
    """Every string that names a path under the far side's problem root, renamed to this machine's."""
    if isinstance(value, str):
        return here + value[len(there):] if value == there or value.startswith(there + "/") else value
    if isinstance(value, dict):
        return {k: relocate(v, there, here) for k, v in value.items()}
    if isinstance(value, list):
        return [relocate(v, there, here) for v in value]
    return value


def deadline_for(job: JobData) -> float:
    """The backstop: the far side applies the job's own timeout; this only catches a far side gone silent."""
    return time.monotonic() + 2 * job.options.timeout_s + BACKSTOP_S


def dumps(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, separators=(",", ":")) + "\n").encode()
