"""A timing's spread as its median's relative standard error, read from two percentiles.

The headline is a median, so its noise is the median's: a mean's standard error grows tenfold with one
slow outlier (a preempted launch, a clock ramp) and turns a real 2 % regression into noise. RMSNorm v4
on the H200 (2026-12-02): one sample of ~6 ms among 160 near 218 µs gave a mean-based rse of 9.2 %, so
decide called a 2.3 % regression a tie; its p20-p80 band was 0.8 % wide and says 0.05 %.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

P20_P80_SIGMAS = 1.6832  # the p20-p80 band of a normal distribution, in standard deviations
IQR_SIGMAS = 1.3490  # the p25-p75 band, likewise
MEDIAN_EFFICIENCY = 1.2533  # the median's standard error over the mean's for a normal distribution: sqrt(pi / 2)


def median_rse(low: float, high: float, sigmas: float, median: float, n: int) -> float | None:
    """The median's relative standard error from a band of `sigmas` standard deviations; None without
    two samples or a positive median."""
    if n < 2 or median <= 0 or high < low:
        return None
    return MEDIAN_EFFICIENCY * (high - low) / sigmas / math.sqrt(n) / median


def timing_rse(timing: Mapping[str, Any]) -> float | None:
    """A stored timing's noise: from its p20, p80 and n where they span something, whatever its `rse` says
    (results written before 2026-12-02 hold a mean's), else its `rse`; None, or 0 for no spread measured."""
    p20, p80, median, n = (timing.get(k) for k in ("p20_us", "p80_us", "median_us", "n"))
    if all(isinstance(v, (int, float)) for v in (p20, p80, median, n)):
        found = median_rse(p20, p80, P20_P80_SIGMAS, median, int(n))
        if found:  # a band of zero width (a few identical samples) measures no spread: the stored figure
            return found
    rse = timing.get("rse")
    return rse if isinstance(rse, (int, float)) else None
