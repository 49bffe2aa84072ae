"""One bottleneck per trial: which verdicts speak to the limiter, and which advice follows from them.

The rules fire independently, so a 2 µs kernel can be launch-bound, under-occupied and on a small
grid at once, and their remedies together contradict each other (larger and smaller tiles, fewer
registers). `decide` asks here which verdicts to take advice from, in what order, and which
strategy a better-ranked one already ruled out.
"""

from __future__ import annotations

from trialtui.core.model import Verdict
from trialtui.core.verdict_registry import VerdictId

V = VerdictId
# What each verdict says limits the kernel. "where" verdicts say where the time goes, which holds
# whatever the limiter is; "done" is the kernel at its roof.
LIMITER: dict[str, str] = {
    V.LAUNCH_BOUND: "launch",
    V.MEMORY_LOW_BW: "memory", V.EXTRA_DRAM: "memory", V.UNCOALESCED: "memory", V.NARROW_LOADS: "memory",
    V.COMPUTE_BOUND: "compute", V.TENSOR_CORES_IDLE: "compute", V.MMA_SYNC_ON_HOPPER: "compute",
    V.GEMM_BELOW_ROOF: "compute", V.NARROW_MMA_TILE: "compute", V.SHALLOW_PIPELINE: "compute",
    V.NO_TMA: "compute", V.GEMM_L2_REUSE: "compute",
    V.LOW_OCCUPANCY: "latency", V.SMALL_GRID: "latency", V.LATENCY_BOUND: "latency", V.SPILLS: "latency",
    V.AT_SOL: "done",
    V.DOMINANT_KERNEL: "where", V.NO_OWN_KERNEL: "where",
}
del V
_SEVERITY = {"error": 0, "warning": 1, "info": 2}

# Strategies that pull opposite ways: once one is advised, the other is not.
OPPOSED: frozenset[frozenset[str]] = frozenset(frozenset(pair) for pair in (
    ("larger tiles", "smaller tiles"),
    ("larger tiles", "fewer registers"),  # bigger tiles hold more live values
    ("larger tiles", "split the work"),  # fewer, bigger programs against more, smaller ones
    ("deeper pipeline", "trim shared memory"),  # every stage is a buffer in shared memory
))

# Low occupancy names what limits it; only freeing that resource helps.
_OCCUPANCY = {"registers": "fewer registers", "shared mem": "trim shared memory", "warps": "larger tiles",
              "blocks": "larger tiles"}


def focus(verdicts: list[Verdict]) -> list[Verdict]:
    """The verdicts to take advice from, the limiter's first.

    A launch-bound kernel (a few µs, near the launch floor) gets launch advice only: tiles,
    occupancy and memory access inside it cannot matter until launches stop dominating. Otherwise
    the most severe verdict names the limiter, its kin follow, then the rest.
    """
    ranked = sorted(verdicts, key=lambda v: _SEVERITY.get(v.severity, len(_SEVERITY)))
    kinds = [LIMITER.get(v.id, "") for v in ranked]
    if launch_bound(verdicts):
        return [v for v, kind in zip(ranked, kinds) if kind in ("launch", "where")]
    first = next((kind for kind in kinds if kind not in ("", "where")), None)
    return [v for v, kind in zip(ranked, kinds) if kind == first] + [
        v for v, kind in zip(ranked, kinds) if kind != first]


def launch_bound(verdicts: list[Verdict]) -> bool:
    return any(LIMITER.get(v.id) == "launch" for v in verdicts)


def remedy(verdict: Verdict, names: tuple[str, ...]) -> tuple[str, ...]:
    """A verdict's strategies as far as its own evidence allows: low occupancy limited by registers
    calls for fewer registers, not larger tiles."""
    if verdict.id != VerdictId.LOW_OCCUPANCY:
        return names
    said = f"{verdict.title} {verdict.evidence}"
    freed = next((name for word, name in _OCCUPANCY.items() if f"limited by {word}" in said), None)
    return tuple(n for n in names if n == freed or n not in _OCCUPANCY.values()) if freed else names


def opposed(name: str, chosen: set[str]) -> bool:
    return any(frozenset((name, other)) in OPPOSED for other in chosen)
