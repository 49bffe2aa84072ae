"""The checker's side of the timed batches: asks the candidate's process for a batch, clocks it, and
judges every call's output against the reference's for that call's own input.

What this guarantees (docs/SECURITY.md, "The timed calls"): every timed call's input is new in every
element of its floating tensors (runner/fresh_inputs.py), drawn from a seed this process draws per
batch from the system's entropy; every call's output is committed (copied into this process's
memory) before the clock around the batch stops and before any of them is judged; and every one is
judged. A candidate that skips or shortens the work of any timed call, or carries work from one call
to the next, gets `incorrect`, whatever it knows of trialtui's code, seeds or call indices.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from trialtui.runner import cuda_ipc, fresh_inputs
from trialtui.runner.candidate_requests import CandidateFailed, CandidateLink, Deadline
from trialtui.runner.tensors import clone
from trialtui.runner.timed_batch import Layout, run_batch
from trialtui.runner.timing import checker_per_call_us

# judge(expected, output, inputs, where) raises CandidateFailed("...", state="incorrect") on a wrong output
Judge = Callable[[Any, Any, Any, str], None]


@dataclass
class Batch:
    """One timed batch as the checker saw it."""

    start: int  # index of its first call among all timed calls
    samples: list[float]  # the candidate's own event times per call, µs: claims
    wall_us: float  # the checker's clock from the request until every output was copied here


@dataclass
class TimedCalls:
    """The candidate's timed calls on one case's input sets, and what they cost besides the call."""

    link: CandidateLink
    deadline: Deadline
    sets: list[Any]  # the input sets as made (the candidate's process holds its own copy)
    reference: Callable[[Any], Any]  # the reference's call on one input set
    layout: Layout
    judge: Judge
    see: Callable[[dict[str, Any]], None]  # side facts of every reply (patched timers...)
    keep: int = 1  # calls of the largest batch: the ring holds their outputs
    draws: random.Random = field(default_factory=random.SystemRandom)
    rebuilt: fresh_inputs.Refresher = field(init=False)  # the checker's own copies, made new call by call
    shared: cuda_ipc.Isolated | None = field(init=False, default=None)  # the ring, where it can be shared

    def __post_init__(self) -> None:
        self.rebuilt = fresh_inputs.Refresher([clone(s) for s in self.sets])
        if cuda_ipc.available():
            try:
                self.shared = cuda_ipc.Isolated.empty(self.keep * self.layout.slot_bytes)
            except cuda_ipc.IpcError:
                self.shared = None

    @property
    def ring_wire(self) -> dict[str, Any] | None:
        """The ring's handle for the candidate's process, which writes every timed output into it; None
        where it cannot be shared: the candidate's process keeps a ring of its own and each reply carries it."""
        return self.shared.meta() if self.shared is not None else None

    def __enter__(self) -> TimedCalls:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.shared is not None:
            self.shared.free()
            self.shared = None

    def batch(self, start: int, n: int) -> Batch:
        seed = self.draws.getrandbits(62)  # drawn here, per batch: told to the candidate's process with the request
        size = n * self.layout.slot_bytes
        t0 = time.perf_counter()
        reply, ring = self.link.request("time", timeout_s=self.deadline.left(), into="cuda", start=start, n=n,
                                        seed=seed, max_bytes=(0 if self.shared else size) + 2**20)
        if self.shared is not None:  # the candidate's process wrote into our ring: ours alone from this copy on
            ring = self.shared.view()[:size].clone()  # whatever the reply carried is not looked at
            torch.cuda.synchronize()
        wall_us = (time.perf_counter() - t0) * 1e6  # the outputs are in this process's memory now: committed
        self.see(reply)
        samples = reply.get("samples")
        if not isinstance(samples, list) or len(samples) != n or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and x >= 0 for x in samples):
            raise CandidateFailed("the candidate's process sent malformed timing samples")
        if reply.get("mismatch"):
            raise CandidateFailed(f"a timed call's output does not have the reference's structure: "
                                  f"{str(reply['mismatch'])[:300]}", state="incorrect")
        if not (isinstance(ring, torch.Tensor) and ring.dtype == torch.uint8 and ring.dim() == 1
                and ring.numel() == size):
            raise CandidateFailed("the candidate's process did not send the outputs of its timed calls")
        for call in range(n):
            self.check(start, call, seed, ring)
        del ring
        return Batch(start, [float(x) for x in samples], wall_us)

    def check(self, start: int, call: int, seed: int, ring: torch.Tensor) -> None:
        which = (start + call) % len(self.sets)
        self.rebuilt.before(seed, call, which)  # this call's input, in copies of the sets made once
        inputs = self.rebuilt.sets[which]
        with torch.no_grad():
            expected = self.reference(clone(inputs))
        output = self.layout.unpack(ring, call, expected)
        self.judge(expected, output, inputs, f"timed call {start + call + 1} (input set {which + 1}, made new for it)")

    def overhead_us(self, bencher: Any, batches: tuple[int, int], rounds: int = 5) -> float:
        """What a timed call costs besides the call, measured here through the very loop the candidate's
        process runs (timed_batch.run_batch) on a call that does nothing but return an output of the
        reference's structure, into the same ring, and the copy of the batch's slots: the slope of its wall
        time over the two batch sizes. Taken off the checker's clock before that is compared with the
        candidate's events."""
        sets = [clone(s) for s in self.sets]
        refresher = fresh_inputs.Refresher(sets)
        with torch.no_grad():
            held = self.reference(clone(self.sets[0]))
        calls = [lambda: held] * len(sets)
        ring = self.shared.view() if self.shared is not None else torch.empty(
            batches[-1] * self.layout.slot_bytes, dtype=torch.uint8, device="cuda")
        walls: list[tuple[float, int, list[float]]] = []
        for _ in range(rounds):
            for n in batches:
                t0 = time.perf_counter()
                run_batch(calls, refresher, bencher, self.layout, ring, 1, 0, n)
                ring[:n * self.layout.slot_bytes].clone()  # as the reply's copy into this process
                torch.cuda.synchronize()
                walls.append(((time.perf_counter() - t0) * 1e6, n, []))
        del sets, refresher, ring, held
        return checker_per_call_us(walls) or 0.0
