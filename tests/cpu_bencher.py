"""The timed loop's bencher on the CPU: runner/timing.Bencher's `time_round` without CUDA events, the
calls run at once, each event pair a fixed 0.1 ms (tests of what the loop does, not of its time)."""

from __future__ import annotations


class FakeEvent:
    def __init__(self, **kwargs):
        pass

    def record(self):
        pass

    def elapsed_time(self, end):
        return 0.1


class FakeBencher:
    def time_round(self, calls, outputs=None, flush=True):
        pairs = []
        for fn in calls:
            out = fn()
            if outputs is not None:
                outputs.append(out)
            pairs.append((FakeEvent(), FakeEvent()))
        return pairs
