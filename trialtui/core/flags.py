"""Result flags and which of them disqualify: the one definition that best, decide and every view read.

A flag is a `{"code", "message"}` dict in a bench result (trialtui.core.result.flag). Some only
inform (a tie, bf16 emulated on this GPU); others say the number cannot be trusted (work hidden on a
side stream, no kernel of the candidate's own, a patched timer, a fallback to the reference). A
trial whose numbers cannot be trusted is never best and never finalized, and every view says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from trialtui.core.bench_result import BenchResult


@dataclass(frozen=True)
class FlagKind:
    code: str
    disqualifying: bool
    meaning: str


KINDS: dict[str, FlagKind] = {
    kind.code: kind
    for kind in (
        FlagKind("side-stream", True, "GPU work escaped the timed stream, so the events under-measure it"),
        FlagKind("suspicious", True, "a speedup above the suspicious bound that no speed-of-light at or under 100% confirms"),
        FlagKind("no-custom-kernel", True, "no kernel of the candidate's own was launched: it runs PyTorch only"),
        FlagKind("no-kernel", True, "no GPU kernel ran inside the timed call"),
        FlagKind("timing-patched", True, "the candidate patched the timer or the synchronisation it is timed with"),
        FlagKind("timing-mismatch", True, "the event time disagrees with the kernel and wall-clock times"),
        FlagKind("fallback", True, "the candidate fell back to the reference"),
        FlagKind("sol-implausible", True, "faster than the hardware's speed-of-light allows"),
        FlagKind("impossible", True, "faster than the problem's work allows at the GPU's datasheet ceilings"),
        FlagKind("noisy", True, "the timing was disturbed (another program on the GPU, a clock that moved), twice"),
        FlagKind("events-unconfirmed", False, "the candidate's events were far below the checker's clock, whose figure is the number"),
        FlagKind("tie", False, "inside the noise band of a baseline"),
        FlagKind("bf16-emulated", False, "bf16 is emulated on this device"),
        FlagKind("inputs-cast", False, "trialtui.toml's dtype replaced a floating dtype the problem's get_inputs chose"),
        FlagKind("trivial-reference", False, "the reference's output barely depends on its inputs"),
    )
}
DISQUALIFYING = frozenset(code for code, kind in KINDS.items() if kind.disqualifying)


def disqualifications(result: BenchResult | None, sol: float | None) -> list[str]:
    """Why a correct result's numbers cannot be best, one line per reason; empty when they can.

    A speed-of-light above 100% disqualifies on its own only where the runner did not check the headline against
    the physical floor. Where it did, the floor decides (`impossible`): it is the careful bound. A speed-of-light is
    the roofline's, every byte at the DRAM rate, where the floor leaves the output's writes to L2 (an honest fp32
    softmax 8192 × 1024 read 20.06 µs on an H100, 20.03 µs at its datasheet rate for every byte) and takes the
    chip's fastest dense rate; and calibrated ceilings are rates a copy and a matmul reached, not limits (an honest
    fused bias + GELU kernel read twice what it wrote at 102% of the H200's measured copy rate). A `suspicious`
    speedup asks to be verified, and a speed-of-light that passed that test is the verification (a 12× RMSNorm at
    83% of copy bandwidth is real), so it disqualifies only without one.
    """
    reasons: list[str] = []
    plausible = sol is not None and (sol <= 1.0 or _under_physical_floor_checked(result))
    for item in (result.flags if result else None) or []:
        code = item.get("code") if isinstance(item, Mapping) else None
        if code not in DISQUALIFYING:
            continue
        if code == "suspicious" and plausible:
            continue
        reasons.append(f"{code}: {item.get('message') or KINDS[code].meaning}")
    if sol is not None and not plausible:
        reasons.append(f"speed-of-light {sol:.0%}: above 100%, faster than the hardware allows, so the timing misses work")
    return reasons


def _under_physical_floor_checked(result: BenchResult | None) -> bool:
    """The runner checked the headline against the datasheet floor (an `impossible` flag where it was below,
    which disqualifies by itself)."""
    if result is None:
        return False
    work = (result.timing or {}).get("work")
    return isinstance(work, Mapping) and bool(work.get("floor_us"))
