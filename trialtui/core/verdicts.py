"""Counters and roofline turned into verdicts: each rule is a pure function that names a problem
with its numbers, or returns None.

Thresholds mirror Nsight Compute's own rules where one exists (SpeedOfLight, Occupancy,
LaunchStats, HighPipeUtilization; ../shared/reference/ncu-verdicts.md §3, §5.2) and so does the
gating: occupancy is never blamed while a unit already runs at high throughput. Where NVIDIA has no
rule (tensor cores idle, extra DRAM bytes, tiny kernels) the threshold is a named project choice.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from trialtui.core import ncu
from trialtui.core.gpus import Ceilings, sm_limits
from trialtui.core.model import Severity, Verdict
from trialtui.core.roofline import Roofline, roofline

# NVIDIA's thresholds (sections/*.py in ncu 2025.3.1).
HIGH_THROUGHPUT = 80.0  # SOLBottleneck no_bound_threshold: a unit at ≥ 80 % is the limiter
LATENCY = 60.0  # SOLBottleneck latency_bound_threshold: both units below 60 % → latency
BALANCED = 10.0  # SOLBottleneck balanced_threshold: |SM − memory| under 10 points is balanced
THEORETICAL_OCCUPANCY = 80.0  # TheoreticalOccupancy
ACHIEVED_GAP = 10.0  # AchievedOccupancy: theoretical − achieved
ISSUE_LOW = 0.6  # IssueSlotUtilization
PIPE_HIGH, PIPE_BOTTLENECK = 60.0, 80.0  # HighPipeUtilization
TAIL = 0.2  # LaunchConfiguration tail-effect speedup
# Project choices, where NVIDIA has no rule.
EXTRA_BYTES = 1.5  # DRAM bytes over the minimum before fusion/reuse is worth naming
SECTOR_USE = 50.0  # % of each 32-byte sector used; below, half the fetched bytes are wasted
TENSOR_IDLE = 1.0  # tensor pipe % under which a matmul-like kernel counts as not using it
TINY_US = 10.0  # kernels this short are dominated by launch overhead
LOW_SOL = 0.6  # analytic: below this fraction of the roof, the bound is named as a problem

_SEVERITY_ORDER = {Severity.ERROR.value: 0, Severity.WARNING.value: 1, Severity.INFO.value: 2}
_NVIDIA_RULES = {
    "at_sol": ("SOLBottleneck",),
    "memory_low_bw": ("SOLBottleneck",),
    "compute_bound": ("HighPipeUtilization", "SlowPipeLimiter"),
    "low_occupancy": ("TheoreticalOccupancy", "AchievedOccupancy", "IssueSlotUtilization"),
    "small_grid": ("LaunchConfiguration",),
    "uncoalesced": ("MemoryCacheAccessPattern", "UncoalescedGlobalAccess"),
    "latency_bound": ("SOLBottleneck", "IssueSlotUtilization"),
}
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
_OCCUPANCY_HINTS = {
    "registers": "too many registers per thread: smaller BLOCK sizes, fewer live values, or fewer num_warps "
                 "per program; check n_regs",
    "shared_mem": "too much shared memory per block: fewer num_stages or smaller tiles",
    "warps": "block size leaves warp slots unused: pick num_warps that divides the SM's warps",
    "blocks": "blocks too small to fill the SM: more warps per program (larger BLOCK or num_warps)",
    "barriers": "too many barriers per SM: fewer blocks with barriers",
}


@dataclass(frozen=True)
class Context:
    """What the counters cannot know: the problem's roofline, the measured time, matmul-likeness."""

    roofline: Roofline | None = None
    measured_us: float | None = None
    matmul_like: bool = False
    sol_target: float = 0.8

    def sol(self, fallback_us: float | None = None) -> float | None:
        if self.roofline is None:
            return None
        return self.roofline.sol(self.measured_us or fallback_us)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Context:
        roof = data.get("roofline")
        return cls(
            roofline=Roofline.from_dict(roof) if isinstance(roof, dict) else roof,
            measured_us=data.get("measured_us"),
            matmul_like=bool(data.get("matmul_like")),
            sol_target=data.get("sol_target", 0.8),
        )


def context_for(analysis: dict[str, Any] | None, ceilings: Ceilings | None, measured_us: float | None, *,
                allow_tf32: bool = False, sol_target: float = 0.8) -> Context:
    """The context for a trial: the analyze job's FLOPs and bytes at the ceilings of the GPU the
    bench ran on (analysis may have run with no GPU at all), and the bench's median."""
    roof = None
    if analysis and analysis.get("state") == "ok" and ceilings is not None:
        roof = roofline(analysis["flops"], analysis["min_bytes"], analysis["dtype"], ceilings, allow_tf32)
    return Context(roofline=roof, measured_us=measured_us, matmul_like=bool((analysis or {}).get("matmul_like")),
                   sol_target=sol_target)


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


def _verdict(id: str, severity: Severity, title: str, evidence: list[str], hint: str, source: str) -> Verdict:
    return Verdict(id=id, severity=severity.value, title=title, evidence="; ".join(e for e in evidence if e),
                   hint=hint, source=source)


def _mb(n: float) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB"


def _us(t: float) -> str:
    return f"{t:.1f} µs" if t < 1000 else f"{t / 1000:.2f} ms"


def _units(c: Counters) -> str:
    if c.sm is None or c.mem is None:
        return ""
    return f"SM {c.sm:.0f}%, memory {c.mem:.0f}%" + (f" (DRAM {c.dram:.0f}%)" if c.dram is not None else "")


def _sol_text(ctx: Context, sol: float | None) -> str:
    if sol is None or ctx.roofline is None:
        return ""
    roof = ctx.roofline
    return (f"floor {_us(roof.floor_us)} ({roof.bound}-bound, {roof.source} {roof.gpu}) = "
            f"{sol:.2f} of speed-of-light")


def _useful_bandwidth(ctx: Context, measured_us: float | None) -> float | None:
    """Fraction of peak HBM bandwidth the *minimum* bytes would need at the measured time."""
    roof = ctx.roofline
    if roof is None or not measured_us or not roof.min_bytes:
        return None
    return roof.min_bytes / (measured_us * 1e-6) / (roof.hbm_gbps * 1e9)


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
    evidence = [_sol_text(ctx, sol), _units(c)]
    if sol is None:
        evidence.append(f"a unit at ≥ {HIGH_THROUGHPUT:.0f}% of peak (NVIDIA's High Throughput)")
    return _verdict("at_sol", Severity.INFO, "At speed-of-light", evidence,
                    "Little headroom left at this algorithm: finalize, or change what is computed "
                    "(fewer bytes or FLOPs) to lower the floor itself.", "ncu")


def memory_bound_low_bandwidth(c: Counters, ctx: Context) -> Verdict | None:
    if not _memory_bound(c, ctx) or _small_grid(c) or (ctx.sol(c.duration_us) or 0) >= ctx.sol_target:
        return None
    useful = _useful_bandwidth(ctx, ctx.measured_us or c.duration_us)
    low_dram = c.dram is not None and c.dram < LATENCY
    if not low_dram and not (useful is not None and useful < LATENCY / 100):
        return None
    evidence = [_units(c)]
    if useful is not None:
        evidence.append(f"the minimum bytes at the measured time use {useful:.0%} of "
                        f"{ctx.roofline.hbm_gbps:,.0f} GB/s")
    return _verdict("memory_low_bw", Severity.WARNING, "Memory-bound at low bandwidth", evidence,
                    "Raise useful bandwidth: coalesced, vectorized (16-byte) loads along the contiguous "
                    "dimension, more bytes in flight per SM (larger BLOCK, num_stages), fewer passes.", "ncu")


def extra_dram_traffic(c: Counters, ctx: Context) -> Verdict | None:
    ratio = _extra_ratio(c, ctx)
    if ratio is None or not _memory_bound(c, ctx):
        return None
    evidence = [f"DRAM moved {_mb(c.dram_bytes)}, {ratio:.1f}× the {_mb(ctx.roofline.min_bytes)} minimum "
                "(each input read once, each output written once)", _units(c)]
    return _verdict("extra_dram", Severity.WARNING, "Extra DRAM traffic", evidence,
                    "Bytes beyond the minimum are re-reads or intermediates: fuse the passes into one kernel, "
                    "keep reused tiles on chip, or reorder programs so neighbours share data in L2.", "ncu")


def uncoalesced_access(c: Counters, ctx: Context) -> Verdict | None:
    worst = [(kind, u) for kind, u in (("loads", c.load_use), ("stores", c.store_use))
             if u and u < SECTOR_USE]  # 0 means the kernel has no such accesses
    if not worst:
        return None
    evidence = [f"global {kind} use {u / 100 * 32:.1f} of 32 bytes per sector ({u:.0f}%)" for kind, u in worst]
    return _verdict("uncoalesced", Severity.WARNING, "Uncoalesced global access", evidence + [_units(c)],
                    "Neighbouring threads touch addresses far apart: make tl.arange run along the contiguous "
                    "dimension, transpose through shared memory, or load tiles with block pointers/TMA.", "ncu")


def compute_bound(c: Counters, ctx: Context) -> Verdict | None:
    roof_compute = ctx.roofline is not None and ctx.roofline.bound == "compute"
    sm_leads = c.sm is not None and c.mem is not None and c.sm >= c.mem
    if not (_compute_bound_counters(c) or (roof_compute and sm_leads)) or not c.pipes:
        return None
    pipe, pct = max(c.pipes.items(), key=lambda item: item[1])
    name = _PIPE_NAMES.get(pipe, pipe)
    level = ("the bottleneck" if pct >= PIPE_BOTTLENECK else "high" if pct >= PIPE_HIGH else "not saturated")
    severity = Severity.WARNING if pct >= PIPE_BOTTLENECK and not pipe.startswith("tensor") else Severity.INFO
    evidence = [_units(c), f"busiest pipe {name} {pct:.1f}% ({level})"]
    hint = _PIPE_HINTS.get(pipe, "remove redundant instructions from the busiest pipe")
    return _verdict("compute_bound", severity, f"Compute-bound: {name} pipe busiest", evidence,
                    hint[:1].upper() + hint[1:] + ".", "ncu")


def tensor_cores_idle(c: Counters, ctx: Context) -> Verdict | None:
    if not ctx.matmul_like or c.tensor is None:
        return None
    if c.tensor < TENSOR_IDLE:
        top = max(c.pipes.items(), key=lambda item: item[1]) if c.pipes else None
        evidence = [f"tensor pipe {c.tensor:.1f}% on a matmul-like problem"]
        if top:
            evidence.append(f"busiest pipe {_PIPE_NAMES.get(top[0], top[0])} {top[1]:.1f}%")
        return _verdict("tensor_cores_idle", Severity.WARNING, "Tensor cores idle on a matmul-like kernel", evidence,
                        "Use tl.dot on bf16/fp16 (or tf32) tiles with dims that are multiples of 16; on Hopper "
                        "Triton then emits wgmma.", "ncu")
    hopper = c.capability is not None and c.capability >= 90 and c.capability < 100
    if hopper and c.gmma is not None and c.gmma == 0 and (c.hmma_inst or 0) > 0:
        evidence = [f"tensor pipe {c.tensor:.1f}%", f"wgmma instructions 0, mma.sync {c.hmma_inst:.1f}%"]
        return _verdict("tensor_cores_idle", Severity.INFO, "Tensor cores on the older mma.sync path", evidence,
                        "Hopper's full rate needs wgmma: tl.dot with BLOCK_M ≥ 64, num_warps a multiple of 4 "
                        "and operands staged through shared memory (Triton picks wgmma on sm_90).", "ncu")
    return None


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
        hint = _OCCUPANCY_HINTS[limiter]
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
    return _verdict("low_occupancy", Severity.WARNING, title, evidence, hint[:1].upper() + hint[1:] + ".", "ncu")


def _small_grid(c: Counters) -> bool:
    return (c.waves is not None and c.waves < 1) or (c.grid is not None and c.sm_count and c.grid < c.sm_count)


def small_grid(c: Counters, ctx: Context) -> Verdict | None:
    if c.busiest >= HIGH_THROUGHPUT or (ctx.sol(c.duration_us) or 0) >= ctx.sol_target:
        return None
    if _small_grid(c):
        evidence = [f"{c.grid:.0f} blocks for {c.sm_count:.0f} SMs" if c.grid and c.sm_count else "",
                    f"{c.waves:.2f} waves" if c.waves is not None else "", _units(c)]
        return _verdict("small_grid", Severity.WARNING, "Small grid: SMs left idle", evidence,
                        "Launch at least one full wave: smaller BLOCK sizes, split-K/split the reduction, "
                        "or a persistent kernel over more work.", "ncu")
    if c.waves is None or c.waves == int(c.waves):
        return None
    idle = (math.ceil(c.waves) - c.waves) / math.ceil(c.waves)
    if idle < TAIL:
        return None
    return _verdict("small_grid", Severity.INFO, "Tail effect: a partial last wave",
                    [f"{c.waves:.2f} waves: {idle:.0%} of the last-wave SM time idle", _units(c)],
                    "Size the grid to whole waves (a multiple of SMs × blocks per SM) or go persistent.", "ncu")


def launch_bound(c: Counters, ctx: Context) -> Verdict | None:
    if c.duration_us is None or c.duration_us >= TINY_US:
        return None
    return _verdict("launch_bound", Severity.WARNING, "Tiny kernel: launch-bound",
                    [f"kernel time {_us(c.duration_us)} (< {TINY_US:.0f} µs)", _units(c)],
                    "Launch overhead dominates: fuse with neighbouring ops, batch more work per launch, "
                    "or replay with CUDA graphs.", "ncu")


def latency_bound(c: Counters, ctx: Context) -> Verdict | None:
    """NVIDIA's Latency Issue: both units under 60 % with at least a full wave (else: small grid)."""
    tiny = c.duration_us is not None and c.duration_us < TINY_US
    if tiny or c.sm is None or c.mem is None or c.busiest >= LATENCY or _small_grid(c):
        return None
    return _verdict("latency_bound", Severity.WARNING, "Latency-bound: both units under-used",
                    [_units(c), f"issue slots busy {c.issue:.0%}" if c.issue is not None else ""],
                    "Warps wait on memory or dependencies: more independent work per thread, more stages "
                    "(num_stages) to prefetch, or more warps in flight.", "ncu")


def register_spills(c: Counters, ctx: Context) -> Verdict | None:
    if not c.spills:
        return None
    evidence = [f"{c.spills:,.0f} spill instructions to local memory"]
    if c.registers:
        evidence.append(f"{c.registers:.0f} registers/thread")
    return _verdict("spills", Severity.WARNING, "Register spills", evidence,
                    "Spilled values go through local memory: smaller tiles, fewer live accumulators, "
                    "or more num_warps to spread them.", "ncu")


NCU_RULES: tuple[Callable[[Counters, Context], Verdict | None], ...] = (
    at_speed_of_light, memory_bound_low_bandwidth, extra_dram_traffic, uncoalesced_access, compute_bound,
    tensor_cores_idle, low_occupancy, small_grid, launch_bound, latency_bound, register_spills,
)


def _with_nvidia(verdict: Verdict, rules: list[dict[str, Any]]) -> Verdict:
    """Append NVIDIA's own rule result where it speaks to the same problem."""
    names = _NVIDIA_RULES.get(verdict.id, ())
    notes = []
    for rule in rules:
        if rule.get("rule") in names:
            speedup = rule.get("speedup")
            est = f", est. {speedup:.0f}% {rule.get('speedup_type') or ''}".rstrip() if speedup else ""
            notes.append(f"ncu {rule['rule']} ({rule.get('type', '')}{est})")
    if not notes:
        return verdict
    return Verdict(**{**verdict.to_dict(), "evidence": "; ".join([verdict.evidence] + notes)})


def _ordered(verdicts: list[Verdict]) -> list[Verdict]:
    return sorted(verdicts, key=lambda v: _SEVERITY_ORDER.get(v.severity, 3))


def verdicts_from_ncu(metrics: dict[str, Any], rules: list[dict[str, Any]] = (),
                      context: Context | None = None) -> list[Verdict]:
    """Every counter rule over one launch's metrics (ncu names, base units), NVIDIA's notes attached."""
    ctx = context or Context()
    counters = read_counters(metrics)
    found = [v for rule in NCU_RULES if (v := rule(counters, ctx)) is not None]
    return _ordered([_with_nvidia(v, list(rules)) for v in found])


# ---- analytic rules: roofline, measured time and compile facts, no counters --------------------


def theoretical_occupancy(registers: int, num_warps: int, shared_bytes: int,
                          capability: int) -> tuple[float, str] | None:
    """(occupancy %, limiter) from the launch's resources, as the CUDA occupancy calculator does."""
    limits = sm_limits(capability)
    if limits is None or num_warps <= 0:
        return None
    max_warps, regs_per_sm, smem_per_sm, max_blocks = limits
    regs_per_warp = math.ceil(max(registers, 1) * 32 / 256) * 256  # allocation granularity
    by = {
        "registers": regs_per_sm // (regs_per_warp * num_warps),
        "shared_mem": smem_per_sm // (shared_bytes + 1024) if shared_bytes else max_blocks,
        "warps": max_warps // num_warps,
        "blocks": max_blocks,
    }
    limiter = min(by, key=by.get)
    return min(100.0, 100.0 * by[limiter] * num_warps / max_warps), limiter


def verdicts_from_analytic(context: Context, facts: dict[str, Any] | None = None) -> list[Verdict]:
    """Verdicts without counters: the roofline against the measured time, plus compile facts.

    `facts` is one kernel's entry from the compile job (all keys optional): registers, spills,
    shared_bytes, num_warps, arch ("sm_90"), tensor_cores (bool: wgmma/mma in the PTX) and
    vector_width (bits of the widest global load). Its grid is traced at test sizes, so no grid
    verdict comes from it.
    """
    facts = facts or {}
    arch = str(facts.get("arch") or "").lower().removeprefix("sm_").rstrip("a")
    roof, measured = context.roofline, context.measured_us
    sol = context.sol()
    found: list[Verdict] = []

    def add(id: str, severity: Severity, title: str, evidence: list[str], hint: str) -> None:
        found.append(_verdict(id, severity, title, evidence, hint, "analytic"))

    at_sol = sol is not None and sol >= context.sol_target
    if at_sol:
        add("at_sol", Severity.INFO, "At speed-of-light", [_sol_text(context, sol)],
            "Little headroom left at this algorithm: finalize, or change what is computed to lower the floor.")
    elif sol is not None and sol < LOW_SOL and roof.bound == "memory":
        useful = _useful_bandwidth(context, measured)
        add("memory_low_bw", Severity.WARNING, "Memory-bound at low bandwidth",
            [_sol_text(context, sol), f"the minimum bytes move at {useful:.0%} of {roof.hbm_gbps:,.0f} GB/s"],
            "Raise useful bandwidth: coalesced, vectorized loads, one pass over the data, fused neighbours.")
    elif sol is not None and sol < LOW_SOL and roof.bound == "compute":
        add("compute_bound", Severity.INFO, "Compute-bound below the roof",
            [_sol_text(context, sol), f"{roof.flops / (measured * 1e-6) / 1e12:.0f} of "
             f"{roof.peak_tflops:.0f} TFLOP/s ({roof.compute_dtype})"],
            "Use tensor cores (tl.dot) at full tile sizes; cut non-MMA instructions in the inner loop.")
    if context.matmul_like and facts.get("tensor_cores") is False:
        add("tensor_cores_idle", Severity.WARNING, "Tensor cores idle on a matmul-like kernel",
            ["no wgmma/mma instruction in the compiled kernel"],
            "Use tl.dot on bf16/fp16 (or tf32) tiles with dims that are multiples of 16.")
    occupancy = None
    if facts.get("registers") and facts.get("num_warps") and arch.isdigit():
        occupancy = theoretical_occupancy(int(facts["registers"]), int(facts["num_warps"]),
                                          int(facts.get("shared_bytes") or 0), int(arch))
    tensor_kernel = facts.get("tensor_cores") and roof is not None and roof.bound == "compute"
    if occupancy and occupancy[0] < THEORETICAL_OCCUPANCY and not at_sol and not tensor_kernel:
        pct, limiter = occupancy
        add("low_occupancy", Severity.INFO, f"Low occupancy: limited by {limiter.replace('_', ' ')}",
            [f"theoretical occupancy {pct:.0f}% ({facts['registers']} registers/thread, "
             f"{facts['num_warps']} warps, {facts.get('shared_bytes') or 0} B shared)"],
            _OCCUPANCY_HINTS[limiter][:1].upper() + _OCCUPANCY_HINTS[limiter][1:] + ".")
    if measured is not None and measured < TINY_US:
        add("launch_bound", Severity.WARNING, "Tiny kernel: launch-bound",
            [f"measured {_us(measured)} (< {TINY_US:.0f} µs)"],
            "Launch overhead dominates: fuse with neighbouring ops, batch more work, or use CUDA graphs.")
    if facts.get("spills"):
        add("spills", Severity.WARNING, "Register spills",
            [f"{facts['spills']} spilled registers" + (f", {facts['registers']} registers/thread"
                                                        if facts.get("registers") else "")],
            "Smaller tiles, fewer live accumulators, or more num_warps to spread them.")
    bits = facts.get("vector_width")
    if bits and bits < 128 and roof is not None and roof.bound == "memory" and not at_sol:
        add("narrow_loads", Severity.INFO, "Narrow global loads",
            [f"widest global load {bits // 8} bytes (16-byte vector loads move the most per instruction)"],
            "Keep BLOCK contiguous and aligned (tl.multiple_of / max_contiguous hints) so loads vectorize.")
    return _ordered(found)


def verdicts_for_profile(profile: dict[str, Any] | None, context: Context,
                         facts: dict[str, Any] | None = None) -> list[Verdict]:
    """The verdicts for a trial: from counters when the profile has them, else the analytic ones
    plus one verdict saying why counters were unavailable."""
    kernels = (profile or {}).get("kernels") or []
    main = ncu.dominant(kernels)
    if profile and profile.get("available") and main is not None:
        return verdicts_from_ncu(main.get("metrics", {}), main.get("rules", []), context)
    verdicts = verdicts_from_analytic(context, facts)
    if profile is None:
        return verdicts
    reason = profile.get("reason") or profile.get("message") or "no counters in the profile"
    why = _verdict("counters_unavailable", Severity.INFO, "Counters unavailable: analytic profile", [reason],
                   "Verdicts here come from the roofline and compile facts; for counters, profile where ncu "
                   "may read them (root, or NVreg_RestrictProfilingToAdminUsers=0).", "analytic")
    return [why] + verdicts


PROFILE_EVENTS = ("first_correct", "new_best", "plateau", "request", "correct")
_AUTO_EVENTS = ("first_correct", "new_best", "plateau")


def profile_policy(when: str, event: str) -> bool:
    """Whether to profile now: `request` always; `auto` on the trials whose counters steer the
    next step (the first correct one, a new best, a plateau); `always` on every correct trial."""
    if when not in ("auto", "always", "never") or event not in PROFILE_EVENTS:
        raise ValueError(f"unknown profile policy {when!r} or event {event!r}")
    if event == "request":
        return True
    if when == "never":
        return False
    return when == "always" or event in _AUTO_EVENTS
