"""Save → number, as a user feels it: the watching engine against a bare cold script and a bare warm loop.

python benches/loop_latency.py [--device cuda|cpu] [--saves 5] [--json OUT.json] [PROBLEM ...]
(on the H200: `python benches/gpu_session.py loop_latency:540`; the JSON lands in $OUT)
(problems under benches/problems; default axpy rowsoftmax matmul: three sizes of kernel)

Per problem, in one run and interleaved: the bare cold script (benches/bare_bench.py: a fresh
process doing the same check and do_bench), the bare warm loop (the same work again in one process
that already ran it), and trialtui: a real engine watching a copy of the problem; each save writes a
new version of kernel.py after an editing pause and the clock runs from the write to the preliminary
and the final result events. On a GPU with ncu, `trialtui profile` of the last version (its verdict
reused from the store) against bare ncu on the same kernel with the same sections. On the CPU the
work is the interpreter's at the test sizes, labelled so; the GPU targets are issue 16's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from trialtui.core.phases import breakdown_lines  # noqa: E402
from trialtui.core.problem_dir import load_problem  # noqa: E402
from trialtui.engine import events as ev  # noqa: E402
from trialtui.engine.lanes import Lanes  # noqa: E402
from trialtui.engine.loop import Engine  # noqa: E402

EDIT_PAUSE_S = 2.0  # between a result and the next save: the user reading it
WARM_LOOP = """
import runpy, sys, time
path, args, n = sys.argv[1], sys.argv[2:-1], int(sys.argv[-1])
sys.argv = [path, *args]
for _ in range(n + 1):
    t = time.perf_counter()
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit:
        pass
    print("WALL", time.perf_counter() - t, flush=True)
"""


def bare_args(root: Path, device: str) -> list[str]:
    return [str(root)] + (["--cpu"] if device == "cpu" else [])


def bare_env(device: str) -> dict[str, str]:
    return {**os.environ, **({"TRITON_INTERPRET": "1"} if device == "cpu" else {})}


def bare_cold(root: Path, device: str) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, str(HERE / "bare_bench.py"), *bare_args(root, device)], check=True,
                   capture_output=True, env=bare_env(device))
    return time.perf_counter() - t


def bare_warm(root: Path, device: str, saves: int) -> list[float]:
    """The same work repeated in one process: the first (cold) pass is dropped."""
    out = subprocess.run([sys.executable, "-c", WARM_LOOP, str(HERE / "bare_bench.py"), *bare_args(root, device),
                          str(saves)], check=True, capture_output=True, text=True, env=bare_env(device))
    return [float(line.split()[1]) for line in out.stdout.splitlines() if line.startswith("WALL")][1:]


async def engine_saves(root: Path, device: str, saves: int) -> list[dict[str, float]]:
    """Save → preliminary and save → final for each save, from the engine's events."""
    engine = Engine(load_problem(root), device=device, lanes=Lanes.detect(device))
    events: list[tuple[float, ev.Event]] = []
    engine.subscribe(lambda e: events.append((time.perf_counter(), e)))
    task = asyncio.create_task(engine.run())
    source = (root / "kernel.py").read_text()
    rows = []
    try:
        await _until(lambda: any(isinstance(e, ev.ResultReady) for _, e in events), 600)  # the first version
        for i in range(saves):
            await _until(lambda: engine.lanes.idle, 300)  # the lane made the next job ready
            await asyncio.sleep(EDIT_PAUSE_S)
            mark = len(events)
            saved = time.perf_counter()
            (root / "kernel.py").write_text(source + f"\n# save {i}\n")
            await _until(lambda: any(isinstance(e, ev.ResultReady) for _, e in events[mark:]), 600)
            after = events[mark:]
            final = next(t for t, e in after if isinstance(e, ev.ResultReady))
            result = next(e for _, e in after if isinstance(e, ev.ResultReady))
            prelim = next((t for t, e in after if isinstance(e, ev.Preliminary)), final)
            assert result.state == "correct", result.summary
            trial = engine.store.get(result.trial_id)
            row = {"preliminary_s": prelim - saved, "final_s": final - saved,
                   "prepared": (trial.result or {}).get("prepared", 0),
                   "timeline_s": timeline(after, saved), "phases_s": (trial.result or {}).get("phases_s")}
            rows.append(row)
            print(f"save {i + 1}: preliminary {row['preliminary_s']:.2f} s, final {row['final_s']:.2f} s, "
                  f"prepared {row['prepared']}; engine " + ", ".join(f"{k} {v:.2f}" for k, v in row["timeline_s"].items()),
                  flush=True)
            for line in breakdown_lines(row["phases_s"]):
                print("   ", line, flush=True)
    finally:
        engine.stop()
        await task
        engine.close()
    return rows


def timeline(after: list[tuple[float, ev.Event]], saved: float) -> dict[str, float]:
    """When the engine reached each step of one save, seconds from the write: where the queue and the
    validation sit between the save and the job."""
    marks: dict[str, float] = {}
    for t, e in after:
        name = {ev.TrialCreated: "created", ev.Preliminary: "preliminary", ev.ResultReady: "result"}.get(type(e))
        if isinstance(e, ev.StateChanged):
            name = e.state
        elif isinstance(e, ev.Progress):
            name = f"job:{e.phase}"
        if name and name not in marks:
            marks[name] = round(t - saved, 3)
    return marks


async def _until(predicate, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("the engine did not get there in time")
        await asyncio.sleep(0.02)


def profile_vs_ncu(root: Path) -> dict[str, float] | None:
    """`trialtui profile` (the verdict reused) against bare ncu with the same sections on the same kernel."""
    from trialtui.core.ncu import find_ncu
    from trialtui.runner.profile_job import ncu_command

    ncu = find_ncu(None)
    if ncu is None:
        return None
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "trialtui", "profile", str(root / "kernel.py"), "--json"], check=True,
                          capture_output=True, text=True)
    ours = time.perf_counter() - t
    out = json.loads(done.stdout)
    body = out.get("profile") or {}
    where = {**(out.get("phases_s") or {}), **{k: body.get(k) for k in ("wall_s", "ncu_s", "export_s")}}
    print(f"trialtui profile {ours:.1f} s (verdict reused from {out.get('reused_from')}): "
          + ", ".join(f"{k} {v}" for k, v in where.items()), flush=True)
    command = ncu_command(ncu, Path(tempfile.mkdtemp()) / "bare", [sys.executable, str(HERE / "bare_bench.py"),
                                                                  str(root), "--ncu"])
    t = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env={**os.environ, "LC_ALL": "C"})
    bare = time.perf_counter() - t
    print(f"bare ncu {bare:.1f} s", flush=True)
    return {"trialtui_profile_s": ours, "bare_ncu_s": bare, "trialtui_profile_phases_s": where}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--saves", type=int, default=5)
    ap.add_argument("--json", type=Path)
    ap.add_argument("problems", nargs="*", default=["axpy", "rowsoftmax", "matmul"])
    args = ap.parse_args()
    report = {"device": args.device, "date": time.strftime("%Y-%m-%d"), "saves": args.saves, "problems": {}}
    for name in args.problems:
        root = Path(tempfile.mkdtemp()) / name
        shutil.copytree(HERE / "problems" / name, root)
        cold = [bare_cold(root, args.device) for _ in range(args.saves)]
        print(f"{name}: bare cold script {', '.join(f'{c:.2f}' for c in cold)} s", flush=True)
        warm = bare_warm(root, args.device, args.saves)
        print(f"{name}: bare warm loop {', '.join(f'{w:.2f}' for w in warm)} s", flush=True)
        ours = asyncio.run(engine_saves(root, args.device, args.saves))
        row = {
            "bare_cold_s": statistics.median(cold), "bare_warm_s": statistics.median(warm),
            "preliminary_p50_s": statistics.median(r["preliminary_s"] for r in ours),
            "final_p50_s": statistics.median(r["final_s"] for r in ours),
            "final_max_s": max(r["final_s"] for r in ours), "saves": ours,
        }
        if args.device == "cuda":
            row["profile"] = profile_vs_ncu(root)
        report["problems"][name] = row
    where = "CPU, Triton interpreter, test sizes" if args.device == "cpu" else "GPU, bench sizes"
    print(f"save → number, {where}, {report['date']}, {args.saves} saves per problem (p50)")
    print(f"{'problem':<12}{'bare cold':>10}{'bare warm':>10}{'→ prelim':>10}{'→ final':>10}{'final/cold':>11}")
    for name, row in report["problems"].items():
        print(f"{name:<12}{row['bare_cold_s']:>9.2f}s{row['bare_warm_s']:>9.2f}s{row['preliminary_p50_s']:>9.2f}s"
              f"{row['final_p50_s']:>9.2f}s{row['final_p50_s'] / row['bare_cold_s']:>11.2f}")
        if row.get("profile"):
            p = row["profile"]
            print(f"{'':<12}profile {p['trialtui_profile_s']:.1f}s vs bare ncu {p['bare_ncu_s']:.1f}s: "
                  f"{p['trialtui_profile_s'] / p['bare_ncu_s']:.2f}× (target ≤ 1.3×)")
    print("targets (H200, 135 µs softmax): save → final p50 ≤ 2.0 s and ≤ 0.4× the bare cold script; "
          "save → preliminary ≤ 1.2 s")
    target = args.json or (Path(os.environ["OUT"]) / "loop_latency.json" if os.environ.get("OUT") else None)
    if target is not None:  # under benches/gpu_session.py, $OUT comes back from the device
        target.write_text(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
