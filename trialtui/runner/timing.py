"""GPU timing a kernel engineer can trust: do_bench's method, GPU MODE's stopping rule, CUPTI kernel time.

Event time per call (L2 flushed before each, CUDA events around the call) gives the headline median;
CUPTI activity records through torch.profiler give the kernel time, which excludes launch gaps
and is what Nsight Compute's gpu__time_duration reports.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

MIN_RUNS = 10
TARGET_RSE = 0.005
MAX_RUNS = 500
TIME_CAP_S = 3.0
BATCH = 10
KERNEL_TIME_RUNS = 20
CALL_RANGE = "trialtui_call"


@dataclass
class Bencher:
    """Shared timing state: the L2 flush buffer and the input sets to rotate among."""

    flush: torch.Tensor

    @classmethod
    def for_device(cls, device: torch.device) -> Bencher:
        props = torch.cuda.get_device_properties(device)
        l2 = getattr(props, "L2_cache_size", 0) or 50 * 2**20
        return cls(flush=torch.empty(2 * l2 // 4, dtype=torch.int32, device=device))

    def time_round(self, calls: list[Callable[[], Any]]) -> list[tuple[Any, Any]]:
        """Enqueue one cold-L2, event-bracketed call of each function; read the events after a sync.

        Nothing synchronizes between calls, so the GPU never idles waiting for the host to launch
        (as in do_bench): the events measure GPU time, not Python's launch latency.
        """
        pairs = []
        for fn in calls:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            self.flush.zero_()
            start.record()
            fn()
            end.record()
            pairs.append((start, end))
        return pairs


def summarize(samples: list[float]) -> dict[str, Any]:
    """Median headline plus the spread figures: min, p20, p80, mean, std, n, relative standard error."""
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
        "rse": (std / n**0.5 / mean) if mean > 0 and n > 1 else 0.0,
    }


def rse(samples: list[float]) -> float:
    if len(samples) < 2:
        return float("inf")
    mean = statistics.fmean(samples)
    return statistics.stdev(samples) / len(samples) ** 0.5 / mean if mean > 0 else float("inf")


def time_interleaved(
    bencher: Bencher,
    fns: dict[str, list[Callable[[], Any]]],
    *,
    on_run: Callable[[int], None] | None = None,
    time_cap_s: float = TIME_CAP_S,
) -> dict[str, list[float]]:
    """Time every named function in turn, rotating among its input sets, until all are stable.

    Interleaving puts candidate and baselines under the same clocks and thermal state. Rounds are
    enqueued in batches and read after one sync; the stopping rule is checked between batches.
    """
    names = list(fns)
    samples: dict[str, list[float]] = {name: [] for name in names}
    started = time.monotonic()
    run = 0
    while True:
        pending = []
        for _ in range(BATCH):
            pending.append(bencher.time_round([fns[name][run % len(fns[name])] for name in names]))
            run += 1
        torch.cuda.synchronize()
        for pairs in pending:
            for name, (start, end) in zip(names, pairs):
                samples[name].append(start.elapsed_time(end) * 1000.0)
        if on_run is not None:
            on_run(run)
        if run >= MIN_RUNS and all(rse(s) < TARGET_RSE for s in samples.values()):
            break
        if run >= MAX_RUNS or time.monotonic() - started > time_cap_s:
            break
    return samples


def kernel_time_us(bencher: Bencher, calls: list[Callable[[], Any]], runs: int = KERNEL_TIME_RUNS) -> float | None:
    """Median per-call GPU kernel time from CUPTI records (no launch gaps), cold L2 like the events."""
    from torch.profiler import ProfilerActivity, profile, record_function

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(runs):
            bencher.flush.zero_()
            torch.cuda.synchronize()
            with record_function(CALL_RANGE):
                calls[i % len(calls)]()
            torch.cuda.synchronize()
    per_call = [_device_us(evt) for evt in prof.events() if evt.name == CALL_RANGE]
    per_call = [t for t in per_call if t > 0]
    return statistics.median(per_call) if per_call else None


def _device_us(evt) -> float:
    for attr in ("device_time_total", "cuda_time_total"):
        value = getattr(evt, attr, None)
        if value is not None:
            return float(value)
    return 0.0


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
        fn()
    return graph.replay
