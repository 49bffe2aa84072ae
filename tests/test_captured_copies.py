"""Captured loops copy their outputs into the ring after the batch's last landing (timed_batch.Captured).

`capture` runs here with CUDA's graph API stood in for by one that runs what it records at once and
replays nothing: what the loop did while it was recorded is what one replay would do. So the ring
after `capture` holds the copies of the batch it recorded, and an eager `run_batch` of the same
seed, copying each output right after its call, must leave the very same ring and hashes: the chain
(each input drawn from the previous output's hash) comes out the same whether the hash was taken
from the output or from its copy. Outputs that share memory are found and copied call by call.
"""

from __future__ import annotations

import contextlib

import pytest

torch = pytest.importorskip("torch")

from cpu_bencher import FakeBencher, FakeEvent  # noqa: E402
from trialtui.runner import fresh_inputs, landing, timed_batch  # noqa: E402
from trialtui.runner.timed_batch import Layout, capture, run_batch  # noqa: E402

FLUSH_WORDS = torch.randint(-2**31, 2**31, (40_000,), dtype=torch.int32)


class Graph:
    """Runs what it records as it is recorded; a replay does nothing."""

    recorded = 0

    def capture_begin(self, pool=None):
        Graph.recorded += 1

    def capture_end(self):
        pass

    def replay(self):
        pass


class Stream:
    def wait_stream(self, other):
        pass


@pytest.fixture
def eager_graphs(monkeypatch):
    for name, value in {"CUDAGraph": Graph, "Event": FakeEvent, "Stream": Stream, "graph_pool_handle": lambda: None,
                        "current_stream": Stream, "stream": lambda s: contextlib.nullcontext(),
                        "synchronize": lambda *a: None}.items():
        monkeypatch.setattr(torch.cuda, name, value)
    Graph.recorded = 0


def softmax(x):
    return torch.softmax(x * 2, -1)


def loop(forward, n, seed=7, graphed=True, land=True):
    """(the ring, the hashes landed, the Captured or None) after one batch of n calls on two input sets."""
    sets = [[torch.randn(8, 64, generator=torch.Generator().manual_seed(s))] for s in (1, 2)]
    layout = Layout.of_output(softmax(sets[0][0]))
    refresher = fresh_inputs.Refresher(sets, flush_words=FLUSH_WORDS)
    calls = [(lambda inputs=inputs: forward(inputs[0])) for inputs in sets]
    ring = torch.zeros(n * layout.slot_bytes, dtype=torch.uint8)
    pad = landing.Pad(n)
    view = landing.slots_of(pad.wire(), "cpu") if land else None
    captured = None
    refresher.begin(seed)
    if graphed:
        captured = capture(calls, refresher, FakeBencher(), layout, ring, n, view.slots if view else None)
    else:
        run_batch(calls, refresher, FakeBencher(), layout, ring, seed, n, landing=view.slots if view else None)
    landed = [pad.word(i) for i in range(n)] if land else None
    landing.release(view)
    pad.close()
    return ring, landed, captured


def test_a_captured_loop_copies_after_its_landings_and_leaves_what_copies_after_each_call_leave(eager_graphs):
    ring, landed, captured = loop(softmax, 20)
    assert captured.deferred and captured.mismatch is None
    assert sorted(captured.copies) == [5, 20]  # a graph of copies for each batch size of the checker's
    assert Graph.recorded == 20 + 2
    inline_ring, inline_landed, _ = loop(softmax, 20, graphed=False)
    assert torch.equal(ring, inline_ring) and landed == inline_landed
    assert len(set(landed)) == 20  # every call its own hash, the chain unbroken


def test_outputs_that_share_memory_are_copied_call_by_call(eager_graphs):
    """One buffer returned call after call: deferred copies would leave the last call's answer in every slot."""
    held = {}

    def into_one_buffer(x):
        out = held.setdefault("out", torch.empty(8, 64))
        out.copy_(softmax(x))
        return out

    ring, landed, captured = loop(into_one_buffer, 12)
    assert not captured.deferred and not captured.copies
    assert Graph.recorded == 12 + 12  # recorded once deferred, found sharing, recorded again copying call by call
    inline_ring, inline_landed, _ = loop(softmax, 12, graphed=False)
    assert torch.equal(ring, inline_ring) and landed == inline_landed


def test_an_input_handed_back_is_copied_before_the_next_call_rewrites_it(eager_graphs):
    ring, _, captured = loop(lambda x: x, 6)
    assert not captured.deferred
    sets = [[torch.randn(8, 64, generator=torch.Generator().manual_seed(s))] for s in (1, 2)]
    layout = Layout.of_output(sets[0][0])
    first = layout.unpack(ring, 0, sets[0][0])
    assert torch.equal(first, fresh_inputs.input_of(sets[0], 7, 0, fresh_inputs.new_hashes(6, "cpu"))[0])


def test_an_output_that_does_not_fit_is_named_and_nothing_is_copied(eager_graphs):
    ring, _, captured = loop(lambda x: softmax(x).t(), 6)
    assert "(64, 8)" in captured.mismatch and not captured.copies
    assert not ring.any()


def test_a_batch_size_without_its_own_graph_of_copies_copies_eagerly(eager_graphs):
    ring, _, captured = loop(softmax, 8)
    layout = Layout.of_output(softmax(torch.randn(8, 64)))
    again = torch.zeros_like(ring)
    captured.copy_out(3, layout, again)  # 3: neither 2 nor 8
    assert torch.equal(again[:3 * layout.slot_bytes], ring[:3 * layout.slot_bytes]) and not again[3 * layout.slot_bytes:].any()
    assert timed_batch.SMALL_PER_LARGE == 4  # the sizes the copies are recorded for: n / 4 and n


class Reference:
    """A problem's reference as the timed phase loads it: its inputs at a case, its call."""

    def __init__(self, fn):
        self.fn = fn

    def make_inputs(self, case, seed):
        x = torch.randn(8, 64, generator=torch.Generator().manual_seed(seed))
        return [x, torch.empty_like(x)]  # the second: an output buffer, as GPU MODE's problems hand one in

    def call(self, case, seed):
        from types import SimpleNamespace

        return SimpleNamespace(fn=lambda inputs: self.fn(*inputs), model=None, payload={})


@pytest.mark.parametrize("fn, defer", [
    (lambda x, out: torch.softmax(x, -1), True),  # KernelBench's form: a new tensor
    (lambda x, out: out.copy_(torch.softmax(x, -1)), False),  # GPU MODE's: the buffer it was handed, filled
    (lambda x, out: x, False),  # an input handed back
])
def test_where_the_references_output_is_one_of_its_inputs_both_loops_copy_call_by_call(fn, defer):
    """The checker decides before the candidate's process captures its loop: the reference's loop beside it
    must copy as it does, and a reference whose output is an input cannot copy after the batch."""
    from types import SimpleNamespace

    from trialtui.runner.timed_phase import TimedSetup

    setup = TimedSetup.of(Reference(fn), None, SimpleNamespace(L2_cache_size=0, total_memory=2**34))
    assert setup.defer is defer
    assert setup.layout.leaves[0].shape == (8, 64)
