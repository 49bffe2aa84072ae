"""The contract of one batch of timed calls: every call's output is kept and sent back, and the checker
judges every one of them.

The candidate's process writes each timed call's output, right after the call's end event, into a
slot of one device buffer (the ring); the reply carries the ring, which the checker copies into its
own memory before its clock around the batch stops. So an output is committed before the checker
looks at any of them, work deferred past the call is inside the clock, and no call is left
unchecked: a candidate that skips or shortens the work of any timed call hands back a wrong answer
for that call's input (runner/fresh_inputs.py makes every input new, from the
previous call's output) and is `incorrect`.

The slots' layout comes from the reference's output at the timed size (its tensors' dtypes and
shapes, in order); an output that does not fit it is a mismatch the candidate's process reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch

from trialtui.runner.tensors import map_tensors, tensors_of

KEEP_BYTES = 8 * 2**30  # kept outputs per batch, on each side, at most (a sixteenth of the GPU's memory where less): the large batch shrinks to fit, at least 2 calls
LARGE_BATCH = 100  # the most calls a batch holds: the checker's clock bounds a tilted slope by FIXED_CAP_US over this many
SMALL_PER_LARGE = 4  # the two batch sizes the checker's slope is taken over: n and n / 4
ALIGN = 256  # each leaf starts at an aligned offset, so a slot's views suit every dtype


@dataclass(frozen=True)
class Leaf:
    """One tensor of an output: where it lies in a slot, and what it must be."""

    dtype: str  # torch dtype name without the prefix ("float32")
    shape: tuple[int, ...]
    offset: int  # bytes into the slot
    nbytes: int


@dataclass(frozen=True)
class Layout:
    """Where each tensor of one call's output goes in its slot; the same for every call of a case."""

    leaves: tuple[Leaf, ...]
    slot_bytes: int

    @classmethod
    def of_output(cls, expected: Any) -> Layout:
        leaves, offset = [], 0
        for t in tensors_of(expected):
            nbytes = t.numel() * t.element_size()
            leaves.append(Leaf(str(t.dtype).removeprefix("torch."), tuple(t.shape), offset, nbytes))
            offset += -(-max(1, nbytes) // ALIGN) * ALIGN
        return cls(tuple(leaves), max(ALIGN, offset))

    def to_wire(self) -> dict[str, Any]:
        return {"slot_bytes": self.slot_bytes,
                "leaves": [[leaf.dtype, list(leaf.shape), leaf.offset, leaf.nbytes] for leaf in self.leaves]}

    @classmethod
    def from_wire(cls, data: Any) -> Layout:
        """Checked as it arrives (the candidate's process takes it from the checker, but checks cost nothing)."""
        leaves = tuple(Leaf(str(d), tuple(int(x) for x in shape), int(off), int(nb)) for d, shape, off, nb in data["leaves"])
        slot = int(data["slot_bytes"])
        if any(leaf.offset < 0 or leaf.offset + leaf.nbytes > slot for leaf in leaves):
            raise ValueError("a leaf lies outside its slot")
        return cls(leaves, slot)

    def batch_sizes(self, budget: int = KEEP_BYTES) -> tuple[int, int]:
        """(small, large): the large batch's kept outputs fit in `budget`; at least 2 calls, at most 100.
        Larger batches keep the checker's clock steady: the slope over the two sizes shrugs off each
        request's own round trip better the more calls it spans."""
        large = max(2, min(LARGE_BATCH, budget // self.slot_bytes))
        return max(1, large // SMALL_PER_LARGE), large

    # -- the candidate's process -----------------------------------------------------------------
    def pack(self, output: Any, slot: torch.Tensor) -> str | None:
        """Copy one call's output into its slot (queued on the stream, after the call); a message where
        the output does not fit the layout."""
        found = tensors_of(output)
        if len(found) != len(self.leaves):
            return f"{len(found)} tensors where the reference returns {len(self.leaves)}"
        for i, (t, leaf) in enumerate(zip(found, self.leaves)):
            got = str(t.dtype).removeprefix("torch.")
            if got != leaf.dtype or tuple(t.shape) != leaf.shape or t.device != slot.device:
                return (f"output {i}: {got} {tuple(t.shape)} on {t.device.type} where the reference returns "
                        f"{leaf.dtype} {leaf.shape}")
            self._view(slot, leaf).copy_(t.detach())
        return None

    def hash_into(self, slot: torch.Tensor, hashes: torch.Tensor, call: int, digest: Callable) -> None:
        """hashes[call] from the bytes of a slot that hold its output: each leaf's, in whole 32-bit words
        (runner/fresh_inputs.py draws the next call's input from it). The padding between leaves is not
        output: a candidate free to write it could steer the hash to a value it chose ahead, and know every
        input of a batch at its start. A leaf of under four bytes is not hashed."""
        for leaf in self.leaves:
            if leaf.nbytes >= 4:
                digest(slot[leaf.offset:leaf.offset + leaf.nbytes // 4 * 4], hashes, call)

    # -- the checker -------------------------------------------------------------------------------
    def unpack(self, ring: torch.Tensor, call: int, expected: Any) -> Any:
        """Call `call`'s output, in the structure of the reference's (`expected`): views of the ring."""
        slot = ring[call * self.slot_bytes:(call + 1) * self.slot_bytes]
        leaves = iter(self.leaves)

        def view(_: torch.Tensor) -> torch.Tensor:
            out = self._view(slot, next(leaves))
            out.sent_from_device = ring.device.type  # as runner/wire.py marks what crossed
            return out

        return map_tensors(expected, view)

    @staticmethod
    def _view(slot: torch.Tensor, leaf: Leaf) -> torch.Tensor:
        from trialtui.runner.tensors import DTYPES

        raw = slot[leaf.offset:leaf.offset + leaf.nbytes]
        return raw.view(DTYPES[leaf.dtype]).view(leaf.shape)


def run_batch(calls: list[Callable[[], Any]], refresher: Any, bencher: Any, layout: Layout, ring: torch.Tensor,
              seed: int, n: int, captured: Captured | None = None) -> tuple[list, str | None]:
    """The timed loop itself, the same code in the candidate's process and in the checker's measure of what
    it costs besides the calls: per call, its inputs made new from the batch's seed and the hash of the
    previous call's output (runner/fresh_inputs.py), an L2 flush (keyed, where the refresher has the
    checker's words: its fold enters the chain) and the call between two events, its output copied into its
    slot and hashed for the next call's inputs.

    Nothing in the loop waits on the host, and nothing waits for a fixed time: a wait the checker took off
    its clock would be time a rewritten loop could fill with work outside its events (issue 33: a
    millisecond per call once did). So that the host's launches are not in the events either, each call's
    whole sequence is a CUDA graph (`capture`) where the call can be captured: the host replays one graph
    per call while the GPU works through the last. Where it cannot, the same sequence runs eagerly, and a
    call shorter than the host's launches carries some of them in its events and in the checker's clock.
    Work a call leaves on a side stream that its output needs must be joined to the current stream, as
    any consumer of the output would require; an output copied before it is whole is a wrong answer.
    Returns the event pairs and the first mismatch."""
    refresher.begin(seed)
    if captured is not None:
        captured.hashes.zero_()
        for graph in captured.graphs[:n]:
            graph.replay()
        pending, mismatch = [[pair] for pair in captured.pairs[:n]], captured.mismatch
    else:
        slot, m, mismatch, pending = layout.slot_bytes, len(calls), None, []
        hashes = refresher.new_hashes(n, ring.device)
        for i in range(n):
            refresher.before(i, i % m, hashes)
            out: list = []
            pending.append(bencher.time_round([calls[i % m]], out, flush=refresher.flush_words is None))
            place = ring[i * slot:(i + 1) * slot]
            mismatch = mismatch or layout.pack(out[0], place)
            layout.hash_into(place, hashes, i, refresher.digest)
            del out
    refresher.restore()
    if ring.device.type == "cuda":
        torch.cuda.synchronize()
    return pending, mismatch


@dataclass
class Captured:
    """A batch's calls as CUDA graphs, one per call of the largest batch: each its inputs made new, the L2
    flush, the call between two events (recorded by the graph), the output's copy into its slot and hash."""

    graphs: list
    pairs: list  # (start, end) events per call
    hashes: torch.Tensor
    mismatch: str | None


def capture(calls: list[Callable[[], Any]], refresher: Any, bencher: Any, layout: Layout, ring: torch.Tensor,
            n: int) -> Captured:
    """Capture the loop of `run_batch` (it raises where a call cannot be captured: a host sync, a stream it
    does not join; or where this torch cannot time events a graph records). Every call was warmed up
    before, and the loop run once eagerly: nothing is compiled, autotuned or loaded while capturing."""
    slot, m, mismatch = layout.slot_bytes, len(calls), None
    hashes = refresher.new_hashes(n, ring.device)
    pool, stream = torch.cuda.graph_pool_handle(), torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graphs, pairs = [], []
    with torch.cuda.stream(stream):  # capture_begin, not torch.cuda.graph: no sync, collection or cache flush per call
        for i in range(n):
            graph = torch.cuda.CUDAGraph()
            start = torch.cuda.Event(enable_timing=True, external=True)
            end = torch.cuda.Event(enable_timing=True, external=True)
            place = ring[i * slot:(i + 1) * slot]
            graph.capture_begin(pool=pool)
            try:
                refresher.before(i, i % m, hashes)  # its keyed flush too, where it has one
                if refresher.flush_words is None:
                    bencher.flush_l2()
                start.record()
                out = calls[i % m]()
                end.record()
                mismatch = mismatch or layout.pack(out, place)
                layout.hash_into(place, hashes, i, refresher.digest)
                del out
            finally:
                graph.capture_end()
            graphs.append(graph)
            pairs.append((start, end))
    torch.cuda.current_stream().wait_stream(stream)
    refresher.begin(0)  # replayed once and its events read: a graph that cannot be timed is refused here, not mid-job
    graphs[0].replay()
    refresher.restore()
    torch.cuda.synchronize()
    pairs[0][0].elapsed_time(pairs[0][1])
    return Captured(graphs, pairs, hashes, mismatch)
