"""Engine latency on the CPU: save → validating, save → queued/invalid (static checks), the gap
between two jobs on a lane, and the engine's CPU use while idle.

python benches/latency.py   — prints a table. The save → state times use the real watcher and the
real static checks; the compile stage (seconds, in child processes) is measured by
benches/validate.py and is stubbed here, as is the GPU job, so only the engine's own overhead counts.
"""

from __future__ import annotations

import asyncio
import os
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from trialtui.core.problem_dir import load_problem  # noqa: E402
from trialtui.engine import events as ev  # noqa: E402
from trialtui.engine.lanes import Lane, Lanes  # noqa: E402
from trialtui.engine.loop import Engine  # noqa: E402
from trialtui.engine.validate import validate_file  # noqa: E402
from trialtui.core.bench_result import BenchResult  # noqa: E402

SAVES = int(os.environ.get("SAVES", 50))
QUIET_MS = 150
ROOT = Path(__file__).resolve().parents[1]


def static_only(problem, path, compile=True, **kw):
    report = validate_file(problem, path, compile=False)
    return replace(report, compile_ms=0.0) if compile else report  # the compile stage is benches/validate.py's business


def instant_bench(problem, path, **kw):
    return BenchResult.from_json({"version": 1, "state": "correct", "message": "", "correctness": {"passed": True},
                                  "timing": {"median_us": 1.0, "rse": 0.0}, "speedup": None, "flags": [],
                                  "env": {"device": "cpu", "gpu": None}, "dtype": "float32", "sizes": [{}]})


def q(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p * (len(ordered) - 1))))]


async def measure(root: Path) -> dict[str, list[float]]:
    problem = load_problem(root)
    engine = Engine(problem, device="cpu", lanes=Lanes([Lane("cpu", None)]), bench=instant_bench,
                    validate=static_only)
    stamps: dict[str, dict[str, float]] = {}

    def on_event(event: ev.Event) -> None:
        now = time.monotonic()
        if isinstance(event, ev.TrialCreated):
            stamps.setdefault(event.trial_id, {})["created"] = now
        elif isinstance(event, ev.StateChanged):
            stamps.setdefault(event.trial_id, {}).setdefault(event.state, now)

    engine.subscribe(on_event)
    task = asyncio.create_task(engine.run())
    await asyncio.sleep(1.0)
    await engine.drain()
    saved_at: dict[int, float] = {}
    source = (root / "kernel.py").read_text()
    for i in range(SAVES):
        text = source + f"\n# save {i}\n" if i % 5 else f"def broken_{i}(:\n"  # every fifth is invalid
        tmp = root / f".kernel.py.{i}.tmp"
        tmp.write_text(text)
        saved_at[i] = time.monotonic()
        os.replace(tmp, root / "kernel.py")
        await asyncio.sleep(QUIET_MS / 1000 + 0.35)
    await engine.drain()
    # idle: the watcher is running, nothing changes
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    await asyncio.sleep(3.0)
    usage1 = resource.getrusage(resource.RUSAGE_SELF)
    idle_cpu = (usage1.ru_utime + usage1.ru_stime - usage0.ru_utime - usage0.ru_stime) / (time.monotonic() - t0)
    # back-to-back jobs on one lane: ten trials queued at once
    for i in range(10):
        (root / f"k{i}.py").write_text(source + f"\n# lane {i}\n")
    await asyncio.sleep(QUIET_MS / 1000 + 0.5)
    await engine.drain()
    engine.stop()
    await task
    engine.close()
    trials = sorted(stamps.items(), key=lambda kv: int(kv[0][1:]))
    saves = [s for _, s in trials[1:SAVES + 1]]  # t1 is the startup scan
    to_validating = [(s["validating"] - saved_at[i]) * 1000 for i, s in enumerate(saves)]
    to_decided = [(min(s.get("queued", 1e18), s.get("invalid", 1e18)) - saved_at[i]) * 1000 for i, s in enumerate(saves)]
    lane = [s for _, s in trials[SAVES + 1:]]
    bench_starts = sorted(s["benchmarking"] for s in lane)
    bench_ends = sorted(s["correct"] for s in lane)
    gaps = [(start - end) * 1000 for end, start in zip(bench_ends, bench_starts[1:])]
    return {"validating": to_validating, "decided": to_decided, "gaps": gaps, "idle_cpu": [idle_cpu]}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "bias_gelu_residual"
        import shutil

        shutil.copytree(ROOT / "sample_kernels" / "bias_gelu_residual", root, ignore=shutil.ignore_patterns("demo", "recorded", ".trialtui"))
        result = asyncio.run(measure(root))
    load = os.getloadavg()[0]
    print(f"engine latency, {SAVES} saves, quiet window {QUIET_MS} ms, {os.cpu_count()} CPUs, load {load:.2f}")
    print(f"{'measure':<34}{'median':>10}{'p95':>10}{'target':>14}")
    rows = [
        ("save → validating (ms)", result["validating"], QUIET_MS + 30),
        ("save → queued/invalid, static (ms)", result["decided"], QUIET_MS + 100),
        ("gap between lane jobs (ms)", result["gaps"], 50),
    ]
    for name, values, target in rows:
        med = statistics.median(values)
        print(f"{name:<34}{med:>10.1f}{q(values, 0.95):>10.1f}{'≤ ' + str(target):>14}  {'ok' if med <= target else 'MISSED'}")
    print(f"{'engine CPU while idle (cores)':<34}{result['idle_cpu'][0]:>10.4f}{'':>10}{'≈ 0':>14}")


if __name__ == "__main__":
    main()
