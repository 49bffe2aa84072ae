"""GPU timing a kernel engineer can trust: do_bench's method, GPU MODE's stopping rule.

Event time per call (L2 flushed before each, CUDA events around the call) gives the headline median;
the kernel time without launch gaps (Nsight Compute's gpu__time_duration) is `trialtui profile`'s, measured
in a process the candidate does not control.
"""

from __future__ import annotations

import random
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

from trialtui.core.result import flag
from trialtui.core.spread import IQR_SIGMAS, P20_P80_SIGMAS
from trialtui.core.spread import median_rse as median_rse_of
from trialtui.runner.batch_clock import checker_per_call_us
from trialtui.runner.gpu_wait import WAIT_NS
from trialtui.runner.landing import landing_per_call_us

MIN_RUNS = 10
TARGET_RSE = 0.005  # the median's relative standard error (from the IQR) the loop stops at
MAX_RUNS = 500
TIME_CAP_S = 3.0
BATCHES = (10, 40)  # the candidate's batch sizes, alternating (fewer where its kept outputs are large: runner/timed_batch.py): the checker's per-call time is their slope
MIN_BATCHES = 8  # four of each size: the slope's medians shrug off one slow round trip
# Wall-clock cross-check of the candidate's own timing: launch and round-trip allowance per call.
WALL_ALLOWANCE_US = 60.0
WALL_ALLOWANCE_FRAC = 0.3
# The candidate's events stand as the headline only this close to what the checker's own clock saw:
# claimed >= (clock's figure - CONFIRM_SLACK_US) * (1 - CONFIRM_TOL). Since every timed call runs as a
# CUDA graph with no wait and no host in the loop, the clock's per-call figure less the harness's work
# reads 4-12 % above honest events on the H200 (softmax fp32 8192²: 135.2-142.9 against 127.5-128.5 µs;
# bf16 GEMM 4096³ 203.1-204.5 against 195-196; fp32 add 16 M 56.4 against 45.4; fixtures/gpu/h200-2026-12-03g/h):
# all confirmed at 8 % and 10 µs. A forged report gains 1/(1-tol), 10 µs, and a skipped flush's time.
CONFIRM_TOL = 0.08
CONFIRM_SLACK_US = 10.0
# Where the checker ran the reference's own call through the same loop beside every batch of the candidate's
# (runner/timed_batch.Yardstick), the harness's cost is known under the same clocks, and the band narrows.
# In the checker's process honest kernels' clock less that and their events stayed within 1 µs of the
# reference's on 5-19 µs kernels, and at most 4.5 µs (3.5 %) above it on 128-990 µs ones (benches/gpu_band.py,
# fixtures/gpu/h200-2026-12-04f/band_log.txt); through
# the candidate's process the request's round trip (about 1 ms, its jitter over 75 calls) adds up to 3.6 µs
# (a 5.7 µs fp32 add of 1 M) and 9 µs (a 197 µs GEMM): fixtures/gpu/h200-2026-12-04f.
YARDSTICK_TOL = 0.06
YARDSTICK_SLACK_US = 4.0
# Only calls shorter than this (the clock's figure less the harness's) get it: above it the wide band already
# holds a forged report under 1 / ((1 - 10 / 80) x 0.92) = 1.24x, and the reference's batches would cost the
# loop their time (0.16 s of the 135 µs softmax's save → number, h200-2026-12-04g).
YARDSTICK_BELOW_US = 80.0
# Where the candidate's batches also started on the checker's go and their last hashes landed in its memory
# (runner/go_gate.py, runner/landing.py), the clock holds no reply and no request: the landing clock's figure
# less the harness's on the same clock beside (the reference's loop in the checker's process, from its first
# launch). Without the gate the request's way in added 330-520 µs a batch over the checker's own loop (3.3-5.2 µs
# a call at 100); behind it honest short kernels read within 2.1 µs of their events (H200, 2026-12-04).
LANDED_TOL = 0.04
LANDED_SLACK_US = 2.0


@dataclass(frozen=True)
class Band:
    """How far under the checker's clock (less the harness's cost) the candidate's events may lie and stand."""

    slack_us: float
    tol: float

    def edge(self, seen_us: float) -> float:
        """The least claim it confirms against `seen_us`."""
        return (seen_us - self.slack_us) * (1 - self.tol)


WIDE = Band(CONFIRM_SLACK_US, CONFIRM_TOL)  # the harness's cost measured ahead, on a call that does nothing
NARROW = Band(YARDSTICK_SLACK_US, YARDSTICK_TOL)  # measured beside the candidate's batches (runner/timed_batch.Yardstick)
LANDED = Band(LANDED_SLACK_US, LANDED_TOL)  # and on the landing clock, every batch started on the checker's go
LEAD_PER_ROUND_NS = 40_000  # the GPU held this long a round of baselines before them: the host queues them all meanwhile
DRIFT = 0.10  # a baseline's quarter medians further apart than this: disturbed (timed again once); a GEMM's clock easing under its power limit moves less
FLUSH_DRIFT = 0.15  # the flush's own cost moved this much over the loop: likewise
EMPTY_PAIR_RUNS = 21
EMPTY_PAIR_CAP_US = 3.0  # an event pair around nothing: 1.3 µs on the H200 (its p20, 2026-12-02)
SHORT_TOL, SHORT_SLACK_US = 0.1, 10.0  # a loop this far under the harness's own is altered, not noisy


@dataclass
class Bencher:
    """Shared timing state: the L2 flush buffer and the input sets to rotate among."""

    flush: torch.Tensor  # L2's size of random int32 words, only read: by flush_l2, and by the timed loop's keyed flush
    sink: torch.Tensor  # where flush_l2's read lands
    waiter: Any = None  # made on the first `wait`

    @classmethod
    def for_device(cls, device: torch.device) -> Bencher:
        """The checker's: its words drawn from the system's entropy (the candidate's process gets a copy,
        `of_words`, and its timed loop flushes through them: runner/fresh_inputs.flush)."""
        props = torch.cuda.get_device_properties(device)
        l2 = getattr(props, "L2_cache_size", 0) or 50 * 2**20
        draw = torch.Generator(device=device)
        draw.manual_seed(random.SystemRandom().getrandbits(63))
        return cls.of_words(torch.randint(-2**31, 2**31, (l2 // 4,), dtype=torch.int32, device=device, generator=draw))

    @classmethod
    def of_words(cls, words: torch.Tensor) -> Bencher:
        """A bencher over words the checker drew; anything but a flat int32 tensor on a GPU is refused."""
        if not (isinstance(words, torch.Tensor) and words.dtype == torch.int32 and words.dim() == 1 and words.is_cuda
                and words.numel() >= 2**16):
            raise ValueError("the flush's words are not the checker's (a flat int32 tensor on the GPU of L2's size)")
        return cls(flush=words, sink=torch.zeros((), dtype=torch.int32, device=words.device))

    def wait(self) -> None:
        """The GPU busy for a fixed time while the host queues what follows (runner/gpu_wait.py): for the
        checker's own measure of an event pair, never inside the timed loop."""
        if self.waiter is None:
            from trialtui.runner.gpu_wait import Waiter

            self.waiter = Waiter(self.flush.device)
        self.waiter()

    def flush_l2(self) -> None:
        """Evict L2 by reading a buffer of its size, leaving it full of clean lines, as ncu's flush leaves it empty. A
        flush that writes (do_bench's `zero_()`) leaves dirty lines the timed call pays to write back: 7-14 % above ncu
        for fp32 adds of 0.8 to 200 MB (H200, h200-2026-12-02d). Twice L2 read no closer to ncu and took 37 µs a call
        to this one's 23 (03i, 03j): time a rewritten loop can skip and work in (docs/SECURITY.md, "Not covered")."""
        torch.sum(self.flush, dim=0, dtype=torch.int32, out=self.sink)

    def flush_cost_us(self, runs: int = 20, groups: int = 3) -> float:
        """GPU time of one L2 flush (the part of a timed call's wall time that is not the call): the fastest of `groups`
        back-to-back groups, as a GPU idle while the host prepared reads its first flushes slow (53.9 µs, then 25.3: H100)."""
        events = [torch.cuda.Event(enable_timing=True) for _ in range(groups + 1)]
        events[0].record()
        for event in events[1:]:
            for _ in range(runs):
                self.flush_l2()
            event.record()
        events[-1].synchronize()
        return min(a.elapsed_time(b) for a, b in zip(events, events[1:])) * 1000.0 / runs

    def keep_busy(self, flushes: int = 2000) -> None:
        """About 50 ms of flushes back to back, so a loop's first rounds run at its others' clocks: an idle H100 ran an
        eager GEMM 1024³ at 31.5 µs a call in a loop's first quarter, 9.3 after (`noisy` twice: h100-2026-12-05f)."""
        for _ in range(flushes):
            self.flush_l2()
        torch.cuda.synchronize()  # done before the candidate's first batch: its context is not time-sliced with these

    def graph_pair_us(self) -> float:
        """The empty pair as a CUDA graph records it, or the eager one where this process cannot capture it."""
        try:
            return self.empty_pair_us(graphed=True)
        except Exception:  # noqa: BLE001 - no external events in this torch: the eager pair, a little larger
            torch.cuda.synchronize()
            return self.empty_pair_us()

    def empty_pair_us(self, runs: int = EMPTY_PAIR_RUNS, graphed: bool = False) -> float:
        """What an event pair adds to every sample: the pair around nothing, in the timed loop's order (the
        GPU ahead of the host, L2 flushed, start, end), taken off every sample so that a 2 µs kernel reads
        as its kernel time (ncu's gpu__time_duration). `graphed`: recorded by a CUDA graph, as the
        candidate's timed calls are (timed_batch.capture). The low quantile, at most EMPTY_PAIR_CAP_US:
        another program's work on the GPU can only lengthen it, never shorten it."""
        pairs = []
        if graphed:
            graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                graph.capture_begin()
                try:
                    for _ in range(runs):
                        start, end = (torch.cuda.Event(enable_timing=True, external=True) for _ in "se")
                        self.flush_l2()
                        start.record()
                        end.record()
                        pairs.append((start, end))
                finally:
                    graph.capture_end()
            torch.cuda.current_stream().wait_stream(stream)
            self.wait()
            graph.replay()
        else:
            for _ in range(runs):
                self.wait()
                pairs.extend(self.time_round([lambda: None]))
        torch.cuda.synchronize()
        seen = sorted(start.elapsed_time(end) * 1000.0 for start, end in pairs)
        return min(EMPTY_PAIR_CAP_US, seen[len(seen) // 5])

    def time_round(self, calls: list[Callable[[], Any]], outputs: list | None = None,
                   flush: bool = True) -> list[tuple[Any, Any]]:
        """Enqueue one cold-L2, event-bracketed call of each function; read the events after a sync.

        Nothing synchronizes between calls, and `time_alternating` holds the GPU (`wait`) while the host
        queues a batch of rounds: the events measure GPU time, not Python's launch latency. (With no lead, as in
        do_bench, a short eager call's dispatch can outlast the flush before it and land in its events: the suspected
        cause of a 19 % drift between the quarters of a loop of 18 µs softmaxes, H200, 04m.) With `outputs`,
        what each call returned is kept there (timed calls are checked like the others). `flush`: False
        where the caller flushed L2 itself (the candidate's timed loop, through the keyed flush).
        """
        pairs = []
        for fn in calls:
            start, end = (torch.cuda.Event(enable_timing=True) for _ in "se")
            if flush:
                self.flush_l2()
            start.record()
            out = fn()
            end.record()
            if outputs is not None:
                outputs.append(out)
            pairs.append((start, end))
        return pairs


def less_empty_pair(samples: list[float], empty_us: float) -> list[float]:
    """Event samples less the empty pair's time (never below a nanosecond: a median stays a divisor)."""
    return [max(1e-3, s - empty_us) for s in samples]


def summarize(samples: list[float]) -> dict[str, Any]:
    """Median headline plus the spread figures: min, p20, p80, mean, std, n, and the median's relative
    standard error from the p20-p80 band (core/spread.py: one outlier does not make it noise)."""
    ordered = sorted(samples)
    n = len(ordered)
    mean = statistics.fmean(ordered)
    std = statistics.stdev(ordered) if n > 1 else 0.0

    def q(p: float) -> float:
        return ordered[min(n - 1, int(round(p * (n - 1))))]

    return {
        "median_us": statistics.median(ordered),
        "min_us": ordered[0],
        "p20_us": q(0.2),
        "p80_us": q(0.8),
        "mean_us": mean,
        "std_us": std,
        "n": n,
        "rse": median_rse_of(q(0.2), q(0.8), P20_P80_SIGMAS, statistics.median(ordered), n) or 0.0,
    }


def time_alternating(
    bencher: Bencher,
    candidate_batch: Callable[[int, int], tuple[list[float], float]],
    fns: dict[str, list[Callable[[], Any]]],
    *,
    on_run: Callable[[int], None] | None = None,
    time_cap_s: float = TIME_CAP_S,
    on_preliminary: Callable[[dict[str, list[float]], list], None] | None = None,
    batches: tuple[int, ...] = BATCHES,
) -> tuple[dict[str, list[float]], list[tuple[float, int, list[float]]]]:
    """The candidate's batch (in its own process), then each baseline's batch here, until all are stable.

    Alternating batches keeps candidate and baselines under the same clocks and thermal state while
    the baselines stay out of the candidate's reach. Returns the samples per name and, per candidate
    batch, (wall µs seen from here, runs, its samples) for the cross-check. `on_preliminary` gets the
    samples so far once, as soon as there is one batch of each size (the checker's slope can confirm it).
    The loop stops at its noise bound: every median known to TARGET_RSE (robustly, from the IQR) and
    MIN_BATCHES candidate batches seen.
    """
    names = list(fns)
    samples: dict[str, list[float]] = {"candidate": [], **{name: [] for name in names}}
    walls: list[tuple[float, int, list[float]]] = []
    bencher.keep_busy()
    started, run = time.monotonic(), 0
    while True:
        size = batches[len(walls) % len(batches)]
        batch, wall_us = candidate_batch(run, size)
        samples["candidate"] += batch
        walls.append((wall_us, size, batch))
        pending = []
        for _ in range(-(-size * LEAD_PER_ROUND_NS // WAIT_NS)):  # the GPU ahead of the host, as for the empty pair
            bencher.wait()
        for i in range(size):
            pending.append(bencher.time_round([fns[name][(run + i) % len(fns[name])] for name in names]))
        torch.cuda.synchronize()
        for pairs in pending:
            for name, (start, end) in zip(names, pairs):
                samples[name].append(start.elapsed_time(end) * 1000.0)
        run += size
        if on_run is not None:
            on_run(run)
        if run >= MIN_RUNS and len(walls) >= MIN_BATCHES and all(median_rse(s) < TARGET_RSE for s in samples.values()):
            break
        if run >= MAX_RUNS or time.monotonic() - started > time_cap_s:
            break
        if on_preliminary is not None and run >= MIN_RUNS and len(walls) >= len(batches):
            on_preliminary({name: list(s) for name, s in samples.items()}, list(walls))
            on_preliminary = None
    return samples, walls


def drift(samples: list[float], parts: int = 4) -> float:
    """How far the medians of a timing's successive parts lie apart (largest over smallest, less one): a
    steady GPU keeps one kernel's within a percent or two; another program's work, or a clock that moved
    while it was timed, shows here even where the median looks settled."""
    medians = part_medians(samples, parts)
    return max(medians) / min(medians) - 1 if medians and min(medians) > 0 else 0.0


def part_medians(samples: list[float], parts: int = 4) -> list[float]:
    """The medians of a timing's successive parts; none where too few samples to split."""
    n = len(samples)
    if n < 3 * parts:
        return []
    return [statistics.median(samples[i * n // parts:(i + 1) * n // parts]) for i in range(parts)]


def disturbance(samples: dict[str, list[float]], flush_before_us: float, flush_after_us: float) -> str | None:
    """What says the timing was disturbed, from the checker's own measurements only (its baselines and
    its flush, never the candidate's samples): a message, or None when the GPU was steady."""
    seen = [f"{name} drifted {d:.0%} between quarters of the loop (their medians "
            f"{', '.join(f'{m:.1f}' for m in part_medians(s))} µs)" for name, s in samples.items()
            if name != "candidate" and (d := drift(s)) > DRIFT]
    if flush_before_us > 0 and abs(flush_after_us / flush_before_us - 1) > FLUSH_DRIFT:
        seen.append(f"an L2 flush took {flush_before_us:.1f} µs before the loop and {flush_after_us:.1f} µs after")
    return "; ".join(seen) or None


def median_rse(samples: list[float]) -> float:
    """The median's relative standard error, from the IQR: a few slow outliers (a clock ramp, a
    preempted launch) do not keep a stable kernel timing to the cap, as the mean's error would."""
    n = len(samples)
    if n < 4:
        return float("inf")
    ordered = sorted(samples)
    found = median_rse_of(ordered[(n - 1) // 4], ordered[(3 * (n - 1)) // 4], IQR_SIGMAS, statistics.median(ordered), n)
    return float("inf") if found is None else found


def preliminary(samples: dict[str, list[float]]) -> dict[str, Any]:
    """The progress line of a first median: the same quantity as the final headline (the candidate's event
    times, which the final keeps wherever the checker's clock confirms them) with its spread, and its
    speedups so far. Two batches are too few for the clock's slope: the final says whether it held."""
    cand = summarize(samples["candidate"])
    speedup = {name: statistics.median(s) / cand["median_us"] for name, s in samples.items()
               if name != "candidate" and s and cand["median_us"] > 0}
    return {"phase": "preliminary", "median_us": cand["median_us"], "p20_us": cand["p20_us"],
            "p80_us": cand["p80_us"], "n": cand["n"], "speedup": speedup}


def confirmed_stats(claimed: dict[str, Any], walls: list[tuple[float, int, list[float]]], overhead_us: float,
                    band: Band = WIDE) -> dict[str, Any]:
    """The candidate's figures as the headline may hold them: its own where the checker's clock confirms
    the median, else the checker's per-call times (one per batch, the batch's fixed cost taken out), with
    the candidate's under `claimed`."""
    per_call = checker_per_call_us(walls)
    _, confirmed = confirm(claimed["median_us"], per_call, overhead_us, band)
    if confirmed:
        return {**claimed, "confirmed": True}
    return unconfirmed_stats(claimed, walls, overhead_us)


def unconfirmed_stats(claimed: dict[str, Any], walls: list[tuple[float, int, list[float]]],
                      overhead_us: float) -> dict[str, Any]:
    """The checker's per-call times as the figures (one per batch, the batch's fixed cost taken out), the
    candidate's under `claimed`."""
    fixed = fixed_cost_us(walls)
    seen = [max(0.0, (wall - fixed) / n - overhead_us) for wall, n, _ in walls if n]
    return {**summarize(seen), "confirmed": False, "claimed": claimed}


def untilted_stats(claimed: dict[str, Any], walls: list[tuple[float, int, list[float]]],
                   overhead_us: float) -> dict[str, Any]:
    """`clock_stats` of each batch's whole wall where none landed (runner/landing.py): its request and reply stay in
    it, as no slope over two sizes (which the candidate's process, knowing each batch's size, can tilt) is taken."""
    return clock_stats(claimed, [(wall, n) for wall, n, _ in walls], overhead_us)


def clock_stats(claimed: dict[str, Any], batches: list[tuple[float, int]], harness_us: float) -> dict[str, Any]:
    """The checker's own figures, per batch of the largest size over its calls less the harness's: the headline their
    fastest (each did its calls' whole work; a way in, a held reply, the host descheduled only add), their median
    kept as `batches_median_us`, the candidate's under `claimed`."""
    large = max((n for _, n in batches), default=0)
    figures = summarize([max(0.0, us / n - harness_us) for us, n in batches if n and n == large])
    return {**figures, "median_us": figures["min_us"], "batches_median_us": figures["median_us"], "confirmed": False,
            "claimed": claimed}


def landed_stats(claimed: dict[str, Any], landings: list[tuple[float, int]], harness_us: float,
                 band: Band = LANDED) -> dict[str, Any]:
    """`confirmed_stats` on the landing clock (runner/landing.py), whose figure is the largest batches' fastest
    per call less the harness's (from the request, an ungated batch of 25 carries its way in over a quarter of the
    calls). The candidate's figures where it confirms them, raised to the clock's where they lie under it (the band
    is the clock's scatter, not the candidate's to spend: a claim at its edge gains nothing); else `clock_stats`."""
    per_call = landing_per_call_us(landings)
    _, confirmed = confirm(claimed["median_us"], per_call, harness_us, band)
    if confirmed:
        return {**raised(claimed, per_call - harness_us), "confirmed": True}
    return clock_stats(claimed, landings, harness_us)


def raised(stats: dict[str, Any], floor_us: float) -> dict[str, Any]:
    """Figures no lower than the checker's own `floor_us`: where their median lies under it, each moved up by the
    difference (the spread kept, `raised_us` saying by how much), the candidate's own under `claimed`."""
    lift = floor_us - stats["median_us"]
    if not lift > 0:
        return stats
    moved = {key: stats[key] + lift for key in ("median_us", "min_us", "p20_us", "p80_us", "mean_us") if key in stats}
    if {"p20_us", "p80_us", "n"} <= stats.keys():
        moved["rse"] = median_rse_of(moved["p20_us"], moved["p80_us"], P20_P80_SIGMAS, moved["median_us"], stats["n"]) or 0.0
    return {**stats, **moved, "raised_us": lift, "claimed": stats}


def raised_note(stats: dict[str, Any]) -> str:
    """The label's word on a confirmed claim raised to the clock's figure; empty where it stood as it was."""
    return f", raised {stats['raised_us']:.1f} µs to its figure" if stats.get("raised_us") else ""


def fixed_cost_us(walls: list[tuple[float, int, list[float]]]) -> float:
    """A batch's own cost besides its calls, as the checker's clock reads it (median over batches)."""
    per_call = checker_per_call_us(walls)
    if per_call is None:
        return 0.0
    costs = [wall - per_call * n for wall, n, _ in walls if n]
    return max(0.0, statistics.median(costs)) if costs else 0.0


def confirm(claimed_us: float, per_call_us: float | None, overhead_us: float, band: Band = WIDE) -> tuple[float, bool]:
    """The headline: the candidate's event median where the checker's clock bears it out, else the checker's.

    Each timed call is the call and the harness's work around it (the L2 flush, new inputs, copying its
    output out: `overhead_us`, measured by the checker); so the checker's per-call time less that is
    what the call took as the checker saw it. The candidate's events are confirmed when they are no
    better than that by more than `band` allows; otherwise the checker's figure is
    the number (a launch-bound kernel's includes its launch cost: time it under a CUDA graph).
    """
    if per_call_us is None:
        return claimed_us, False
    seen = max(0.0, per_call_us - overhead_us)
    if claimed_us >= band.edge(seen):
        return claimed_us, True
    return seen, False


def short_of_harness(walls: list[tuple[float, int, list[float]]], overhead_us: float) -> str | None:
    """A message when the candidate's timed loop ran faster per call than the checker's own loop around a
    call that does nothing: both do the harness's work per call (new inputs, an L2 flush, the output's
    copy and hash), so only a loop altered in the candidate's process (its flush skipped, work moved
    beside it) can. SHORT_TOL and SHORT_SLACK_US are the clock's own scatter."""
    per_call = checker_per_call_us(walls)
    if per_call is None or per_call >= overhead_us * (1 - SHORT_TOL) - SHORT_SLACK_US:
        return None
    return (f"the checker's clock saw {per_call:.0f} µs per timed call, less than its own loop around a call that does "
            f"nothing ({overhead_us:.0f} µs: new inputs, an L2 flush, the output's copy): the timed loop in the "
            "candidate's process was altered")


def mismatch_flag(cand: dict[str, Any], overhead_us: float) -> dict | None:
    """A flag when the candidate's own event times are far below what the checker's wall clock allows.

    Each timed call also flushes L2 and may wait on the host, so the wall clock per call is at least
    the event time and never much more than event time + flush + launch: a candidate reporting
    less GPU time than its batches took is lying, timing the wrong thing, or syncing the host each call
    (which serialises the harness's work with its own). Where the headline stands on those events (confirmed
    on the landing clock) that disqualifies (`timing-mismatch`); where it is already the clock's figure, the
    events bought nothing (a claim at the band's edge would have been confirmed lower), so it is said
    (`events-unconfirmed`) and the clock's figure stands: an honest call that syncs can still be best.
    """
    claimed = (cand.get("claimed") or cand)["median_us"]
    per_call = cand.get("checker_us_per_call")  # the batches' fixed cost (the request, the outputs' copy) taken out
    if per_call is None or per_call - overhead_us - WALL_ALLOWANCE_US - (1 + WALL_ALLOWANCE_FRAC) * claimed <= 0:
        return None
    seen = (f"the checker's clock saw {per_call:.1f} µs per timed call but the candidate's events say {claimed:.1f} µs "
            f"(the harness's own work per call {overhead_us:.1f} µs, allowance {WALL_ALLOWANCE_US:g} µs + "
            f"{WALL_ALLOWANCE_FRAC:.0%})")
    if cand.get("confirmed"):
        return flag("timing-mismatch", f"{seen}: its timing does not match the work it did")
    return flag("events-unconfirmed", f"{seen}: the number is the checker's clock, {cand['median_us']:.1f} µs a call, "
                "where a call syncs the host, with the harness's work the sync keeps from overlapping in it; a call "
                "with no host sync and no work its events miss is captured as a CUDA graph and timed by its events")


def host_wall_us(fn: Callable[[], Any], runs: int = 5) -> float:
    """Host wall clock around the call with a device-wide sync: catches work hidden on side streams."""
    samples = []
    for _ in range(runs):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(samples)


def cuda_graph_call(fn: Callable[[], Any]) -> Callable[[], Any]:
    """Capture a call into a CUDA graph so a few-microsecond kernel is timed without launch overhead."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static = fn()

    def replay() -> Any:
        graph.replay()
        return static  # the captured output, which each replay writes again: timed calls are checked

    return replay
