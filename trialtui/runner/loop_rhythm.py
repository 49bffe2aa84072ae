"""The checker's own timed loops read call to call by their GPU events, beside the host's clock around a batch.

The checker measures what the harness costs a call in loops of its own (runner/timed_batch.CheckerLoop: on
a call that does nothing, and beside the candidate's batches on the reference's call). The candidate's
process is alive meanwhile, and work it queued for the GPU runs then: the GPU time-slices between processes,
and a batch of the checker's clocked from its start to its end holds the other process's slices, so the
harness reads dearer and the candidate's clock less it cheaper (docs/SECURITY.md, "The GPU between the
checker's calls"). A slice is a millisecond or more; a call of the loop is tens of µs. So a batch's rhythm is
the median interval between its consecutive calls' start events (GPU timestamps, no batch's start in it), and
the time its calls waited beyond twice that is time another process (or its host) held it: more than
STOLEN_FRAC of its span, and the batch was held up. The host's clocks read each size's fastest batch, so one
held up is not read where another was not; a loop with a size of none not held up is a disturbance.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

OUTLIER = 2.0  # an interval longer than this many times the loop's median: the loop was held up there
STOLEN_FRAC = 0.03  # a batch whose held-up time is more than this share of its span is disturbed


@dataclass(frozen=True)
class Rhythm:
    """One batch of a loop, from its calls' start times (µs, GPU clock, from the first call's start)."""

    per_call_us: float  # the median interval between consecutive calls' starts
    stolen_us: float  # what intervals over OUTLIER × that took beyond it
    span_us: float  # the first call's start to the last call's

    @classmethod
    def of(cls, starts_us: list[float]) -> Rhythm | None:
        """None where there is no interval to read (one call, or events that do not advance: no GPU)."""
        gaps = [b - a for a, b in zip(starts_us, starts_us[1:])]
        per_call = statistics.median(gaps) if gaps else 0.0
        if per_call <= 0:
            return None
        stolen = sum(gap - per_call for gap in gaps if gap > OUTLIER * per_call)
        return cls(per_call, stolen, starts_us[-1] - starts_us[0])

    @property
    def disturbed(self) -> bool:
        return self.stolen_us > STOLEN_FRAC * self.span_us


def ran_clear(rhythm: Rhythm | None) -> bool:
    """A batch no other process held up (or one whose events could not be read: the CPU's)."""
    return not (rhythm and rhythm.disturbed)


def starts_us(pending: list) -> list[float]:
    """Each call's start event read against the first's (µs): `pending` as runner/timed_batch.launch_batch
    returns it, one list of (start, end) events per call."""
    first = pending[0][0][0] if pending and pending[0] else None
    return [first.elapsed_time(pairs[0][0]) * 1000.0 for pairs in pending] if first is not None else []


def rhythm_us(rhythms: list[Rhythm | None]) -> float | None:
    """A loop's per-call figure: the median of its undisturbed batches' rhythms (of all, where none is)."""
    read = [r for r in rhythms if r is not None]
    kept = [r.per_call_us for r in read if ran_clear(r)] or [r.per_call_us for r in read]
    return statistics.median(kept) if kept else None


def disturbance(rhythms: list[Rhythm | None], sizes: list[int], what: str) -> str | None:
    """A message where some batch size (`sizes`, each batch's) had no batch that was not held up, else None."""
    clean = {n for r, n in zip(rhythms, sizes) if ran_clear(r)}
    held = [r for r in rhythms if not ran_clear(r)]
    if not held or clean >= set(sizes):
        return None
    stolen, span = sum(r.stolen_us for r in held), sum(r.span_us for r in held)
    return (f"{what} waited {stolen / 1000:.1f} ms of {span / 1000:.1f} ms between its calls in {len(held)} of "
            f"{len(rhythms)} batches (another process's work on the GPU, or its host held up)")
