"""What to try next: the named optimization strategies and the access ladder from Triton down to
PTX (which verdict calls for which strategy is in verdict_registry.py).

`decide` chooses *when* to suggest something; this module knows *what* there is to suggest and
recognises a user's free-text strategy label as one of these, so a strategy that regressed is
never suggested again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from trialtui.core.verdict_registry import Remedy


@dataclass(frozen=True)
class Strategy:
    """One thing to try. `advice` reads after a dash in a sentence; `label` recognises the
    strategy in a trial's free-text strategy label."""

    name: str
    advice: str
    label: str  # a regular expression, matched case-insensitively against trial.strategy

    def matches(self, label: str) -> bool:
        return re.search(self.label, label, re.IGNORECASE) is not None


CATALOG: tuple[Strategy, ...] = (
    Strategy(
        "coalesce accesses",
        "make the contiguous dimension the fastest-varying offset so each warp reads whole "
        "128-byte lines (stage a transpose through shared memory if the layout fights you)",
        r"coalesc|contiguous",
    ),
    Strategy(
        "vectorize loads",
        "load 16 bytes per thread: contiguous offsets, aligned BLOCK sizes and "
        "tl.max_contiguous/tl.multiple_of hints",
        r"vectori|\bvec\d?\b|\bv4\b|wide load|128.?bit",
    ),
    Strategy(
        "fuse passes",
        "fuse the passes into one kernel so each byte crosses DRAM once",
        r"\bfus",
    ),
    Strategy(
        "tile for reuse",
        "keep reused tiles in registers or shared memory and order programs with GROUP_M for "
        "L2 hits instead of re-reading DRAM",
        r"reuse|group_m|swizzl|l2 (locality|order)",
    ),
    Strategy(
        "larger tiles",
        "raise the BLOCK sizes so each program does more work and hides more latency",
        r"(larger|bigger|increase|raise).{0,12}(tile|block)",
    ),
    Strategy(
        "smaller tiles",
        "shrink the BLOCK sizes or the accumulators so the live values fit in registers",
        r"(smaller|reduce|decrease|shrink|lower).{0,12}(tile|block)",
    ),
    Strategy(
        "fewer registers",
        "cut live values and accumulators, or lower num_warps, to free registers "
        "(check registers per thread in the compile report)",
        r"register|\bregs\b|maxnreg",
    ),
    Strategy(
        "trim shared memory",
        "check shared memory per block: fewer num_stages or smaller tiles let more blocks "
        "fit on an SM",
        r"shared mem|\bsmem\b|num_stages|\bstages\b",
    ),
    Strategy(
        "use tensor cores",
        "use tl.dot on fp16/bf16/tf32 tiles with dims that are multiples of 16 (wgmma on Hopper)",
        r"tl\.dot|tensor.?core|\bwgmma\b|\bmma\b",
    ),
    Strategy(
        "warpgroup tiles",
        "give tl.dot wgmma's shape on Hopper: 64 rows of the tile per warpgroup (BLOCK_M 64 on 4 warps, 128 on "
        "8), BLOCK_N and BLOCK_K multiples of 16, bf16/fp16 operands, so the SASS shows HGMMA instead of HMMA",
        r"warpgroup|hgmma",
    ),
    Strategy(
        "deeper pipeline",
        "raise num_stages while one more stage of operand tiles fits in shared memory, so the loads of "
        "later K steps overlap the current wgmma",
        r"(more|deeper|raise|increase).{0,12}(stages|pipelin)|num_stages",
    ),
    Strategy(
        "cheaper math",
        "cut the instruction count: exp2 instead of exp, multiply by a reciprocal, hoist "
        "loop-invariant math",
        r"cheap|exp2|fast.?math|reciprocal|\bapprox",
    ),
    Strategy(
        "split the work",
        "split-K or split the reduction so the grid covers every SM at least once",
        r"split",
    ),
    Strategy(
        "persistent kernel",
        "launch one program per SM and loop over tiles, so launch and tail costs are paid once",
        r"persistent",
    ),
    Strategy(
        "fewer launches",
        "fuse the launches into one kernel, give each launch more work, or capture them in a CUDA graph",
        r"cuda.?graph|launch",
    ),
    Strategy(
        "algebraic rewrite",
        "change the math so less work is needed: fold scales into weights, drop recomputation, "
        "use an algebraic identity",
        r"algebra|\bfold",
    ),
    Strategy(
        "one-pass algorithm",
        "use a one-pass formulation (online softmax, Welford) so the input is read once",
        r"one.?pass|single.?pass|online|welford",
    ),
    Strategy(
        "autotune configs",
        "autotune BLOCK sizes, num_warps and num_stages over a few configs at the bench sizes",
        r"autotun|num_warps",
    ),
    # The rungs of the access ladder are strategies too, so a rung that regressed is skipped.
    Strategy(
        "Triton",
        "write the kernel in Triton: custom tiling and fusion that PyTorch ops cannot express",
        r"\btriton\b(?!.*(tma|descriptor|warp))",
    ),
    Strategy(
        "Triton with TMA descriptors or warp specialization",
        "move tile loads to TMA descriptors (tl.make_tensor_descriptor) or warp-specialized loops",
        r"\btma\b|descriptor|warp.?spec",
    ),
    Strategy(
        "CUDA C++ with CUTLASS/CuTe",
        "write the kernel in CUDA C++ with CUTLASS/CuTe through torch.utils.cpp_extension.load_inline",
        r"cutlass|\bcute\b|cuda c\+\+|load_inline|cpp.?extension",
    ),
    Strategy(
        "inline PTX",
        "hand-write the hot loop in inline PTX (asm volatile, or tl.inline_asm_elementwise)",
        r"\bptx\b|\basm\b",
    ),
)

BY_NAME: dict[str, Strategy] = {s.name: s for s in CATALOG}


# With no verdicts to go on: safe next steps, and the classic changes of approach.
GENERIC = Remedy(
    ("autotune configs", "vectorize loads", "fuse passes"),
    ("persistent kernel", "split the work", "fuse passes", "algebraic rewrite"),
)


@dataclass(frozen=True)
class Rung:
    """A level of access to the hardware; `unlocks` is what stepping onto it buys."""

    level: int
    name: str
    unlocks: str
    detect: str  # a regular expression over the candidate's source


LADDER: tuple[Rung, ...] = (
    Rung(0, "PyTorch", "", ""),
    Rung(
        1,
        "Triton",
        "custom tiling and fusion that PyTorch ops cannot express",
        r"@triton\.jit|\bimport triton\b|\btl\.",
    ),
    Rung(
        2,
        "Triton with TMA descriptors or warp specialization",
        "bulk asynchronous tile copies (TMA) and producer/consumer warps that overlap loads with tl.dot",
        r"make_tensor_descriptor|_experimental_descriptor|tensormap|warp_specialize",
    ),
    Rung(
        3,
        "CUDA C++ with CUTLASS/CuTe",
        "explicit shared-memory layouts and swizzles, thread-block clusters with TMA multicast, "
        "and hand-built wgmma pipelines",
        r"load_inline|cpp_extension|\bcutlass\b|\bcute::",
    ),
    Rung(
        4,
        "inline PTX",
        "exact instructions no compiler picks for you: cache hints, wgmma and cp.async.bulk "
        "variants, setmaxnreg",
        r"\basm\s*(volatile\s*)?\(|inline_asm_elementwise",
    ),
)


def detect_rung(source: str | None) -> Rung | None:
    """The highest rung the source shows signs of; None when there is no source to read."""
    if source is None:
        return None
    for rung in reversed(LADDER[1:]):
        if re.search(rung.detect, source):
            return rung
    return LADDER[0]


def next_rung(rung: Rung, banned: set[str]) -> Rung | None:
    """The first rung above `rung` whose strategy has not regressed on this problem."""
    for higher in LADDER[rung.level + 1 :]:
        if higher.name not in banned:
            return higher
    return None


def recognise(label: str) -> list[Strategy]:
    """The catalog strategies a free-text label names ("vec4 loads + fused bias" → two)."""
    return [s for s in CATALOG if s.matches(label)]
