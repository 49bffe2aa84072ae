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


def softmax(x, buffer=None):
    return torch.softmax(x * 2, -1)


def into_buffer(x, buffer):
    """GPU MODE's form: the output written into the buffer the call was handed, and the buffer handed back."""
    return buffer.copy_(softmax(x))


def input_sets():
    """Two sets of an input and an output buffer (zeros: whole numbers, kept as they are by the refresh)."""
    xs = [torch.randn(8, 64, generator=torch.Generator().manual_seed(s)) for s in (1, 2)]
    return [[x, torch.zeros_like(x)] for x in xs]


def loop(forward, n, seed=7, graphed=True, land=True):
    """(the ring, the hashes landed, the Captured or None) after one batch of n calls on two input sets."""
    sets = input_sets()
    layout = Layout.of_output(softmax(sets[0][0]))
    refresher = fresh_inputs.Refresher(sets, flush_words=FLUSH_WORDS)

    def fn(inputs):
        return forward(*inputs)

    calls = [(lambda inputs=inputs: fn(inputs)) for inputs in sets]
    ring = torch.zeros(n * layout.slot_bytes, dtype=torch.uint8)
    pad = landing.Pad(n)
    view = landing.slots_of(pad.wire(), "cpu") if land else None
    captured = None
    refresher.begin(seed)
    if graphed:
        captured = capture(calls, refresher, FakeBencher(), layout, ring, n, view.slots if view else None, fn=fn)
    else:
        run_batch(calls, refresher, FakeBencher(), layout, ring, seed, n, landing=view.slots if view else None)
    landed = [pad.word(i) for i in range(n)] if land else None
    landing.release(view)
    pad.close()
    return ring, landed, captured


def test_a_captured_loop_copies_after_its_landings_and_leaves_what_copies_after_each_call_leave(eager_graphs):
    ring, landed, captured = loop(softmax, 20)
    assert captured.deferred and captured.mismatch is None and captured.held is None
    assert sorted(captured.copies) == [5, 20]  # a graph of copies for each batch size of the checker's
    assert Graph.recorded == 20 + 2
    inline_ring, inline_landed, _ = loop(softmax, 20, graphed=False)
    assert torch.equal(ring, inline_ring) and landed == inline_landed
    assert len(set(landed)) == 20  # every call its own hash, the chain unbroken


@pytest.mark.parametrize("forward", [into_buffer, lambda x, buffer: x], ids=["gpu-mode-buffer", "input-handed-back"])
def test_outputs_that_lie_in_inputs_get_each_call_its_own_copy_of_them_and_copy_after(eager_graphs, forward):
    """An output in an input (GPU MODE's buffer, or the input itself) would be overwritten by the next call on
    its set: each call of the batch gets its own copy of that input (refreshed as the shared one would be), and
    the copies still wait for the batch's end."""
    ring, landed, captured = loop(forward, 12)
    assert captured.deferred and len(captured.held.calls) == 12
    assert Graph.recorded == 12 + 12 + 2  # recorded once on the shared sets, found sharing, recorded on its own
    inline_ring, inline_landed, _ = loop(forward, 12, graphed=False)
    assert torch.equal(ring, inline_ring) and landed == inline_landed
    sets = input_sets()
    first = Layout.of_output(sets[0][0]).unpack(ring, 0, sets[0][0])
    if forward is into_buffer:
        assert torch.equal(first, softmax(fresh_inputs.input_of(sets[0], 7, 0, fresh_inputs.new_hashes(12, "cpu"))[0]))


def test_outputs_that_share_memory_across_calls_are_copied_call_by_call(eager_graphs):
    """One buffer returned call after call: deferred copies would leave the last call's answer in every slot,
    and no copy of the inputs helps."""
    held = {}

    def into_one_buffer(x, buffer):
        out = held.setdefault("out", torch.empty(8, 64))
        out.copy_(softmax(x))
        return out

    ring, landed, captured = loop(into_one_buffer, 12)
    assert not captured.deferred and not captured.copies and captured.held is None
    assert Graph.recorded == 12 + 12  # recorded once deferred, found sharing, recorded again copying call by call
    inline_ring, inline_landed, _ = loop(softmax, 12, graphed=False)
    assert torch.equal(ring, inline_ring) and landed == inline_landed


def test_an_output_that_does_not_fit_is_named_and_nothing_is_copied(eager_graphs):
    ring, _, captured = loop(lambda x, buffer: softmax(x).t(), 6)
    assert "(64, 8)" in captured.mismatch and not captured.copies
    assert not ring.any()


def test_a_batch_size_without_its_own_graph_of_copies_copies_eagerly(eager_graphs):
    ring, _, captured = loop(softmax, 8)
    layout = Layout.of_output(softmax(torch.randn(8, 64)))
    again = torch.zeros_like(ring)
    captured.copy_out(3, layout, again)  # 3: neither 2 nor 8
    assert torch.equal(again[:3 * layout.slot_bytes], ring[:3 * layout.slot_bytes]) and not again[3 * layout.slot_bytes:].any()
    assert timed_batch.SMALL_PER_LARGE == 4  # the sizes the copies are recorded for: n / 4 and n


def test_private_inputs_are_refused_where_they_would_not_fit_or_could_not_help():
    from trialtui.runner.tensors import private_inputs

    sets = input_sets()
    outputs = [sets[i % 2][1] for i in range(6)]  # each call's buffer handed back
    own = private_inputs(lambda inputs: inputs[1], sets, outputs, 6, 6 * 8 * 64 * 4)
    assert [sorted(own.copies[i]) for i in range(6)] == [[1]] * 6  # the buffer, second of each set
    assert all(len(own.tensors[i]) == 1 and own.tensors[i][0].data_ptr() != sets[i % 2][1].data_ptr() for i in range(6))
    assert private_inputs(lambda inputs: inputs[1], sets, outputs, 6, budget=5 * 8 * 64 * 4) is None
    assert private_inputs(lambda inputs: inputs[1], sets, [torch.zeros(8, 64)] * 6, 6, 2**20) is None  # one buffer of its own
    assert private_inputs(lambda inputs: inputs[1], sets, [torch.zeros(8, 64) for _ in range(6)], 6, 2**20) is None  # none in inputs


def test_a_loop_whose_deferred_copies_cannot_be_captured_is_still_graphed_copying_call_by_call(eager_graphs, monkeypatch):
    """Keeping a batch's outputs takes memory the call-by-call loop does not: where the deferred capture
    raises (out of memory), the loop is captured again copying each output after its call, not run eagerly."""
    sets = input_sets()
    layout = Layout.of_output(softmax(sets[0][0]))
    refresher = fresh_inputs.Refresher(sets, flush_words=FLUSH_WORDS)
    calls = [(lambda inputs=inputs: softmax(*inputs)) for inputs in sets]
    ring = torch.zeros(8 * layout.slot_bytes, dtype=torch.uint8)

    def no_memory(*args, **kwargs):
        raise RuntimeError("CUDA out of memory")

    monkeypatch.setattr(Layout, "hash_output", no_memory)
    refresher.begin(7)
    captured, slots, refused = timed_batch.capture_landing(calls, refresher, FakeBencher(), layout, ring, 8, None,
                                                           fn=lambda inputs: softmax(*inputs))
    assert captured is not None and not captured.deferred and len(captured.graphs) == 8
    assert "out of memory" in refused
    inline_ring, _, _ = loop(softmax, 8, graphed=False, land=False)
    assert torch.equal(ring, inline_ring)  # recorded copying call by call: the batch an eager loop leaves
