"""Events far below the checker's clock (issue 33, honest_eager): disqualifying only where they are the headline.

A call that syncs the host before its launch cannot be captured, so it is timed eagerly, and its sync keeps the
harness's own work from overlapping its call: on the H200 (h200-2026-12-05a) the honest GEMM doing so read
398.3 µs a call on the clock against its events' 86.7 and the harness's 181.5, and `timing-mismatch` kept it from
ever being best. Where the events are not confirmed the headline is the clock's figure, and no claim under the
band's edge can make it lower than a claim at the edge would have: disqualifying it protected no number."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trialtui.core.flags import DISQUALIFYING, KINDS
from trialtui.runner import timing

RUN = Path(__file__).resolve().parent / "fixtures" / "gpu" / "h200-2026-12-05a" / "exploits.json"


def walls(per_call_us: float, fixed_us: float = 1200.0) -> list[tuple[float, int, list[float]]]:
    return [(fixed_us + per_call_us * n, n, []) for n in (25, 100) * 4]


def figures(claim_us: float, per_call_us: float, harness_us: float, band: timing.Band) -> dict:
    cand = timing.confirmed_stats(timing.summarize([claim_us] * 40), walls(per_call_us), harness_us, band)
    return {**cand, "checker_us_per_call": timing.checker_per_call_us(walls(per_call_us))}


@pytest.mark.parametrize("band", [timing.WIDE, timing.NARROW])
@pytest.mark.parametrize("seen_us", [11.2, 86.7, 216.9, 900.0])
def test_no_claim_under_the_edge_makes_the_headline_lower_than_a_claim_at_it(band, seen_us):
    harness = 181.5
    at_edge = figures(band.edge(seen_us) * 1.0001, harness + seen_us, harness, band)
    assert at_edge["confirmed"] is True
    for fraction in (0.999, 0.5, 0.1, 0.0):
        below = figures(band.edge(seen_us) * fraction, harness + seen_us, harness, band)
        assert below["confirmed"] is False and below["median_us"] >= at_edge["median_us"]


def test_an_unconfirmed_claim_far_under_the_clock_is_said_and_does_not_disqualify():
    cand = figures(86.7, 181.5 + 216.9, 181.5, timing.WIDE)  # honest_eager's figures on the H200
    found = timing.mismatch_flag(cand, 181.5)
    assert found["code"] == "events-unconfirmed" and "events-unconfirmed" in KINDS
    assert "events-unconfirmed" not in DISQUALIFYING
    assert "398.4 µs per timed call" in found["message"] and "86.7 µs" in found["message"] and "216.9 µs a call" in found["message"]
    assert "host sync" in found["message"] and "CUDA graph" in found["message"]


def test_a_confirmed_claim_the_clock_contradicts_still_disqualifies():
    # confirmed on the landing clock, while its batches' replies took far longer a call than the events say
    cand = {"median_us": 11.1, "confirmed": True, "checker_us_per_call": 600.0}
    found = timing.mismatch_flag(cand, 181.5)
    assert found["code"] == "timing-mismatch" and "timing-mismatch" in DISQUALIFYING


def test_events_within_the_allowance_raise_nothing():
    cand = figures(200.0, 181.5 + 216.9, 181.5, timing.WIDE)
    assert cand["confirmed"] is True and timing.mismatch_flag(cand, 181.5) is None
    assert timing.mismatch_flag({**cand, "checker_us_per_call": None}, 181.5) is None


@pytest.mark.parametrize("candidate", ["honest_eager.py", "tilts_eagerly.py", "forges_the_clock.py"])
def test_the_h200_rows_named_mismatch_are_said_now_and_keep_the_clocks_figure(candidate):
    """05a's rows under the rule as it is now: each had `timing-mismatch` on an unconfirmed claim; now each is
    told, its headline the clock's, and none beats its problem's honest kernel."""
    rows = json.loads(RUN.read_text())["rows"]
    row = next(r for r in rows if r["candidate"] == candidate)
    honest = next(r for r in rows if r["candidate"] == "honest.py" and r["problem"] == row["problem"])
    cand = {"median_us": row["median_us"], "confirmed": row["confirmed"], "claimed": {"median_us": row["events_us"]},
            "checker_us_per_call": row["checker_us_per_call"]}
    assert "timing-mismatch" in row["flags"] and row["confirmed"] is False
    assert timing.mismatch_flag(cand, row["overhead_us"])["code"] == "events-unconfirmed"
    assert row["median_us"] > honest["median_us"]
