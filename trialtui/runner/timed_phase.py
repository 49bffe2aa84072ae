"""The timing phase of a bench job on a GPU: the candidate (in its process, every timed call judged) and the
baselines (here) in alternating batches on the same inputs, its number checked against the checker's
clocks (runner/landing.py), the physical floor and the library's share of the work.

The checker's side of the timed batches (`TimedCalls`): asks the candidate's process for a batch, clocks
it, and judges every call's output against the reference's for that call's own input.

What this guarantees (docs/SECURITY.md, "The timed calls"): every timed call's input is new in every element of its
floating tensors (runner/fresh_inputs.py), drawn from a seed this process draws per batch from the system's entropy
and from the hash of the previous call's output (no call's input exists before the previous call's output is whole);
every call's output is committed (copied into this process's memory) before the clock around the batch stops and
before any of them is judged; and every one is judged, by the untimed calls' rules (their normwise bound included).
A candidate that skips or shortens the work of any timed call, or carries work from one call to the next, gets
`incorrect`, whatever it knows of trialtui's code, seeds or call indices.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from trialtui.core.job_spec import BenchSpec
from trialtui.core.json_types import number
from trialtui.core.kernel_split import LIBRARY_SHARE  # the one threshold, the bench's split and the profile's
from trialtui.core.result import flag
from trialtui.core.roofline import impossible_message, physical_floor
from trialtui.runner import batch_clock, cuda_ipc, fresh_inputs, landing, library_split, timed_work
from trialtui.runner.candidate_requests import CandidateFailed, CandidateLink, Deadline
from trialtui.runner.job_progress import Splits
from trialtui.runner.judging import check_timed, timing_truth
from trialtui.runner.tensors import clone, nbytes
from trialtui.runner.timed_batch import KEEP_BYTES, HarnessCost, Layout, Yardstick, harness_overhead_us
from trialtui.runner.timing import WIDE, Band

COPIED_INLINE = ("; its outputs share memory across calls, so each was copied out before the next call, on this clock: "
                 "a new tensor per call is copied once the batch is done)")
GO_STALL_S = 1.0  # a gated batch not queued by then is started anyway (runner/go_gate.LIMIT_NS is far longer)


Judge = Callable[[Any, Any, Any, str], None]  # (expected, output, inputs, where): CandidateFailed, incorrect, if wrong


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
    flush_words: torch.Tensor | None = None  # the keyed flush's words (timing.Bencher.flush): each call's flush is in its hash
    draws: random.Random = field(default_factory=random.SystemRandom)
    rebuilt: fresh_inputs.Refresher = field(init=False)  # the checker's own copies, made new call by call
    stages: dict[str, float] = field(default_factory=lambda: {"request": 0.0, "copy": 0.0})  # seconds, all batches
    shared: cuda_ipc.Isolated | None = field(init=False, default=None)  # the ring, where it can be shared
    pad: landing.Pad = field(init=False)  # where each call's hash lands as the candidate's loop makes it
    landings: list[tuple[float, int]] = field(default_factory=list)  # (µs from the go, else the request, n) per batch
    unlanded: int = 0  # batches the candidate's process said it would land and did not (or not its hash)
    tails: list[tuple[float, int]] = field(default_factory=list)  # (µs from the last landing to the reply, n): copies deferred past it show
    gated: bool = False  # its batches start on the checker's go (runner/go_gate.py), as its process offered

    def __post_init__(self) -> None:
        self.rebuilt = fresh_inputs.Refresher([clone(s) for s in self.sets])
        self.pad = landing.Pad(self.keep)
        if cuda_ipc.available():
            try:
                self.shared = cuda_ipc.Isolated.empty(self.keep * self.layout.slot_bytes)
            except cuda_ipc.IpcError:
                self.shared = None

    @property
    def ring_wire(self) -> dict[str, Any] | None:
        """The ring's handle for the candidate's process, which writes every timed output into it; None where it
        cannot be shared (the candidate's process keeps a ring of its own, each reply carries it)."""
        return self.shared.meta() if self.shared is not None else None

    def __enter__(self) -> TimedCalls:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.shared is not None:
            self.shared.free()
            self.shared = None
        self.pad.close()

    def batch(self, start: int, n: int) -> Batch:
        seed = self.draws.getrandbits(62) or 1  # drawn here, per batch: told with the request, or behind a gate, its go
        size = n * self.layout.slot_bytes
        self.pad.arm(n)
        t0_ns, t0 = time.perf_counter_ns(), time.perf_counter()
        if self.gated:  # queued first, then started: the landing clock runs from the go
            opened: list[int] = []
            self.link.request("time_gated", timeout_s=self.deadline.left(), start=start, n=n,
                              meanwhile=lambda answered, deadline: self._go_if_stalled(answered, seed, opened))
            t0_ns = opened[0] if opened else self.pad.go(seed)  # no call's input exists before it
            reply, ring = self.link.request("time_done", timeout_s=self.deadline.left(), into="cuda",
                                            max_bytes=(0 if self.shared else size) + 2**20, meanwhile=self.pad.watch)
        else:
            reply, ring = self.link.request("time", timeout_s=self.deadline.left(), into="cuda", start=start, n=n,
                                            seed=seed, max_bytes=(0 if self.shared else size) + 2**20,
                                            meanwhile=self.pad.watch)
        t1_ns = time.perf_counter_ns()
        t1 = t1_ns / 1e9  # perf_counter's clock
        if self.shared is not None:  # the candidate's process wrote into our ring: ours alone from this copy on
            ring = self.shared.view()[:size].clone()  # whatever the reply carried is not looked at
            torch.cuda.synchronize()
        t2 = time.perf_counter()
        # the outputs are in this process's memory now: committed. From the go where gated (the host's launches,
        # all queued ahead of it, are not the calls' time: a 128 µs softmax's clock read 158 µs with them)
        wall_us = (time.perf_counter_ns() - t0_ns) / 1000.0
        self.link.hold()  # still while this process judges and measures, until its next request (docs/SECURITY.md)
        self.stages["request"] += t1 - t0  # the candidate's op and the round trip (phases_s: timing.batches.*)
        self.stages["copy"] += t2 - t1
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
        hashes = fresh_inputs.new_hashes(n, ring.device)  # each call's input follows from the output before it
        slot = self.layout.slot_bytes
        self.rebuilt.begin(seed)
        for call in range(n):  # its flush's fold, then its output's, as the candidate's loop took them
            if self.flush_words is not None:
                fresh_inputs.flush(self.flush_words, self.rebuilt.seed, hashes, call)
            self.layout.hash_into(ring[call * slot:(call + 1) * slot], hashes, call, fresh_inputs.digest)
        for call in range(n):
            self.check(start, call, seed, ring, hashes)
        del ring
        landed_us = self.pad.landed_us(t0_ns, landing.as_word(hashes[n - 1]))
        if landed_us is not None:
            self.landings.append((landed_us, n))
            self.tails.append(((t1_ns - self.pad.seen[0]) / 1000.0, n))
        else:
            self.unlanded += 1
        return Batch(start, [float(x) for x in samples], wall_us)

    def _go_if_stalled(self, answered: Callable[[], bool], seed: int, opened: list[int]) -> None:
        """The go, written anyway where the candidate's process has not said its batch is queued in GO_STALL_S
        (a launch queue full behind the gate); `opened` gets its time."""
        until = time.monotonic() + GO_STALL_S
        while not answered():
            if time.monotonic() > until:
                opened.append(self.pad.go(seed))
                return
            time.sleep(20e-6)

    def check(self, start: int, call: int, seed: int, ring: torch.Tensor, hashes: torch.Tensor) -> None:
        which = call % len(self.sets)
        self.rebuilt.before(call, which, hashes)  # this call's input, in copies of the sets made once
        inputs = self.rebuilt.sets[which]
        with torch.no_grad():
            expected = self.reference(clone(inputs))
        output = self.layout.unpack(ring, call, expected)
        self.judge(expected, output, inputs, f"timed call {start + call + 1} (input set {which + 1}, made new for it)")

    def overhead_us(self, bencher: Any, batches: tuple[int, int], graphed: bool) -> HarnessCost:
        """`harness_overhead_us` into this job's ring."""
        return harness_overhead_us(checker_copies(self.sets, bencher), self.reference, self.layout, bencher, batches,
                                   self.shared.view() if self.shared is not None else None, graphed=graphed)


@dataclass
class TimedSetup:
    """The timed case as the problem alone decides it: the same for every candidate, so a prepared
    checker (runner/prepared.py) can measure the harness's own cost on it before the save arrives."""

    sets: list[Any]  # the input sets the timed calls rotate over (two where one fits in L2)
    ref_call: Any  # the reference's call at the timed case (loader.Call)
    layout: Layout  # the output's structure: the ring's slots
    work: dict[str, float]  # the least traffic (and, asked later, FLOPs) any kernel must do
    batches: tuple[int, int]  # the candidate's two batch sizes
    dtype: str  # the problem's, as its form names it from the inputs (runner/forms: GPU MODE's are its own)

    @classmethod
    def of(cls, reference, case, props) -> TimedSetup:
        sets = [reference.make_inputs(case, 0)]
        if nbytes(sets[0]) * 2 < getattr(props, "L2_cache_size", 0):
            sets.append(reference.make_inputs(case, 1))  # rotate when inputs fit in L2
        ref_call = reference.call(case, 0)
        output, work = timed_work.output_and_bytes(ref_call, clone(sets[0]))  # the sets are one case: one output structure, one amount of work
        layout = Layout.of_output(output, sets[0] if reference.kind.judges_values else None)  # its own check judges
        return cls(sets, ref_call, layout, work, layout.batch_sizes(min(KEEP_BYTES, props.total_memory // 16)),
                   reference.kind.dtype_of(reference, sets[0]))


def overhead_at(reference, case, bencher: Any) -> HarnessCost:
    """`harness_overhead_us` at a case as the timed phase would set it up: what a prepared checker measures."""
    setup = TimedSetup.of(reference, case, torch.cuda.get_device_properties(reference.device))
    return harness_overhead_us(checker_copies(setup.sets, bencher), setup.ref_call.fn, setup.layout, bencher, setup.batches)


def checker_copies(sets: list[Any], bencher: Any) -> fresh_inputs.Refresher:
    """Copies of the case's input sets, made new call by call as the candidate's loop makes its own (timed_batch)."""
    return fresh_inputs.Refresher([clone(s) for s in sets], flush_words=bencher.flush)


@dataclass
class TimedPhase:
    """The candidate (in its process) and the baselines (here, out of its reach) timed in alternating batches, same
    method and inputs, at one case; the candidate's number checked against this process's clocks, the physical floor
    and the library's share of the work. `own_kernels`: the correctness runs launched kernels of the candidate's own,
    so the timed calls must too. `warm_baselines`: baselines a prepared checker compiled and ran at this case
    (runner/prepared.py), `bencher` the timing state it made, `overhead_us` the harness's cost it measured."""

    spec: BenchSpec
    reference: Any  # runner/loader.Reference
    link: CandidateLink
    deadline: Deadline
    facts: Any  # runner/checker.Facts: shown every reply
    progress: Callable[..., None]
    splits: Splits
    device: Any
    own_kernels: bool = True
    warm_baselines: dict[str, Any] = field(default_factory=dict)
    bencher: Any = None  # runner/timing.Bencher
    overhead_us: float | None = None
    ahead_landing_us: float | None = None  # the same on the landing clock (HarnessCost.landing_us)
    flags: list[dict[str, str]] = field(default_factory=list)
    graphed: bool = False  # each timed call's sequence a CUDA graph in the candidate's process (timed_batch.capture)
    prepared_reply: dict[str, Any] = field(default_factory=dict)  # the candidate's answer to prepare_timing
    yardstick: Any = None  # runner/timed_batch.Yardstick: the reference's batches beside the candidate's
    reference_loop: dict[str, float] | None = None  # what it measured (Yardstick.figures)
    band: Band = WIDE  # the confirmation band: timing.NARROW where the harness's cost was measured beside
    landing: dict[str, Any] | None = None  # the landing clock's figures (runner/landing.py)
    gated: bool = False  # the candidate's batches start on the checker's go (runner/go_gate.py)
    landed_harness_us: float | None = None  # the harness's cost on the landing clock, where it confirms
    norm_of: Callable[[Any], Any] = lambda case: None  # runner/checker.Checker.timed_norm: the untimed normwise rule

    @classmethod
    def of(cls, checker: Any, device: Any, own_kernels: bool) -> TimedPhase:
        """The timing of a job's checker (runner/checker.Checker), with what a warm checker made ahead for it."""
        warm = checker.prepared
        harness = warm.harness if warm else None  # measured ahead (runner/prepared.py), else in the job
        return cls(checker.spec, checker.reference, checker.link, checker.deadline, checker.facts, checker.progress,
                   checker.splits, device, own_kernels=own_kernels, warm_baselines=warm.baselines if warm else {},
                   bencher=warm.bencher if warm else None, overhead_us=harness and harness.per_call_us,
                   ahead_landing_us=harness and harness.landing_us, norm_of=checker.timed_norm)

    def run(self, case: Any) -> tuple[dict, dict, list]:
        """(the candidate's figures, the baselines', the flags)."""
        from trialtui.runner import timing

        props = torch.cuda.get_device_properties(self.device)
        setup = TimedSetup.of(self.reference, case, props)
        self.splits.mark("timing.work")
        self.bencher = self.bencher or timing.Bencher.for_device(self.device)
        self.splits.mark("timing.bencher")
        ref_call = setup.ref_call
        timed = TimedCalls(self.link, self.deadline, setup.sets, ref_call.fn, setup.layout, see=self.facts.see,
                           keep=setup.batches[-1], flush_words=self.bencher.flush,
                           judge=lambda expected, output, inputs, where, norm=self.norm_of(case): check_timed(
                               self.spec, self.reference, expected, output, inputs,
                               lambda: timing_truth(self.reference, ref_call, inputs), where, norm))  # norm: looked up once
        with timed:  # the ring of timed outputs is freed however timing ends
            self._prepare_candidate(timed, setup, case)
            given = dict(self.spec.given_baselines)
            with torch.no_grad():
                fns = self._baselines(setup, given)
                samples, walls, pair_us, flush_us = self._loop(timed, setup, fns)
                self.progress(phase="kernel_time")
                reply, _ = self.link.request("kernel_time", timeout_s=self.deadline.left(), into="cuda")
                self.facts.see(reply)
                self.splits.mark("timing.kernel_time")
            for stage, seconds in timed.stages.items():  # inside timing.loop: where each batch's fixed cost goes
                self.splits.add(f"timing.batches.{stage}", seconds)
        stats = {name: timing.summarize(timing.less_empty_pair(s, pair_us.get(name, pair_us["empty"])))
                 for name, s in samples.items()}
        cand = self._candidate(stats.pop("candidate"), walls, reply, pair_us["candidate"], flush_us)
        self._weigh(cand, setup, props, [*stats.values(), *given.values()])
        mismatch = timing.mismatch_flag(cand, self.overhead_us)
        if mismatch:
            self.flags.append(mismatch)
        baselines = {kind: {**s, "cached": False} for kind, s in {**stats, **given}.items()}
        return cand, baselines, self.flags

    def _prepare_candidate(self, timed: TimedCalls, setup: TimedSetup, case: Any) -> None:
        """The candidate's process gets the sets and the flush's words, warms up and captures its loop."""
        payload: dict[str, Any] = {"input_sets": setup.sets, "seed": 0, **setup.ref_call.payload,
                                   "flush_words": self.bencher.flush}  # a copy crosses: its loop flushes through it
        reply, _ = self.link.request("prepare_timing", payload, timeout_s=self.deadline.left(), into="cuda",
                                     cuda_graph=self.spec.cuda_graph, layout=setup.layout.to_wire(),
                                     keep=setup.batches[-1], ring=timed.ring_wire, landing=timed.pad.wire())
        timed.pad.unlink()  # mapped there by now, or never
        self.splits.mark("timing.prepare_candidate")
        self.facts.see(reply)
        self.prepared_reply, self.graphed = reply, reply.get("graphed") is True
        self.link.hold()  # still while this process measures the flush, the event pair, the harness, the baselines
        timed.gated = self.graphed and reply.get("gated") is True  # its batches start on our go (runner/go_gate.py)
        self.gated = timed.gated
        if reply.get("launches") == 0 and self.own_kernels:
            self.flags.append(flag("fallback", f"no kernel of the candidate's own ran at the timed size {case or '(defaults)'} "
                                   "(it did at the test sizes): it falls back to PyTorch or a library there, so the number is not its kernel's"))

    def _baselines(self, setup: TimedSetup, given: dict[str, Any]) -> dict[str, list]:
        """Each baseline bound to each input set, warmed up (torch.compile and cuDNN autotuning outside the
        numbers), as CUDA graphs where the spec times them so."""
        from trialtui.runner import timing

        fns: dict[str, list] = {}
        for kind in self.spec.baselines:
            if kind in given:
                continue
            ref_fn = setup.ref_call.fn
            fn = self.warm_baselines.get(kind) or (torch.compile(ref_fn) if kind == "compile" else ref_fn)
            fns[kind] = [_bind(fn, s) for s in setup.sets]
        for calls in fns.values():
            for call in calls:
                call()
                call()
        torch.cuda.synchronize()
        if self.spec.cuda_graph:
            fns = {name: [timing.cuda_graph_call(c) for c in calls] for name, calls in fns.items()}
        return fns

    def _loop(self, timed: TimedCalls, setup: TimedSetup, fns: dict[str, list]) -> tuple[dict, list, dict, float]:
        """The alternating loop, timed again once where it was disturbed: (samples per name, the candidate's
        batches' walls, each name's empty event pair, the flush's cost)."""
        from trialtui.runner import timing

        bencher, held_up = self.bencher, None  # held_up: its own loops, by another process (runner/loop_rhythm.py)
        flush_us, empty_us = bencher.flush_cost_us(), bencher.empty_pair_us()
        pair_us = {"empty": empty_us, "candidate": bencher.graph_pair_us() if self.graphed else empty_us}
        self.splits.mark("timing.baselines_warm_up")
        if self.overhead_us is None or not self.graphed:  # else a prepared checker measured it on this very setup
            self.overhead_us, held_up, self.ahead_landing_us = timed.overhead_us(bencher, setup.batches, self.graphed)
        self.splits.mark("timing.overhead")
        attempt_walls: list[tuple[float, int, list[float]]] = []

        def candidate_batch(start: int, n: int) -> tuple[list[float], float]:
            batch = timed.batch(start, n)
            attempt_walls.append((batch.wall_us, n, []))
            if self.yardstick is None and self._short(attempt_walls):
                self.yardstick = self._yardstick(setup, pair_us["candidate"])
            if self.yardstick:
                self.yardstick.batch(n)  # the reference's own batch of the same size, right after, under the same clocks
            return batch.samples, batch.wall_us

        def first_number(so_far: dict[str, list[float]], walls_so_far: list) -> None:
            self.progress(**timing.preliminary({name: timing.less_empty_pair(s, pair_us.get(name, empty_us))
                                                for name, s in so_far.items()}))

        self.splits.mark("timing.prepare")
        disturbed = None
        for attempt in range(2):  # a disturbed loop is timed again once; disturbed twice, it is flagged
            phase = "timing" if attempt == 0 else "timing_again"  # the TUI shows "timing again 40 runs"
            if attempt and held_up:
                self.overhead_us, held_up, self.ahead_landing_us = timed.overhead_us(bencher, setup.batches, self.graphed)
            flush_us = bencher.flush_cost_us() if attempt else flush_us  # its own before: one slow read is not twice noise
            for kept in (attempt_walls, timed.landings, timed.tails):
                kept.clear()
            timed.unlanded = 0
            if self.yardstick:
                self.yardstick.restart()
            samples, walls = timing.time_alternating(
                bencher, candidate_batch, fns, on_run=lambda r, phase=phase: self.progress(phase=phase, runs=r),
                batches=setup.batches, on_preliminary=first_number if attempt == 0 else None,
            )
            disturbed = "; ".join(filter(None, (timing.disturbance(samples, flush_us, bencher.flush_cost_us()), held_up,
                                                 self.yardstick and self.yardstick.disturbance()))) or None
            if disturbed is None:
                break
        if disturbed is not None:
            self.flags.append(flag("noisy", f"timed twice, disturbed both times: {disturbed}; the number is not this "
                                   "kernel's alone"))
        self._settle_band(timed, walls, setup, pair_us["candidate"])
        self.splits.mark("timing.loop")
        return samples, walls, pair_us, flush_us

    def _settle_band(self, timed: TimedCalls, walls: list, setup: TimedSetup, pair_us: float) -> None:
        """The band the candidate's events are held to and the clock: the wide band, or for a short call the narrow
        one (the reference's loop beside) or, captured as graphs, the landing clock's; on the landing clock."""
        from trialtui.runner import timing

        short = self._short(walls, timed.landings)  # on the whole loop's clock: one that looked long early is judged here
        if short and self.yardstick is None:
            self.yardstick = self._yardstick(setup, pair_us)
        if short and self.yardstick:
            self.yardstick.complete(setup.batches)  # where it started late: the batches it lacks, right after
        beside = self.yardstick.harness_us() if short and self.yardstick else None
        # calls are judged on the landing clock (no reply, no slope to tilt), from the go or, where its process declined
        # the gate or could not be captured, from the request (a clock no shorter). A captured reference loop copies
        # after its landings (timed_batch.Captured), an eager one before each hash as an eager candidate's, so no copy
        # is taken off the clock: a call whose process copies call by call (it shares memory across calls) pays its own
        deferred, after = self.prepared_reply.get("deferred") is True, bool(self.yardstick) and self.yardstick.deferred
        landed = self.yardstick.landing_harness_us() if short and (after or not self.graphed) else None
        if self.yardstick:
            self.reference_loop = self.yardstick.figures()
            self.yardstick.close()
        self.landing = {"per_call_us": landing.landing_per_call_us(timed.landings), "batches": list(timed.landings),
                        "unlanded": timed.unlanded, "accepted": self.prepared_reply.get("landing") is True,
                        "gated": self.gated, "gate_refused": str(self.prepared_reply.get("gate_refused") or "")[:300] or None,
                        "copies_after": deferred, "tails": list(timed.tails)}  # tails: its reply after its last landing
        if beside is not None:  # measured beside the candidate's batches: the narrow band
            self.overhead_us, self.band = beside, timing.NARROW
        if landed is not None:  # the landing clock's band (eagerly the narrow one); where a batch did not land, none
            self.landed_harness_us, self.band = landed, timing.LANDED if self.graphed else timing.NARROW
        elif self.ahead_landing_us is not None:  # a long call: the landing clock less the harness measured ahead
            self.landed_harness_us = self.ahead_landing_us
        self.landing["harness_us"] = self.landed_harness_us  # what the landing clock's figure is taken less

    def _short(self, walls: list, landings: list | None = None) -> bool:
        """Under YARDSTICK_BELOW_US less the harness measured ahead, on the clock the call is judged on (held back to
        look long, it reads as long there too), the landing clock where it landed, else the reply's."""
        from trialtui.runner import timing

        if landings and self.ahead_landing_us is not None:
            return landing.landing_per_call_us(landings) - self.ahead_landing_us < timing.YARDSTICK_BELOW_US
        per_call = batch_clock.checker_per_call_us(walls) if len({n for _, n, _ in walls}) > 1 else None
        return per_call is not None and per_call - (self.overhead_us or 0.0) < timing.YARDSTICK_BELOW_US

    def _yardstick(self, setup: TimedSetup, pair_us: float) -> Any:
        """The reference's loop beside the candidate's batches; False where it cannot loop as they do."""
        yardstick = Yardstick(checker_copies(setup.sets, self.bencher), setup.ref_call.fn, setup.layout, self.bencher,
                              setup.batches[-1], self.graphed, pair_us)
        return yardstick if yardstick.usable else False

    def _candidate(self, claimed: dict[str, Any], walls: list, reply: dict[str, Any], pair_us: float,
                   flush_us: float) -> dict[str, Any]:
        """The candidate's figures: its events where the checker's clock confirms them, else the clock's."""
        from trialtui.runner import timing

        overhead_us = self.overhead_us
        altered = timing.short_of_harness(walls, overhead_us)
        if altered:
            self.flags.append(flag("timing-patched", altered))
        if self.landed_harness_us is None:
            cand = timing.confirmed_stats(claimed, walls, overhead_us, self.band)
        elif self.landing["unlanded"]:  # a batch whose last hash did not land (or no pad taken): claims stand on nothing
            cand = timing.untilted_stats(claimed, walls, overhead_us)
        else:
            cand = timing.landed_stats(claimed, self.landing["batches"], self.landed_harness_us, self.band)
        cand["confirm_band"] = {"slack_us": self.band.slack_us, "tol": self.band.tol}
        cand["reference_loop"] = self.reference_loop  # the harness's cost beside it, on the reference's own call
        cand["landing"] = self.landing  # the clock from each request to its last hash's landing, per call
        cand["kernel_us"], cand["host_wall_us"] = None, number(reply.get("host_wall_us"))  # kernel time: `trialtui profile`'s
        cand["cuda_graph"] = self.spec.cuda_graph
        cand["graphed"] = self.graphed  # its timed calls replayed as CUDA graphs of the whole sequence, host launches out of them
        cand["graph_refused"] = str(self.prepared_reply.get("graph_refused") or "")[:300] or None
        cand["empty_pair_us"] = pair_us  # taken off every event sample (the baselines': their own, eager)
        how = "in a CUDA graph of each call" if self.graphed else "around each call, launched eagerly"
        clock = "the landing clock" if self.landed_harness_us is not None else "the checker's clock"  # runner/landing.py
        cand["label"] = (f"GPU, CUDA events {how} less their empty pair ({pair_us:.1f} µs), L2 flushed, median, within "
                         f"{self.band.slack_us:g} µs and {self.band.tol:.0%} of {clock}{timing.raised_note(cand)}" if cand["confirmed"] else
                         f"GPU, {clock} per call, L2 flushed, {'its fastest large batch' if 'batches_median_us' in cand else 'median'} "
                         "(the candidate's own events were not confirmed"
                         + (COPIED_INLINE if self.graphed and self.landed_harness_us is not None and not self.landing["copies_after"] else ")"))
        cand["peak_mem_bytes"] = number(reply.get("peak_mem_bytes"))
        split = library_split.reported_split(reply.get("kernels"))
        cand["kernels"] = split
        if split is not None and split["own_share"] < LIBRARY_SHARE:
            names = ", ".join(name.split("(")[0][:60] for name, _ in split["library_top"][:3])
            self.flags.append(flag("fallback", f"library kernels did {1 - split['own_share']:.0%} of the GPU time of the timed "
                                   f"calls ({names}); the candidate's own kernels {split['own_share']:.0%}: the number is "
                                   "mostly not its kernel's"))
        cand["checker_wall_us_per_call"] = batch_clock.wall_per_call(walls)
        cand["checker_us_per_call"] = batch_clock.checker_per_call_us(walls)
        cand["checker_fixed_us"] = timing.fixed_cost_us(walls)  # each batch's own cost (request, reply): held under FIXED_CAP_US
        cand["flush_us"] = flush_us
        cand["overhead_us"] = overhead_us  # per call besides the call (flush, new inputs, the output's copies): off the checker's clock
        cand["checked_calls"] = sum(n for _, n, _ in walls)  # every timed call's output was judged
        return cand

    def _weigh(self, cand: dict[str, Any], setup: TimedSetup, props: Any, baselines: list[dict[str, Any]]) -> None:
        """The candidate's headline against the physical floor: below it, `impossible`."""
        work = setup.work
        fastest = min((b["median_us"] for b in baselines if b.get("median_us")), default=None)
        if fastest is not None and cand["median_us"] < fastest:  # no floor lies above a baseline that ran the work
            work["flops"] = timed_work.flops(setup.ref_call, setup.sets[0])
        floor = physical_floor(work["flops"], work["min_bytes"], setup.dtype, props.name, self.spec.allow_tf32, work["written_bytes"])
        cand["work"] = {**work, "floor_us": floor.floor_us if floor else None, "floor_gpu": floor.gpu if floor else None}
        impossible = impossible_message(floor, cand["median_us"]) if floor else None
        if impossible:
            self.flags.append(flag("impossible", impossible))


def _bind(fn, inputs):
    return lambda: fn(inputs)
