"""Parent side of analyze, profile and calibrate: specs in, checked results out, and the verdicts.

Profiling goes through the profiler plug-ins (core/profilers): the best one that can run here,
and the next one down when it cannot read what it needs.

The analysis (FLOPs and minimum bytes of the reference) is cached per reference hash and bench
sizes: it never changes between trials, so it is computed once.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from trialtui.core import job_kinds, kernel_split
from trialtui.core.analysis_result import AnalysisResult
from trialtui.core.baselines import reference_hash
from trialtui.core.calibration_result import CalibrationResult
from trialtui.core.gpus import ceilings_for
from trialtui.core.job_spec import AnalyzeSpec, CalibrateSpec
from trialtui.core.model import Trial, TrialState, Verdict, correct_result_stands
from trialtui.core.problem import Problem
from trialtui.core.profile_report import ProfileReport
from trialtui.core.profile_result import ProfileResult
from trialtui.core.profilers import ANALYTIC, candidates, get_profiler, source_of, verdicts_for_profile
from trialtui.core.state_dir import make_dirs
from trialtui.core.verdicts import context_for
from trialtui.engine.bench import bench_file, child_env, detect_device
from trialtui.engine.jobs import ChildHandle, WarmChildren, run_child
from trialtui.engine.validate import validate_file

ANALYSIS_NAME = "analysis.json"
ANALYZE_TIMEOUT_S = 120.0
# Profilers that failed for a reason that holds for this whole machine (ERR_NVGPUCTRPERM, no ncu):
# not tried again while this process runs.
_MACHINE_WIDE: dict[str, str] = {}


def analyze(problem: Problem, *, gpu: str | None = None, driver: str | None = None, use_cache: bool = True,
            warm: WarmChildren | None = None) -> AnalysisResult:
    """The reference's ops, FLOPs, minimum bytes, fusion chances and roofline (no GPU needed); with an
    engine's `warm`, a fork of its fork server (torch imported once) rather than a new interpreter."""
    cached = cached_analysis(problem) if use_cache else None
    if cached is not None:
        return cached
    spec = AnalyzeSpec(**problem.job_spec(), gpu=gpu, driver=driver)
    log = problem.state_dir / "logs" / "analyze.log"
    result = AnalysisResult.read(run_child(job_kinds.ANALYZE.module, spec, timeout_s=ANALYZE_TIMEOUT_S, log_path=log,
                                           env={"CUDA_VISIBLE_DEVICES": ""}, warm=warm))
    if result.ok:
        store_analysis(problem, result)
    return result


def _analysis_key(problem: Problem) -> dict[str, Any]:
    return {"ref": reference_hash(problem.reference), "sizes": problem.bench_cases[0], "dtype": problem.config.dtype}


def cached_analysis(problem: Problem) -> AnalysisResult | None:
    """The analysis of this reference at these sizes, if one was computed (here or by a remote executor)."""
    try:
        cached = json.loads((problem.state_dir / ANALYSIS_NAME).read_text())
        if cached.get("key") == _analysis_key(problem):
            return AnalysisResult.from_json(cached["analysis"])
    except (OSError, ValueError, KeyError, AttributeError):  # ResultError is a ValueError: made again
        pass
    return None


def store_analysis(problem: Problem, result: AnalysisResult) -> None:
    cache = problem.state_dir / ANALYSIS_NAME
    make_dirs(cache.parent)
    cache.write_text(json.dumps({"key": _analysis_key(problem), "analysis": result.to_json()}, default=str))


def profile_file(problem: Problem, path: Path, *, name: str, env: dict[str, str] | None = None,
                 handle: ChildHandle | None = None, device: str = "cuda") -> ProfileResult:
    """The candidate under the best profiler that can run here, falling back down the ranks when one
    cannot read what it needs; the body names its `source` and lists in `skipped` why better ones
    gave nothing. Files worth keeping (an .ncu-rep for the GUI) stay under .trialtui/profiles/."""
    usable, skipped = candidates(device, skip=_MACHINE_WIDE)
    report = problem.state_dir / "profiles" / name
    for profiler in usable:
        if not profiler.job:  # nothing to run: its verdicts come from what the trial already has
            return ProfileResult(source=profiler.name, label=profiler.label, available=True, skipped=skipped,
                                 _keys=("source", "label", "available", "skipped"))
        spec = profiler.spec(problem, str(Path(path).resolve()), str(report))
        log = problem.state_dir / "logs" / f"profile-{name}-{profiler.name}.log"
        started = time.monotonic()
        body = ProfileResult.read(run_child(profiler.job, spec, timeout_s=profiler.timeout_s, log_path=log,
                                            env={**child_env("cuda"), **(env or {})}, handle=handle),
                                  source=profiler.name, label=profiler.label, skipped=skipped,
                                  wall_s=round(time.monotonic() - started, 3))  # after the job: its time
        if body.available or (handle is not None and handle.cancelled):
            return body
        reason = body.reason or body.message or "no records"
        if body.blocked:
            _MACHINE_WIDE[profiler.name] = reason
        skipped = [*skipped, {"source": profiler.name, "reason": reason}]
    return ProfileResult(source=ANALYTIC, available=True, skipped=skipped,  # every profiler failed here
                         _keys=("source", "available", "skipped"))


def calibrate(*, timeout_s: float = 600.0, log_path: Path | None = None) -> CalibrationResult:
    """Measure this GPU's copy bandwidth and matmul rates once; cached per GPU name and driver."""
    log = log_path or Path.home() / ".cache" / "trialtui" / "calibrate.log"
    return CalibrationResult.read(run_child(job_kinds.CALIBRATE.module, CalibrateSpec(), timeout_s=timeout_s,
                                            log_path=log, env=child_env("cuda")))


def trial_verdicts(problem: Problem, trial: Trial, analysis: AnalysisResult | None,
                   profile: ProfileResult | None, gpu: str | None = None,
                   ) -> tuple[list[Verdict], float | None, dict[str, Any] | None]:
    """Verdicts (counters when the profile has them, else analytic), the speed-of-light fraction and
    the roofline at the ceilings of the GPU the trial ran on (or `gpu`, for a trial run on the CPU)."""
    env = (trial.result.env if trial.result else None) or {}
    name = env.get("gpu") or gpu
    ceilings = ceilings_for(name, env.get("driver")) if name else None
    context = context_for(analysis, ceilings, trial.median_us, allow_tf32=problem.config.allow_tf32,
                          sol_target=problem.config.sol_target)
    kernels = (trial.validation.kernels if trial.validation else None) or []
    facts = next((k for k in kernels if k.get("arch") == "sm_90"), kernels[0] if kernels else None)
    verdicts = verdicts_for_profile(profile, context, facts)
    roof = context.roofline.to_dict() if context.roofline is not None else None
    return verdicts, context.sol(), roof


def profile_candidate(problem: Problem, path: Path, *, gpu: str = "NVIDIA H200") -> ProfileReport:
    """`trialtui profile`: check the candidate, then counters on a GPU, or analytic verdicts without one.

    Without a GPU the verdicts come from `gpu`'s roofline (datasheet or calibrated ceilings) and the
    candidate's compile for the problem's arch; nothing is timed, so there is no speed-of-light.
    """
    device = detect_device()
    started = time.monotonic()
    phases: dict[str, float] = {}

    def phase(name: str) -> None:
        nonlocal started
        phases[name] = round(time.monotonic() - started, 3)
        started = time.monotonic()

    reused = established(problem, path) if device == "cuda" else None
    phase("reuse_lookup")
    if reused is None:
        result = bench_file(problem, path, device=device)
        phase("bench")
    else:
        result = reused.result
    if result.state != "correct":
        return ProfileReport(state=result.state, message=result.message, env=result.env)
    trial = Trial(id=path.stem, file=path.name, sha256="", created=0.0, state="correct", result=result)
    env = result.env or {}
    if device == "cuda":
        analysis = analyze(problem, gpu=env.get("gpu"), driver=env.get("driver"))
        phase("analyze")
        body = profile_file(problem, path, name=path.stem)
        phase("profile")
        label = profile_label(body)
        target = env.get("gpu")
    else:
        trial.validation = validate_file(problem, path)
        arch = ", ".join(trial.validation.arch or problem.config.arch)
        analysis = analyze(problem, gpu=gpu)
        label = (f"analytic, no GPU on this machine: {gpu}'s roofline and the compile for {arch}; "
                 "not timed, so no speed-of-light")
        body = ProfileResult(source=ANALYTIC, label=label, available=True, skipped=candidates(device)[1],
                             _keys=("source", "label", "available", "skipped"))
        target = gpu
    verdicts, sol, roof = trial_verdicts(problem, trial, analysis, body, gpu=target)
    analytic = source_of(body) == ANALYTIC or not body.available
    weighed = kernel_split.of_profile(body, kernel_split.own_kernels(trial.validation, path.read_text(errors="replace")))
    return ProfileReport(state="correct", analytic=analytic, label=label, profile=body.without("log_tail"),
                         verdicts=verdicts, sol=sol, roofline=roof, median_us=trial.median_us, env=env, gpu=target,
                         reused_from=reused.id if reused else None, phases_s=phases,
                         library=weighed.to_dict() if weighed is not None else None)


def established(problem: Problem, path: Path) -> Trial | None:
    """The GPU result of a trial with this exact source, judged correct against this exact reference:
    `trialtui profile` then goes straight to the counters, without a second benchmark."""
    from trialtui.core.store import DB_NAME, Store, StoreError, sha256_of

    if not (problem.state_dir / DB_NAME).exists():
        return None
    try:
        sha, ref = sha256_of(path.read_bytes()), reference_hash(problem.reference)
        with Store.open(problem.root, writer=False) as store:
            trials = store.trials()
    except (StoreError, OSError, ValueError):
        return None
    for trial in reversed(trials):
        if correct_result_stands(trial.state, trial.result.state if trial.result else None):
            trial = replace(trial, state=TrialState.CORRECT.value)  # profiling: its number stands all the same
        if (trial.sha256 == sha and trial.state == "correct" and not trial.stale and trial.median_us is not None
                and trial.result is not None and trial.result.reference_sha == ref):
            return trial
    return None


def profile_label(body: ProfileResult) -> str:
    """Whose numbers the verdicts are, and why the better profilers gave none."""
    profiler = get_profiler(source_of(body)) if body.available else None
    used = profiler.label if profiler is not None else "the roofline and compile facts"
    why = "; ".join(f"{p['source']}: {p['reason']}" for p in body.skipped or [])
    if not body.available and body.reason:
        why = "; ".join(x for x in (why, f"{source_of(body)}: {body.reason}") if x)
    return f"{used} ({why})" if why else used
