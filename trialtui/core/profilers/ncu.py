"""Nsight Compute as a profiler plug-in: its counters turned into verdicts, and what the engine
needs to run it (the job is runner/profile_job.py under ncu, the CSV pages are parsed by core/ncu.py).

Each rule is a pure function of one launch's counters and the problem's context that names a
problem with its numbers, or returns None. Thresholds and NVIDIA's matching rules come from the
verdict registry; so does the gating NVIDIA uses (occupancy is never blamed while a unit already
runs at high throughput).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Callable

from trialtui.core import job_kinds, ncu, plugins
from trialtui.core.job_spec import NCU_TIMEOUT_S, NcuSpec
from trialtui.core.model import Severity, Verdict
from trialtui.core.verdict_registry import VerdictId as V
from trialtui.core.verdict_registry import kind, threshold
from trialtui.core.verdicts import (
    OCCUPANCY_HINTS,
    Context,
    fmt_bytes,
    fmt_us,
    make_verdict,
    ordered,
    sol_text,
    useful_bandwidth,
)

if TYPE_CHECKING:
    from trialtui.core.problem import Problem

HIGH_THROUGHPUT, LATENCY, BALANCED = threshold("HIGH_THROUGHPUT"), threshold("LATENCY"), threshold("BALANCED")
THEORETICAL_OCCUPANCY, ACHIEVED_GAP = threshold("THEORETICAL_OCCUPANCY"), threshold("ACHIEVED_GAP")
ISSUE_LOW, TAIL = threshold("ISSUE_LOW"), threshold("TAIL")
PIPE_HIGH, PIPE_BOTTLENECK = threshold("PIPE_HIGH"), threshold("PIPE_BOTTLENECK")
EXTRA_BYTES, SECTOR_USE = threshold("EXTRA_BYTES"), threshold("SECTOR_USE")
TENSOR_IDLE, TINY_US = threshold("TENSOR_IDLE"), threshold("TINY_US")

_PIPE_NAMES = {"alu": "ALU", "fma": "FMA", "fmaheavy": "FMA (heavy)", "fmalite": "FMA (lite)", "fp64": "FP64",
               "fp16": "FP16", "lsu": "LSU", "xu": "XU", "adu": "ADU", "cbu": "CBU", "uniform": "Uniform",
               "tex": "TEX", "tma": "TMA", "ipa": "IPA", "tensor": "Tensor", "tensor_op_hmma": "Tensor (FP)",
               "tensor_op_gmma": "Tensor (wgmma)", "tensor_op_imma": "Tensor (INT)",
               "tensor_op_dmma": "Tensor (FP64)"}
_PIPE_HINTS = {
    "alu": "integer and logic work dominates: hoist index/address math out of loops, use block pointers, "
           "and move multiply-adds of a matmul onto tensor cores with tl.dot",
    "fma": "fp32 multiply-adds dominate: for matmul-like work use tl.dot (tensor cores); else cut redundant math",
    "fmaheavy": "fp32 multiply-adds dominate: for matmul-like work use tl.dot (tensor cores)",
    "xu": "transcendentals dominate: use exp2/fast-math forms, or compute them once per row, not per element",
    "lsu": "load/store instructions dominate: vectorize accesses, keep reused data in registers/shared memory",
    "fp64": "double precision dominates: use fp32 where accuracy allows",
    "tensor": "tensor cores are the limit: larger tiles, fewer non-MMA instructions, or a lower precision",
    "tensor_op_hmma": "tensor cores are the limit: larger tiles, fewer non-MMA instructions, or a lower precision",
}

@dataclass(frozen=True)
class Counters:
    """The readings the rules use, from one launch's metrics (None where not collected)."""

    sm: float | None
    mem: float | None
    dram: float | None
    duration_us: float | None
    waves: float | None
    grid: float | None
    sm_count: float | None
    theoretical: float | None
    achieved: float | None
    limits: dict[str, float]
    registers: float | None
    issue: float | None  # issue slots busy per scheduler, 0..1
    tensor: float | None
    gmma: float | None
    hmma_inst: float | None
    pipes: dict[str, float] = field(default_factory=dict)
    dram_bytes: float | None = None
    load_use: float | None = None  # % of fetched sector bytes a global load uses
    store_use: float | None = None
    spills: float | None = None
    capability: int | None = None

    @property
    def busiest(self) -> float:
        return max(x for x in (self.sm, self.mem, 0.0) if x is not None)


def _num(metrics: dict[str, Any], *names: str) -> float | None:
    for name in names:
        value = metrics.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None


def read_counters(metrics: dict[str, Any]) -> Counters:
    """Counters from a launch's metric dict (ncu names, base units)."""
    m = metrics
    issue = _num(m, "smsp__issue_active.avg.per_cycle_active")
    per_sm = _num(m, "sm__inst_issued.avg.per_cycle_active")
    if issue is None and per_sm is not None:
        issue = per_sm / (_num(m, "device__attribute_num_schedulers_per_multiprocessor") or 4.0)
    reads, writes = _num(m, "dram__bytes_read.sum"), _num(m, "dram__bytes_write.sum")
    major = _num(m, "device__attribute_compute_capability_major")
    minor = _num(m, "device__attribute_compute_capability_minor") or 0.0
    duration = _num(m, "gpu__time_duration.sum")
    limits = {}
    for limiter in ("registers", "shared_mem", "warps", "blocks", "barriers"):
        value = _num(m, f"launch__occupancy_limit_{limiter}")
        if value is not None:
            limits[limiter] = value
    spills = [x for x in (_num(m, "derived__local_spilling_requests"),
                          _num(m, "sass__inst_executed_register_spilling")) if x is not None]
    return Counters(
        sm=_num(m, "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
        mem=_num(m, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"),
        dram=_num(m, "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
                  "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
        duration_us=duration / 1e3 if duration is not None else None,
        waves=_num(m, "launch__waves_per_multiprocessor"),
        grid=_num(m, "launch__grid_size"),
        sm_count=_num(m, "launch__sm_count", "device__attribute_multiprocessor_count"),
        theoretical=_num(m, "sm__maximum_warps_per_active_cycle_pct"),
        achieved=_num(m, "sm__warps_active.avg.pct_of_peak_sustained_active"),
        limits=limits,
        registers=_num(m, "launch__registers_per_thread"),
        issue=issue,
        tensor=_num(m, "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"),
        gmma=_num(m, "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_elapsed"),
        hmma_inst=_num(m, "sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_elapsed"),
        pipes=ncu.pipes(m),
        dram_bytes=reads + writes if reads is not None and writes is not None else None,
        load_use=_num(m, "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct"),
        store_use=_num(m, "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct"),
        spills=max(spills) if spills else None,
        capability=int(major * 10 + minor) if major is not None else None,
    )



def _units(c: Counters) -> str:
    if c.sm is None or c.mem is None:
        return ""
    return f"SM {c.sm:.0f}%, memory {c.mem:.0f}%" + (f" (DRAM {c.dram:.0f}%)" if c.dram is not None else "")




def _memory_bound(c: Counters, ctx: Context) -> bool:
    if c.sm is not None and c.mem is not None and c.mem - c.sm >= BALANCED:
        return True
    return ctx.roofline is not None and ctx.roofline.bound == "memory" and not _compute_bound_counters(c)


def _compute_bound_counters(c: Counters) -> bool:
    if c.sm is None or c.mem is None:
        return False
    return c.sm - c.mem >= BALANCED or (c.sm >= HIGH_THROUGHPUT and c.sm > c.mem)


def _wasteful(c: Counters, ctx: Context) -> bool:
    """Busy units moving bytes the problem does not need: not speed-of-light, whatever the %."""
    sectors = any(u and u < SECTOR_USE for u in (c.load_use, c.store_use))  # 0: no such accesses
    return sectors or _extra_ratio(c, ctx) is not None


def _extra_ratio(c: Counters, ctx: Context) -> float | None:
    roof = ctx.roofline
    if roof is None or not roof.min_bytes or c.dram_bytes is None:
        return None
    ratio = c.dram_bytes / roof.min_bytes
    return ratio if ratio >= EXTRA_BYTES else None


# ---- rules on counters ------------------------------------------------------------------------


def at_speed_of_light(c: Counters, ctx: Context) -> Verdict | None:
    sol = ctx.sol(c.duration_us)
    if sol is not None:
        if sol < ctx.sol_target:
            return None
    elif c.busiest < HIGH_THROUGHPUT or _wasteful(c, ctx):
        return None
    evidence = [sol_text(ctx, sol), _units(c)]
    if sol is None:
        evidence.append(f"a unit at ≥ {HIGH_THROUGHPUT:.0f}% of peak (NVIDIA's High Throughput)")
    return make_verdict(V.AT_SOL, Severity.INFO, "At speed-of-light", evidence,
                        "Little headroom left at this algorithm: finalize, or change what is computed "
                        "(fewer bytes or FLOPs) to lower the floor itself.", "ncu")


def memory_bound_low_bandwidth(c: Counters, ctx: Context) -> Verdict | None:
    if not _memory_bound(c, ctx) or _small_grid(c) or (ctx.sol(c.duration_us) or 0) >= ctx.sol_target:
        return None
    useful = useful_bandwidth(ctx, ctx.measured_us or c.duration_us)
    low_dram = c.dram is not None and c.dram < LATENCY
    if not low_dram and not (useful is not None and useful < LATENCY / 100):
        return None
    evidence = [_units(c)]
    if useful is not None:
        evidence.append(f"the minimum bytes at the measured time use {useful:.0%} of "
                        f"{ctx.roofline.hbm_gbps:,.0f} GB/s")
    return make_verdict(V.MEMORY_LOW_BW, Severity.WARNING, "Memory-bound at low bandwidth", evidence,
                        "Raise useful bandwidth: coalesced, vectorized (16-byte) loads along the contiguous "
                        "dimension, more bytes in flight per SM (larger BLOCK, num_stages), fewer passes.", "ncu")


def extra_dram_traffic(c: Counters, ctx: Context) -> Verdict | None:
    ratio = _extra_ratio(c, ctx)
    if ratio is None or not _memory_bound(c, ctx):
        return None
    evidence = [f"DRAM moved {fmt_bytes(c.dram_bytes)}, {ratio:.1f}× the {fmt_bytes(ctx.roofline.min_bytes)} minimum "
                "(each input read once, each output written once)", _units(c)]
    return make_verdict(V.EXTRA_DRAM, Severity.WARNING, "Extra DRAM traffic", evidence,
                        "Bytes beyond the minimum are re-reads or intermediates: fuse the passes into one kernel, "
                        "keep reused tiles on chip, or reorder programs so neighbours share data in L2.", "ncu")


def uncoalesced_access(c: Counters, ctx: Context) -> Verdict | None:
    worst = [(kind, u) for kind, u in (("loads", c.load_use), ("stores", c.store_use))
             if u and u < SECTOR_USE]  # 0 means the kernel has no such accesses
    if not worst:
        return None
    evidence = [f"global {kind} use {u / 100 * 32:.1f} of 32 bytes per sector ({u:.0f}%)" for kind, u in worst]
    return make_verdict(V.UNCOALESCED, Severity.WARNING, "Uncoalesced global access", evidence + [_units(c)],
                        "Neighbouring threads touch addresses far apart: make tl.arange run along the contiguous "
                        "dimension, transpose through shared memory, or load tiles with block pointers/TMA.", "ncu")


def _gemm_on_tensor_pipe(c: Counters, ctx: Context) -> bool:
    """A matmul-like problem whose busiest pipe is the tensor pipe: a GEMM, triaged as one."""
    if not ctx.matmul_like or not c.pipes:
        return False
    return max(c.pipes.items(), key=lambda item: item[1])[0].startswith("tensor")


def compute_bound(c: Counters, ctx: Context) -> Verdict | None:
    roof_compute = ctx.roofline is not None and ctx.roofline.bound == "compute"
    sm_leads = c.sm is not None and c.mem is not None and c.sm >= c.mem
    if not (_compute_bound_counters(c) or (roof_compute and sm_leads)) or not c.pipes:
        return None
    if _gemm_on_tensor_pipe(c, ctx):
        return None  # gemm_below_roof speaks for it
    pipe, pct = max(c.pipes.items(), key=lambda item: item[1])
    name = _PIPE_NAMES.get(pipe, pipe)
    level = ("the bottleneck" if pct >= PIPE_BOTTLENECK else "high" if pct >= PIPE_HIGH else "not saturated")
    severity = Severity.WARNING if pct >= PIPE_BOTTLENECK and not pipe.startswith("tensor") else Severity.INFO
    evidence = [_units(c), f"busiest pipe {name} {pct:.1f}% ({level})"]
    hint = _PIPE_HINTS.get(pipe, "remove redundant instructions from the busiest pipe")
    return make_verdict(V.COMPUTE_BOUND, severity, f"Compute-bound: {name} pipe busiest", evidence,
                        hint[:1].upper() + hint[1:] + ".", "ncu")


def tensor_cores_idle(c: Counters, ctx: Context) -> Verdict | None:
    if not ctx.matmul_like or c.tensor is None:
        return None
    if c.tensor < TENSOR_IDLE:
        top = max(c.pipes.items(), key=lambda item: item[1]) if c.pipes else None
        evidence = [f"tensor pipe {c.tensor:.1f}% on a matmul-like problem"]
        if top:
            evidence.append(f"busiest pipe {_PIPE_NAMES.get(top[0], top[0])} {top[1]:.1f}%")
        title = "Tensor cores idle on a matmul-like kernel"
        return make_verdict(V.TENSOR_CORES_IDLE, Severity.WARNING, title, evidence,
                            "Use tl.dot on bf16/fp16 (or tf32) tiles with dims that are multiples of 16; on Hopper "
                            "Triton then emits wgmma.", "ncu")
    return None


def mma_sync_on_hopper(c: Counters, ctx: Context) -> Verdict | None:
    hopper = c.capability is not None and 90 <= c.capability < 100
    if not hopper or c.gmma is None or c.gmma != 0 or not (c.hmma_inst or 0) > 0:
        return None
    evidence = [f"tensor pipe {c.tensor:.1f}%" if c.tensor is not None else "",
                f"wgmma instructions 0, mma.sync {c.hmma_inst:.1f}% (sm__inst_executed_pipe_tensor_op_gmma / _hmma)"]
    return make_verdict(V.MMA_SYNC_ON_HOPPER, Severity.WARNING, "Tensor cores used without wgmma on Hopper", evidence,
                        "Hopper's full rate needs wgmma: tl.dot with 64-row tiles per warpgroup, num_warps 4 or 8 "
                        "and operands staged through shared memory (Triton picks wgmma on sm_90).", "ncu")


def gemm_below_roof(c: Counters, ctx: Context) -> Verdict | None:
    sol = ctx.sol(c.duration_us)
    if not _gemm_on_tensor_pipe(c, ctx) or sol is None or sol >= ctx.sol_target:
        return None
    evidence = [sol_text(ctx, sol), f"tensor pipe {c.tensor:.1f}% of peak" if c.tensor is not None else "",
                f"wgmma issue {c.gmma:.1f}%" if c.gmma else "", _units(c)]
    return make_verdict(V.GEMM_BELOW_ROOF, Severity.INFO, "GEMM below its tensor-core roof", evidence,
                        "Feed the tensor cores faster: wider wgmma tiles, a deeper pipeline, TMA loads, persistent "
                        "programs in grouped order; the compile stage's SASS names which.", "ncu")


def gemm_l2_reuse(c: Counters, ctx: Context) -> Verdict | None:
    ratio = _extra_ratio(c, ctx)
    if ratio is None or not _gemm_on_tensor_pipe(c, ctx) or (ctx.sol(c.duration_us) or 0) >= ctx.sol_target:
        return None
    evidence = [f"DRAM moved {fmt_bytes(c.dram_bytes)}, {ratio:.1f}× the {fmt_bytes(ctx.roofline.min_bytes)} "
                "minimum: x and W tiles re-read from DRAM", f"DRAM {c.dram:.0f}% of peak" if c.dram is not None else ""]
    return make_verdict(V.GEMM_L2_REUSE, Severity.INFO, "GEMM tiles re-read from DRAM", evidence,
                        "Launch tiles in grouped order (GROUP_M rows of tiles per sweep of the columns) so programs "
                        "running together share x and W in L2.", "ncu")


def low_occupancy(c: Counters, ctx: Context) -> Verdict | None:
    if c.theoretical is None:
        return None
    # NVIDIA's gate: occupancy is not the problem while a unit runs hot or issue slots are busy.
    if c.busiest >= HIGH_THROUGHPUT or (c.tensor or 0) >= PIPE_HIGH:
        return None
    if c.issue is not None and c.issue >= ISSUE_LOW:
        return None
    if c.issue is None and not (c.sm is not None and c.mem is not None and c.busiest < LATENCY):
        return None
    if c.theoretical < THEORETICAL_OCCUPANCY and c.limits:
        limiter = min(c.limits.items(), key=lambda item: item[1])[0]
        title = f"Low occupancy: limited by {limiter.replace('_', ' ')}"
        hint = OCCUPANCY_HINTS[limiter]
    elif c.achieved is not None and c.theoretical - c.achieved > ACHIEVED_GAP:
        limiter = "imbalance"
        title = "Achieved occupancy well below theoretical"
        hint = "warps finish unevenly or blocks arrive late: balance work per program, avoid a partial last wave"
    else:
        return None
    evidence = [f"theoretical occupancy {c.theoretical:.0f}%"
                + (f", achieved {c.achieved:.0f}%" if c.achieved is not None else "")]
    if limiter in c.limits:
        evidence.append(f"{limiter.replace('_', ' ')} allow {c.limits[limiter]:.0f} blocks/SM"
                        + (f" ({c.registers:.0f} registers/thread)" if limiter == "registers" and c.registers else ""))
    if c.issue is not None:
        evidence.append(f"issue slots busy {c.issue:.0%}")
    evidence.append(_units(c))
    return make_verdict(V.LOW_OCCUPANCY, Severity.WARNING, title, evidence, hint[:1].upper() + hint[1:] + ".", "ncu")


def _small_grid(c: Counters) -> bool:
    return (c.waves is not None and c.waves < 1) or (c.grid is not None and c.sm_count and c.grid < c.sm_count)


def small_grid(c: Counters, ctx: Context) -> Verdict | None:
    if c.busiest >= HIGH_THROUGHPUT or (ctx.sol(c.duration_us) or 0) >= ctx.sol_target:
        return None
    if _small_grid(c):
        evidence = [f"{c.grid:.0f} blocks for {c.sm_count:.0f} SMs" if c.grid and c.sm_count else "",
                    f"{c.waves:.2f} waves" if c.waves is not None else "", _units(c)]
        return make_verdict(V.SMALL_GRID, Severity.WARNING, "Small grid: SMs left idle", evidence,
                            "Launch at least one full wave: smaller BLOCK sizes, split-K/split the reduction, "
                            "or a persistent kernel over more work.", "ncu")
    if c.waves is None or c.waves == int(c.waves):
        return None
    idle = (math.ceil(c.waves) - c.waves) / math.ceil(c.waves)
    if idle < TAIL:
        return None
    return make_verdict(V.SMALL_GRID, Severity.INFO, "Tail effect: a partial last wave",
                        [f"{c.waves:.2f} waves: {idle:.0%} of the last-wave SM time idle", _units(c)],
                        "Size the grid to whole waves (a multiple of SMs × blocks per SM) or go persistent.", "ncu")


def launch_bound(c: Counters, ctx: Context) -> Verdict | None:
    if c.duration_us is None or c.duration_us >= TINY_US:
        return None
    return make_verdict(V.LAUNCH_BOUND, Severity.WARNING, "Tiny kernel: launch-bound",
                        [f"kernel time {fmt_us(c.duration_us)} (< {TINY_US:.0f} µs)", _units(c)],
                        "Launch overhead dominates: fuse with neighbouring ops, batch more work per launch, "
                        "or replay with CUDA graphs.", "ncu")


def latency_bound(c: Counters, ctx: Context) -> Verdict | None:
    """NVIDIA's Latency Issue: both units under 60 % with at least a full wave (else: small grid)."""
    tiny = c.duration_us is not None and c.duration_us < TINY_US
    if tiny or c.sm is None or c.mem is None or c.busiest >= LATENCY or _small_grid(c):
        return None
    return make_verdict(V.LATENCY_BOUND, Severity.WARNING, "Latency-bound: both units under-used",
                        [_units(c), f"issue slots busy {c.issue:.0%}" if c.issue is not None else ""],
                        "Warps wait on memory or dependencies: more independent work per thread, more stages "
                        "(num_stages) to prefetch, or more warps in flight.", "ncu")


def register_spills(c: Counters, ctx: Context) -> Verdict | None:
    if not c.spills:
        return None
    evidence = [f"{c.spills:,.0f} spill instructions to local memory"]
    if c.registers:
        evidence.append(f"{c.registers:.0f} registers/thread")
    return make_verdict(V.SPILLS, Severity.WARNING, "Register spills", evidence,
                        "Spilled values go through local memory: smaller tiles, fewer live accumulators, "
                        "or more num_warps to spread them.", "ncu")


NCU_RULES: tuple[Callable[[Counters, Context], Verdict | None], ...] = (
    at_speed_of_light, memory_bound_low_bandwidth, extra_dram_traffic, uncoalesced_access, compute_bound,
    tensor_cores_idle, mma_sync_on_hopper, gemm_below_roof, gemm_l2_reuse, low_occupancy, small_grid, launch_bound, latency_bound, register_spills,
)


def _with_nvidia(verdict: Verdict, rules: list[dict[str, Any]]) -> Verdict:
    """Append NVIDIA's own rule result where it speaks to the same problem."""
    names = kind(verdict.id).nvidia_rules
    notes = []
    for rule in rules:
        if rule.get("rule") in names:
            speedup = rule.get("speedup")
            est = f", est. {speedup:.0f}% {rule.get('speedup_type') or ''}".rstrip() if speedup else ""
            notes.append(f"ncu {rule['rule']} ({rule.get('type', '')}{est})")
    if not notes:
        return verdict
    return Verdict(**{**verdict.to_dict(), "evidence": "; ".join([verdict.evidence] + notes)})


def verdicts_from_ncu(metrics: dict[str, Any], rules: list[dict[str, Any]] = (),
                      context: Context | None = None) -> list[Verdict]:
    """Every counter rule over one launch's metrics (ncu names, base units), NVIDIA's notes attached."""
    ctx = context or Context()
    counters = read_counters(metrics)
    found = [v for rule in NCU_RULES if (v := rule(counters, ctx)) is not None]
    return ordered([_with_nvidia(v, list(rules)) for v in found])


class NcuProfiler:
    """Hardware counters of the dominant launch inside one NVTX range: the best there is, where
    the driver lets a user read counters (ERR_NVGPUCTRPERM on many cloud machines)."""

    name = "ncu"
    label = "Nsight Compute counters"
    rank = 30
    job = job_kinds.NCU_PROFILE.module
    timeout_s = NCU_TIMEOUT_S + 150

    def unavailable(self, device: str) -> str | None:
        if device != "cuda":
            return "ncu needs a GPU"
        if os.environ.get("TRIALTUI_NO_NCU"):
            return "ncu disabled: TRIALTUI_NO_NCU is set"
        return None if ncu.find_ncu() else ncu.counters_unavailable(127, "")

    def spec(self, problem: Problem, candidate: str, report: str) -> NcuSpec:
        return NcuSpec(**problem.job_spec(), candidate=candidate, report=report)

    def verdicts(self, body: Mapping[str, Any], context: Context, facts: dict[str, Any] | None) -> list[Verdict]:
        main = self.dominant(body)
        return verdicts_from_ncu(main.get("metrics", {}), main.get("rules", []), context) if main else []

    def kernels(self, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        return list(body.get("kernels") or [])

    def dominant(self, body: Mapping[str, Any]) -> dict[str, Any] | None:
        return ncu.dominant(self.kernels(body))


plugins.register("trialtui.profilers", NcuProfiler.name, NcuProfiler())
