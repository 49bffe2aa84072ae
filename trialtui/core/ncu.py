"""Nsight Compute output as plain dicts: the raw and details CSV pages, and why counters failed.

ncu's CSV mixes its own `==PROF==` lines with the program's output, writes numbers with thousands
separators and scales units per value (`us`, `Mbyte`); everything here comes back in base units
(ns, byte, byte/s, hz) so rules compare like with like. A run can also "succeed" with no counters
at all (exit code 0 and "No kernels were profiled"), so success is decided from the output.
"""

from __future__ import annotations

import csv
import glob
import io
import re
import shutil
from typing import Any

_ID_COLUMNS = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
               "Block Size", "Grid Size", "Device", "CC")
_DETAIL_COLUMNS = ("Section Name", "Metric Name", "Metric Unit", "Metric Value", "Rule Name", "Rule Type",
                   "Rule Description", "Estimated Speedup Type", "Estimated Speedup")
_TIME_NS = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6,
            "s": 1e9, "second": 1e9}
_SI = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_SCALABLE = {"byte", "hz", "inst", "cycle", "sector", "request", "warp", "thread", "flop"}
_NO_VALUE = {"", "n/a", "no data", "N/A"}
_NCU_GLOBS = ("/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda/bin/ncu", "/usr/local/cuda-*/bin/ncu")

# The metrics the verdict rules read; a profile stores these, the CSVs keep the rest.
KEY_METRICS = (
    "gpu__time_duration.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "l1tex__throughput.avg.pct_of_peak_sustained_active",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "dram__bytes.sum.per_second",
    "lts__t_sector_hit_rate.pct",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
    "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct",
    "launch__waves_per_multiprocessor",
    "launch__grid_size",
    "launch__block_size",
    "launch__sm_count",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    "launch__occupancy_limit_barriers",
    "sm__maximum_warps_per_active_cycle_pct",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "smsp__issue_active.avg.per_cycle_active",
    "sm__inst_issued.avg.per_cycle_active",
    "device__attribute_num_schedulers_per_multiprocessor",
    "device__attribute_compute_capability_major",
    "device__attribute_compute_capability_minor",
    "device__attribute_display_name",
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_elapsed",
    "derived__local_spilling_requests",
    "sass__inst_executed_register_spilling",
)
# Per-pipe utilisation, as HighPipeUtilization reads it (elapsed cycles); `shared` and the
# tensor type breakdown are aggregates of other pipes, so they never name the busiest one.
_PIPE = re.compile(r"^sm__(?:pipe_(\w+?)_cycles_active|inst_executed_pipe_(\w+?))\.avg\.pct_of_peak_sustained_elapsed$")
_AGGREGATE_PIPES = {"shared", "cbu_pred_on_any", "fma_type_fp16"}


def find_ncu(explicit: str | None = None) -> str | None:
    """ncu from the spec, PATH, or the usual install folders (newest first)."""
    if explicit:
        return explicit if shutil.which(explicit) else None
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in _NCU_GLOBS:
        hits = sorted(glob.glob(pattern), reverse=True)
        if hits:
            return hits[0]
    return None


def parse_value(text: str, unit: str) -> tuple[Any, str]:
    """One cell in base units: ('1,980,000', 'hz') -> (1980000.0, 'hz'); ('208.10', 'us') -> (208100.0, 'ns')."""
    text = text.strip()
    if text in _NO_VALUE:
        return None, unit
    try:
        number = float(text.replace(",", ""))
    except ValueError:
        return text, unit
    factor, base = unit_factor(unit)
    return number * factor, base


def unit_factor(unit: str) -> tuple[float, str]:
    """The factor to base units and the base unit's name: 'Gbyte/s' -> (1e9, 'byte/s')."""
    num, _, den = unit.partition("/")
    factor = 1.0
    if num in _TIME_NS:
        factor, num = _TIME_NS[num], "ns"
    elif num[:1] in _SI and num[1:].lower() in _SCALABLE:
        factor, num = _SI[num[:1]], num[1:].lower()
    if den in _TIME_NS and den != "s":
        factor, den = factor * 1e9 / _TIME_NS[den], "s"
    elif den[:1] in _SI and den[1:] in _SCALABLE:
        factor, den = factor / _SI[den[:1]], den[1:]
    return factor, f"{num}/{den}" if den else num


def _rows(text: str) -> list[list[str]]:
    """CSV rows of ncu's own output: lines that do not start with a quote are log or program output."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    return list(csv.reader(io.StringIO("\n".join(lines))))


def _id_count(header: list[str]) -> int:
    """Leading identity columns: through "CC", which closes them (NVTX columns sit in between)."""
    if "CC" in header:
        return header.index("CC") + 1
    return sum(1 for name in header if name in _ID_COLUMNS or ":" in name)


def _launch(row: dict[str, str]) -> dict[str, Any]:
    return {
        "id": int(row["ID"]) if row.get("ID", "").isdigit() else row.get("ID"),
        "name": row.get("Kernel Name", ""),
        "block": row.get("Block Size", ""),
        "grid": row.get("Grid Size", ""),
        "device": row.get("Device", ""),
        "cc": row.get("CC", ""),
    }


def parse_raw(text: str) -> list[dict[str, Any]]:
    """`--page raw --csv`: one dict per profiled launch with `metrics` and `units` in base units."""
    rows = _rows(text)
    if len(rows) < 2 or not rows[0] or rows[0][0] != "ID":
        return []
    header, units, data = rows[0], rows[1], rows[2:]
    ids = _id_count(header)
    kernels = []
    for row in data:
        cells = dict(zip(header, row))
        kernel = _launch(cells)
        metrics, base_units = {}, {}
        for name, unit, cell in zip(header[ids:], units[ids:], row[ids:]):
            metrics[name], base_units[name] = parse_value(cell, unit)
        kernel["metrics"] = metrics
        kernel["units"] = base_units
        kernels.append(kernel)
    return kernels


def parse_details(text: str) -> list[dict[str, Any]]:
    """`--page details --csv`: per launch, its section metrics (base units) and NVIDIA's rule results."""
    rows = _rows(text)
    if not rows or not rows[0] or rows[0][0] != "ID":
        return []
    header = rows[0]
    kernels: dict[str, dict[str, Any]] = {}
    for row in rows[1:]:
        cells = dict(zip(header, row))
        kernel = kernels.get(cells.get("ID", ""))
        if kernel is None:
            kernel = kernels[cells.get("ID", "")] = {**_launch(cells), "sections": {}, "metrics": {}, "rules": []}
        section = cells.get("Section Name", "")
        if cells.get("Rule Name"):
            kernel["rules"].append(_rule(cells))
        elif cells.get("Metric Name"):
            value, _ = parse_value(cells.get("Metric Value", ""), cells.get("Metric Unit", ""))
            kernel["sections"].setdefault(section, {})[cells["Metric Name"]] = value
            kernel["metrics"][cells["Metric Name"]] = value
    return list(kernels.values())


def _rule(cells: dict[str, str]) -> dict[str, Any]:
    speedup, _ = parse_value(cells.get("Estimated Speedup", ""), "")
    return {
        "section": cells.get("Section Name", ""),
        "rule": cells["Rule Name"],
        "type": cells.get("Rule Type", ""),
        "description": cells.get("Rule Description", ""),
        "speedup_type": cells.get("Estimated Speedup Type", "") or None,
        "speedup": speedup if isinstance(speedup, float) else None,
    }


def merge(raw: list[dict[str, Any]], details: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Launches from both pages, matched by ID: raw metrics win, details add the rule results."""
    by_id = {k["id"]: k for k in details}
    merged = []
    for kernel in raw or details:
        other = by_id.get(kernel["id"], {})
        metrics = {**other.get("metrics", {}), **kernel.get("metrics", {})}
        merged.append({**{k: v for k, v in kernel.items() if k not in ("units", "sections")},
                       "metrics": metrics, "rules": other.get("rules", kernel.get("rules", []))})
    return merged


def key_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    """The subset the verdict rules read, plus every per-pipe utilisation: small enough to store."""
    keep = {name: metrics[name] for name in KEY_METRICS if name in metrics}
    keep.update({name: value for name, value in metrics.items() if _PIPE.match(name)})
    return keep


def pipes(metrics: dict[str, Any]) -> dict[str, float]:
    """Utilisation % per compute pipe: the larger of its cycle- and instruction-based readings."""
    found: dict[str, float] = {}
    for name, value in metrics.items():
        match = _PIPE.match(name)
        if not match or not isinstance(value, float):
            continue
        pipe = match.group(1) or match.group(2)
        if pipe in _AGGREGATE_PIPES or pipe.startswith("tensor_type"):
            continue
        found[pipe] = max(found.get(pipe, 0.0), value)
    return found


def dominant(kernels: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The launch that took longest: the one whose verdicts matter most."""
    timed = [k for k in kernels if isinstance(k["metrics"].get("gpu__time_duration.sum"), float)]
    if not timed:
        return kernels[0] if kernels else None
    return max(timed, key=lambda k: k["metrics"]["gpu__time_duration.sum"])


_SIGNATURES = (
    ("ERR_NVGPUCTRPERM", "ERR_NVGPUCTRPERM: no permission to read GPU performance counters "
     "(needs root/CAP_SYS_ADMIN or NVreg_RestrictProfilingToAdminUsers=0)"),
    ("LibraryNotLoaded", "LibraryNotLoaded: ncu could not initialise the profiler on this machine "
     "(seen in gVisor sandboxes)"),
    ("concurrently collecting", "another profiler (DCGM or a second ncu) is collecting on this GPU"),
    ("No kernels were profiled", "No kernels were profiled: the NVTX range matched no kernel launch"),
)
# Failures that will not change while this machine and driver stay as they are.
_MACHINE_WIDE = ("ERR_NVGPUCTRPERM", "LibraryNotLoaded", "ncu not found")


def counters_unavailable(returncode: int | None, output: str, timed_out: bool = False) -> str | None:
    """Why an ncu run gave no counters, or None when it did. `returncode` 127 means ncu is missing."""
    if timed_out:
        return "timeout: ncu did not finish in time (replay passes multiply the kernel's run time)"
    if returncode == 127 or "ncu: command not found" in output:
        return "ncu not found: install Nsight Compute or put ncu on PATH"
    for needle, reason in _SIGNATURES:
        if needle in output:
            detail = next((ln.strip() for ln in output.splitlines() if needle in ln), "")
            return f"{reason} [{detail[:300]}]" if detail and detail not in reason else reason
    errors = [ln.strip() for ln in output.splitlines() if ln.startswith("==ERROR==")]
    if returncode:
        last = errors[0] if errors else (output.strip().splitlines() or [""])[-1]
        return f"ncu exited with code {returncode}: {last[:300]}".rstrip(": ")
    if errors:
        return errors[0][:300]
    return None


def machine_wide(reason: str | None) -> bool:
    """Whether a failure reason holds for every later run on this machine (so ncu is not tried again)."""
    return bool(reason) and reason.startswith(_MACHINE_WIDE)
