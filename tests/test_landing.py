"""The landing clock (runner/landing.py): the checker's time from a batch's request to its last output's hash
landing in host memory it watches. What it may count: a landing of the hash the checker computes from the
output it judges, seen no earlier than it was written. What it may not: a value written early that is not
that hash, or a landing it did not see."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

torch = pytest.importorskip("torch")

from trialtui.runner import landing  # noqa: E402
from trialtui.runner.candidate_requests import CandidateFailed  # noqa: E402

WRITER = textwrap.dedent("""
    import sys, time, mmap
    path, first, second, delay = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    with open(path, "r+b") as fh:
        words = memoryview(mmap.mmap(fh.fileno(), 0)).cast("Q")
    print("ready", flush=True)
    time.sleep(delay)
    if first:
        words[3] = first  # a value ahead of its output: not the hash
        time.sleep(delay)
    words[3] = second
""")


def write_later(pad, second, delay, first=0):
    child = subprocess.Popen([sys.executable, "-c", WRITER, pad.path, str(first), str(second), str(delay)],
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    return child


def test_a_hash_landing_from_another_process_is_seen_no_earlier_than_it_was_written():
    pad = landing.Pad(4)
    try:
        pad.arm(4)
        since = time.perf_counter_ns()
        child = write_later(pad, 0x1234_5678_9ABC_DEF0, 0.2)
        pad.watch(lambda: False, time.monotonic() + 30)
        child.wait(10)
        assert pad.landed_us(since, 0x1234_5678_9ABC_DEF0) >= 0.2e6  # the writer slept 0.2 s before it wrote
        assert pad.landed_us(since, 0x1234_5678_9ABC_DEF1) is None  # not the hash the checker computed: no landing
    finally:
        pad.close()


def test_a_value_written_ahead_of_the_output_is_no_landing_even_once_the_hash_follows():
    """The watch stops at the first change of the armed slot: a candidate that writes anything early to stop
    it there gets no landing at all, whatever it writes later."""
    pad = landing.Pad(4)
    try:
        pad.arm(4)
        since = time.perf_counter_ns()
        child = write_later(pad, 77, 0.05, first=76)
        pad.watch(lambda: False, time.monotonic() + 30)
        child.wait(10)
        assert pad.landed_us(since, 77) is None
    finally:
        pad.close()


def test_the_watch_ends_when_the_candidate_answers_without_landing_or_the_deadline_passes():
    pad = landing.Pad(2)
    try:
        pad.arm(2)
        started = time.monotonic()
        pad.watch(lambda: True, started + 30)
        assert pad.seen is None and time.monotonic() - started < 1
        pad.watch(lambda: False, time.monotonic() + 0.05)
        assert pad.seen is None
    finally:
        pad.close()


def test_the_armed_slot_holds_a_value_drawn_per_batch():
    pad = landing.Pad(8)
    try:
        drawn = set()
        for _ in range(5):
            pad.arm(8)
            drawn.add(pad.words[7])
        assert len(drawn) == 5
    finally:
        pad.close()


def test_the_loop_lands_each_calls_hash_in_the_slot_the_checker_reads_as_one_word():
    pad = landing.Pad(3)
    slots = landing.slots_of(pad.wire(), "cpu")
    try:
        hashes = torch.tensor([[1, 2], [-3, 4], [5, -6]], dtype=torch.int32)
        for call in range(3):
            landing.land(slots[0], hashes, call)
        assert [pad.words[i] for i in range(3)] == [landing.as_word(hashes[i]) for i in range(3)]
    finally:
        landing.release(slots)
        pad.close()


def test_a_pad_that_cannot_be_mapped_is_none_not_a_crash(tmp_path):
    assert landing.slots_of({"path": str(tmp_path / "gone"), "slots": 4}, "cpu") is None
    assert landing.slots_of({"slots": 4}, "cpu") is None
    small = tmp_path / "small"
    small.write_bytes(b"\0" * 8)
    assert landing.slots_of({"path": str(small), "slots": 4}, "cpu") is None


def test_the_clock_per_call_is_the_largest_batches_fastest_landing():
    assert landing.landing_per_call_us([(900.0, 25), (6000.0, 100), (5000.0, 100), (9000.0, 100)]) == 50.0
    assert landing.landing_per_call_us([]) is None


def test_the_checker_counts_a_landing_only_where_the_candidates_loop_landed_its_last_hash(monkeypatch):
    """Through candidate.Session.op_time and timed_phase.TimedCalls (tests/test_fresh_inputs.py's harness):
    every honest batch lands; a loop that lands a value of its own choosing in the last slot lands nothing,
    and nothing else of the batch changes (its outputs are judged as before)."""
    from tests.test_fresh_inputs import honest, timed

    session = timed(monkeypatch, honest, n=10, batches=3)
    assert [n for _, n in session.timed.landings] == [10, 10, 10] and session.timed.unlanded == 0

    real = landing.land

    def early(slots, hashes, call):  # lands its guess for the last call first, then the real hashes
        slots[9].copy_(torch.tensor([7, 7], dtype=torch.int32))
        real(slots, hashes, call) if call < 9 else None

    monkeypatch.setattr("trialtui.runner.timed_batch.land", early)
    session = timed(monkeypatch, honest, n=10, batches=2)
    assert session.timed.landings == [] and session.timed.unlanded == 2
    monkeypatch.setattr("trialtui.runner.timed_batch.land", real)
    session = timed(monkeypatch, honest, n=10, batches=2, land=False)  # a loop that never lands
    assert session.timed.landings == [] and session.timed.unlanded == 2
    with pytest.raises(CandidateFailed):  # and a wrong output is still a wrong output
        timed(monkeypatch, lambda x: honest(x) + 1, n=10, batches=1)
