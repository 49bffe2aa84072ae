"""The landing clock (runner/landing.py): the checker's time from a batch's request to its last output's hash
landing in host memory it watches. What it may count: a landing of the hash the checker computes from the
output it judges, seen no earlier than it was written. What it may not: a value written early that is not
that hash, or a landing it did not see."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
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
            drawn.add(pad.word(7))
        assert len(drawn) == 5
    finally:
        pad.close()


def test_the_loop_lands_each_calls_hash_in_the_slot_the_checker_reads_as_one_word():
    pad = landing.Pad(3)
    view = landing.slots_of(pad.wire(), "cpu")
    try:
        hashes = torch.tensor([[1, 2], [-3, 4], [5, -6]], dtype=torch.int32)
        for call in range(3):
            landing.land(view.slots, hashes, call)
        assert [pad.word(i) for i in range(3)] == [landing.as_word(hashes[i]) for i in range(3)]
        pad.arm(3)
        started = pad.go(2026)
        assert int(view.go[0]) == 2026 and started <= time.perf_counter_ns()  # the go word, as the gate reads it
        pad.arm(3)
        assert int(view.go[0]) == 0  # shut again for the next batch
    finally:
        landing.release(view)
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


class ThreadedLink:
    """The checker's link into a candidate.Session in this process, each op in a thread of its own so that
    `meanwhile` runs while it does, as it does beside a real process."""

    def __init__(self, session):
        self.session = session

    def hold(self):  # the candidate runs in this process: nothing to stop
        pass

    def request(self, op, payload=None, *, timeout_s, into="cpu", max_bytes=None, meanwhile=None, **msg):
        box = {}

        def run():
            try:
                box["reply"] = getattr(self.session, f"op_{op}")(msg, payload)
            except Exception as exc:  # noqa: BLE001 - raised where the checker would see it
                box["error"] = exc

        worker = threading.Thread(target=run)
        worker.start()
        if meanwhile is not None:
            meanwhile(lambda: not worker.is_alive(), time.monotonic() + timeout_s)
        worker.join()
        if "error" in box:
            raise CandidateFailed(str(box["error"]))
        reply, out = box["reply"]
        return reply, out.clone() if isinstance(out, torch.Tensor) else out


class HostGate:
    """runner/go_gate.Gate on the CPU: the loop here is synchronous, so its wait is the host's."""

    def __init__(self, view, ignores_go=False, writes_go=None):
        self.view, self.ignores_go, self.writes_go = view, ignores_go, writes_go

    def wait(self, seed):
        if self.writes_go is not None:  # a candidate that opens the gate itself, with a seed of its choosing
            self.view.go[0] = self.writes_go
        deadline = time.monotonic() + 10
        while not self.ignores_go and int(self.view.go[0]) == 0 and time.monotonic() < deadline:
            time.sleep(1e-4)
        seed.fill_(int(self.view.go[0]))


def gated(monkeypatch, forward, n=8, batches=2, link=None, **gate):
    """tests/test_fresh_inputs.timed with every batch queued behind a gate and started on the checker's go."""
    from tests.test_fresh_inputs import checker_and_candidate

    from trialtui.runner import timed_phase

    monkeypatch.setattr(timed_phase, "GO_STALL_S", 0.05)  # the CPU's gate waits on the host: the go is written unasked
    session, calls = checker_and_candidate(monkeypatch, forward, n, link=link or ThreadedLink)
    calls.gated = True
    session.gate = HostGate(session.landing, **gate)
    for b in range(batches):
        calls.batch(b * n, n)
    return calls


def test_a_gated_batch_takes_its_seed_from_the_go_and_its_clock_from_then_to_the_landing(monkeypatch):
    from tests.test_fresh_inputs import honest

    calls = gated(monkeypatch, honest)
    assert [n for _, n in calls.landings] == [8, 8] and calls.unlanded == 0
    assert all(0 <= us < 5e6 for us, _ in calls.landings)
    assert [n for _, n in calls.tails] == [8, 8] and all(0 <= us < 5e6 for us, _ in calls.tails)


def test_work_a_loop_does_after_its_last_landing_shows_in_the_tail_before_its_reply(monkeypatch):
    """What a rewritten loop moves past its landings is off the landing clock but not off the checker's: the
    reply waits for it, and each batch's tail (its last landing to its reply) is kept in the result's
    `landing.tails`. Here each batch has landed while it was queued, and the checker's watch sees that before
    the process does 50 ms of work and answers (a link that watches first: no thread's timing decides it)."""
    import time as clock

    from tests.test_fresh_inputs import honest

    from trialtui.runner import timed_batch

    real = timed_batch.finish_batch

    def late(refresher, ring):  # 50 ms of work done once the batch's last hash has landed
        clock.sleep(0.05)
        real(refresher, ring)

    monkeypatch.setattr(timed_batch, "finish_batch", late)
    calls = gated(monkeypatch, honest, link=WatchesFirst)
    assert calls.unlanded == 0 and len(calls.tails) == 2 and all(us >= 50_000 for us, _ in calls.tails)


class WatchesFirst(ThreadedLink):
    """ThreadedLink, but a queued batch's landing is looked for before its answer is asked for."""

    def request(self, op, payload=None, *, meanwhile=None, **kwargs):
        if op == "time_done" and meanwhile is not None:
            meanwhile(lambda: True, time.monotonic() + 10)
            meanwhile = None
        return super().request(op, payload, meanwhile=meanwhile, **kwargs)


@pytest.mark.parametrize("gate", [{"ignores_go": True}, {"writes_go": 12345}], ids=["starts-before-the-go", "opens-its-own-gate"])
def test_a_batch_started_before_the_checkers_go_is_incorrect(monkeypatch, gate):
    """No input exists before the seed the go carries: a loop that starts without it (or with a seed of its
    own) computes every call on inputs the checker never drew."""
    from tests.test_fresh_inputs import honest

    with pytest.raises(CandidateFailed) as caught:
        gated(monkeypatch, honest, **gate)
    assert caught.value.state == "incorrect"


def test_the_gate_kernel_compiles_for_hopper_and_polls_the_go_word(monkeypatch):
    triton = pytest.importorskip("triton")
    from triton.backends.compiler import GPUTarget

    from trialtui.runner import go_gate

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    kernel = go_gate._compile.__wrapped__()
    source = triton.compiler.ASTSource(fn=kernel, signature={"go_ptr": "*i64", "seed_ptr": "*i64", "limit_ns": "i64"},
                                       constexprs={})
    ptx = triton.compile(source, target=GPUTarget("cuda", 90, 32)).asm["ptx"]
    assert "ld.volatile.global" in ptx and "bra" in ptx  # read again and again until the go
    assert ptx.count("%globaltimer") >= 2  # and given up on after LIMIT_NS


@pytest.mark.parametrize("slots", [1, 2, 25, 100])
def test_the_go_word_lies_16_byte_aligned_after_the_slots_whatever_their_number(slots):
    pad = landing.Pad(slots)
    view = landing.slots_of(pad.wire(), "cpu")
    try:
        assert view.go.data_ptr() % 16 == 0 and view.go.data_ptr() >= view.slots.data_ptr() + slots * 8
        pad.arm(slots)
        pad.go(99)
        assert int(view.go[0]) == 99 and pad.word(slots - 1) != 99
    finally:
        landing.release(view)
        pad.close()


def test_a_pad_is_made_where_the_first_folder_that_takes_it_is(tmp_path):
    fd, path = landing._made((str(tmp_path / "missing"), str(tmp_path)))
    os.close(fd)
    assert path.startswith(str(tmp_path)) and "trialtui-landing-" in path


def test_a_pad_its_candidate_shrinks_lands_nothing_and_the_checker_lives_on():
    """The candidate's process can open the pad's file while it exists and truncate it: the checker reads it
    through the file, so the read comes back short (no landing, nothing confirmed), not a SIGBUS."""
    pad = landing.Pad(4)
    try:
        pad.arm(4)
        os.truncate(pad.path, 0)
        pad.watch(lambda: False, time.monotonic() + 5)
        assert pad.seen is None and pad.landed_us(time.perf_counter_ns(), 0) is None
        assert pad.word(3) is None
    finally:
        pad.close()
