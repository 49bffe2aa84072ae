"""On the H200: how far the checker's clock reads above a call's own events, kernel by kernel, on one case (issue 33).

    OUT=/tmp/band python benches/gpu_band.py [PROBLEM_DIR[@SIZE=N@SIZE=N] ...]     # about 10 s a problem on the H200

The headline is the candidate's events where the checker's clock confirms them: claim >= (clock's per-call
figure less the harness's own cost - 10 µs) x 0.92 (runner/timing.confirm). The 10 µs and 8 % are there
because the clock reads a few microseconds above honest events (the gap, `edge_us` here), and that band is
what a candidate that misreports its events can gain: up to 1.6x at 30 µs. A narrower band needs the gap
known for the case at hand. This script measures it, in the checker's process, through the very loop the
candidate's process runs (timed_batch.run_batch, captured as CUDA graphs), for the reference's own call and
for each candidate file of the problem that is `correct` (the exploit corpus's honest kernels and forgers),
each on the case's timed sizes: per callable the events' median less the graphed empty pair, the clock's
per-call slope over the two batch sizes, the harness's cost (timed_batch.harness_overhead_us) and
edge = clock - harness - events. If the reference's edge tracks the candidates' within a microsecond or two,
a checker that measures it can confirm against it with a small slack. Prints a row per callable; writes
$OUT/band.json. Each callable is measured twice (passes a and b, the reference first in each), at the case's
batch sizes and at a four times larger second batch (`wide`), to show the clock's own scatter and how larger
batches narrow it. Candidates: the files in CANDIDATES (others reach into the loop's process: not run here).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from trialtui.core.problem_dir import load_problem  # noqa: E402
from trialtui.engine.bench import problem_spec  # noqa: E402
from trialtui.runner import timing  # noqa: E402
from trialtui.runner.loader import Candidate, Reference  # noqa: E402
from trialtui.runner.timed_batch import CheckerLoop, harness_overhead_us  # noqa: E402
from trialtui.runner.timed_phase import TimedSetup, checker_copies  # noqa: E402

OUT = Path(os.environ.get("OUT") or "gpu_band_out")
ROUNDS = 6
DEFAULTS = ("tests/exploits/gemm_short_bf16", "tests/exploits/softmax_short_fp32", "benches/problems/matmul@M=512@N=512@K=512",
            "benches/problems/rowsoftmax@rows=1024@cols=1024", "tests/trust/kb_gelu_bf16",
            "tests/exploits/softmax_fp32", "tests/exploits/gemm_bf16")
CANDIDATES = {"honest.py", "library_decoy.py", "diffs_inputs.py", "aims_at_the_band.py", "kernel.py"}
WIDE_BYTES = 8 * 2**30  # the wide batches' ring at most


def measure(fn, setup: TimedSetup, bencher: timing.Bencher, overhead_us: float, pair_us: float,
            batches: tuple[int, int]) -> dict:
    """`fn` through the captured loop at these batch sizes: its events and the clock around its batches."""
    loop = CheckerLoop(checker_copies(setup.sets, bencher), fn, setup.layout, bencher, batches[-1], graphed=True)
    if loop.captured is None:
        raise RuntimeError("its loop could not be captured")
    for _ in range(ROUNDS):
        for n in batches:
            loop.batch(n)
    clock = loop.per_call_us() or 0.0
    median = statistics.median(loop.events) - pair_us
    walls = loop.walls
    loop.close()
    return {"batches": list(batches), "events_us": median, "clock_us": clock, "harness_us": overhead_us,
            "edge_us": clock - overhead_us - median, "walls": [[w, n] for w, n, _ in walls]}


def problem_rows(root: Path, sizes: dict[str, int]) -> list[dict]:
    problem = load_problem(root)
    spec = problem_spec(problem, "cuda")
    reference = Reference(spec.to_wire(), "cuda")
    case = {**spec.bench_cases[0], **sizes}
    setup = TimedSetup.of(reference, case, torch.cuda.get_device_properties(0))
    bencher = timing.Bencher.for_device(torch.device("cuda"))
    overhead_us = harness_overhead_us(checker_copies(setup.sets, bencher), setup.ref_call.fn, setup.layout, bencher,
                                      setup.batches)[0]
    try:
        pair_us = bencher.empty_pair_us(graphed=True)  # as the candidate's captured loop takes it off its events
    except Exception:  # noqa: BLE001 - a torch whose graphs cannot record external events: the eager pair
        torch.cuda.synchronize()
        pair_us = bencher.empty_pair_us()
    callables = {"reference": setup.ref_call.fn}
    for path in sorted(p for p in problem.candidates() if p.name in CANDIDATES or ("expect: correct" in p.read_text()[:300] and "cpu" not in p.name)):
        try:
            # built in this process as the candidate's own builds it (a measure of the loop, not a judgement)
            callables[path.name] = Candidate(spec.to_wire(), path, reference).build(case, 0, setup.ref_call.payload)
        except Exception as exc:  # noqa: BLE001 - a candidate this process cannot build: said, not fatal
            print(f"{root.name}/{path.name}: not built ({type(exc).__name__}: {exc})", flush=True)
    wide = (setup.batches[0], 4 * setup.batches[-1])
    shapes = {"case": setup.batches, **({"wide": wide} if wide[-1] * setup.layout.slot_bytes <= WIDE_BYTES else {})}
    rows = []
    for pass_ in "ab":
        for name, fn in callables.items():
            for shape, batches in shapes.items():
                row = {"problem": root.name, "callable": name, "case": case, "pass": pass_, "shape": shape}
                try:
                    row.update(measure(fn, setup, bencher, overhead_us, pair_us, batches))
                except Exception as exc:  # noqa: BLE001 - e.g. a call that cannot be captured
                    row["error"] = f"{type(exc).__name__}: {exc}"
                    torch.cuda.synchronize()
                rows.append(row)
                ref = next((r for r in rows if r["callable"] == "reference" and r["pass"] == pass_ and r["shape"] == shape
                            and "error" not in r), None)
                vs_ref = f"  vs reference {row['edge_us'] - ref['edge_us']:+6.2f}" if ref and "error" not in row else ""
                print(f"{root.name:<18} {pass_} {shape:<4} {name:<26} " + (
                    f"events {row['events_us']:8.2f}  clock {row['clock_us']:8.2f}  harness {row['harness_us']:7.2f}  "
                    f"edge {row['edge_us']:6.2f} µs{vs_ref}" if "error" not in row else row["error"]), flush=True)
    return rows


def main(argv: list[str]) -> int:
    if not torch.cuda.is_available():
        print("no CUDA device: this bench measures the GPU loop only")
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    rows = []
    for item in argv or DEFAULTS:
        name, *sizes = item.split("@")
        rows += problem_rows((ROOT / name).resolve(), {k: int(v) for k, v in (size.split("=") for size in sizes)})
    (OUT / "band.json").write_text(json.dumps({"device": torch.cuda.get_device_name(0), "rows": rows}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
