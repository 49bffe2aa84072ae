"""Child job: the candidate's GPU kernels from CUPTI activity records (torch.profiler), which need
no hardware-counter permission.

`python -m trialtui.runner.activity_job` (served like every job), its spec an `ActivitySpec` (the
problem, the candidate, the bench case, the calls recorded). After warm-up (JIT compiles and
autotuning stay outside the records) the candidate's calls are recorded, then one call of the
reference, whose kernel names tell the candidate's own kernels from library ones. Body:
`available`, `calls`, `wall_us` (host wall clock per call of back-to-back unprofiled calls),
`kernels` [{`name`, `launches`, `duration_ns`}] (totals over the calls, launch gaps excluded) and
`reference_kernels` (names). Interpreting them is core/profilers/activity.py's job.

CUPTI records in the process that runs the candidate, so a hostile candidate could shape them: they
steer advice (verdicts) only, never a result, a time or best (the bench's checker decides those).
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any, Callable

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

from trialtui.core.job_spec import ActivitySpec
from trialtui.core.result import RESULT_VERSION
from trialtui.runner.child import serve
from trialtui.runner.profile_target import WARMUP, prepared


def device_kernels(events) -> dict[str, dict[str, float]]:
    """Per kernel name: launches and total device ns, from a profile's device-side events."""
    found: dict[str, dict[str, float]] = {}
    for evt in events:
        if evt.device_type != DeviceType.CUDA:
            continue
        row = found.setdefault(evt.name, {"launches": 0, "duration_ns": 0.0})
        row["launches"] += 1
        row["duration_ns"] += evt.time_range.elapsed_us() * 1e3
    return found


def _recorded(call: Callable[[], Any], calls: int) -> dict[str, dict[str, float]]:
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            call()
        torch.cuda.synchronize()
    return device_kernels(prof.events())


def wall_per_call_us(call: Callable[[], Any], calls: int, repeats: int = 3) -> float:
    """Host wall clock per call of back-to-back calls, unprofiled: when launching takes longer than
    the kernels, the GPU waits and this exceeds the kernel time."""
    samples = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        started = time.perf_counter()
        for _ in range(calls):
            call()
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - started) * 1e6 / calls)
    return statistics.median(samples)


def run(spec: ActivitySpec) -> dict[str, Any]:
    body: dict[str, Any] = {"version": RESULT_VERSION, "state": "ok", "available": False, "reason": None}
    reference_run, candidate_run, inputs = prepared(spec)
    calls = max(spec.calls, 1)
    with torch.no_grad():
        for _ in range(WARMUP):
            candidate_run(inputs)
            reference_run(inputs)
        wall_us = wall_per_call_us(lambda: candidate_run(inputs), calls)
        try:
            kernels = _recorded(lambda: candidate_run(inputs), calls)
            reference = _recorded(lambda: reference_run(inputs), 1)
        except RuntimeError as exc:  # CUPTI refused (another profiler attached, a driver without it)
            body["reason"] = f"torch.profiler could not record CUDA activity: {exc}"[:400]
            return body
    if not kernels and not reference:  # the reference runs on the GPU too: CUPTI recorded nothing
        body["reason"] = "CUPTI recorded no GPU kernel, not even the reference's (is CUPTI usable here?)"
        return body
    body.update(available=True, calls=calls, wall_us=wall_us,
                kernels=[{"name": name, **row} for name, row in kernels.items()],
                reference_kernels=sorted(reference))
    return body


if __name__ == "__main__":
    serve(run, sys.argv, spec_type=ActivitySpec)
