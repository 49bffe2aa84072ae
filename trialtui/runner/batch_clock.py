"""The checker's clock over the candidate's timed batches: per call, from each batch's wall time and size.

Only the checker's own measurements enter it (its clock around each request until the outputs are in its
memory), never the candidate's samples; runner/timing.py compares the two, runner/timed_batch.py runs the
same loop in the checker's process to learn what the harness costs.
"""

from __future__ import annotations

import statistics

# A batch's own cost besides its calls (the request and its reply, the host's lead on the GPU), at most
# this as the checker's clock reads it: a loop that made its small batches slower on purpose would tilt
# the slope down, and can tilt it at most this much over the large batch's calls.
FIXED_CAP_US = 2000.0


def wall_per_call(walls: list[tuple[float, int, list[float]]]) -> float | None:
    """Median wall time per call of the candidate's batches, as the checker's clock saw them."""
    per_call = [wall / n for wall, n, _ in walls if n]
    return statistics.median(per_call) if per_call else None


def checker_per_call_us(walls: list[tuple[float, int, list[float]]]) -> float | None:
    """The checker's own clock per timed call: the slope of batch wall time over batch size.

    A batch's wall time holds a fixed cost (the request's round trip, the final sync) and n calls;
    two sizes separate them. Each size's fastest batch: every batch does the whole work of its calls (each
    output is judged), so nothing makes one shorter than that work, and what lengthens one (the host
    descheduled, a GC pause, another program's kernel) only adds. The candidate's process knows each
    batch's size and could hold its small batches back to flatten the slope: the large batch's calls
    less FIXED_CAP_US bound it from below. With one size only, the whole wall time over n (an upper bound).
    """
    by_size: dict[int, list[float]] = {}
    for wall, n, _ in walls:
        if n:
            by_size.setdefault(n, []).append(wall)
    if len(by_size) < 2:
        return wall_per_call(walls)
    (small, ws), (large, wl) = sorted(by_size.items())[0], sorted(by_size.items())[-1]
    slope = (min(wl) - min(ws)) / (large - small)
    if slope <= 0:
        return wall_per_call(walls)
    return max(slope, (min(wl) - FIXED_CAP_US) / large)  # small batches held back cannot tilt it further
