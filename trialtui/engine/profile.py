"""Parent side of analyze, profile and calibrate: specs in, checked results out, and the verdicts.

The analysis (FLOPs and minimum bytes of the reference) is cached per reference hash and bench
sizes: it never changes between trials, so it is computed once.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from trialtui.core.baselines import reference_hash
from trialtui.core.gpus import ceilings_for
from trialtui.core.model import Trial
from trialtui.core.problem import Problem
from trialtui.core.verdicts import context_for, verdicts_for_profile
from trialtui.engine.bench import bench_file, child_env, detect_device
from trialtui.engine.jobs import ChildHandle, run_child
from trialtui.engine.validate import validate_file

ANALYSIS_NAME = "analysis.json"
NCU_TIMEOUT_S = 300.0
ANALYZE_TIMEOUT_S = 120.0


def analyze(problem: Problem, *, gpu: str | None = None, driver: str | None = None, use_cache: bool = True) -> dict[str, Any]:
    """The reference's ops, FLOPs, minimum bytes, fusion chances and roofline (no GPU needed)."""
    key = {"ref": reference_hash(problem.reference), "sizes": problem.bench_cases[0], "dtype": problem.config.dtype}
    cache = problem.state_dir / ANALYSIS_NAME
    if use_cache:
        try:
            cached = json.loads(cache.read_text())
            if cached.get("key") == key:
                return cached["analysis"]
        except (OSError, ValueError, KeyError):
            pass
    spec = problem.job_spec(gpu=gpu, driver=driver, case=0)
    log = problem.state_dir / "logs" / "analyze.log"
    result = run_child("trialtui.runner.analyze_job", spec, timeout_s=ANALYZE_TIMEOUT_S, log_path=log,
                       env={"CUDA_VISIBLE_DEVICES": ""})
    if result.get("state") == "ok":
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps({"key": key, "analysis": result}, default=str))
    return result


def profile_file(problem: Problem, path: Path, *, name: str, env: dict[str, str] | None = None,
                 handle: ChildHandle | None = None) -> dict[str, Any]:
    """The candidate under Nsight Compute; the .ncu-rep stays under .trialtui/profiles/ for the GUI."""
    report = problem.state_dir / "profiles" / name
    spec = problem.job_spec(candidate=str(Path(path).resolve()), report=str(report), case=0,
                            ncu_timeout_s=NCU_TIMEOUT_S)
    log = problem.state_dir / "logs" / f"profile-{name}.log"
    started = time.monotonic()
    result = run_child("trialtui.runner.profile_job", spec, timeout_s=NCU_TIMEOUT_S + 150, log_path=log,
                       env={**child_env("cuda"), **(env or {})}, handle=handle)
    result["wall_s"] = round(time.monotonic() - started, 3)
    return result


def calibrate(*, timeout_s: float = 600.0, log_path: Path | None = None) -> dict[str, Any]:
    """Measure this GPU's copy bandwidth and matmul rates once; cached per GPU name and driver."""
    log = log_path or Path.home() / ".cache" / "trialtui" / "calibrate.log"
    return run_child("trialtui.runner.calibrate_job", {"version": 1}, timeout_s=timeout_s, log_path=log,
                     env=child_env("cuda"))


def trial_verdicts(problem: Problem, trial: Trial, analysis: dict[str, Any] | None,
                   profile: dict[str, Any] | None, gpu: str | None = None,
                   ) -> tuple[list[dict[str, Any]], float | None, dict[str, Any] | None]:
    """Verdicts (counters when the profile has them, else analytic), the speed-of-light fraction and
    the roofline at the ceilings of the GPU the trial ran on (or `gpu`, for a trial run on the CPU)."""
    env = (trial.result or {}).get("env") or {}
    name = env.get("gpu") or gpu
    ceilings = ceilings_for(name, env.get("driver")) if name else None
    context = context_for(analysis, ceilings, trial.median_us, allow_tf32=problem.config.allow_tf32,
                          sol_target=problem.config.sol_target)
    kernels = (trial.validation or {}).get("kernels") or []
    facts = next((k for k in kernels if k.get("arch") == "sm_90"), kernels[0] if kernels else None)
    verdicts = verdicts_for_profile(profile, context, facts)
    roof = context.roofline.to_dict() if context.roofline is not None else None
    return [v.to_dict() for v in verdicts], context.sol(), roof


def profile_candidate(problem: Problem, path: Path, *, gpu: str = "NVIDIA H200") -> dict[str, Any]:
    """`trialtui profile`: check the candidate, then counters on a GPU, or analytic verdicts without one.

    Without a GPU the verdicts come from `gpu`'s roofline (datasheet or calibrated ceilings) and the
    candidate's compile for the problem's arch; nothing is timed, so there is no speed-of-light.
    Returns `state` (the check's; only `correct` carries verdicts), `analytic`, `label`, `profile`,
    `verdicts`, `sol`, `median_us`, `env` and `gpu`.
    """
    device = detect_device()
    result = bench_file(problem, path, device=device)
    if result.get("state") != "correct":
        return {"state": result.get("state"), "message": result.get("message"), "env": result.get("env")}
    trial = Trial(id=path.stem, file=path.name, sha256="", created=0.0, state="correct", result=result)
    env = result.get("env") or {}
    if device == "cuda":
        analysis = analyze(problem, gpu=env.get("gpu"), driver=env.get("driver"))
        body = profile_file(problem, path, name=path.stem)
        label = "Nsight Compute counters" if body.get("available") else f"analytic ({body.get('reason')})"
        target = env.get("gpu")
    else:
        trial.validation = validate_file(problem, path)
        arch = ", ".join(trial.validation.get("arch") or problem.config.arch)
        analysis = analyze(problem, gpu=gpu)
        label = (f"analytic, no GPU on this machine: {gpu}'s roofline and the compile for {arch}; "
                 "not timed, so no speed-of-light")
        body = {"available": False, "reason": label}
        target = gpu
    verdicts, sol, roof = trial_verdicts(problem, trial, analysis, body, gpu=target)
    return {"state": "correct", "analytic": not body.get("available"), "label": label,
            "profile": {k: v for k, v in body.items() if k != "log_tail"}, "verdicts": verdicts, "sol": sol,
            "roofline": roof, "median_us": trial.median_us, "env": env, "gpu": target}
