"""The GPU between the checker's calls (issue 33): the candidate's process is alive while the checker measures
the harness in loops of its own, and work it queued for the GPU is time-sliced into them. The checker's
figures must not move with it: each batch is read call to call from its own GPU events too
(runner/loop_rhythm.py), a batch held up is not the figure where another of its size was not, and a loop held
up throughout is a disturbance (timed again, then `noisy`), never a dearer harness taken off the candidate's
clock."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from trialtui.runner import timed_batch, timed_phase
from trialtui.runner.loop_rhythm import Rhythm, starts_us
from trialtui.runner.timed_batch import CheckerLoop, Yardstick

CALL_US = 68.0  # the reference's loop per call on the H200's short cases (harness and call)
SLICE_US = 2000.0  # another process's time slice: a millisecond or more
FIXED_US = 150.0  # a batch's own start in the checker's process (its first launch)


def starts(n: int, held_at: tuple[int, ...] = ()) -> list[float]:
    """Each call's start (µs from the first) of a steady loop, with a slice of another process's before `held_at`."""
    out, t = [], 0.0
    for i in range(n):
        t += SLICE_US if i in held_at else 0.0
        out.append(t)
        t += CALL_US * (1 + 0.01 * (i % 3))  # a percent of jitter
    return out


def test_a_steady_loop_reads_its_call_and_a_time_slice_in_it_is_told_apart():
    steady = Rhythm.of(starts(100))
    assert steady.per_call_us == pytest.approx(CALL_US * 1.01) and steady.stolen_us == 0 and not steady.disturbed
    held = Rhythm.of(starts(100, held_at=(40,)))
    assert held.per_call_us == pytest.approx(steady.per_call_us)  # the median: one slice does not move it
    assert held.stolen_us == pytest.approx(SLICE_US, rel=0.05) and held.disturbed
    assert Rhythm.of([0.0]) is None and Rhythm.of([5.0, 5.0, 5.0]) is None  # nothing to read (the CPU's events)


class StampedEvent:
    """An event holding the GPU time it was recorded at (µs)."""

    def __init__(self, at_us: float) -> None:
        self.at_us = at_us

    def elapsed_time(self, later: StampedEvent) -> float:
        return (later.at_us - self.at_us) / 1000.0


def test_the_starts_are_read_from_each_calls_start_event():
    times = starts(25, held_at=(10,))
    pending = [[(StampedEvent(t), StampedEvent(t + 9.3))] for t in times]  # as launch_batch returns them
    assert starts_us(pending) == pytest.approx(times)
    assert starts_us([]) == []


def loop_of(batches: list[tuple[int, tuple[int, ...]]]) -> CheckerLoop:
    """A CheckerLoop after batches of (n, calls held up by a slice), each clocked on the host from its start
    (FIXED_US, then its calls and slices) to its last landing and its end."""
    loop = CheckerLoop.__new__(CheckerLoop)
    loop.walls, loop.landings, loop.rhythms, loop.captured = [], [], [], object()
    loop.events = [9.3] * 40
    for n, held_at in batches:
        times = starts(n, held_at)
        span = FIXED_US + times[-1] + CALL_US
        loop.walls.append((span + 400.0, n, []))
        loop.landings.append((span, n))
        loop.rhythms.append(Rhythm.of(times))
    return loop


def yardstick_of(loop: CheckerLoop) -> Yardstick:
    yardstick = Yardstick.__new__(Yardstick)
    yardstick.loop, yardstick.usable, yardstick.pair_us = loop, True, 1.3
    return yardstick


def test_the_harness_beside_the_candidate_does_not_grow_with_another_process_s_work_in_the_checker_s_loop():
    """Work of the candidate's process on the GPU sliced into the reference's loop beside its batches: each size's
    fastest batch is read, so a batch held up does not move the harness where another of its size was not held
    up; where every large batch was, the harness would read a slice over its calls dearer (20 µs a call over
    100), and the attempt is disturbed instead: timed again, then `noisy`."""
    quiet = yardstick_of(loop_of([(25, ()), (100, ())] * 4))
    some = yardstick_of(loop_of([(25, ()), (100, (30,))] * 3 + [(25, ()), (100, ())]))
    assert some.harness_us() == pytest.approx(quiet.harness_us())
    assert some.landing_harness_us() == pytest.approx(quiet.landing_harness_us())
    assert quiet.disturbance() is None and some.disturbance() is None
    every = yardstick_of(loop_of([(25, ()), (100, (30,))] * 2 + [(25, ()), (100, (20, 70))] * 2))
    assert every.landing_harness_us() > quiet.landing_harness_us() + 15.0
    assert every.disturbance() and "4 of 8 batches" in every.disturbance()


def test_the_reference_loop_s_rhythm_is_kept_beside_its_landing():
    """Its batches start on this process's first launch, the candidate's on the go: the landing per call holds
    that start once a batch, the rhythm (the GPU's interval between calls) does not; both are in the result."""
    figures = yardstick_of(loop_of([(25, ()), (100, ())] * 4)).figures()
    assert figures["reference_rhythm_us"] == pytest.approx(CALL_US * 1.01)
    assert figures["reference_landing_us"] - figures["reference_rhythm_us"] > FIXED_US / 100 * 0.9


class HeldLoop:
    """harness_overhead_us's loop: its first `held` batches held up by another process."""

    held = 0
    captured = None  # nothing captured: no landing figure

    def __init__(self, *args, **kwargs) -> None:
        self.walls, self.rhythms = [], []

    def batch(self, n: int) -> None:
        times = starts(n, tuple(range(15, n, 30)) if len(self.walls) < HeldLoop.held else ())  # a slice every 2 ms
        self.walls.append((FIXED_US + times[-1] + CALL_US, n, []))
        self.rhythms.append(Rhythm.of(times))

    per_call_us, clean, disturbance = CheckerLoop.per_call_us, CheckerLoop.clean, CheckerLoop.disturbance

    def close(self) -> None:
        pass


@pytest.mark.parametrize("held", [0, 10, 40])
def test_the_harness_measured_around_no_call_reads_batches_no_other_process_held_up(monkeypatch, held):
    monkeypatch.setattr(timed_batch, "CheckerLoop", HeldLoop)
    HeldLoop.held = held
    sets = SimpleNamespace(sets=[[0]])
    figure, held_up, landing_us = timed_batch.harness_overhead_us(sets, lambda inputs: 0, None, None, (25, 100), rounds=5)
    assert landing_us is None  # its loop captured nothing that copies after its landings
    if held < 40:  # held up for its first five rounds: batches again until two of each size are clean
        assert figure == pytest.approx(CALL_US * 1.01, rel=0.01) and held_up is None
    else:  # held up throughout: as many again at most, and said
        assert figure > CALL_US * 1.01 + 15.0 and "20 of 20 batches" in held_up


@pytest.mark.parametrize("held", ["around no call", "beside it"])
def test_a_checker_loop_held_up_is_timed_again_then_flagged_noisy(monkeypatch, held):
    """The harness around no call is measured again with the loop, the reference's loop beside runs again with
    it; held up both times, the result is `noisy`, whatever the candidate's own samples say."""
    measured = []

    class Timed:
        landings, tails, unlanded = [], [], 0

        def overhead_us(self, bencher, batches, graphed):
            measured.append(batches)
            return 61.0, (f"the checker's loop {held} waited 12.0 ms" if held == "around no call" else None), None

    bencher = SimpleNamespace(flush_cost_us=lambda: 23.0, empty_pair_us=lambda: 1.3, graph_pair_us=lambda: 1.2)
    phase = timed_phase.TimedPhase(spec=None, reference=None, link=None, deadline=None, facts=None,
                                   progress=lambda **kw: None, splits=SimpleNamespace(mark=lambda *a: None),
                                   device="cuda", bencher=bencher, graphed=False)
    if held == "beside it":
        phase.yardstick = SimpleNamespace(restart=lambda: None, disturbance=lambda: f"the reference's loop {held} waited")
    monkeypatch.setattr(timed_phase.TimedPhase, "_settle_band", lambda self, *a: None)
    monkeypatch.setattr("trialtui.runner.timing.time_alternating",
                        lambda *a, **kw: ({"candidate": [10.0] * 40, "eager": [20.0] * 40}, [(3000.0, 25, [])]))
    phase._loop(Timed(), SimpleNamespace(batches=(25, 100)), {})
    assert len(measured) == (2 if held == "around no call" else 1)
    assert [f["code"] for f in phase.flags] == ["noisy"] and f"{held} waited" in phase.flags[0]["message"]


def test_a_slow_flush_read_before_the_first_loop_is_not_noise_twice(monkeypatch):
    """The L2 flush's cost read before the loop and after: one slow first read (28.8 µs against 22.9, the honest
    short softmax in h200-2026-12-05c) times the loop again, and the second loop is judged against its own read
    before it, not the first's: one slow read is not `noisy` twice."""
    reads = iter([28.8, 22.9, 22.9, 22.9])

    class Timed:
        landings, tails, unlanded = [], [], 0

        def overhead_us(self, bencher, batches, graphed):
            return 61.0, None, None

    bencher = SimpleNamespace(flush_cost_us=lambda: next(reads), empty_pair_us=lambda: 1.3, graph_pair_us=lambda: 1.2)
    phase = timed_phase.TimedPhase(spec=None, reference=None, link=None, deadline=None, facts=None,
                                   progress=lambda **kw: None, splits=SimpleNamespace(mark=lambda *a: None),
                                   device="cuda", bencher=bencher, graphed=False)
    monkeypatch.setattr(timed_phase.TimedPhase, "_settle_band", lambda self, *a: None)
    monkeypatch.setattr("trialtui.runner.timing.time_alternating",
                        lambda *a, **kw: ({"candidate": [10.0] * 40, "eager": [20.0] * 40}, [(3000.0, 25, [])]))
    _, _, _, flush_us = phase._loop(Timed(), SimpleNamespace(batches=(25, 100)), {})
    assert phase.flags == [] and flush_us == 22.9



@pytest.mark.parametrize("marks_ms, cost_us", [((0.0, 1.078, 1.618, 2.124), 25.3),  # the ramp, then steady
                                               ((0.0, 1.078, 2.148, 3.223), 53.5)])  # slow throughout: still seen
def test_the_flush_cost_is_the_fastest_groups_past_the_clocks_ramp(monkeypatch, marks_ms, cost_us):
    """An H100's honest short GEMM was `noisy` twice (tests/fixtures/gpu/h100-2026-12-05d): its L2 flush read
    53.9 µs a call before the loop, the GPU's clocks down after the host's preparation, and 25.3 µs after it.
    The flush's cost is the fastest of groups of flushes back to back, per flush: a ramp reads as the steady
    cost, and a flush slowed throughout (another program's work) as slow."""
    import torch

    from trialtui.runner.timing import Bencher, disturbance

    marks = iter(marks_ms)

    class Event:
        def __init__(self, enable_timing):
            self.at = None

        def record(self):
            self.at = next(marks)

        def synchronize(self):
            pass

        def elapsed_time(self, end):
            return end.at - self.at

    monkeypatch.setattr(torch.cuda, "Event", Event)
    bencher = Bencher(flush=None, sink=None)
    monkeypatch.setattr(bencher, "flush_l2", lambda: None)
    cost = bencher.flush_cost_us()
    assert cost == pytest.approx(cost_us)
    assert (disturbance({}, cost, 25.3) is None) is (cost_us == 25.3)
