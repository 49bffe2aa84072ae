"""Parent side of a benchmark: build the job spec, run the child, keep the baseline cache."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from trialtui.core import job_kinds, provenance
from trialtui.core.baselines import BaselineCache, reference_hash
from trialtui.core.bench_result import BenchResult
from trialtui.core.job_spec import BenchSpec
from trialtui.core.languages import Language, language_of_file
from trialtui.core.problem import Problem
from trialtui.core.result import ResultError
from trialtui.engine.jobs import ChildHandle, WarmChildren, run_child

BENCH_MODULE = job_kinds.BENCH.module


def detect_device() -> str:
    """cuda when an NVIDIA device node is visible, else cpu; decided without importing torch."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) == "":
        return "cpu"
    return "cuda" if Path("/dev/nvidiactl").exists() else "cpu"


def child_env(device: str) -> dict[str, str]:
    """Without a GPU, Triton kernels run in its CPU interpreter (set before triton is imported)."""
    return {"TRITON_INTERPRET": "1"} if device == "cpu" else {"TRITON_INTERPRET": "0"}


def bench_file(
    problem: Problem,
    path: Path | str,
    *,
    device: str | None = None,
    seeds: int | None = None,
    baseline_us: float | None = None,
    use_cache: bool = True,
    log_path: Path | None = None,
    handle: ChildHandle | None = None,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
    cuda_graph: bool = False,
    env: dict[str, str] | None = None,
    warm: WarmChildren | None = None,
    name: str | None = None,
    heldout: list[dict[str, Any]] | None = None,
    correctness_only: bool = False,
) -> BenchResult:
    """Check and time one candidate file in a child process; returns its result, read from the child's JSON.

    With `heldout` (core/heldout.py's cases as dicts) it checks those cases instead, each on its own,
    and times nothing (engine/generalize.py); with `correctness_only` it checks the usual cases and times
    nothing (a replay, whose numbers come from a recording)."""
    device = device or detect_device()
    cfg = problem.config
    invalid = static_verdict(problem, Path(path), name)
    if invalid is not None:
        return invalid
    language = language_of_file(path)
    if device == "cpu" and not language.runs_on_cpu:
        return needs_gpu(language, cfg.dtype, problem.test_cases)
    cases = problem.bench_cases if device == "cuda" else problem.test_cases
    given = {}
    if baseline_us is not None:
        given[cfg.primary_baseline] = {"median_us": float(baseline_us), "rse": 0.0, "given": True}
    spec = problem_spec(problem, device, seeds=seeds, cuda_graph=cuda_graph,
                        candidate=str(Path(path).resolve()), given_baselines=given,
                        candidate_as=str(problem.root / name) if name else None,  # a snapshot runs under the name the user knows
                        correctness_only=correctness_only)
    if heldout:
        spec = heldout_spec(problem, spec, heldout)
    cache = BaselineCache(problem.state_dir)
    key = baseline_key(problem, cases[0], cuda_graph)
    if on_progress is not None and use_cache:
        known = cache.lookup(key)
        if known:  # a number to show while this run times its own baselines; never the result's
            on_progress({"phase": "cached_baselines", "baselines": known})
    if log_path is None:
        log_path = problem.state_dir / "logs" / f"bench-{Path(path).stem}-{int(time.time() * 1000)}.log"
    result = _read(run_child(
        BENCH_MODULE, spec, timeout_s=spec.timeout_s, log_path=log_path,
        env={**child_env(device), **(env or {})}, handle=handle, on_progress=on_progress, warm=warm,
    ))
    env = {"device": device, **(result.env or {})}  # a killed child's result too: budget counts GPU runs
    result = replace(
        result, log=str(log_path), reference_sha=key["ref_hash"],  # what `trialtui profile` checks before it reuses this verdict
        dtype=cfg.dtype if result.dtype is None else result.dtype, sizes=cases if result.sizes is None else result.sizes,
        env=env, provenance=provenance.measured(env.get("gpu") or (None if device == "cuda" else device)).to_dict(),
    )
    if result.state == "correct" and result.baselines and device == "cuda":
        cache.record(key, env, result.baselines)
    _end_log(log_path, result)
    return result


def _end_log(path: Path, result: BenchResult) -> None:
    """The job's log ends with its verdict: the file a result names never reads empty (a job that timed out, or
    passed, may have printed nothing)."""
    try:
        with open(path, "a", encoding="utf-8") as log:
            log.write(f"trialtui: {result.state}{f': {result.message}' if result.message else ''}\n")
    except OSError:  # the problem directory went away meanwhile: the result stands without it
        pass


def _read(data: dict[str, Any]) -> BenchResult:
    """The job's JSON as a result; run_child checked the envelope, so what fails here is a key of the wrong type."""
    try:
        return BenchResult.from_json(data)
    except ResultError as exc:
        return BenchResult.failure("error", f"malformed result from child: {exc}", log_tail=data.get("log_tail", ""))


def problem_spec(problem: Problem, device: str, *, seeds: int | None = None, cuda_graph: bool = False,
                 **candidate: Any) -> BenchSpec:
    """A bench job's spec; without the candidate's keys it is what a warm checker prepares ahead (runner/prepared.py)."""
    cfg = problem.config
    return BenchSpec(**problem.job_spec(device=device, seeds=seeds or cfg.seeds, baselines=cfg.baselines,
                                        cuda_graph=cuda_graph, timeout_s=cfg.bench_timeout_s, **candidate))


def heldout_spec(problem: Problem, spec: BenchSpec, cases: list[dict[str, Any]]) -> BenchSpec:
    """A bench spec for held-out cases: correctness only, within the budget, past the job's start."""
    budget = problem.config.generalize.budget_s
    return replace(spec, heldout=cases, heldout_budget_s=budget, correctness_only=True, test_cases=[],
                   bench_cases=[], timeout_s=problem.config.bench_timeout_s + budget)


def static_verdict(problem: Problem, path: Path, name: str | None = None) -> BenchResult | None:
    """The watcher's static stage, so a file gets one verdict whether it is watched or benched."""
    from trialtui.engine.validate import finding_message, static_stage

    errors = [f for f in static_stage(problem, path, name) if f["severity"] == "error"]
    if not errors:
        return None
    return BenchResult.failure("invalid", finding_message(errors[0]), validation={"ok": False, "errors": errors})


def needs_gpu(language: Language, dtype: str, cases: list[dict[str, Any]]) -> BenchResult:
    """The result for a candidate that only a GPU can run, on a machine without one: an error that
    says so, never a verdict on the kernel from a CPU run."""
    return BenchResult.failure(
        "error", f"needs a GPU: {language.label} candidates run only on an NVIDIA GPU and this machine has none "
                 "(validate compiles it here; run bench where there is a GPU)",
        needs_gpu=True, language=language.name, dtype=dtype, sizes=cases, env={"device": "cpu"})


def baseline_key(problem: Problem, case: dict[str, Any], cuda_graph: bool) -> dict[str, Any]:
    """Everything the parent knows that changes a baseline; the GPU and versions come from the result's env."""
    cfg = problem.config
    return {
        "ref_hash": reference_hash(problem.reference), "sizes": case, "dtype": cfg.dtype,
        "allow_tf32": cfg.allow_tf32, "cuda_graph": cuda_graph,
    }
