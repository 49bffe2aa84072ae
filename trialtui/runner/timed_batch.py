"""The contract of one batch of timed calls: every call's output is kept and sent back, and the checker judges each.

The candidate's process writes each timed call's output into a slot of one device buffer (the ring): where
its calls are CUDA graphs, after the batch's last call (`Captured`), else right after each call's end event;
the checker copies the ring into its own memory before its clock around the batch stops. So an output is
committed before the checker looks at any, work deferred past the call is inside the clock, and no call is
unchecked: one that skips or shortens the work of any timed call hands back a wrong answer for that call's
input (runner/fresh_inputs.py makes every input new, from the previous call's output): `incorrect`.

The slots' layout is the reference's output at the timed size (its tensors' dtypes and shapes, in order): an
output that does not fit is a mismatch the candidate's process reports (where the problem's own check judges
values, GPU MODE's, a floating output of its output buffer's dtype goes in cast, as that check takes it)."""

from __future__ import annotations

import itertools
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

import torch

from trialtui.runner.batch_clock import checker_per_call_us
from trialtui.runner.landing import Pad, land, landing_per_call_us, release, slots_of
from trialtui.runner.loop_rhythm import Rhythm, disturbance, ran_clear, rhythm_us, starts_us
from trialtui.runner.compare import handed_dtype
from trialtui.runner.tensors import DTYPES, PrivateInputs, clone, map_tensors, private_inputs, shares_memory, tensors_of

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
    also: str = ""  # a floating dtype it may come in as, cast to `dtype`: its output buffer's (`Layout.of_output`)


@dataclass(frozen=True)
class Layout:
    """Where each tensor of one call's output goes in its slot; the same for every call of a case."""

    leaves: tuple[Leaf, ...]
    slot_bytes: int

    @classmethod
    def of_output(cls, expected: Any, handed: Any = None) -> Layout:
        """`handed`: the inputs where the problem's own check judges values (Leaf.also; compare.compare's rule)."""
        leaves, offset = [], 0
        for t in tensors_of(expected):
            nbytes, also = t.numel() * t.element_size(), handed_dtype(t, handed)
            leaves.append(Leaf(str(t.dtype).removeprefix("torch."), tuple(t.shape), offset, nbytes, also))
            offset += -(-max(1, nbytes) // ALIGN) * ALIGN
        return cls(tuple(leaves), max(ALIGN, offset))

    def to_wire(self) -> dict[str, Any]:
        return {"slot_bytes": self.slot_bytes,
                "leaves": [[leaf.dtype, list(leaf.shape), leaf.offset, leaf.nbytes, leaf.also] for leaf in self.leaves]}

    @classmethod
    def from_wire(cls, data: Any) -> Layout:
        """Checked as it arrives (the candidate's process takes it from the checker, but checks cost nothing)."""
        leaves = tuple(Leaf(str(d), tuple(int(x) for x in shape), int(off), int(nb), str(also)) for d, shape, off, nb, also in data["leaves"])
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

    def misfit(self, output: Any, device: torch.device) -> str | None:
        """Why one call's output does not fit the layout (its tensors' count, dtypes, shapes, device), or None."""
        found = tensors_of(output)
        if len(found) != len(self.leaves):
            return f"{len(found)} tensors where the reference returns {len(self.leaves)}"
        for i, (t, leaf) in enumerate(zip(found, self.leaves)):
            got = str(t.dtype).removeprefix("torch.")
            if got not in (leaf.dtype, leaf.also) or tuple(t.shape) != leaf.shape or t.device != device:
                return (f"output {i}: {got} {tuple(t.shape)} on {t.device.type} where the reference returns "
                        f"{leaf.dtype} {leaf.shape}")
        return None

    def pack(self, output: Any, slot: torch.Tensor) -> str | None:
        """Copy one call's output into its slot (queued after the call); a message where it does not fit the layout."""
        wrong = self.misfit(output, slot.device)
        for t, leaf in zip(tensors_of(output) if wrong is None else (), self.leaves):
            self._view(slot, leaf).copy_(t.detach())
        return wrong

    def hash_output(self, output: Any, hashes: torch.Tensor, call: int, digest: Callable) -> None:
        """hashes[call] from the output's own tensors, as `hash_into` takes it from the slot they are copied
        into (the same bytes, the same words): the loop that defers the copies past the batch's landings."""
        for t, leaf in zip(tensors_of(output), self.leaves):
            t = t.to(DTYPES[leaf.dtype]) if str(t.dtype).removeprefix("torch.") == leaf.also else t  # the bytes its slot holds
            if leaf.nbytes >= 4:
                words = t.detach().contiguous().view(-1).view(torch.uint8)[:leaf.nbytes // 4 * 4]
                digest(words if words.storage_offset() % 4 == 0 else words.clone(), hashes, call)

    def hash_into(self, slot: torch.Tensor, hashes: torch.Tensor, call: int, digest: Callable) -> None:
        """hashes[call] from the bytes of a slot that hold its output: each leaf's, in whole 32-bit words
        (runner/fresh_inputs.py draws the next call's input from it). The padding between leaves is not
        output: a candidate free to write it could steer the hash to a value it chose ahead, and know every
        input of a batch at its start. A leaf of under four bytes is not hashed."""
        for leaf in self.leaves:
            if leaf.nbytes >= 4:
                digest(slot[leaf.offset:leaf.offset + leaf.nbytes // 4 * 4], hashes, call)

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
        return slot[leaf.offset:leaf.offset + leaf.nbytes].view(DTYPES[leaf.dtype]).view(leaf.shape)


def run_batch(calls: list[Callable[[], Any]], refresher: Any, bencher: Any, layout: Layout, ring: torch.Tensor,
              seed: int, n: int, captured: Captured | None = None, landing: torch.Tensor | None = None,
              gate: Any = None) -> tuple[list, str | None]:
    """The timed loop itself, the same code in the candidate's process and in the checker's measure of what
    it costs besides the calls: per call, its inputs made new from the batch's seed and the hash of the
    previous call's output (runner/fresh_inputs.py), an L2 flush (keyed, where the refresher has the
    checker's words: its fold enters the chain) and the call between two events, its output hashed for the
    next call's inputs and copied into its slot (where captured, after the batch), the hash copied into its
    `landing` slot (runner/landing.py: the checker's clock per call, where it maps them). `gate`
    (runner/go_gate.py): the batch waits on the GPU for the checker's go, whose word is its seed.

    Nothing in the loop waits on the host or for a fixed time: a wait the checker took off its clock would be
    time a rewritten loop could fill with work outside its events (issue 33). Each call's whole sequence is a
    CUDA graph (`capture`) where the call can be captured, so the host's launches are not in its events; else
    it runs eagerly, and a call shorter than the host's launches carries some of them in its events and clocks.
    Work a call leaves on a side stream that its output needs must be joined to the current stream, as
    any consumer of the output would require; an output copied before it is whole is a wrong answer.
    Returns the event pairs and the first mismatch."""
    pending, mismatch = launch_batch(calls, refresher, bencher, layout, ring, seed, n, captured, landing, gate)
    finish_batch(refresher, ring)
    return pending, mismatch


def launch_batch(calls: list[Callable[[], Any]], refresher: Any, bencher: Any, layout: Layout, ring: torch.Tensor,
                 seed: int, n: int, captured: Captured | None = None, landing: torch.Tensor | None = None,
                 gate: Any = None) -> tuple[list, str | None]:
    """`run_batch` up to its calls queued: the candidate's process answers a gated batch here."""
    if gate is not None:
        gate.wait(refresher.seed)
    else:
        refresher.begin(seed)
    if captured is not None:
        captured.hashes.zero_()
        for graph in captured.graphs[:n]:
            graph.replay()
        captured.copy_out(n, layout, ring)
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
            if landing is not None:
                land(landing, hashes, i)
            del out
    return pending, mismatch


def finish_batch(refresher: Any, ring: torch.Tensor) -> None:
    """The input sets put back once the batch is done, and the batch waited for."""
    refresher.restore()
    if ring.device.type == "cuda":
        torch.cuda.synchronize()


@dataclass
class Captured:
    """A batch's calls as CUDA graphs, one per call of the largest batch: each its inputs made new, the L2
    flush, the call between two events (recorded by the graph), its output hashed, the hash landed.

    `deferred`: each call's output is kept where the call left it and copied into its slot after the batch's
    last call (`copy_out`), so the landing clock (runner/landing.py) holds no copy in anyone's loop for a
    candidate's to move past its landings. Outputs that lie in inputs only (GPU MODE's output buffer) get each
    call its own copy of those inputs (`held`); outputs shared across calls (one buffer returned again) are
    copied right after each call (`deferred` False), copies the checker charges to the call (timed_phase)."""

    graphs: list
    pairs: list  # (start, end) events per call
    hashes: torch.Tensor
    mismatch: str | None
    deferred: bool = False
    kept: list = field(default_factory=list)  # each call's output, where deferred
    copies: dict = field(default_factory=dict)  # batch size -> the graph that copies its outputs into the ring
    held: Any = None  # the calls' own inputs (runner/tensors.PrivateInputs), alive as long as the graphs

    def copy_out(self, n: int, layout: Layout, ring: torch.Tensor) -> None:
        """The batch's outputs into their slots, queued after its last call: one graph for the sizes captured."""
        if not self.deferred or self.mismatch is not None:
            return
        if n in self.copies:
            self.copies[n].replay()
            return
        for i in range(n):
            layout.pack(self.kept[i], ring[i * layout.slot_bytes:(i + 1) * layout.slot_bytes])


def capture(calls: list[Callable[[], Any]], refresher: Any, bencher: Any, layout: Layout, ring: torch.Tensor,
            n: int, landing: torch.Tensor | None = None, defer: bool = True,
            fn: Callable[[Any], Any] | None = None) -> Captured:
    """Capture the loop of `run_batch` (raises where a call cannot be: a host sync, an unjoined stream, events a
    graph cannot time); every call warmed up and the loop run once eagerly before. `defer`: copies after the
    batch (`Captured`); outputs in inputs only get each call its own inputs where `fn` makes a call of a set
    (runner/tensors.private_inputs); outputs shared still are each copied right after its call."""
    captured = _record(calls, refresher, bencher, layout, ring, n, landing, defer)
    if defer and captured.mismatch is None and not captured.deferred and fn is not None:
        own = private_inputs(fn, refresher.sets, captured.kept, n, ring.numel())
        if own is not None:
            del captured
            torch.cuda.synchronize()
            for call in own.calls:  # built on their own tensors before capture, as every call is
                call()
            captured = _record(own.calls, refresher, bencher, layout, ring, n, landing, True, own)
            captured.held = own
    if defer and captured.mismatch is None and not captured.deferred:  # outputs that share memory: copied call by call
        del captured
        torch.cuda.synchronize()
        captured = _record(calls, refresher, bencher, layout, ring, n, landing, False)
    refresher.begin(0)  # replayed once and its events read: a graph that cannot be timed is refused here, not mid-job
    captured.graphs[0].replay()
    refresher.restore()
    torch.cuda.synchronize()
    captured.pairs[0][0].elapsed_time(captured.pairs[0][1])
    return captured


def _record(calls: list[Callable[[], Any]], refresher: Any, bencher: Any, layout: Layout, ring: torch.Tensor, n: int,
            landing: torch.Tensor | None, defer: bool, own: PrivateInputs | None = None) -> Captured:
    """One graph per call of the batch (call i on input set i mod the sets), and where `defer` and no output
    shares memory but with its call's `own` inputs, one graph of copies per batch size."""
    slot, mismatch = layout.slot_bytes, None
    hashes = refresher.new_hashes(n, ring.device)
    pool, stream = torch.cuda.graph_pool_handle(), torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graphs, pairs, kept = [], [], []
    with torch.cuda.stream(stream):  # capture_begin, not torch.cuda.graph: no sync, collection or cache flush per call
        for i in range(n):
            graph = torch.cuda.CUDAGraph()
            start = torch.cuda.Event(enable_timing=True, external=True)
            end = torch.cuda.Event(enable_timing=True, external=True)
            place = ring[i * slot:(i + 1) * slot]
            graph.capture_begin(pool=pool)
            try:
                refresher.before(i, i % len(refresher.sets), hashes, own.copies[i] if own else None)  # and its keyed flush
                if refresher.flush_words is None:
                    bencher.flush_l2()
                start.record()
                out = calls[i % len(calls)]()
                end.record()
                if defer:
                    wrong = layout.misfit(out, ring.device)
                    if wrong is None:
                        layout.hash_output(out, hashes, i, refresher.digest)
                    mismatch = mismatch or wrong
                    kept.append(out)
                else:
                    mismatch = mismatch or layout.pack(out, place)
                    layout.hash_into(place, hashes, i, refresher.digest)
                if landing is not None:
                    land(landing, hashes, i)
                del out
            finally:
                graph.capture_end()
            graphs.append(graph)
            pairs.append((start, end))
        copies = {}
        if defer and mismatch is None and not shares_memory(kept, refresher.sets, own.tensors if own else None):
            for size in sorted({max(1, n // SMALL_PER_LARGE), n}):
                copies[size] = torch.cuda.CUDAGraph()
                copies[size].capture_begin(pool=pool)
                try:
                    for i in range(size):
                        layout.pack(kept[i], ring[i * slot:(i + 1) * slot])
                finally:
                    copies[size].capture_end()
    torch.cuda.current_stream().wait_stream(stream)
    return Captured(graphs, pairs, hashes, mismatch, defer and bool(copies), kept, copies)


def capture_landing(calls: list[Callable[[], Any]], refresher: Any, bencher: Any, layout: Layout, ring: torch.Tensor,
                    n: int, landing: torch.Tensor | None, defer: bool = True,
                    fn: Callable[[Any], Any] | None = None) -> tuple[Captured | None, torch.Tensor | None, str | None]:
    """`capture` with the hashes landing, else without (a torch that cannot capture the copy to host memory),
    else none: (the graphs, the landing slots they write, what each refused attempt raised). Each with its
    copies after the batch, else (the kept outputs or their copy graphs refused: memory) call by call, which
    the checker charges to the call but still times as graphs."""
    refused: list[str] = []
    for slots in ((landing, None) if landing is not None else (None,)):
        for after in dict.fromkeys((defer, False)):
            try:
                captured = capture(calls, refresher, bencher, layout, ring, n, slots, after, fn)
                return captured, slots, "; ".join(refused) or None
            except Exception as exc:  # noqa: BLE001 - a call that syncs the host, an unjoined stream: timed eagerly
                refused.append(f"{type(exc).__name__}: {exc}"[:300])
                torch.cuda.synchronize()
                refresher.restore()
    return None, landing, "; ".join(refused)


# -- the loop in the checker's own process: what a call costs besides the call (new inputs, the flush, the hash,
# the copy: 60-630 µs on the H200), around a call that does nothing ahead of the save (`harness_overhead_us`), or
# on the reference's call beside the candidate's batches (`Yardstick`; H200, gpu_band, 2026-12-04: within 1 µs).


class CheckerLoop:
    """`fn` (on one input set) through the timed loop in this process, into a ring of its own or `ring`.
    `refresher`: a runner/fresh_inputs.Refresher over copies of the case's input sets, through the keyed flush."""

    def __init__(self, refresher: Any, fn: Callable[[Any], Any], layout: Layout, bencher: Any, largest: int,
                 graphed: bool, ring: torch.Tensor | None = None, defer: bool = True) -> None:
        self.refresher = refresher
        self.calls = [(lambda inputs=inputs: fn(inputs)) for inputs in refresher.sets]
        self.layout, self.bencher = layout, bencher
        self.ring = ring if ring is not None else torch.empty(largest * layout.slot_bytes, dtype=torch.uint8, device="cuda")
        self.walls: list[tuple[float, int, list[float]]] = []
        self.events: list[float] = []
        self.landings: list[tuple[float, int]] = []  # (µs from the batch's start to its last hash's landing, n)
        self.rhythms: list[Rhythm | None] = []  # each batch's, from its calls' GPU events (runner/loop_rhythm.py)
        self.draws = random.Random(random.SystemRandom().getrandbits(62))
        self.pad = Pad(largest)  # the loop's hashes land here as the candidate's land in the checker's pad
        self.view = slots_of(self.pad.wire(), "cuda")
        self.pad.unlink()
        with torch.no_grad():
            run_batch(self.calls, self.refresher, bencher, layout, self.ring, 1, len(self.calls),
                      landing=self.landing)  # every kernel built, eagerly
            self.captured = None
            if graphed:
                self.captured, kept, _ = capture_landing(self.calls, self.refresher, bencher, layout, self.ring, largest,
                                                         self.landing, defer, fn)
                if kept is None:
                    release(self.view)
                    self.view = None

    @property
    def landing(self) -> torch.Tensor | None:
        return self.view.slots if self.view is not None else None

    def batch(self, n: int) -> None:
        """One batch of n calls, clocked as the checker clocks the candidate's: from the start until the
        events are read (the candidate's process reads them before it answers) and the outputs copied; and
        from the start until its last hash lands. Never gated (runner/go_gate.py): in this process the start is
        the first launch, a few µs a batch, where the candidate's batches would hold the request's way in."""
        self.pad.arm(n)
        seed = self.draws.getrandbits(62) or 1
        t0 = time.perf_counter_ns()
        with torch.no_grad():
            pending, _ = launch_batch(self.calls, self.refresher, self.bencher, self.layout, self.ring, seed, n,
                                      self.captured, self.landing)
            if self.view is not None:
                self.pad.watch(lambda: False, time.monotonic() + 60.0)
            finish_batch(self.refresher, self.ring)
        if self.pad.seen is not None:  # its own loop: the value needs no check
            self.landings.append(((self.pad.seen[0] - t0) / 1000.0, n))
        events = [a.elapsed_time(b) * 1000.0 for pairs in pending for a, b in pairs]
        self.rhythms.append(Rhythm.of(starts_us(pending)))
        self.ring[:n * self.layout.slot_bytes].clone()  # as the checker copies the candidate's ring
        torch.cuda.synchronize()
        self.walls.append(((time.perf_counter_ns() - t0) / 1000.0, n, []))
        self.events += events

    def per_call_us(self) -> float | None:
        """The host clock's slope: each size's fastest batch, so one held up is not read where another was not."""
        return checker_per_call_us(self.walls)

    def clean(self, n: int) -> int:  # batches of n no other process held up
        return sum(size == n and ran_clear(r) for (_, size, _), r in zip(self.walls, self.rhythms))

    def disturbance(self, what: str) -> str | None:
        return disturbance(self.rhythms, [n for _, n, _ in self.walls], what)

    def landing_per_call_us(self) -> float | None:
        return landing_per_call_us(self.landings)

    def close(self) -> None:
        del self.refresher, self.calls, self.ring, self.captured
        release(self.view)
        self.view = None
        self.pad.close()


class HarnessCost(NamedTuple):
    """What the loop costs a call besides the call: on the reply's clock (a slope), what held up every batch of
    a size (runner/loop_rhythm.py), on the landing clock (no slope; None where it did not land, or landed copies)."""
    per_call_us: float
    held_up: str | None
    landing_us: float | None = None


def harness_overhead_us(refresher: Any, reference: Callable[[Any], Any], layout: Layout, bencher: Any,
                        batches: tuple[int, int], ring: torch.Tensor | None = None, rounds: int = 5,
                        graphed: bool = True) -> HarnessCost:
    """What a timed call costs besides the call, around a call that does nothing but return an output of the
    reference's structure, each call of a batch its own (captured, its copies wait for the batch's end as an
    honest loop's do). `graphed`: through CUDA graphs, else eagerly (each copy before its hash, as there)."""
    with torch.no_grad():
        held = reference(clone(refresher.sets[0]))
    outputs, turn = [clone(held) for _ in range(batches[-1])] if graphed else [held], itertools.count()
    loop = CheckerLoop(refresher, lambda inputs: outputs[next(turn) % len(outputs)], layout, bencher, batches[-1],
                       graphed, ring)
    for extra in range(2 * rounds):  # until two of each size ran clear of another process: as many again at most
        if extra >= rounds and all(loop.clean(n) >= 2 for n in batches):
            break
        for n in batches:
            loop.batch(n)
    landed = not graphed or (loop.captured is not None and loop.captured.deferred)
    cost = HarnessCost(loop.per_call_us() or 0.0, loop.disturbance("the checker's loop around no call"),
                       loop.landing_per_call_us() if landed else None)
    loop.close()
    return cost


class Yardstick:
    """The reference's call through the timed loop here, a batch beside each of the candidate's."""

    def __init__(self, refresher: Any, reference: Callable[[Any], Any], layout: Layout, bencher: Any,
                 largest: int, graphed: bool, pair_us: float) -> None:
        self.loop = CheckerLoop(refresher, reference, layout, bencher, largest, graphed)
        self.usable = (self.loop.captured is not None) == graphed  # timed as the candidate's calls are
        self.pair_us = pair_us  # the empty event pair, taken off the reference's events as off the candidate's
        self.deferred = self.loop.captured is not None and self.loop.captured.deferred

    def batch(self, n: int) -> None:
        if self.usable:
            self.loop.batch(n)

    def complete(self, batches: tuple[int, int], each: int = 2) -> None:
        """`each` batches of every size no other process held up (one started late: beside the last only)."""
        for n in batches if self.usable else ():
            for _ in range(2 * each):
                if self.loop.clean(n) >= each:
                    break
                self.batch(n)

    def restart(self) -> None:
        """A loop timed again: the yardstick's batches are those beside the kept attempt's only."""
        self.loop.walls, self.loop.events, self.loop.landings, self.loop.rhythms = [], [], [], []

    def disturbance(self) -> str | None:
        return self.loop.disturbance("the reference's loop beside it") if self.usable else None

    def harness_us(self) -> float | None:
        """The clock's per-call figure less the reference's own events: the harness's cost beside the
        candidate's batches. None where it was not measured (a reference this process cannot capture)."""
        return self._less_events(self.loop.per_call_us())

    def landing_harness_us(self) -> float | None:
        """The same on the landing clock (runner/landing.py): its per-call figure less the reference's events."""
        return self._less_events(self.loop.landing_per_call_us())

    def _less_events(self, per_call: float | None) -> float | None:
        if not self.usable or per_call is None or not self.loop.events:
            return None
        return per_call - (statistics.median(self.loop.events) - self.pair_us)

    def figures(self) -> dict[str, float | None] | None:
        """What the result shows of it: the reference's events and clocks per call in the candidate's loop."""
        harness = self.harness_us()
        if harness is None:
            return None
        per_call = self.loop.per_call_us() or 0.0
        return {"reference_events_us": per_call - harness, "reference_clock_us": per_call, "harness_us": harness,
                "reference_landing_us": self.loop.landing_per_call_us(), "reference_rhythm_us": rhythm_us(self.loop.rhythms),
                "landing_harness_us": self.landing_harness_us()}

    def close(self) -> None:
        self.loop.close()
