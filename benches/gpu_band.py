"""On the H200: how far the checker's clock reads above a call's own events, kernel by kernel, on one case (issue 33).

    OUT=/tmp/band python benches/gpu_band.py [PROBLEM_DIR ...]     # written 2026-12-04, not yet run on a GPU

The headline is the candidate's events where the checker's clock confirms them: claim >= (clock's per-call
figure less the harness's own cost - 10 µs) x 0.92 (runner/timing.confirm). The 10 µs and 8 % are there
because the clock reads a few microseconds above honest events (the gap, `edge_us` here), and that band is
what a candidate that misreports its events can gain: up to 1.6x at 30 µs. A narrower band needs the gap
known for the case at hand. This script measures it, in the checker's process, through the very loop the
candidate's process runs (timed_batch.run_batch, captured as CUDA graphs), for the reference's own call and
for each candidate file of the problem that is `correct` (the exploit corpus's honest kernels and forgers),
each on the case's timed sizes: per callable the events' median less the graphed empty pair, the clock's
per-call slope over the two batch sizes, the harness's cost (timed_phase.harness_overhead_us) and
edge = clock - harness - events. If the reference's edge tracks the candidates' within a microsecond or two,
a checker that measures it can confirm against it with a small slack. Prints a row per callable; writes
$OUT/band.json. Default problems: tests/exploits/softmax_short_fp32 and tests/exploits/softmax_fp32.
"""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from trialtui.core.problem_dir import load_problem  # noqa: E402
from trialtui.engine.bench import problem_spec  # noqa: E402
from trialtui.runner import fresh_inputs, timing  # noqa: E402
from trialtui.runner.loader import Reference  # noqa: E402
from trialtui.runner.tensors import clone  # noqa: E402
from trialtui.runner.timed_batch import capture, run_batch  # noqa: E402
from trialtui.runner.timed_phase import TimedSetup, harness_overhead_us  # noqa: E402

OUT = Path(os.environ.get("OUT") or "gpu_band_out")
ROUNDS = 6
DEFAULTS = ("tests/exploits/softmax_short_fp32", "tests/exploits/softmax_fp32")


def candidate_fn(path: Path, init_inputs: list) -> object:
    """A candidate file's ModelNew as a call on one input set (the bench runs it in this process: it is a
    measurement of the loop, not a judgement of the candidate)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.ModelNew(*init_inputs).cuda()
    return lambda inputs: model(*inputs)


def measure(fn, setup: TimedSetup, bencher: timing.Bencher, overhead_us: float, pair_us: float) -> dict:
    """`fn` through the captured loop: its events and the clock around its batches."""
    copies = [clone(s) for s in setup.sets]
    refresher = fresh_inputs.Refresher(copies, flush_words=bencher.flush)
    calls = [(lambda inputs=inputs: fn(inputs)) for inputs in copies]
    ring = torch.empty(setup.batches[-1] * setup.layout.slot_bytes, dtype=torch.uint8, device="cuda")
    with torch.no_grad():
        for call in calls:
            call()
            call()
        run_batch(calls, refresher, bencher, setup.layout, ring, 1, len(calls))
        captured = capture(calls, refresher, bencher, setup.layout, ring, setup.batches[-1])
        walls, events = [], []
        for r in range(ROUNDS):
            for n in setup.batches:
                t0 = time.perf_counter()
                pending, mismatch = run_batch(calls, refresher, bencher, setup.layout, ring, 2 + r, n, captured)
                ring[:n * setup.layout.slot_bytes].clone()  # as the reply's copy into the checker's process
                torch.cuda.synchronize()
                walls.append(((time.perf_counter() - t0) * 1e6, n, []))
                events += [a.elapsed_time(b) * 1000.0 - pair_us for pairs in pending for a, b in pairs]
    clock = timing.checker_per_call_us(walls) or 0.0
    median = statistics.median(events)
    return {"events_us": median, "clock_us": clock, "harness_us": overhead_us, "edge_us": clock - overhead_us - median,
            "mismatch": mismatch}


def problem_rows(root: Path) -> list[dict]:
    problem = load_problem(root)
    spec = problem_spec(problem, "cuda")
    reference = Reference(spec.to_wire(), "cuda")
    case = spec.bench_cases[0]
    setup = TimedSetup.of(reference, case, torch.cuda.get_device_properties(0))
    bencher = timing.Bencher.for_device(torch.device("cuda"))
    overhead_us = harness_overhead_us(setup.sets, setup.ref_call.fn, setup.layout, bencher, setup.batches)
    try:
        pair_us = bencher.empty_pair_us(graphed=True)  # as the candidate's captured loop takes it off its events
    except Exception:  # noqa: BLE001 - a torch whose graphs cannot record external events: the eager pair
        torch.cuda.synchronize()
        pair_us = bencher.empty_pair_us()
    init_inputs = list(setup.ref_call.payload.get("init_inputs") or [])  # KernelBench's get_init_inputs()
    callables = {"reference": setup.ref_call.fn}
    for path in sorted(problem.candidates()):
        try:
            callables[path.name] = candidate_fn(path, init_inputs)
        except Exception as exc:  # noqa: BLE001 - a candidate this process cannot build: said, not fatal
            print(f"{root.name}/{path.name}: not built ({type(exc).__name__}: {exc})", flush=True)
    rows = []
    for name, fn in callables.items():
        try:
            row = {"problem": root.name, "callable": name, "case": case, **measure(fn, setup, bencher, overhead_us, pair_us)}
        except Exception as exc:  # noqa: BLE001 - e.g. a call that cannot be captured
            row = {"problem": root.name, "callable": name, "case": case, "error": f"{type(exc).__name__}: {exc}"}
            torch.cuda.synchronize()
        rows.append(row)
        print(f"{root.name:<20} {name:<24} " + (f"events {row['events_us']:8.2f}  clock {row['clock_us']:8.2f}  harness "
              f"{row['harness_us']:7.2f}  edge {row['edge_us']:6.2f} µs" if "error" not in row else row["error"]), flush=True)
    return rows


def main(argv: list[str]) -> int:
    if not torch.cuda.is_available():
        print("no CUDA device: this bench measures the GPU loop only")
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in argv or DEFAULTS:
        rows += problem_rows((ROOT / name).resolve())
    (OUT / "band.json").write_text(json.dumps({"device": torch.cuda.get_device_name(0), "rows": rows}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
