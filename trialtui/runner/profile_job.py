"""Child job: run the candidate under Nsight Compute and hand back its counters and NVIDIA's rules.

`python -m trialtui.runner.profile_job`, its spec an `NcuSpec`: the problem, the candidate, the bench
case, `report` (path stem; `<stem>.ncu-rep` stays for the Nsight Compute GUI), `ncu_timeout_s`. Only the launches inside the
NVTX range that profile_target pushes after warm-up are profiled, with clocks left alone. When ncu
cannot read counters the result says why (`available: false`, `reason`, and `blocked` when that
holds for the whole machine), and the engine falls back to the next profiler. ncu stays in this job's process group so the parent's kill reaches it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from trialtui.core import ncu
from trialtui.core.job_spec import NCU_TIMEOUT_S, NcuSpec
from trialtui.core.ncu import find_ncu
from trialtui.core.result import RESULT_VERSION
from trialtui.core.state_dir import make_dirs
from trialtui.runner.child import serve
from trialtui.runner.profile_range import RANGE

SECTIONS = ("SpeedOfLight", "LaunchStats", "Occupancy", "ComputeWorkloadAnalysis", "MemoryWorkloadAnalysis")
# Beyond the sections: tensor pipes (gmma tells wgmma from mma.sync on Hopper), DRAM bytes against
# the minimum, and bytes used per sector for coalescing.
METRICS = (
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct",
)
MAX_KERNELS = 64  # launches profiled inside the range: a candidate that launches thousands is not replayed thousands of times
EXPORT_TIMEOUT_S = 120.0
def ncu_command(ncu_bin: str, report: str | Path, target: list[str], range_name: str = RANGE) -> list[str]:
    """The profiling command: one NVTX push/pop range (named without, included with, the slash), at most
    MAX_KERNELS launches of it."""
    command = [ncu_bin, "--nvtx", "--nvtx-include", f"{range_name}/", "--clock-control", "none",
               "--target-processes", "all", "--launch-count", str(MAX_KERNELS)]
    for section in SECTIONS:
        command += ["--section", section]
    command += ["--metrics", ",".join(METRICS), "-o", str(report), "-f"]
    return command + list(target)


def export_commands(ncu_bin: str, report_file: str | Path) -> dict[str, list[str]]:
    """Both CSV pages of a report: raw in base units, details with metric names (and rule rows)."""
    return {
        "raw": [ncu_bin, "-i", str(report_file), "--page", "raw", "--csv", "--print-units", "base"],
        "details": [ncu_bin, "-i", str(report_file), "--page", "details", "--csv", "--print-metric-name", "name"],
    }


def _export(ncu_bin: str, report_file: Path, stem: Path, env: dict[str, str]) -> dict[str, Path]:
    """Write both pages at once: two imports in parallel cost one import's wall time."""
    outputs, running = {}, []
    for page, command in export_commands(ncu_bin, report_file).items():
        path = stem.with_name(f"{stem.name}_{page}.csv")
        fh = open(path, "wb")
        running.append((fh, subprocess.Popen(command, stdout=fh, stderr=subprocess.DEVNULL, env=env)))
        outputs[page] = path
    for fh, process in running:
        try:
            process.wait(timeout=EXPORT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()  # a partial page parses to fewer rows; the result says so
        fh.close()
    return outputs


def profile(target: list[str], report: str | Path, *, ncu_bin: str | None = None,
            timeout_s: float = NCU_TIMEOUT_S, range_name: str = RANGE) -> dict[str, Any]:
    """Profile `target` (an argv that pushes `range_name`) and parse both pages: the result's body."""
    stem = Path(report)
    make_dirs(stem.parent)
    ncu_bin = find_ncu(ncu_bin)
    body: dict[str, Any] = {"source": "ncu", "available": False, "reason": None, "report": None, "kernels": []}
    if ncu_bin is None:
        body.update(reason=ncu.counters_unavailable(127, ""), blocked=True)
        return body
    env = {**os.environ, "LC_ALL": "C"}  # ncu's number format follows the locale
    command = ncu_command(ncu_bin, stem, target, range_name)
    body["command"] = command
    log = stem.with_name(stem.name + ".log")
    report_file = stem.with_name(stem.name + ".ncu-rep")
    report_file.unlink(missing_ok=True)  # a stale report must not pass for this run's
    started = time.monotonic()
    # ncu's output goes to a file, not a pipe: a target left running after a timeout kill would
    # hold a pipe open and block us; the file is also kept beside the report.
    with open(log, "wb") as fh:
        process = subprocess.Popen(command, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        try:
            returncode, timed_out = process.wait(timeout=timeout_s), False
        except subprocess.TimeoutExpired:
            process.kill()
            returncode, timed_out = process.wait(), True
    body["ncu_s"] = round(time.monotonic() - started, 3)
    output = log.read_text(encoding="utf-8", errors="replace")
    body["log"] = str(log)
    body["log_tail"] = output[-4000:]
    reason = ncu.counters_unavailable(returncode, output, timed_out)
    if reason is None and not report_file.exists():
        reason = "ncu wrote no report"
    if reason:
        body.update(reason=reason, blocked=ncu.machine_wide(reason))
        return body
    started = time.monotonic()
    pages = _export(ncu_bin, report_file, stem, env)
    body["export_s"] = round(time.monotonic() - started, 3)
    raw = ncu.parse_raw(pages["raw"].read_text(encoding="utf-8", errors="replace"))
    details = ncu.parse_details(pages["details"].read_text(encoding="utf-8", errors="replace"))
    kernels = [_kernel(k) for k in ncu.merge(raw, details)]
    body.update(report=str(report_file), raw_csv=str(pages["raw"]), details_csv=str(pages["details"]),
                kernels=kernels, available=bool(kernels))
    if not kernels:
        body["reason"] = "the report's CSV pages held no kernel rows"
    return body


def _kernel(kernel: dict[str, Any]) -> dict[str, Any]:
    metrics = kernel["metrics"]
    return {
        "id": kernel["id"],
        "name": kernel["name"],
        "grid": kernel["grid"],
        "block": kernel["block"],
        "duration_ns": metrics.get("gpu__time_duration.sum"),
        "metrics": ncu.key_metrics(metrics),
        "rules": kernel.get("rules", []),
    }


def run(spec: NcuSpec) -> dict[str, Any]:
    target = [sys.executable, "-m", "trialtui.runner.profile_target", str(spec.spec_path)]
    body = profile(target, spec.report, timeout_s=spec.ncu_timeout_s)
    return {"version": RESULT_VERSION, "state": "ok", **body}


if __name__ == "__main__":
    serve(run, sys.argv, spec_type=NcuSpec)
