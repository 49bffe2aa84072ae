"""The GPU wait ahead of every timed call: a fixed wall time by the GPU's global timer, and a candidate's
loop that skips it is caught by the checker's clock (issues 33, 34)."""

from __future__ import annotations

import pytest

from trialtui.runner import timing

WAIT_US = 1000.0
OVERHEAD_US = 1100.0  # the checker's loop around a call that does nothing: the wait, a flush, new inputs


def walls(per_call_us: float, fixed_us: float = 300.0) -> list[tuple[float, int, list[float]]]:
    return [(fixed_us + per_call_us * n, n, []) for n in (10, 40) * 4]


def test_an_honest_loop_is_not_called_altered_however_short_its_kernel():
    for call_us in (0.0, 2.0, 130.0, 5000.0):
        assert timing.skipped_wait(walls(OVERHEAD_US + call_us), OVERHEAD_US, WAIT_US) is None
    assert timing.skipped_wait(walls(OVERHEAD_US - 200.0), OVERHEAD_US, WAIT_US) is None  # noise, not a skipped wait


def test_a_loop_without_the_wait_is_named_whatever_its_events_say():
    # the call (204 µs of GEMM) and the host's launches, but no wait: far under the checker's own loop
    message = timing.skipped_wait(walls(OVERHEAD_US - WAIT_US + 204.0 + 40.0), OVERHEAD_US, WAIT_US)
    assert message and "altered" in message and "344 µs per timed call" in message


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
    assert timing.checker_per_call_us(steady) == pytest.approx(OVERHEAD_US + 132.0)
    stalled = [(wall + (3000.0 if i in (1, 3, 4) else 0.0), n, s) for i, (wall, n, s) in enumerate(steady)]
    assert timing.checker_per_call_us(stalled) == pytest.approx(OVERHEAD_US + 132.0)  # three of eight batches held up
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
    assert message and "eager drifted 29%" in message
    assert timing.disturbance({"candidate": shared, "eager": steady}, 25.0, 25.2) is None  # the candidate's samples are its claims
    assert "L2 flush took 25.0 µs before the loop and 40.0 µs after" in timing.disturbance({"eager": steady}, 25.0, 40.0)
    assert timing.drift(steady[:8]) == 0.0  # too few samples to split
