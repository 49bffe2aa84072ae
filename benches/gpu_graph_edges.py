"""On the H200: what a CUDA graph adds around a kernel between two event records (issue 34's tiny kernels).

    OUT=/tmp/edges python benches/gpu_graph_edges.py        # about 60 s on one H200

The timed loop captures each call as a graph: start event, the call's kernels, end event. An empty pair
(start, end with nothing between) reads about 1.3 µs, and a one-kernel call read 0.5-0.8 µs over ncu's
gpu__time_duration after that pair was taken off (h200-2026-12-03g tiny.json). This script measures, for
a null Triton kernel and an add at 4k, 1M and 16M elements, the graph's reading with m = 0..4 kernels
between the events (the median of 400 replays, L2 flushed before each, as in the loop), and the same
kernels' ncu durations, so that the model reading(m) = intercept + m·slope can be checked against ncu:
whether slope − ncu (the kernel-to-kernel edge) and intercept are what a correction would take off. Then
the same reading in the timed loop's arrangements (`arrangement`: new inputs before the flush, the output's
copy and read after the end event, graphs replayed back to back), each less its own empty reading and less
the harness's graphed empty pair: which of them holds the half microsecond the loop reads over ncu.
Prints a row per kernel and m, and per arrangement; writes $OUT/edges.json.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_tiny import median_duration_us  # noqa: E402

from trialtui.runner.timing import Bencher  # noqa: E402

OUT = Path(os.environ.get("OUT") or "gpu_edges_out")
KERNELS = """
import torch, triton, triton.language as tl

@triton.jit
def null_kernel(x_ptr):
    pass

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

def make(name):
    if name == "sleep0":
        return lambda: torch.cuda._sleep(0)
    if name == "null":
        x = torch.zeros(1, device="cuda")
        return lambda: null_kernel[(1,)](x)
    return parts(name)[0]

def parts(name):
    # an add's call and its tensors (inputs, output), for the arrangements around it
    n = {"add-4k": 4096, "add-1m": 1 << 20, "add-16m": 1 << 24}[name]
    x, y, o = (torch.rand(n, device="cuda") for _ in range(3))
    return (lambda: add_kernel[(triton.cdiv(n, 1024),)](x, y, o, n, BLOCK=1024)), (x, y), o
"""
NAMES = ("sleep0", "null", "add-4k", "add-1m", "add-16m")


def graphed(name: str, m: int, flush, replays: int = 400) -> float:
    import torch
    call = kernels().make(name)
    call()
    torch.cuda.synchronize()
    # events recorded by a graph must be external to be timed (as in Bencher.empty_pair_us)
    start, end = (torch.cuda.Event(enable_timing=True, external=True) for _ in "se")
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        call()
        torch.cuda.current_stream().synchronize()
        graph.capture_begin()
        flush()
        start.record()
        for _ in range(m):
            call()
        end.record()
        graph.capture_end()
    torch.cuda.synchronize()
    readings = []
    for _ in range(replays):
        graph.replay()
        end.synchronize()
        readings.append(start.elapsed_time(end) * 1000.0)
    return statistics.median(readings[20:])


def arrangement(name: str, kernel: bool, flush, shape: str, graphs: int = 32, rounds: int = 25) -> float:
    """The reading of one call of `name` (or of nothing) between two events, in the timed loop's arrangements:
    "alone" (flush, start, call, end: a graph replayed and waited for), "head" (its inputs written first, as
    the loop's new inputs are), "tail" (its output copied and read after the end event, as the loop's copy
    and hash do), "series" (alone, as `graphs` graphs replayed back to back, one wait) and "loop" (head and
    tail, back to back: the loop's own shape). The median over every event pair."""
    import torch
    call, inputs, out = kernels().parts(name)
    source = [torch.rand_like(t) for t in inputs]
    slot, sink = torch.empty_like(out), torch.zeros((), device="cuda")
    call()
    torch.cuda.synchronize()
    head, tail = shape in ("head", "loop"), shape in ("tail", "loop")
    count = graphs if shape in ("series", "loop") else 1
    stream, made = torch.cuda.Stream(), []
    with torch.cuda.stream(stream):
        for _ in range(count):
            start, end = (torch.cuda.Event(enable_timing=True, external=True) for _ in "se")
            graph = torch.cuda.CUDAGraph()
            graph.capture_begin()
            if head:
                for t, s in zip(inputs, source):
                    t.copy_(s)
            flush()
            start.record()
            if kernel:
                call()
            end.record()
            if tail:
                slot.copy_(out)
                torch.sum(slot, dim=0, out=sink)
            graph.capture_end()
            made.append((graph, start, end))
    torch.cuda.synchronize()
    readings = []
    for _ in range(rounds if count > 1 else 400):
        for graph, _, _ in made:
            graph.replay()
        torch.cuda.synchronize()
        readings += [start.elapsed_time(end) * 1000.0 for _, start, end in made]
    return statistics.median(readings[len(readings) // 20:])


def kernels():
    """KERNELS as a module of a file (Triton reads a jitted function's source from its file)."""
    path = OUT / "edge_kernels.py"
    if "edge_kernels" not in sys.modules:
        path.write_text(KERNELS)  # this run's, over any an earlier run left in OUT
    sys.path.insert(0, str(OUT))
    import edge_kernels
    return edge_kernels


def ncu_us(name: str) -> float | None:
    code = f"import sys\nsys.path.insert(0, {str(OUT)!r})\nfrom edge_kernels import make, torch\ncall = make({name!r})\nfor _ in range(12):\n    call()\ntorch.cuda.synchronize()\n"
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    done = subprocess.run([ncu, "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "-k",
                           "regex:null_kernel|add_kernel|spin|sleep", "--launch-skip", "3", "--csv", sys.executable, "-c", code],
                          capture_output=True, text=True, timeout=120)
    found = median_duration_us(done.stdout)
    if found is None:
        print(done.stdout[-800:], done.stderr[-800:], flush=True)
    return found


def main() -> int:
    import torch
    OUT.mkdir(parents=True, exist_ok=True)
    flush = Bencher.for_device(torch.device("cuda")).flush_l2  # the harness's own flush, before each timed call
    rows = []
    for name in NAMES:
        readings = {m: graphed(name, m, flush) for m in range(5)}
        slope = statistics.linear_regression(list(readings)[1:], list(readings.values())[1:]).slope
        intercept = readings[1] - slope
        ncu = ncu_us(name)
        row = {"kernel": name, "readings_us": readings, "slope_us": slope, "intercept_us": intercept, "ncu_us": ncu}
        rows.append(row)
        print(f"{name:8s} " + " ".join(f"m{m}={v:7.3f}" for m, v in readings.items())
              + f"  slope {slope:.3f} intercept {intercept:.3f}  ncu {ncu}  "
              + (f"m1-m0-ncu {readings[1] - readings[0] - ncu:.3f}  slope-ncu {slope - ncu:.3f}" if ncu else ""), flush=True)
    # the estimator a correction would use: around a kernel, the events add 2·S1 − S2 of a do-nothing kernel
    # (exact if consecutive kernels of a graph add nothing between them); compared with each kernel's ncu
    sleep = rows[0]["readings_us"]
    around = 2 * sleep[1] - sleep[2]
    print(f"events around a kernel (2·S1 − S2 of sleep0): {around:.3f} µs; empty pair {sleep[0]:.3f} µs", flush=True)
    for row in rows[1:]:
        if row["ncu_us"]:
            print(f"{row['kernel']:8s} one-kernel reading − around = {row['readings_us'][1] - around:.3f}  ncu {row['ncu_us']:.3f}"
                  f"  ratio {(row['readings_us'][1] - around) / row['ncu_us']:.3f}", flush=True)
    # the loop's arrangements: what the events read around nothing and around an add, each arrangement's
    # own empty reading taken off (the harness takes off a pair measured as "series" of flush, start, end)
    bencher = Bencher.for_device(torch.device("cuda"))
    harness_pair = bencher.empty_pair_us(graphed=True)
    print(f"the harness's graphed empty pair: {harness_pair:.3f} µs", flush=True)
    shapes = {}
    for name in ("add-4k", "add-1m"):
        ncu = next(r["ncu_us"] for r in rows if r["kernel"] == name)
        for shape in ("alone", "head", "tail", "series", "loop"):
            empty, full = (arrangement(name, k, flush, shape) for k in (False, True))
            shapes[f"{name}/{shape}"] = {"empty_us": empty, "reading_us": full, "ncu_us": ncu}
            print(f"{name:8s} {shape:7s} empty {empty:6.3f}  reading {full:7.3f}  less empty {full - empty:7.3f}  "
                  f"less harness pair {full - harness_pair:7.3f}  ncu {ncu}", flush=True)
    (OUT / "edges.json").write_text(json.dumps({"rows": rows, "harness_pair_us": harness_pair, "arrangements": shapes,
                                                "gpu": torch.cuda.get_device_name()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
