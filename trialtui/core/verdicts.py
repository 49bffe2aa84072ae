"""What every profiler's rules share (the problem's context, a checked Verdict, number formats),
and the analytic rules: the roofline against the measured time, plus compile facts, no counters.

Counter rules live in profilers/ncu.py, kernel-record rules in profilers/activity.py; every id and
threshold is in verdict_registry.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from trialtui.core.analysis_result import AnalysisResult
from trialtui.core.gpus import Ceilings, sm_limits
from trialtui.core.model import Severity, Verdict
from trialtui.core.roofline import Roofline, roofline
from trialtui.core.verdict_registry import VerdictId as V
from trialtui.core.verdict_registry import threshold

THEORETICAL_OCCUPANCY, TINY_US = threshold("THEORETICAL_OCCUPANCY"), threshold("TINY_US")
LOW_SOL, VECTOR_BITS = threshold("LOW_SOL"), threshold("VECTOR_BITS")
WIDE_MMA_N, SMEM_PER_BLOCK, DEEP_STAGES = threshold("WIDE_MMA_N"), threshold("SMEM_PER_BLOCK"), threshold("DEEP_STAGES")
_BLOCK_NAMES = {"m": ("BLOCK_M", "BLOCK_SIZE_M", "BM"), "n": ("BLOCK_N", "BLOCK_SIZE_N", "BN"),
                "k": ("BLOCK_K", "BLOCK_SIZE_K", "BK")}

_SEVERITY_ORDER = {Severity.ERROR.value: 0, Severity.WARNING.value: 1, Severity.INFO.value: 2}

OCCUPANCY_HINTS = {
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


def context_for(analysis: AnalysisResult | None, ceilings: Ceilings | None, measured_us: float | None, *,
                allow_tf32: bool = False, sol_target: float = 0.8) -> Context:
    """The context for a trial: the analyze job's FLOPs and bytes at the ceilings of the GPU the
    bench ran on (analysis may have run with no GPU at all), and the bench's median."""
    roof = None
    if (analysis is not None and analysis.ok and ceilings is not None
            and None not in (analysis.flops, analysis.min_bytes, analysis.dtype)):
        roof = roofline(analysis.flops, analysis.min_bytes, analysis.dtype, ceilings, allow_tf32)
    return Context(roofline=roof, measured_us=measured_us, matmul_like=bool(analysis and analysis.matmul_like),
                   sol_target=sol_target)



def make_verdict(id: str, severity: Severity, title: str, evidence: list[str], hint: str, source: str) -> Verdict:
    """A Verdict whose id is in the registry (an unknown id raises, naming it)."""
    return Verdict(id=V(id).value, severity=severity.value, title=title, evidence="; ".join(e for e in evidence if e),
                   hint=hint, source=source)


def fmt_bytes(n: float) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB"


def fmt_us(t: float) -> str:
    return f"{t:.1f} µs" if t < 1000 else f"{t / 1000:.2f} ms"


def sol_text(ctx: Context, sol: float | None) -> str:
    if sol is None or ctx.roofline is None:
        return ""
    roof = ctx.roofline
    return (f"floor {fmt_us(roof.floor_us)} ({roof.bound}-bound, {roof.source} {roof.gpu}) = "
            f"{sol:.2f} of speed-of-light")


def useful_bandwidth(ctx: Context, measured_us: float | None) -> float | None:
    """Fraction of peak HBM bandwidth the *minimum* bytes would need at the measured time."""
    roof = ctx.roofline
    if roof is None or not measured_us or not roof.min_bytes:
        return None
    return roof.min_bytes / (measured_us * 1e-6) / (roof.hbm_gbps * 1e9)


def ordered(verdicts: list[Verdict]) -> list[Verdict]:
    return sorted(verdicts, key=lambda v: _SEVERITY_ORDER.get(v.severity, 3))


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


def verdicts_from_analytic(context: Context, facts: dict[str, Any] | None = None,
                           source: str = "analytic") -> list[Verdict]:
    """Verdicts without counters: the roofline against the measured time, plus compile facts.

    `facts` is one kernel's entry from the compile job (all keys optional): registers, spills,
    shared_bytes, num_warps, arch ("sm_90"), tensor_cores (bool: wgmma/mma in the PTX) and
    vector_width (bits of the widest global load). Its grid is traced at test sizes, so no grid
    verdict comes from it. `source` names the profiler whose time is `context.measured_us`.
    """
    facts = facts or {}
    arch = str(facts.get("arch") or "").lower().removeprefix("sm_").rstrip("a")
    roof, measured = context.roofline, context.measured_us
    sol = context.sol()
    found: list[Verdict] = []

    def add(id: str, severity: Severity, title: str, evidence: list[str], hint: str) -> None:
        found.append(make_verdict(id, severity, title, evidence, hint, source))

    at_sol = sol is not None and sol >= context.sol_target
    if at_sol:
        add(V.AT_SOL, Severity.INFO, "At speed-of-light", [sol_text(context, sol)],
            "Little headroom left at this algorithm: finalize, or change what is computed to lower the floor.")
    elif sol is not None and sol < LOW_SOL and roof.bound == "memory":
        useful = useful_bandwidth(context, measured)
        add(V.MEMORY_LOW_BW, Severity.WARNING, "Memory-bound at low bandwidth",
            [sol_text(context, sol), f"the minimum bytes move at {useful:.0%} of {roof.hbm_gbps:,.0f} GB/s"],
            "Raise useful bandwidth: coalesced, vectorized loads, one pass over the data, fused neighbours.")
    elif sol is not None and sol < context.sol_target and gemm_on_tensor_cores(context, facts):
        found.extend(gemm_triage(context, facts, sol, source))
    elif sol is not None and sol < LOW_SOL and roof.bound == "compute":
        add(V.COMPUTE_BOUND, Severity.INFO, "Compute-bound below the roof",
            [sol_text(context, sol), f"{roof.flops / (measured * 1e-6) / 1e12:.0f} of "
             f"{roof.peak_tflops:.0f} TFLOP/s ({roof.compute_dtype})"],
            "Use tensor cores (tl.dot) at full tile sizes; cut non-MMA instructions in the inner loop.")
    if arch == "90" and facts.get("sass_hmma") and not facts.get("sass_hgmma"):
        add(V.MMA_SYNC_ON_HOPPER, Severity.WARNING, "Tensor cores used without wgmma on Hopper",
            [f"SASS on sm_90: {facts['sass_hmma']} HMMA (mma.sync), no HGMMA (wgmma)"],
            "Give Triton wgmma's shape: tl.dot on 64-row tiles per warpgroup (BLOCK_M 64 on 4 warps, 128 on 8), "
            "bf16/fp16 operands; Hopper's full tensor rate needs wgmma.")
    if context.matmul_like and facts.get("tensor_cores") is False:
        add(V.TENSOR_CORES_IDLE, Severity.WARNING, "Tensor cores idle on a matmul-like kernel",
            ["no wgmma/mma instruction in the compiled kernel"],
            "Use tl.dot on bf16/fp16 (or tf32) tiles with dims that are multiples of 16.")
    occupancy = None
    if facts.get("registers") and facts.get("num_warps") and arch.isdigit():
        occupancy = theoretical_occupancy(int(facts["registers"]), int(facts["num_warps"]),
                                          int(facts.get("shared_bytes") or 0), int(arch))
    tensor_kernel = facts.get("tensor_cores") and roof is not None and roof.bound == "compute"
    if occupancy and occupancy[0] < THEORETICAL_OCCUPANCY and not at_sol and not tensor_kernel:
        pct, limiter = occupancy
        add(V.LOW_OCCUPANCY, Severity.INFO, f"Low occupancy: limited by {limiter.replace('_', ' ')}",
            [f"theoretical occupancy {pct:.0f}% ({facts['registers']} registers/thread, "
             f"{facts['num_warps']} warps, {facts.get('shared_bytes') or 0} B shared)"],
            OCCUPANCY_HINTS[limiter][:1].upper() + OCCUPANCY_HINTS[limiter][1:] + ".")
    if measured is not None and measured < TINY_US:
        add(V.LAUNCH_BOUND, Severity.WARNING, "Tiny kernel: launch-bound",
            [f"measured {fmt_us(measured)} (< {TINY_US:.0f} µs)"],
            "Launch overhead dominates: fuse with neighbouring ops, batch more work, or use CUDA graphs.")
    if facts.get("spills"):
        add(V.SPILLS, Severity.WARNING, "Register spills",
            [f"{facts['spills']} spilled registers" + (f", {facts['registers']} registers/thread"
                                                          if facts.get("registers") else "")],
            "Smaller tiles, fewer live accumulators, or more num_warps to spread them.")
    bits = facts.get("vector_width")
    if bits and bits < VECTOR_BITS and roof is not None and roof.bound == "memory" and not at_sol:
        add(V.NARROW_LOADS, Severity.INFO, "Narrow global loads",
            [f"widest global load {bits // 8} bytes (16-byte vector loads move the most per instruction)"],
            "Keep BLOCK contiguous and aligned (tl.multiple_of / max_contiguous hints) so loads vectorize.")
    return ordered(found)


def gemm_on_tensor_cores(context: Context, facts: dict[str, Any]) -> bool:
    """A matmul-like problem, compute-bound by the roofline, whose kernel runs tensor-core instructions."""
    roof = context.roofline
    return bool(context.matmul_like and roof is not None and roof.bound == "compute" and facts.get("tensor_cores"))


def _block(facts: dict[str, Any], dim: str) -> int | None:
    constexprs = facts.get("constexprs") or {}
    value = next((constexprs[n] for n in _BLOCK_NAMES[dim] if isinstance(constexprs.get(n), int)), None)
    return value


def gemm_triage(context: Context, facts: dict[str, Any], sol: float, source: str) -> list[Verdict]:
    """A GEMM on tensor cores below its roof: the headline, then what the compile stage's SASS, PTX and
    resources say is holding it back, each verdict with the evidence it came from."""
    roof = context.roofline
    arch = str(facts.get("arch") or "").lower().removeprefix("sm_").rstrip("a")
    found: list[Verdict] = []

    def add(id: str, severity: Severity, title: str, evidence: list[str], hint: str) -> None:
        found.append(make_verdict(id, severity, title, evidence, hint, source))

    rate = (f"{roof.flops / (context.measured_us * 1e-6) / 1e12:.0f} of {roof.peak_tflops:.0f} TFLOP/s "
            f"({roof.compute_dtype})" if context.measured_us and roof.peak_tflops else "")
    op = facts.get("wgmma_shape") and f"HGMMA.{facts['wgmma_shape']}" or facts.get("tensor_core_op") or ""
    add(V.GEMM_BELOW_ROOF, Severity.INFO, "GEMM below its tensor-core roof",
        [sol_text(context, sol), rate, f"tensor cores: {op}" if op else ""],
        "Feed the tensor cores faster: the verdicts beside this one name the lever (tile per warpgroup, "
        "pipeline depth, TMA loads, launch order); autotune the survivors at the bench size.")
    shape = str(facts.get("wgmma_shape") or "").split("x")
    if len(shape) == 3 and shape[1].isdigit() and int(shape[1]) < WIDE_MMA_N:
        add(V.NARROW_MMA_TILE, Severity.WARNING, "Narrow wgmma tile per warpgroup",
            [f"SASS HGMMA.{facts['wgmma_shape']}: each warpgroup multiplies 64×{shape[1]} per instruction "
             f"(under 64×{WIDE_MMA_N:.0f})", _tiles_text(facts)],
            f"Raise BLOCK_N to 128-256 (and BLOCK_M to 128 on num_warps 8, two warpgroups) so each wgmma is "
            f"64×128 or wider and the A tile in shared memory is read once per {WIDE_MMA_N:.0f}+ columns.")
    stages, shared = facts.get("num_stages"), facts.get("shared_bytes")
    bm, bn, bk = (_block(facts, d) for d in "mnk")
    if stages and shared and bm and bn and bk and stages < DEEP_STAGES:
        stage = (bm + bn) * bk * 2  # bf16/fp16 operand tiles of one K step
        if shared + stage <= SMEM_PER_BLOCK:
            add(V.SHALLOW_PIPELINE, Severity.INFO, "Pipeline shallower than shared memory allows",
                [f"num_stages {stages}, {shared / 1024:.0f} KB of {SMEM_PER_BLOCK / 1024:.0f} KB shared memory per "
                 f"block; one more stage of {bm}×{bk} + {bn}×{bk} tiles is {stage / 1024:.0f} KB and fits"],
                f"Try num_stages {stages + 1} (autotune it): loads of later K steps then overlap the current wgmma.")
    if arch == "90" and facts.get("tma") is False and not facts.get("sass_tma"):
        add(V.NO_TMA, Severity.INFO, "Operand tiles loaded without TMA on Hopper",
            ["no cp.async.bulk.tensor in the PTX" + (", no UTMALDG in the SASS" if "sass_tma" in facts else "")
             + f"; widest thread load {facts.get('widest_load') or 'unknown'}"],
            "Load x and W tiles through TMA descriptors (TensorDescriptor / tl.make_tensor_descriptor): the copy "
            "engine moves whole tiles and the registers stay for the accumulator.")
    return found  # spills: the general rule below names them for every kernel


def _tiles_text(facts: dict[str, Any]) -> str:
    bm, bn, bk = (_block(facts, d) for d in "mnk")
    if not (bm and bn):
        return ""
    return f"tile {bm}×{bn}" + (f"×{bk}" if bk else "") + f" on {facts.get('num_warps') or '?'} warps"


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
