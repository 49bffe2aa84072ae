"""The checker's clock around the candidate's batches: a loop that skips the harness's own work is named,
a batch stalled now and then does not move it, small batches held back on purpose cannot tilt it, and
the GPU wait the checker's own measurements use reads the global timer (issues 33, 34)."""

from __future__ import annotations

import pytest

from trialtui.runner import batch_clock, timing

OVERHEAD_US = 100.0  # the checker's loop around a call that does nothing: new inputs, a flush, the output's copy


def walls(per_call_us: float, fixed_us: float = 300.0) -> list[tuple[float, int, list[float]]]:
    return [(fixed_us + per_call_us * n, n, []) for n in (10, 40) * 4]


def test_an_honest_loop_is_not_called_altered_however_short_its_kernel():
    for call_us in (0.0, 2.0, 130.0, 5000.0):
        assert timing.short_of_harness(walls(OVERHEAD_US + call_us), OVERHEAD_US) is None
    assert timing.short_of_harness(walls(OVERHEAD_US - 15.0), OVERHEAD_US) is None  # the clock's scatter


def test_a_loop_that_skips_the_harness_work_is_named_whatever_its_events_say():
    # a do-nothing call in a loop that dropped its flush (30 µs of the harness's 100): under the checker's own loop
    message = timing.short_of_harness(walls(OVERHEAD_US - 30.0 + 2.0), OVERHEAD_US)
    assert message and "altered" in message and "72 µs per timed call" in message


def test_small_batches_held_back_cannot_tilt_the_clock_below_the_large_ones_less_the_cap():
    honest = walls(OVERHEAD_US + 200.0)
    assert batch_clock.checker_per_call_us(honest) == pytest.approx(OVERHEAD_US + 200.0)
    # the candidate's process knows each batch's size: it holds every small batch back 6 ms (slope 100 µs)
    tilted = [(wall + (6_000.0 if n == 10 else 0.0), n, s) for wall, n, s in honest]
    per_call = batch_clock.checker_per_call_us(tilted)
    assert per_call >= OVERHEAD_US + 200.0 - batch_clock.FIXED_CAP_US / 40  # not (300 - 400 =) below zero
    assert per_call == pytest.approx((300.0 + 300.0 * 40 - batch_clock.FIXED_CAP_US) / 40)
    claimed = timing.summarize([50.0] * 40)  # what such a loop would claim
    assert timing.confirmed_stats(claimed, tilted, OVERHEAD_US)["confirmed"] is False


def test_the_wait_kernel_compiles_for_hopper_and_reads_the_global_timer(monkeypatch):
    triton = pytest.importorskip("triton")
    from triton.backends.compiler import GPUTarget

    from trialtui.runner import gpu_wait

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)  # a compiled kernel, whatever an earlier test left set
    kernel = gpu_wait._compile.__wrapped__()
    source = triton.compiler.ASTSource(fn=kernel, signature={"out_ptr": "*i64", "ns": "i64"}, constexprs={})
    ptx = triton.compile(source, target=GPUTarget("cuda", 90, 32)).asm["ptx"]
    assert ptx.count("%globaltimer") >= 2  # once at the start, again in the loop
    assert "bra" in ptx  # the loop: it waits until the timer has moved `ns`


def test_the_checkers_clock_is_not_moved_by_a_stall_in_some_of_its_batches():
    steady = walls(OVERHEAD_US + 132.0)
    assert batch_clock.checker_per_call_us(steady) == pytest.approx(OVERHEAD_US + 132.0)
    stalled = [(wall + (3000.0 if i in (1, 3, 4) else 0.0), n, s) for i, (wall, n, s) in enumerate(steady)]
    assert batch_clock.checker_per_call_us(stalled) == pytest.approx(OVERHEAD_US + 132.0)  # three of eight batches held up
    claimed = timing.summarize([132.0] * 40)
    assert timing.confirmed_stats(claimed, stalled, OVERHEAD_US)["confirmed"] is True
    # a claim far under what every batch took is not confirmed, however the stalls fall
    assert timing.confirmed_stats(timing.summarize([60.0] * 40), stalled, OVERHEAD_US)["confirmed"] is False


def test_a_disturbed_timing_is_seen_in_the_checkers_own_baselines_and_flush_never_in_the_candidates():
    steady = [100.0 + (i % 5) * 0.3 for i in range(80)]
    assert timing.disturbance({"candidate": steady, "eager": steady}, 25.0, 25.4) is None
    # another program's kernels time-sliced in during the third quarter of the loop: eager 30 % slower there
    shared = steady[:40] + [130.0] * 20 + steady[60:]
    message = timing.disturbance({"candidate": steady, "eager": shared}, 25.0, 25.2)
    assert message and "eager drifted 29%" in message and "(their medians 100.6, 100.6, 130.0, 100.6 µs)" in message
    assert timing.disturbance({"candidate": shared, "eager": steady}, 25.0, 25.2) is None  # the candidate's samples are its claims
    assert "L2 flush took 25.0 µs before the loop and 40.0 µs after" in timing.disturbance({"eager": steady}, 25.0, 40.0)
    assert timing.drift(steady[:8]) == 0.0  # too few samples to split
