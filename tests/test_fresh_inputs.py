"""Timed calls: every input new in every element, every output committed and judged.

The candidate's process (candidate.Session.op_time) and the checker (timed_phase.TimedCalls) on the
CPU, with a fake timer: what the candidate hands back for any timed call is judged against the
reference on the input the checker rebuilds for that call, so no call can be skipped, kept or
shortened (issue 33: candidates that read which calls were checked, or diffed their inputs).
"""

from __future__ import annotations

import math
import time

import pytest

torch = pytest.importorskip("torch")

from cpu_bencher import FakeBencher  # noqa: E402
from trialtui.runner import fresh_inputs, landing  # noqa: E402
from trialtui.runner.candidate_requests import CandidateFailed, Deadline  # noqa: E402
from trialtui.runner.compare import close_at_once  # noqa: E402
from trialtui.runner.timed_batch import Layout  # noqa: E402
from trialtui.runner.timed_phase import TimedCalls  # noqa: E402


def hashes_of(n, seed=0):
    """What the previous calls' outputs hashed to, as chain.digest leaves them."""
    return torch.randint(-2**31, 2**31 - 1, (n, 2), dtype=torch.int32, generator=torch.Generator().manual_seed(seed))


def test_every_call_sees_the_input_the_checker_rebuilds_new_in_every_row_and_column_and_the_sets_come_back():
    sets = [[torch.randn(64, 33), torch.arange(7)], [torch.randn(64, 33), torch.arange(7)]]
    untouched = [[t.clone() for t in s] for s in sets]
    refresher = fresh_inputs.Refresher(sets)
    seen, hashes = [], hashes_of(11)
    for call in range(11):
        refresher.begin(2026)
        refresher.before(call, call % 2, hashes)
        rebuilt = fresh_inputs.input_of(untouched[call % 2], 2026, call, hashes)
        assert torch.equal(rebuilt[0], sets[call % 2][0]) and torch.equal(rebuilt[1], torch.arange(7))
        seen.append(rebuilt[0].clone())
    refresher.restore()
    assert all(torch.equal(a[0], b[0]) for a, b in zip(sets, untouched))
    for i, x in enumerate(seen):  # against the set and every earlier call: nearly every element is new
        for other in [untouched[i % 2][0]] + seen[:i]:
            changed = x != other
            assert changed.float().mean() > 0.95
            assert bool(changed.any(0).all()) and bool(changed.any(1).all())  # every row and every column


def test_a_kernel_that_recomputes_only_what_changed_recomputes_everything():
    """The diffing candidate of issue 33 (it kept its last input and output, recomputed the rows that
    changed): between two timed calls every row and every 8×8 block changes."""
    x = torch.randn(256, 128)
    refresher = fresh_inputs.Refresher([[x]])
    refresher.begin(7)
    refresher.before(0, 0, hashes_of(2))
    last = x.clone()
    refresher.begin(7)
    refresher.before(1, 0, hashes_of(2))
    blocks = (x != last).reshape(32, 8, 16, 8).any(3).any(1)
    assert bool((x != last).any(1).all()) and bool(blocks.all())


def test_new_values_stay_inside_the_interval_of_the_tensors_values_and_integers_are_never_touched():
    x = torch.rand(4096) + 1.0  # a domain: every value in [1, 2)
    p = torch.rand(4096) * 0.99 + 0.005  # probabilities
    rebuilt = fresh_inputs.input_of([x, p, torch.arange(5)], 3, 0, hashes_of(1))
    assert rebuilt[0].min() >= 1.0 and rebuilt[0].max() < 2.0 and not torch.equal(rebuilt[0], x)
    assert rebuilt[1].min() > 0 and rebuilt[1].max() < 1
    assert torch.equal(rebuilt[2], torch.arange(5))


def test_a_bf16_input_gets_new_values_too():
    x = torch.randn(64, 64, dtype=torch.bfloat16)
    rebuilt = fresh_inputs.input_of([x], 5, 1, hashes_of(2))[0]
    assert rebuilt.dtype == torch.bfloat16 and (rebuilt != x).float().mean() > 0.8


@pytest.mark.parametrize("make", [
    lambda: torch.triu(torch.randn(64, 64)),  # a kernel may skip the zero triangle
    lambda: (lambda a: a + a.T)(torch.randn(64, 64)),  # ... or read one half of a symmetric matrix
    lambda: torch.sort(torch.randn(8, 64), -1).values,  # ... or binary-search sorted rows
    lambda: torch.softmax(torch.randn(8, 64), -1),  # ... or rely on rows summing to one
    lambda: (torch.rand(8, 64) > 0.5).float(),  # a mask
    lambda: torch.randint(0, 9, (8, 64)).float(),  # whole numbers: indices or counts stored as floats
    lambda: torch.randn(8, 64).masked_fill(torch.rand(8, 64) < 0.05, float("nan")),  # values that are not finite
])
def test_a_tensor_with_structure_a_kernel_may_rely_on_keeps_its_values(make):
    tensor, plain = make(), torch.randn(4, 33)
    assert fresh_inputs.refreshed([tensor, plain]) == [1]
    rebuilt = fresh_inputs.input_of([tensor, plain], 9, 0, hashes_of(1))
    assert torch.equal(rebuilt[0], tensor) or bool(torch.isnan(tensor).any())


def test_the_layout_packs_every_tensor_of_an_output_and_names_an_output_that_does_not_fit():
    expected = (torch.randn(3, 5), [torch.arange(4), 2.0])
    layout = Layout.from_wire(Layout.of_output(expected).to_wire())
    ring = torch.zeros(2 * layout.slot_bytes, dtype=torch.uint8)
    assert layout.pack(expected, ring[layout.slot_bytes:]) is None
    back = layout.unpack(ring, 1, expected)
    assert torch.equal(back[0], expected[0]) and torch.equal(back[1][0], expected[1][0]) and back[1][1] == 2.0
    assert "(5, 3)" in layout.pack((torch.randn(5, 3), [torch.arange(4), 2.0]), ring[:layout.slot_bytes])
    assert "1 tensors" in layout.pack(torch.randn(3, 5), ring[:layout.slot_bytes])


@pytest.mark.parametrize("handed", [False, True])
def test_a_layout_takes_the_output_buffers_dtype_only_where_the_problems_own_check_judges(handed):
    """Where it casts, what is hashed from the output itself is what is hashed from its slot (the loop that
    copies after the landings draws the next input from the one, the checker from the other)."""
    expected = torch.randn(6, 7, dtype=torch.float64)
    buffer = torch.empty(6, 7)
    layout = Layout.from_wire(Layout.of_output(expected, (torch.randn(6), buffer) if handed else None).to_wire())
    ring = torch.zeros(layout.slot_bytes, dtype=torch.uint8)
    output = torch.randn(6, 7)
    wrong = layout.pack(output, ring)
    if not handed:
        assert "float32 (6, 7)" in wrong and layout.misfit(output.double(), ring.device) is None
        return
    assert wrong is None and torch.equal(layout.unpack(ring, 0, expected), output.double())
    assert "float16" in layout.pack(output.half(), ring) and "int64" in layout.pack(torch.zeros(6, 7, dtype=torch.int64), ring)
    from_slot, from_output = torch.zeros(1, 2, dtype=torch.int32), torch.zeros(1, 2, dtype=torch.int32)
    layout.pack(output, ring)
    layout.hash_into(ring, from_slot, 0, fresh_inputs.digest)
    layout.hash_output(output, from_output, 0, fresh_inputs.digest)
    assert torch.equal(from_slot, from_output) and from_slot.any()


def test_large_outputs_get_smaller_batches_that_fit_the_kept_outputs_budget():
    softmax_8192 = Layout((), 8192 * 8192 * 4)
    assert softmax_8192.batch_sizes() == (8, 32)  # 8 GiB a side at most
    assert softmax_8192.batch_sizes(2 * 2**30) == (2, 8)  # a GPU of 32 GB: a sixteenth of it
    assert Layout.of_output(torch.empty(64, 64)).batch_sizes() == (25, 100)
    assert Layout((), 2**40).batch_sizes() == (1, 2)


# -- the candidate's process and the checker, end to end on the CPU ------------------------------------

class Link:
    """The checker's link, straight into a candidate.Session in this process."""

    def __init__(self, session):
        self.session = session

    def hold(self):  # a real link stops the candidate's processes here until the next request
        pass

    def request(self, op, payload=None, *, timeout_s, into="cpu", max_bytes=None, meanwhile=None, **msg):
        reply, out = getattr(self.session, f"op_{op}")(msg, payload)
        if meanwhile is not None:  # the op ran to its end here: whatever landed is seen now
            meanwhile(lambda: True, time.monotonic() + timeout_s)
        return reply, out.clone() if isinstance(out, torch.Tensor) else out


def honest(x):
    return torch.softmax(x * 2, -1)


class SkipsAllButFirstAndLast:
    """The issue's first class: it knows the old harness kept only the first and last call of a batch."""

    def __init__(self):
        self.i, self.last = 0, None

    def __call__(self, x):
        self.i += 1
        if self.last is None or self.i % 40 in (0, 1):
            self.last = honest(x)
        return self.last


class SkipsWhenItGuesses:
    """Skips the work on one call in five, at random: what a candidate that cannot tell which are checked does."""

    def __init__(self):
        self.rng, self.last = __import__("random").Random(1), None

    def __call__(self, x):
        if self.last is None or self.rng.random() > 0.2:
            self.last = honest(x)
        return self.last


class DiffsItsInputs:
    """Keeps its last input and output and recomputes only the rows that changed (issue 33's GEMM trick)."""

    def __init__(self):
        self.x = self.out = None
        self.recomputed = []

    def __call__(self, x):
        if self.x is None or self.x.shape != x.shape:
            self.x, self.out = x.clone(), honest(x)
            return self.out.clone()
        rows = (x != self.x).any(-1)
        self.recomputed.append(float(rows.float().mean()))
        self.out[rows] = honest(x[rows])
        self.x = x.clone()
        return self.out.clone()


class BatchAhead:
    """Reads the batch's seed from the timed loop's frame at its first call and makes every later call's
    input and answer there, in one go (a launch-bound kernel's way to do a batch's work in one launch):
    it knows how inputs are drawn from the seed, but not the outputs the chain draws them from."""

    def __init__(self):
        self.answers, self.seen = {}, None

    def __call__(self, x):
        import sys

        frame = sys._getframe(1)
        while frame is not None and "refresher" not in frame.f_locals:
            frame = frame.f_back
        loop = frame.f_locals
        i, seed, n, refresher = loop["i"], loop["seed"], loop["n"], loop["refresher"]
        if (seed, i) in self.answers:
            return self.answers[(seed, i)]
        for k in range(i, n):  # every call's input, taken as the loop would make it from the seed alone
            base, other = refresher.pristine[k % len(loop["calls"])][0]
            guess = torch.empty_like(base)
            fresh_inputs.refresh(guess, base, other, refresher.seed, k, 0, fresh_inputs.new_hashes(n, 'cpu'))
            self.answers[(seed, k)] = honest(guess)
        return self.answers[(seed, i)]


class MemoOnPointer:
    def __init__(self):
        self.memo = {}

    def __call__(self, x):
        key = x.data_ptr()
        if key not in self.memo:
            self.memo[key] = honest(x)
        return self.memo[key]


FLUSH_WORDS = torch.randint(-2**31, 2**31, (40_000,), dtype=torch.int32)  # the checker's keyed flush (three programs)


def checker_and_candidate(monkeypatch, forward, n, link=None, candidate_flush=FLUSH_WORDS, land=True):
    """A candidate.Session in this process whose calls are `forward`, and the checker's TimedCalls on it (through
    `link`, a Link's class); its hashes land in the checker's pad (runner/landing.py) where `land`."""
    from trialtui.runner.candidate import Session

    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    sets = [[torch.randn(8, 64)], [torch.randn(8, 64)]]
    layout = Layout.of_output(honest(sets[0][0]))
    session = Session(channel=None)
    session.input_sets = [[t.clone() for t in s] for s in sets]
    session.calls = [(lambda inputs=inputs: forward(inputs[0])) for inputs in session.input_sets]
    session.bencher = FakeBencher()
    session.layout = layout
    session.ring = torch.empty(n * layout.slot_bytes, dtype=torch.uint8)
    session.refresher = fresh_inputs.Refresher(session.input_sets, flush_words=candidate_flush)
    monkeypatch.setattr(session, "facts", lambda scan=False: {})

    def judge(expected, output, inputs, where):
        if not close_at_once(expected, output, 1e-5, 1e-5):
            raise CandidateFailed(f"{where} differs", state="incorrect")

    calls = TimedCalls((link or Link)(session), Deadline(60), sets, lambda inputs: honest(inputs[0]), layout, judge,
                       see=lambda r: None, flush_words=FLUSH_WORDS, keep=n)
    session.landing = landing.slots_of(calls.pad.wire(), "cpu") if land else None
    calls.pad.unlink()  # mapped here by now, as the checker unlinks it once the candidate's process has
    return session, calls


def timed(monkeypatch, forward, n=10, batches=3, candidate_flush=FLUSH_WORDS, land=True):
    """`candidate_flush`: the words the candidate's loop flushes through (None: it skips the flush); `land`: its
    hashes land in the checker's pad (runner/landing.py)."""
    session, calls = checker_and_candidate(monkeypatch, forward, n, candidate_flush=candidate_flush, land=land)
    session.timed = calls
    for b in range(batches):
        batch = calls.batch(b * n, n)
        assert len(batch.samples) == n
    return session


@pytest.mark.parametrize("forward", [honest, lambda x: (x * 2).softmax(-1).contiguous()], ids=["softmax", "another-way"])
def test_an_honest_candidate_passes_every_timed_call(monkeypatch, forward):
    timed(monkeypatch, forward)


def test_a_passthrough_is_judged_on_the_input_its_call_saw(monkeypatch):
    """An output may be its input: it is copied into its slot right after the call, before the next
    call's new values are written (on the H200 returns_input.py was 'incorrect when timed' once)."""
    from trialtui.runner import timed_phase

    monkeypatch.setattr(timed_phase.TimedCalls, "check", check_passthrough)
    timed(monkeypatch, lambda x: x)


def check_passthrough(self, start, call, seed, ring, hashes):
    which = call % len(self.sets)
    inputs = fresh_inputs.input_of(self.sets[which], seed, call, hashes)
    assert torch.equal(self.layout.unpack(ring, call, inputs[0]), inputs[0])


@pytest.mark.parametrize("cheat", [SkipsAllButFirstAndLast, SkipsWhenItGuesses, MemoOnPointer, BatchAhead],
                         ids=["skips-the-calls-it-knows-are-unchecked", "skips-one-in-five", "memo-on-pointer",
                              "makes-the-batch-ahead-from-its-seed"])
def test_a_candidate_that_skips_or_keeps_the_work_of_any_timed_call_is_incorrect(monkeypatch, cheat):
    with pytest.raises(CandidateFailed) as caught:
        timed(monkeypatch, cheat())
    assert caught.value.state == "incorrect" and "timed call" in str(caught.value)


@pytest.mark.parametrize("flush", [None, torch.zeros_like(FLUSH_WORDS), FLUSH_WORDS[:FLUSH_WORDS.numel() // 2].clone()],
                         ids=["skips-the-flush", "flushes-words-it-can-compute", "reads-half-the-words"])
def test_a_loop_that_skips_or_shortens_the_keyed_flush_draws_inputs_the_checker_does_not(monkeypatch, flush):
    """Issue 33, the flush class: the L2 flush before each call is the harness's time, taken off the checker's
    clock. A loop rewritten to skip it (and work in its place), to flush through words it could compute
    without reading them, or through fewer of them, gets from the second call on an input the checker did
    not draw, and a wrong answer for the one it did."""
    with pytest.raises(CandidateFailed) as caught:
        timed(monkeypatch, honest, candidate_flush=flush)
    assert caught.value.state == "incorrect" and "timed call 2 (" in str(caught.value)


def test_a_candidate_that_diffs_its_inputs_recomputes_every_row(monkeypatch):
    cheat = DiffsItsInputs()
    timed(monkeypatch, cheat)  # correct: it did the whole work ...
    assert cheat.recomputed and min(cheat.recomputed) == 1.0  # ... on every call


def test_an_output_of_another_shape_when_timed_is_incorrect(monkeypatch):
    with pytest.raises(CandidateFailed) as caught:
        timed(monkeypatch, lambda x: honest(x).t())
    assert caught.value.state == "incorrect" and "structure" in str(caught.value)


def test_a_reply_without_every_output_is_refused(monkeypatch):
    from trialtui.runner.candidate import Session

    original = Session.op_time

    def short(self, msg, payload):
        reply, ring = original(self, msg, payload)
        return reply, ring[: len(ring) // 2]

    monkeypatch.setattr(Session, "op_time", short)
    with pytest.raises(CandidateFailed, match="did not send the outputs"):
        timed(monkeypatch, honest)


def test_the_checker_draws_a_new_seed_for_every_batch(monkeypatch):
    seeds = []
    from trialtui.runner.candidate import Session

    original = Session.op_time
    monkeypatch.setattr(Session, "op_time", lambda self, msg, payload: seeds.append(msg["seed"]) or original(self, msg, payload))
    timed(monkeypatch, honest, batches=4)
    assert len(set(seeds)) == 4 and all(0 <= s < 2**62 for s in seeds)
    assert not math.isnan(sum(seeds))


def test_the_kernel_split_the_candidates_process_reports_is_checked_as_data():
    from trialtui.runner.library_split import reported_split as _kernel_split

    good = {"own_us": 3.0, "library_us": 130.0, "own_share": 0.02, "library_top": [["sm90_xmma_gemm", 130.0]]}
    assert _kernel_split(good)["own_share"] == 0.02
    for bad in (None, [], {"own_us": "x", "library_us": 1, "own_share": 0.5}, {**good, "own_share": 7}, {**good, "own_us": True}):
        assert _kernel_split(bad) is None


class HostClockEvent:
    """torch.cuda.Event on a host clock: on a CPU, each call's work is done when its event is recorded."""

    def __init__(self, enable_timing: bool = False):
        self.at = None

    def record(self, stream=None):
        self.at = time.perf_counter()

    def elapsed_time(self, end) -> float:
        return (end.at - self.at) * 1000.0


def spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@pytest.mark.parametrize("decoy", [True, False])
def test_library_work_is_weighed_without_cupti(monkeypatch, decoy):
    """A call whose torch function does the work and whose own kernel is a token is mostly library (a
    decoy, flagged `fallback` below LIBRARY_SHARE); a kernel that does the work with one small torch
    op beside it is its own."""
    from trialtui.runner import library_split
    from trialtui.runner.timed_phase import LIBRARY_SHARE

    monkeypatch.setattr(torch.cuda, "Event", HostClockEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    big, small = torch.randn(600, 600), torch.randn(8, 8)

    def call():
        spin(0.0002 if decoy else 0.01)  # the candidate's own kernel
        return torch.matmul(big, big) if decoy else torch.matmul(small, small)

    with library_split.LibraryOps() as seen:
        call()
    assert seen.ops == {"matmul"}
    split = library_split.library_split([call], runs=3)
    assert split["library_top"][0][0] == "torch.matmul"
    assert (split["own_share"] < LIBRARY_SHARE) is decoy
    if not decoy:
        assert split["own_us"] >= 10_000


def test_gpu_mode_data_gets_every_floating_tensor_made_new_and_keeps_its_other_parts():
    """GPU MODE hands `custom_kernel(data)` a tuple or dict, not KernelBench's list: the same refresh."""
    data = ({"a": torch.randn(16, 33), "b": torch.randn(33, 8, dtype=torch.float16)}, torch.arange(5), 7)
    untouched = ({"a": data[0]["a"].clone(), "b": data[0]["b"].clone()}, data[1].clone(), 7)
    refresher = fresh_inputs.Refresher([data])
    refresher.begin(11)
    refresher.before(3, 0, hashes_of(4))
    rebuilt = fresh_inputs.input_of(untouched, 11, 3, hashes_of(4))
    assert torch.equal(rebuilt[0]["a"], data[0]["a"]) and torch.equal(rebuilt[0]["b"], data[0]["b"])
    assert (data[0]["a"] != untouched[0]["a"]).float().mean() > 0.95
    assert (data[0]["b"] != untouched[0]["b"]).float().mean() > 0.8
    assert torch.equal(data[1], untouched[1]) and rebuilt[2] == 7
    refresher.restore()
    assert torch.equal(data[0]["a"], untouched[0]["a"]) and torch.equal(data[0]["b"], untouched[0]["b"])


def test_a_calls_input_follows_from_the_previous_calls_output_and_from_nothing_else_it_holds():
    """The chain (runner/fresh_inputs.py): the same seed and call with another previous output give another input
    in nearly every element; the first call of a batch depends on the seed alone."""
    x = torch.randn(64, 65)
    a = fresh_inputs.input_of([x], 99, 3, hashes_of(4, seed=1))[0]
    b = fresh_inputs.input_of([x], 99, 3, hashes_of(4, seed=2))[0]
    assert (a != b).float().mean() > 0.95
    first = [fresh_inputs.input_of([x], 99, 0, hashes_of(4, seed=s))[0] for s in (1, 2)]
    assert torch.equal(*first)


def test_an_output_hash_takes_every_byte_and_its_place():
    from trialtui.runner import fresh_inputs as chain

    slot = torch.randint(0, 255, (4096,), dtype=torch.uint8)
    hashes = chain.new_hashes(3, "cpu")
    chain.digest(slot, hashes, 1)
    for change in (lambda s: s.__setitem__(4000, int(s[4000]) ^ 1), lambda s: s.copy_(torch.roll(s, 4))):
        other = slot.clone()
        change(other)
        again = chain.new_hashes(3, "cpu")
        chain.digest(other, again, 1)
        assert not torch.equal(again[1], hashes[1]) and not again[0].any() and not again[2].any()


def test_the_triton_kernels_compute_what_the_torch_arithmetic_does():
    """On a GPU the chain runs as Triton kernels; on the CPU, under Triton's interpreter, they must give the
    torch path's bits (float32, float64, float16; the hash of any bytes; the keyed flush)."""
    import subprocess
    import sys

    pytest.importorskip("triton")
    script = """
import torch
from trialtui.runner import fresh_inputs as chain
refresh, fold, flush = chain._kernels()
hashes = torch.tensor([[123456789, -5], [7, 2**31 - 1], [0, 0]], dtype=torch.int32)
seed = torch.tensor([2**61 + 12345])
salt = chain.call_salt(1, 2)
for dtype in (torch.float32, torch.float64, torch.float16):
    base = torch.randn(3000, dtype=dtype)
    other = torch.roll(base, 1001)
    ours, theirs = torch.empty_like(base), torch.empty_like(base)
    chain.refresh(ours, base, other, seed, 1, 2, hashes)
    refresh[(3,)](base, other, theirs, hashes, seed, 3000, salt >> 1, salt & 1, 0, 1, BLOCK=chain.BLOCK)
    assert torch.equal(ours, theirs), dtype
# one program, and two passes (the second over the first's states); on top of a hash already there
for n in (5000, 3 * chain.CHUNK * chain.BLOCK + 77):
    words = torch.randint(-2**31, 2**31 - 1, (n,), dtype=torch.int32)
    ours = hashes.clone()
    chain.digest(words.view(torch.uint8), ours, 1)
    programs = chain.triton_cdiv(n, chain.CHUNK * chain.BLOCK)
    theirs, shape = hashes.clone(), dict(BLOCK=chain.BLOCK, LOG_BLOCK=chain.LOG_BLOCK)
    if programs == 1:
        fold[(1,)](words, n, chain.CHUNK, words, theirs, 1, SALT_A=chain.LEAF_SALTS[0], SALT_B=chain.LEAF_SALTS[1],
                   ABSORB=True, **shape)
    else:
        states = torch.empty(2 * programs, dtype=torch.int32)
        fold[(programs,)](words, n, chain.CHUNK, states, theirs, 1, SALT_A=chain.LEAF_SALTS[0],
                          SALT_B=chain.LEAF_SALTS[1], ABSORB=False, **shape)
        fold[(1,)](states, 2 * programs, chain.triton_cdiv(2 * programs, chain.BLOCK), states, theirs, 1,
                   SALT_A=chain.ROOT_SALTS[0], SALT_B=chain.ROOT_SALTS[1], ABSORB=True, **shape)
    assert programs == (1 if n == 5000 else 4)
    assert torch.equal(ours, theirs) and not torch.equal(ours[1], hashes[1]), n
    # the keyed flush over the same words: a batch's first call (keyed by the seed) and a later one
    for call in (0, 2):
        ours, theirs = hashes.clone(), hashes.clone()
        kernels, chain._kernels = chain._kernels, lambda: None
        try:
            chain.flush(words, seed, ours, call)
        finally:
            chain._kernels = kernels
        salt, states = chain.flush_salt(call), torch.empty(2 * programs, dtype=torch.int32)
        flush[(programs,)](words, n, states, theirs, seed, salt >> 1, salt & 1, max(call - 1, 0), 1 if call else 0,
                           CHUNK=chain.CHUNK, **shape)
        fold[(1,)](states, 2 * programs, chain.triton_cdiv(2 * programs, chain.BLOCK), states, theirs, call,
                   SALT_A=chain.ROOT_SALTS[0], SALT_B=chain.ROOT_SALTS[1], ABSORB=True, **shape)
        assert torch.equal(ours, theirs) and not torch.equal(ours[call], hashes[call]), (n, call)
print("same")
"""
    import os

    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.stdout.strip() == "same", done.stderr[-2000:]


def test_the_chain_hashes_every_output_byte_and_no_padding_a_candidate_could_choose():
    """The padding between an output's tensors in its slot is no output: were it hashed, a candidate could
    write it so that the next call's key is one it chose ahead (lowbias32 inverts), and know a batch's
    inputs at its start. Every output byte moves the hash; no padding byte does."""
    from trialtui.runner import fresh_inputs as chain

    expected = (torch.randn(3, 5), torch.randn(7, dtype=torch.float16), torch.randn(2))
    layout = Layout.of_output(expected)
    slot = torch.zeros(layout.slot_bytes, dtype=torch.uint8)
    assert layout.pack(expected, slot) is None

    def hashed(s):
        hashes = chain.new_hashes(2, "cpu")
        layout.hash_into(s, hashes, 1, chain.digest)
        return tuple(hashes[1].tolist())

    base = hashed(slot)
    output_bytes = {b for leaf in layout.leaves for b in range(leaf.offset, leaf.offset + leaf.nbytes // 4 * 4)}
    assert len(output_bytes) == 60 + 12 + 8  # 3×5 fp32, 7 fp16 less the half word, 2 fp32
    for b in range(layout.slot_bytes):
        other = slot.clone()
        other[b] ^= 0x5A
        assert (hashed(other) != base) == (b in output_bytes), b


def test_no_word_of_an_output_has_a_share_of_its_hash_a_candidate_could_choose_apart_from_the_others():
    """A candidate may pick low bits of its outputs within the tolerance. Were the hash a sum (or an xor) of
    each word's share, changing word i would move it by the same amount whatever word j holds, and a few
    such choices solve for any key: the next call's input would be one the candidate has an answer for.
    Here the change at i depends on j, for words in one lane, in two lanes of one program and in two
    programs (an output of over 64 KiB takes a second pass), in either half of the hash."""
    from trialtui.runner import fresh_inputs as chain

    words = torch.randint(-2**31, 2**31 - 1, (2 * chain.CHUNK * chain.BLOCK + 5,), dtype=torch.int32,
                          generator=torch.Generator().manual_seed(4))

    def hashed(flips):
        w = words.clone()
        for i in flips:
            w[i] ^= 1  # a low bit: what the tolerance leaves free
        hashes = chain.new_hashes(1, "cpu")
        chain.digest(w.view(torch.uint8), hashes, 0)
        return [v & 0xFFFFFFFF for v in hashes[0].tolist()]

    base = hashed(())
    one_lane, two_lanes, two_programs = (3, 3 + chain.BLOCK), (3, 700), (3, chain.CHUNK * chain.BLOCK + 9)
    for i, j in (one_lane, two_lanes, two_programs):
        hi, hj, both = hashed((i,)), hashed((j,)), hashed((i, j))
        for half in range(2):
            assert (both[half] - hi[half] - hj[half] + base[half]) % 2**32 != 0, (i, j, half)  # no sum
            assert both[half] ^ hi[half] ^ hj[half] ^ base[half] != 0, (i, j, half)  # no xor


def test_an_output_hashed_where_the_call_left_it_hashes_as_its_copy_in_the_ring_does():
    """Captured loops hash each output before its copy (timed_batch.Captured: the copies follow the batch's
    last landing); the checker hashes the ring. The two must agree on every layout: strided, odd-sized,
    half-word and empty tensors, a view at an offset no 32-bit word starts at."""
    from trialtui.runner import fresh_inputs as chain

    base = torch.randn(64, dtype=torch.float16)
    output = (torch.randn(6, 5).t(), base[1:8], torch.randn(0, 3), torch.arange(3, dtype=torch.int8), base[9:41].view(4, 8))
    layout = Layout.of_output(output)
    slot = torch.zeros(layout.slot_bytes, dtype=torch.uint8)
    assert layout.pack(output, slot) is None
    from_ring, from_output = chain.new_hashes(3, "cpu"), chain.new_hashes(3, "cpu")
    layout.hash_into(slot, from_ring, 2, chain.digest)
    layout.hash_output(output, from_output, 2, chain.digest)
    assert torch.equal(from_ring, from_output) and from_ring[2].any()


def test_outputs_that_share_memory_with_each_other_or_an_input_are_found():
    """Deferred copies need every call's output intact until the batch ends: one buffer returned call after
    call, two buffers in turn, an input handed back or a view of one, are copied call by call instead."""
    from trialtui.runner.tensors import shares_memory

    inputs = [[torch.randn(8, 8)], [torch.randn(8, 8)]]
    fresh = [torch.randn(8, 8) for _ in range(4)]
    assert not shares_memory(fresh, inputs)
    assert not shares_memory([(t, t[2:]) for t in fresh], inputs)  # one call's own tensors may overlap
    held = torch.randn(8, 8)
    assert shares_memory([held, held], inputs)
    assert shares_memory([fresh[0], fresh[1], fresh[0]], inputs)
    assert shares_memory([fresh[0], inputs[1][0]], inputs)
    assert shares_memory([fresh[0], inputs[0][0][3:5, 1:]], inputs)
    big = torch.randn(100)
    assert not shares_memory([big[:50], big[50:]], inputs)  # halves of one buffer, apart
    assert shares_memory([big[:50], big[49:60]], inputs)
    assert shares_memory([big[::2], big[1::2]], inputs)  # interleaved: spans overlap, conservatively shared
    assert not shares_memory([torch.empty(0), torch.empty(0)], inputs)
