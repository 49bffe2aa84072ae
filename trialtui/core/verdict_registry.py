"""Every verdict trialtui can give, in one table: its id, when it fires, the thresholds it reads
(each with where the number comes from), what to try next, and where the rule is documented.

Rules live beside their profiler (counters in profilers/ncu.py, kernel records in
profilers/activity.py, roofline and compile facts in verdicts.py); they may only emit ids listed
here, and `decide` draws remedies from here. Thresholds mirror Nsight Compute's own rules where one
exists (sections/*.py in ncu 2025.3.1; ../shared/reference/ncu-verdicts.md §3, §5.2); where NVIDIA
has none, the number is a named project choice and says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class VerdictId(StrEnum):
    AT_SOL = "at_sol"
    MEMORY_LOW_BW = "memory_low_bw"
    EXTRA_DRAM = "extra_dram"
    UNCOALESCED = "uncoalesced"
    COMPUTE_BOUND = "compute_bound"
    TENSOR_CORES_IDLE = "tensor_cores_idle"
    LOW_OCCUPANCY = "low_occupancy"
    SMALL_GRID = "small_grid"
    LAUNCH_BOUND = "launch_bound"
    LATENCY_BOUND = "latency_bound"
    SPILLS = "spills"
    NARROW_LOADS = "narrow_loads"
    DOMINANT_KERNEL = "dominant_kernel"
    NO_OWN_KERNEL = "no_own_kernel"
    COUNTERS_UNAVAILABLE = "counters_unavailable"
    MMA_SYNC_ON_HOPPER = "mma_sync_on_hopper"
    GEMM_BELOW_ROOF = "gemm_below_roof"
    NARROW_MMA_TILE = "narrow_mma_tile"
    SHALLOW_PIPELINE = "shallow_pipeline"
    NO_TMA = "no_tma"
    GEMM_L2_REUSE = "gemm_l2_reuse"


@dataclass(frozen=True)
class Threshold:
    """A number a rule compares against, and where it comes from (an NVIDIA rule or a project choice)."""

    name: str
    value: float
    unit: str
    origin: str


@dataclass(frozen=True)
class Remedy:
    """What a verdict calls for, as names of strategies in core/strategies.py: tweaks on the current
    approach, and different approaches when the tweaks have stopped paying."""

    tweaks: tuple[str, ...]
    approaches: tuple[str, ...]


@dataclass(frozen=True)
class VerdictKind:
    """One registry entry. `about` is "kernel" (advice follows) or "profile" (evidence about the
    profile itself, never advice); `nvidia_rules` are ncu's rules that speak to the same problem."""

    id: VerdictId
    rule: str
    thresholds: tuple[str, ...]
    remedy: Remedy
    advice: str
    docs: str
    about: str = "kernel"
    nvidia_rules: tuple[str, ...] = ()


_NCU_DOC = "Nsight Compute {} rule (sections/*.py in ncu 2025.3.1; ../shared/reference/ncu-verdicts.md)"
_NVIDIA = "NVIDIA {} (ncu 2025.3.1)"

THRESHOLDS: dict[str, Threshold] = {t.name: t for t in (
    Threshold("HIGH_THROUGHPUT", 80.0, "% of peak", _NVIDIA.format("SOLBottleneck no_bound_threshold: a unit at "
                                                                     "this or above is the limiter")),
    Threshold("LATENCY", 60.0, "% of peak", _NVIDIA.format("SOLBottleneck latency_bound_threshold: both units "
                                                             "below it means latency")),
    Threshold("BALANCED", 10.0, "points", _NVIDIA.format("SOLBottleneck balanced_threshold: |SM − memory| under "
                                                           "it is balanced")),
    Threshold("THEORETICAL_OCCUPANCY", 80.0, "%", _NVIDIA.format("TheoreticalOccupancy")),
    Threshold("ACHIEVED_GAP", 10.0, "points", _NVIDIA.format("AchievedOccupancy: theoretical − achieved")),
    Threshold("ISSUE_LOW", 0.6, "issue slots busy per scheduler", _NVIDIA.format("IssueSlotUtilization")),
    Threshold("PIPE_HIGH", 60.0, "% of peak", _NVIDIA.format("HighPipeUtilization: high")),
    Threshold("PIPE_BOTTLENECK", 80.0, "% of peak", _NVIDIA.format("HighPipeUtilization: the bottleneck")),
    Threshold("TAIL", 0.2, "fraction of the last wave idle", _NVIDIA.format("LaunchConfiguration tail effect")),
    Threshold("EXTRA_BYTES", 1.5, "× the minimum bytes", "project choice: half again the minimum is re-reads or "
              "intermediates worth naming; less is within what caches and tiling edges cost"),
    Threshold("SECTOR_USE", 50.0, "% of each 32-byte sector", "project choice: below it, half the fetched bytes "
              "are wasted (NVIDIA's UncoalescedGlobalAccess estimates the same waste without a cut-off)"),
    Threshold("TENSOR_IDLE", 1.0, "% tensor pipe", "project choice: a matmul-like kernel under 1 % has no "
              "MMA instructions in its hot loop"),
    Threshold("TINY_US", 10.0, "µs", "project choice: a launch costs a few µs, so a kernel this short is "
              "dominated by launch overhead"),
    Threshold("LOW_SOL", 0.6, "fraction of speed-of-light", "project choice: below it the bound the roofline "
              "names is called a problem (the config's sol_target, 0.8 by default, is 'at speed-of-light')"),
    Threshold("SOL_TARGET", 0.8, "fraction of speed-of-light", "the config's sol_target (default shown): at or "
              "above it the kernel is at speed-of-light"),
    Threshold("SPILL_ANY", 0.0, "spill instructions", "project choice: any spill goes through local memory"),
    Threshold("VECTOR_BITS", 128.0, "bits per global load", "project choice: 16-byte vector loads move the most "
              "per instruction on sm_80 and later"),
    Threshold("MANY_LAUNCHES", 4.0, "kernel launches per call", "project choice: with four or more launches of "
              "tiny kernels per call, launch overhead adds up past the kernels' own time"),
    Threshold("GPU_BUSY", 0.5, "fraction of the call's wall time", "project choice: a GPU busy under half of "
              "the call waits on the host (launches, Python, synchronisation)"),
    Threshold("DOMINANT", 0.8, "fraction of GPU time", "project choice: one kernel with four fifths of the time "
              "is where every change should go"),
    Threshold("WIDE_MMA_N", 128.0, "columns per wgmma instruction", "project choice: a warpgroup's wgmma "
              "under 64×128 re-reads its A tile from shared memory for every 64 columns; 64×128 to 64×256 is "
              "what Hopper GEMMs (cuBLAS, CUTLASS, Triton's tutorials) run"),
    Threshold("SMEM_PER_BLOCK", 232448.0, "bytes of shared memory per block", "NVIDIA CUDA C++ Programming Guide, "
              "compute capability 9.0: 227 KB of shared memory per block (opt-in) on sm_90"),
    Threshold("DEEP_STAGES", 4.0, "pipeline stages", "project choice: 3-4 stages keep Hopper's wgmma fed; a "
              "pipeline shallower than this with a stage still fitting in shared memory leaves latency exposed"),
    Threshold("OWN_TIME", 0.1, "fraction of GPU time", "project choice: under a tenth of the time in kernels the "
              "reference does not launch means library kernels (cuBLAS, ATen) do the work"),
)}


def _kind(id: VerdictId, rule: str, thresholds: tuple[str, ...], tweaks: tuple[str, ...],
          approaches: tuple[str, ...], advice: str, docs: str, **extra) -> VerdictKind:
    return VerdictKind(id, rule, thresholds, Remedy(tweaks, approaches), advice, docs, **extra)


V = VerdictId
VERDICTS: dict[VerdictId, VerdictKind] = {k.id: k for k in (
    _kind(V.AT_SOL, "the measured (or kernel) time reaches sol_target of the roofline's floor; with counters "
          "and no roofline, a unit at HIGH_THROUGHPUT with no wasted bytes",
          ("SOL_TARGET", "HIGH_THROUGHPUT", "EXTRA_BYTES", "SECTOR_USE"),
          ("algebraic rewrite", "fuse passes"), ("algebraic rewrite", "fuse passes"),
          "Little headroom left at this algorithm: finalize, or change what is computed to lower the floor.",
          _NCU_DOC.format("SOLBottleneck"), nvidia_rules=("SOLBottleneck",)),
    _kind(V.MEMORY_LOW_BW, "memory-bound (memory ahead of SM by BALANCED, or the roofline says memory) and the "
          "minimum bytes move at under LATENCY % of peak bandwidth, or below LOW_SOL of the floor",
          ("BALANCED", "LATENCY", "LOW_SOL"),
          ("coalesce accesses", "vectorize loads", "fuse passes"),
          ("one-pass algorithm", "fuse passes", "persistent kernel"),
          "Raise useful bandwidth: coalesced, vectorized loads, more bytes in flight, fewer passes.",
          _NCU_DOC.format("SOLBottleneck"), nvidia_rules=("SOLBottleneck",)),
    _kind(V.EXTRA_DRAM, "a memory-bound kernel moves EXTRA_BYTES × the minimum DRAM bytes or more",
          ("EXTRA_BYTES",), ("fuse passes", "tile for reuse"), ("one-pass algorithm", "fuse passes", "tile for reuse"),
          "Fuse the passes, keep reused tiles on chip, order programs so neighbours share data in L2.",
          "project rule: dram__bytes_read.sum + dram__bytes_write.sum against the analytic minimum"),
    _kind(V.UNCOALESCED, "global loads or stores use under SECTOR_USE % of each 32-byte sector",
          ("SECTOR_USE",), ("coalesce accesses", "vectorize loads"), ("coalesce accesses",),
          "Make tl.arange run along the contiguous dimension, or transpose through shared memory.",
          _NCU_DOC.format("UncoalescedGlobalAccess"),
          nvidia_rules=("MemoryCacheAccessPattern", "UncoalescedGlobalAccess")),
    _kind(V.COMPUTE_BOUND, "SM ahead of memory by BALANCED (or SM at HIGH_THROUGHPUT), naming the busiest pipe "
          "(PIPE_HIGH, PIPE_BOTTLENECK); without counters, a compute-bound roofline below LOW_SOL",
          ("BALANCED", "HIGH_THROUGHPUT", "PIPE_HIGH", "PIPE_BOTTLENECK", "LOW_SOL"),
          ("cheaper math", "use tensor cores"), ("algebraic rewrite", "use tensor cores"),
          "Cut instructions from the busiest pipe; move matmul-like work onto tensor cores.",
          _NCU_DOC.format("HighPipeUtilization"), nvidia_rules=("HighPipeUtilization", "SlowPipeLimiter")),
    _kind(V.TENSOR_CORES_IDLE, "a matmul-like problem whose kernel keeps the tensor pipe under TENSOR_IDLE %, or "
          "has no wgmma/mma instruction; on Hopper, mma.sync without wgmma",
          ("TENSOR_IDLE",), ("use tensor cores",), ("use tensor cores",),
          "Use tl.dot on bf16/fp16 (or tf32) tiles with dims that are multiples of 16.",
          "project rule over sm__pipe_tensor_cycles_active and the compile job's PTX"),
    _kind(V.LOW_OCCUPANCY, "theoretical occupancy under THEORETICAL_OCCUPANCY % (or achieved ACHIEVED_GAP below "
          "it) while no unit reaches HIGH_THROUGHPUT and issue slots are under ISSUE_LOW",
          ("THEORETICAL_OCCUPANCY", "ACHIEVED_GAP", "ISSUE_LOW", "HIGH_THROUGHPUT"),
          ("larger tiles", "fewer registers", "trim shared memory"), ("persistent kernel", "split the work"),
          "Free the resource that limits blocks per SM: registers, shared memory or warps.",
          _NCU_DOC.format("Occupancy"),
          nvidia_rules=("TheoreticalOccupancy", "AchievedOccupancy", "IssueSlotUtilization")),
    _kind(V.SMALL_GRID, "fewer blocks than SMs (under one wave), or a last wave leaving TAIL of its SM time idle",
          ("TAIL",), ("split the work", "smaller tiles"), ("split the work", "persistent kernel"),
          "Launch at least one full wave, sized to whole waves, or go persistent.",
          _NCU_DOC.format("LaunchConfiguration"), nvidia_rules=("LaunchConfiguration",)),
    _kind(V.LAUNCH_BOUND, "a kernel (or the call) under TINY_US; from kernel records, MANY_LAUNCHES or more tiny "
          "launches per call or a GPU busy under GPU_BUSY of the call",
          ("TINY_US", "MANY_LAUNCHES", "GPU_BUSY"), ("fewer launches", "fuse passes"),
          ("fewer launches", "persistent kernel"),
          "Fuse with neighbouring ops, batch more work per launch, or replay with CUDA graphs.",
          "project rule over gpu__time_duration.sum or CUPTI kernel records"),
    _kind(V.LATENCY_BOUND, "SM and memory both under LATENCY % over at least a full wave",
          ("LATENCY",), ("autotune configs", "larger tiles"), ("persistent kernel", "split the work"),
          "More independent work per thread, more stages to prefetch, or more warps in flight.",
          _NCU_DOC.format("SOLBottleneck"), nvidia_rules=("SOLBottleneck", "IssueSlotUtilization")),
    _kind(V.SPILLS, "more than SPILL_ANY spill instructions (counters) or spilled registers (ptxas)",
          ("SPILL_ANY",), ("fewer registers", "smaller tiles"), ("smaller tiles", "split the work"),
          "Smaller tiles, fewer live accumulators, or more num_warps to spread them.",
          "project rule over sass__inst_executed_register_spilling and the compile job's spills"),
    _kind(V.NARROW_LOADS, "a memory-bound kernel whose widest global load is under VECTOR_BITS",
          ("VECTOR_BITS",), ("vectorize loads",), ("tile for reuse",),
          "Keep BLOCK contiguous and aligned (tl.multiple_of / max_contiguous) so loads vectorize.",
          "project rule over the compile job's PTX (ld.global.v4)"),
    _kind(V.DOMINANT_KERNEL, "among two or more distinct kernels, one takes DOMINANT of the GPU time",
          ("DOMINANT",), ("fuse passes", "autotune configs"), ("fuse passes", "one-pass algorithm"),
          "Spend the next change on that kernel, or fuse the small ones into it.",
          "project rule over CUPTI kernel records (torch.profiler)"),
    _kind(V.NO_OWN_KERNEL, "kernels the reference does not launch take under OWN_TIME of the GPU time: "
          "library kernels do the work",
          ("OWN_TIME",), ("fuse passes",), ("Triton", "fuse passes"),
          "Write the hot path as a kernel of your own; calling the same library kernels cannot beat the reference.",
          "project rule over CUPTI kernel records of the candidate and the reference"),
    _kind(V.MMA_SYNC_ON_HOPPER, "on sm_90, a kernel whose tensor-core work runs on mma.sync: HMMA and no HGMMA "
          "in the compile stage's SASS, or wgmma at 0 % with mma.sync issued (counters)",
          ("SOL_TARGET",), ("warpgroup tiles",), ("warpgroup tiles", "Triton with TMA descriptors or warp specialization"),
          "Give Triton wgmma's shape: tl.dot on 64-row tiles per warpgroup, num_warps 4 or 8, bf16/fp16 operands.",
          "project rule over the compile stage's SASS (HGMMA / HMMA) and sm__inst_executed_pipe_tensor_op_gmma"),
    _kind(V.GEMM_BELOW_ROOF, "a matmul-like kernel on tensor cores, compute-bound by the roofline, below "
          "SOL_TARGET of its floor (the tensor pipe's utilisation beside it where counters exist); it replaces "
          "compute_bound, whose advice (cheaper math) is not a GEMM's",
          ("SOL_TARGET",), ("autotune configs", "persistent kernel"),
          ("Triton with TMA descriptors or warp specialization", "CUDA C++ with CUTLASS/CuTe"),
          "A GEMM under its roof is fed too slowly: wider wgmma tiles, a deeper pipeline, TMA loads, persistent "
          "programs in grouped order; the verdicts beside this one name which, from the SASS and the counters.",
          "project rule over the roofline, the compile stage's SASS and sm__pipe_tensor_cycles_active"),
    _kind(V.NARROW_MMA_TILE, "a GEMM below SOL_TARGET whose widest wgmma (SASS HGMMA.64xNx16) has N under WIDE_MMA_N",
          ("WIDE_MMA_N", "SOL_TARGET"), ("larger tiles",), ("larger tiles", "persistent kernel"),
          "Raise BLOCK_N (and BLOCK_M with num_warps 8: two warpgroups) so each wgmma is 64×128 to 64×256.",
          "project rule over the compile stage's SASS (HGMMA shape)"),
    _kind(V.SHALLOW_PIPELINE, "a GEMM below SOL_TARGET with fewer than DEEP_STAGES stages while one more stage of "
          "its operand tiles still fits in SMEM_PER_BLOCK",
          ("DEEP_STAGES", "SMEM_PER_BLOCK", "SOL_TARGET"), ("deeper pipeline",), ("deeper pipeline",
                                                                                    "persistent kernel"),
          "Raise num_stages while the operand tiles fit in shared memory, so loads run further ahead of wgmma.",
          "project rule over the compile stage's num_stages, shared memory and BLOCK constexprs"),
    _kind(V.NO_TMA, "on sm_90, a GEMM below SOL_TARGET whose operand tiles are loaded by the threads: no "
          "cp.async.bulk.tensor in the PTX, no UTMALDG in the SASS",
          ("SOL_TARGET",), ("Triton with TMA descriptors or warp specialization",),
          ("Triton with TMA descriptors or warp specialization", "persistent kernel"),
          "Load the tiles with TMA descriptors: the copy engine moves them, the registers stay for the accumulator.",
          "project rule over the compile stage's PTX and SASS"),
    _kind(V.GEMM_L2_REUSE, "a compute-bound matmul-like kernel that moves EXTRA_BYTES × the minimum DRAM bytes: "
          "tiles re-read from DRAM instead of L2",
          ("EXTRA_BYTES",), ("tile for reuse",), ("tile for reuse", "persistent kernel"),
          "Launch the tiles in grouped order (GROUP_M rows of tiles per column sweep) so programs running "
          "together share their x and W tiles in L2.",
          "project rule: dram__bytes_read.sum + dram__bytes_write.sum against the analytic minimum"),
    _kind(V.COUNTERS_UNAVAILABLE, "the preferred profiler could not read what it needs (ncu: ERR_NVGPUCTRPERM, "
          "no ncu, a timeout); the reason is the evidence, and the verdicts come from the next profiler",
          (), (), (),
          "Profile where ncu may read counters (root, or NVreg_RestrictProfilingToAdminUsers=0) for counter "
          "verdicts.", "core/ncu.py counters_unavailable: the failure signatures", about="profile"),
)}
del V

ABOUT_THE_PROFILE = frozenset(k.id.value for k in VERDICTS.values() if k.about == "profile")
REMEDIES: dict[str, Remedy] = {k.id.value: k.remedy for k in VERDICTS.values() if k.about == "kernel"}


def threshold(name: str) -> float:
    """A threshold's value by name (rules read their numbers here, so the docs are the code)."""
    return THRESHOLDS[name].value


def kind(id: str) -> VerdictKind:
    """The registry entry of a verdict id; an unknown id is a programming error, named."""
    try:
        return VERDICTS[VerdictId(id)]
    except ValueError:
        raise KeyError(f"unknown verdict id {id!r}: add it to trialtui/core/verdict_registry.py") from None
