"""The counter-free profiler: CUPTI activity records through torch.profiler, which any user may
collect where hardware counters are blocked (ERR_NVGPUCTRPERM on most cloud machines).

The job (runner/activity_job.py) records the candidate's calls and one call set of the reference.
What records support, and nothing more: kernel time per call (launch gaps excluded) against the
roofline's floor, how much of the call the GPU was busy, launch counts, the dominant kernel, and
whether the candidate runs any kernel the reference does not (its own). Memory traffic is an
estimate: the analytic minimum bytes at the kernel time, never a measured byte count.
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from trialtui.core import job_kinds, plugins
from trialtui.core.job_spec import ActivitySpec
from trialtui.core.model import Severity, Verdict
from trialtui.core.verdict_registry import VerdictId as V
from trialtui.core.verdict_registry import threshold
from trialtui.core.verdicts import Context, fmt_us, make_verdict, ordered, verdicts_from_analytic

if TYPE_CHECKING:
    from trialtui.core.problem import Problem

TINY_US, MANY_LAUNCHES, GPU_BUSY = threshold("TINY_US"), threshold("MANY_LAUNCHES"), threshold("GPU_BUSY")
DOMINANT, OWN_TIME = threshold("DOMINANT"), threshold("OWN_TIME")
# ATen's own kernels are library code whatever the reference happens to launch.
_LIBRARY_MARKS = ("at::native::", "at::cuda::")


def _per_call(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Kernel rows per call, longest first, with their share of GPU time and whether they are the
    candidate's own (not launched by the reference, not ATen's)."""
    calls = max(int(body.get("calls") or 1), 1)
    reference = set(body.get("reference_kernels") or [])
    rows = []
    for k in body.get("kernels") or []:
        name = str(k.get("name", "?"))
        own = name not in reference and not any(mark in name for mark in _LIBRARY_MARKS)
        rows.append({"name": name, "duration_ns": float(k.get("duration_ns") or 0.0) / calls,
                     "launches": float(k.get("launches") or 0) / calls, "own": own})
    total = sum(r["duration_ns"] for r in rows) or 1.0
    for r in rows:
        r["share"] = r["duration_ns"] / total
    return sorted(rows, key=lambda r: -r["duration_ns"])


def kernel_us(body: Mapping[str, Any]) -> float:
    """GPU kernel time per call, launch gaps excluded."""
    return sum(r["duration_ns"] for r in _per_call(body)) / 1e3


def _launch_bound(rows: list[dict[str, Any]], gpu_us: float, wall_us: float | None) -> Verdict | None:
    launches = sum(r["launches"] for r in rows)
    per_kernel = statistics.median([r["duration_ns"] / 1e3 / r["launches"] for r in rows if r["launches"]]
                                   or [gpu_us])
    busy = gpu_us / wall_us if wall_us else None
    evidence = [f"{launches:.0f} launches per call, median kernel {fmt_us(per_kernel)}",
                f"GPU busy {busy:.0%} of the call ({fmt_us(gpu_us)} of {fmt_us(wall_us)})" if busy else ""]
    many_tiny = launches >= MANY_LAUNCHES and per_kernel < TINY_US
    if not (many_tiny or (busy is not None and busy < GPU_BUSY) or gpu_us < TINY_US):
        return None
    return make_verdict(V.LAUNCH_BOUND, Severity.WARNING, "Launch-bound: the GPU waits on launches", evidence,
                        "Fuse the launches into one kernel, do more work per launch, or replay the call as a "
                        "CUDA graph.", "activity")


def _dominant(rows: list[dict[str, Any]]) -> Verdict | None:
    if len(rows) < 2 or rows[0]["share"] < DOMINANT:
        return None
    top = rows[0]
    return make_verdict(V.DOMINANT_KERNEL, Severity.INFO, f"One kernel dominates: {top['name'][:60]}",
                        [f"{top['share']:.0%} of GPU time ({fmt_us(top['duration_ns'] / 1e3)} per call, "
                         f"{top['launches']:.0f} launch(es)) among {len(rows)} kernels"],
                        "Spend the next change on this kernel; the others together are "
                        f"{1 - top['share']:.0%} of the time.", "activity")


def _no_own_kernel(rows: list[dict[str, Any]]) -> Verdict | None:
    own = sum(r["share"] for r in rows if r["own"])
    if not rows or own >= OWN_TIME:
        return None
    names = ", ".join(r["name"][:40] for r in rows[:3])
    title = "No kernel of the candidate's own" if own == 0 else "Library kernels do the work"
    return make_verdict(V.NO_OWN_KERNEL, Severity.WARNING, title,
                        [f"{1 - own:.0%} of GPU time in kernels the reference launches too or ATen's ({names})"],
                        "The same library kernels cannot beat the reference: write the hot path as a kernel of "
                        "your own (Triton or CUDA C++) and fuse what surrounds it.", "activity")


def verdicts_from_records(body: Mapping[str, Any], context: Context,
                          facts: dict[str, Any] | None = None) -> list[Verdict]:
    """Verdicts from kernel records: the analytic rules at the kernel time (so launch gaps never pass
    for low bandwidth), plus launch-bound, dominant-kernel and no-own-kernel from the records."""
    rows = _per_call(body)
    if not rows:
        return [make_verdict(V.NO_OWN_KERNEL, Severity.WARNING, "No GPU kernel launched",
                             [f"no kernel in {body.get('calls')} profiled calls"],
                             "The candidate did its work without a GPU kernel: move the work onto the GPU.",
                             "activity")]
    gpu_us = sum(r["duration_ns"] for r in rows) / 1e3
    launch = _launch_bound(rows, gpu_us, body.get("wall_us"))
    at_kernel_time = verdicts_from_analytic(replace(context, measured_us=gpu_us), facts, source="activity")
    found = [replace(v, evidence=f"kernel time {fmt_us(gpu_us)} per call (CUPTI); {v.evidence}")
             for v in at_kernel_time
             if v.id != V.LAUNCH_BOUND and not (v.id == V.AT_SOL and launch is not None)]
    found += [v for v in (launch, _dominant(rows), _no_own_kernel(rows)) if v is not None]
    return ordered(found)


class ActivityProfiler:
    """Kernel records without hardware counters: runs wherever torch sees a GPU."""

    name = "activity"
    label = "CUPTI kernel records (torch.profiler, no hardware counters)"
    rank = 20
    job = job_kinds.CUPTI_PROFILE.module
    timeout_s = 240.0

    def unavailable(self, device: str) -> str | None:
        return None if device == "cuda" else "CUPTI kernel records need a GPU"

    def spec(self, problem: Problem, candidate: str, report: str) -> ActivitySpec:
        return ActivitySpec(**problem.job_spec(), candidate=candidate)

    def verdicts(self, body: Mapping[str, Any], context: Context, facts: dict[str, Any] | None) -> list[Verdict]:
        return verdicts_from_records(body, context, facts)

    def kernels(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [{"name": r["name"], "duration_ns": r["duration_ns"], "launches": r["launches"],
                 "metrics": {"launches per call": r["launches"], "share of GPU time": round(r["share"], 4),
                             "own kernel": "yes" if r["own"] else "no (the reference or ATen launches it)"}}
                for r in _per_call(body)]

    def dominant(self, body: Mapping[str, Any]) -> dict[str, Any] | None:
        rows = self.kernels(body)
        return rows[0] if rows else None


plugins.register("trialtui.profilers", ActivityProfiler.name, ActivityProfiler())
