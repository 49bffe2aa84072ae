"""The child processes the engine starts, by kind: the runner module each one runs.

core imports nothing of the runner (user kernels run only in its child processes), so a job is named
by its module's dotted path: this is the one file outside `trialtui/runner/` that spells one, and
tests/test_job_kinds.py holds every name here to an existing module and finds no other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JobKind:
    """One kind of child job: `python -m <module> SPEC RESULT` under a supervisor."""

    name: str
    module: str
    gpu: bool  # runs on a GPU lane (one job at a time per GPU) where there is one


BENCH = JobKind("bench", "trialtui.runner.bench_job", gpu=True)
TRITON_COMPILE = JobKind("triton compile", "trialtui.runner.compile_job", gpu=False)
CUDA_COMPILE = JobKind("CUDA C++ compile", "trialtui.runner.cuda_compile_job", gpu=False)
NCU_PROFILE = JobKind("Nsight Compute profile", "trialtui.runner.profile_job", gpu=True)
CUPTI_PROFILE = JobKind("CUPTI kernel records", "trialtui.runner.activity_job", gpu=True)
ANALYZE = JobKind("analytic roofline", "trialtui.runner.analyze_job", gpu=False)
CALIBRATE = JobKind("calibrate", "trialtui.runner.calibrate_job", gpu=True)
KINDS = (BENCH, TRITON_COMPILE, CUDA_COMPILE, NCU_PROFILE, CUPTI_PROFILE, ANALYZE, CALIBRATE)

# The process plumbing around every job, not jobs themselves.
SUPERVISOR = "trialtui.runner.supervisor"  # between the engine and a job: limits, capped log, sweep
FORKSERVER = "trialtui.runner.forkserver"  # a warm job module's imports done once, forked per job
CUDA_LAUNCH_COUNTER = "trialtui.runner.cuda_launches:install"  # a call into a built CUDA extension is a launch
