"""How the TUI scales: first paint with 2,000 trials, and key-press repaint while events stream in.

Targets (issue 8): a store of 2,000 trials opens to first paint in ≤ 1 s; a key press repaints in
≤ 50 ms at p95 while a job runs and events stream in. The app runs headless at 120×36 on the real
Engine and Store (jobs stubbed: nothing here needs a GPU). "First paint" is the first frame the
compositor hands to the display; a key press's repaint is the first frame that shows the trial the
cursor moved to (tree and detail both). Meanwhile a feeder emits what a busy engine emits: job
progress at 200/s, queue changes at 10/s, and a new trial through validation to a result twice a
second.

Issue 18 asked whether textual-plotext could replace the hand-written braille plots: `--plots both` (the
default) measures the hand-written widgets and benches/tui_plotext.py's library ones side by side, each
in its own fresh interpreter on the same store, alternating for `--rounds` rounds.

    python benches/tui.py [--trials 2000] [--presses 200] [--plots both|hand|plotext] [--rounds 1]

With $OUT set, every run's figures also go to $OUT/tui_plots.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from trialtui.core.bench_result import BenchResult
from trialtui.core.model import Decision, Trial, TrialState
from trialtui.core.validation_report import ValidationReport
from trialtui.core.problem_dir import load_problem
from trialtui.core.store import DB_NAME, META, META_ID, STATE_DIR, TRIALS, JournaledStorage
from trialtui.engine import events as ev
from trialtui.engine.lanes import Lane, Lanes
from trialtui.engine.loop import Engine
from trialtui.tui.app import TrialApp

REFERENCE = '''
import torch
import torch.nn as nn

batch_size = 16384
dim = 8192


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''
SOURCE = "# strategy: tile {tile}, {warps} warps\nimport torch\n# version {n}\n"
SIZE = (120, 36)
# bf16 relu at 16384 × 8192 on an H200: one FLOP and 4 bytes per element (what analyze_job records)
ROOFLINE = {"flops": 16384 * 8192.0, "min_bytes": 16384 * 8192 * 4.0, "compute_dtype": "bfloat16",
            "peak_tflops": 989.0, "hbm_gbps": 4800.0, "intensity": 0.25, "ridge": 206.0, "bound": "memory",
            "gpu": "NVIDIA H200", "source": "datasheet"}


def result(rng: random.Random, state: str) -> BenchResult:
    median = rng.uniform(150, 450)
    eager = 412.7

    def stats(m: float) -> dict:
        return {"median_us": m, "min_us": m * 0.97, "p20_us": m * 0.99, "p80_us": m * 1.02, "mean_us": m * 1.01,
                "std_us": m * 0.02, "n": 500, "rse": 0.0012}

    correct = state == "correct"
    return BenchResult.from_json({
        "version": 1, "state": state,
        "correctness": {"seeds": 5, "cases": 1, "passed": correct, "max_abs_err": 0.0039 if correct else 41.3,
                        "max_rel_err": 0.0078, "mismatch_frac": 0.0 if correct else 0.31, "first_mismatch": None,
                        "message": "" if correct else "case 1 seed 0: 31% of values outside atol=0.01"},
        "timing": {**stats(median), "kernel_us": median * 0.96, "label": "GPU, CUDA events, L2 flushed, median"}
        if correct else None,
        "baselines": {"eager": {**stats(eager), "cached": True}} if correct else {},
        "speedup": {"eager": eager / median} if correct else None,
        "flags": [],
        "roofline": ROOFLINE if correct else None,
        "env": {"device": "cuda", "gpu": "NVIDIA H200", "sm_count": 132, "capability": "9.0", "driver": "580.159.04"},
        "sizes": [{"batch_size": 16384, "dim": 8192}], "dtype": "bfloat16", "message": "",
    })


def lay_down(root: Path, count: int, rng: random.Random) -> None:
    """A problem directory whose store holds `count` finished trials: long runs, a branch back now and then."""
    root.mkdir(parents=True)
    (root / "reference.py").write_text(REFERENCE)
    (root / "trialtui.toml").write_text('dtype = "bfloat16"\nmax_trials = 5000\n')
    state_dir = root / STATE_DIR
    (state_dir / "snapshots").mkdir(parents=True)
    records = {}
    source = ""
    for n in range(1, count + 1):
        parent = None if n == 1 else (rng.randint(1, n - 1) if rng.random() < 0.05 else n - 1)
        state = rng.choices(["correct", "incorrect", "invalid", "error"], [70, 15, 10, 5])[0]
        source = SOURCE.format(tile=rng.choice([32, 64, 128]), warps=rng.choice([4, 8]), n=n)
        sha = f"{n:064x}"
        (state_dir / "snapshots" / f"{sha}.py").write_text(source)
        records[str(n)] = Trial(
            id=f"t{n}", file="kernel.py", sha256=sha, created=1.79e9 + n, state=state,
            parent=f"t{parent}" if parent else None, strategy=source.splitlines()[0][12:],
            validation=ValidationReport(ok=state != "invalid", kernels=[], errors=[
                {"severity": "error", "code": "undefined-name", "line": 3, "message": "name 'x' is not defined"}]
                if state == "invalid" else []),
            result=result(rng, state) if state != "invalid" else None,
            decision=Decision("continue", "Improved: 1.31× over the parent; continue.", ["1.31×"], ["try BLOCK 256"]),
            sol=rng.uniform(0.2, 0.9), log=f"logs/t{n}.log",
        ).to_dict()
    heads = {str(META_ID): {"heads": {"kernel.py": f"t{count}"}}}
    JournaledStorage(state_dir / DB_NAME).write({TRIALS: records, META: heads})
    (root / "kernel.py").write_text(source)


def stub_validate(problem, path, compile=True, **kw):
    return ValidationReport(ok=True, kernels=[], elapsed_ms=1.0)


def stub_bench(problem, path, **kw):
    return result(random.Random(0), "correct")


class TimedApp(TrialApp):
    """Records when each frame reaches the display, and what the detail pane showed then."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.frames: list[tuple[float, str | None]] = []
        self.first_frame_wall: float | None = None

    def _display(self, screen, renderable) -> None:
        if renderable is not None:
            shown = None
            if self.is_mounted and self.screen is screen:
                trial = self.detail.trial
                shown = trial.id if trial else None
            self.frames.append((time.perf_counter(), shown))
            if self.first_frame_wall is None:
                self.first_frame_wall = time.time()
        super()._display(screen, renderable)


def build(root: Path) -> TimedApp:
    problem = load_problem(root)
    engine = Engine(problem, device="cuda", lanes=Lanes([Lane("gpu0", "0")]), validate=stub_validate,
                    bench=stub_bench)
    return TimedApp(problem, engine, owns_engine=True)


async def feed(app: TimedApp, stop: asyncio.Event) -> int:
    """What a busy engine emits; returns how many events it sent."""
    engine, store = app.engine, app.engine.store
    rng = random.Random(1)
    sent, tick = 0, 0
    running = store.add_trial("kernel.py", SOURCE.format(tile=256, warps=8, n=-1), parent=store.heads["kernel.py"])
    store.update(running.id, state=TrialState.BENCHMARKING)
    engine.emit(ev.TrialCreated(running.id, "kernel.py", running.parent, running.strategy))
    while not stop.is_set():
        await asyncio.sleep(0.005)
        tick += 1
        engine.emit(ev.Progress(running.id, "timing", None, None, tick))
        sent += 1
        if tick % 20 == 0:
            engine.emit(ev.QueueChanged(lanes={"gpu0": running.id}, queued=[]))
            sent += 1
        if tick % 100 == 0:  # a save, validated, queued and scored
            trial = store.add_trial("kernel.py", SOURCE.format(tile=rng.choice([64, 128]), warps=4, n=tick),
                                    parent=store.heads["kernel.py"])
            engine.emit(ev.TrialCreated(trial.id, trial.file, trial.parent, trial.strategy))
            for state in (TrialState.VALIDATING, TrialState.QUEUED, TrialState.CORRECT):
                fields = {"result": result(rng, "correct")} if state is TrialState.CORRECT else {}
                store.update(trial.id, state=state, **fields)
                engine.emit(ev.StateChanged(trial.id, state.value))
            engine.emit(ev.ResultReady(trial.id, "correct", "1.3×"))
            sent += 5
    return sent


async def measure(root: Path, presses: int) -> dict[str, float]:
    start = time.perf_counter()
    app = build(root)
    built = time.perf_counter()
    out: dict[str, float] = {}
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        out["first_paint_s"] = app.frames[0][0] - start
        out["engine_and_store_open_s"] = built - start
        app.action_follow()  # follow off: the feeder's new trials must not move the cursor
        await pilot.pause()
        stop = asyncio.Event()
        feeder = asyncio.create_task(feed(app, stop))
        await asyncio.sleep(0.3)
        latencies = []
        began = time.perf_counter()
        for i in range(presses):
            key = "k" if (i // 25) % 2 == 0 else "j"
            before = app.tree.cursor_id
            t0 = time.perf_counter()
            app.simulate_key(key)  # as the terminal driver posts it; pilot.press would wait for an idle app
            deadline = t0 + 2.0
            while app.tree.cursor_id == before and time.perf_counter() < deadline:
                await asyncio.sleep(0.0005)
            target = app.tree.cursor_id
            seen = None
            while seen is None and time.perf_counter() < deadline:
                seen = next((t for t, shown in app.frames if t >= t0 and shown == target), None)
                if seen is None:
                    await asyncio.sleep(0.001)
            if target != before and seen is not None:
                latencies.append((seen - t0) * 1000)
            await asyncio.sleep(rng_gap(i))
        elapsed = time.perf_counter() - began
        stop.set()
        sent = await feeder
        latencies.sort()
        out.update(presses=len(latencies), p50_ms=statistics.median(latencies),
                   p95_ms=latencies[int(0.95 * (len(latencies) - 1))], max_ms=latencies[-1],
                   events_per_s=sent / elapsed)
        out.update(redraw_costs(app))
        await pilot.press("q")
    return out


def redraw_costs(app: TimedApp, repeats: int = 15) -> dict[str, float]:
    """CPU time (this thread's, so other processes' load hardly counts) of one update + render of each
    plot: the history with every trial, the detail plots with the newest correct one. Median of `repeats`."""
    from trialtui.tui.widgets import detail

    trials = list(app.trials.values())
    newest = next(t for t in reversed(trials) if t.gpu_timing is not None)
    plots = {
        "history": (app.history, lambda w: w.update(trials, app.baseline, False)),
        "timing": (app.detail.query_one(detail.TimingSpread), lambda w: w.show(newest)),
        "roofline": (app.detail.query_one(detail.RooflinePlot), lambda w: w.show(newest)),
    }
    out = {}
    for name, (widget, update) in plots.items():
        costs = []
        for _ in range(repeats):
            began = time.thread_time()
            update(widget)
            widget.render()
            costs.append((time.thread_time() - began) * 1000)
        out[f"{name}_cpu_ms"] = statistics.median(costs)
    return out


def rng_gap(i: int) -> float:
    """Key repeat is ~30/s; people are slower. Alternate the two."""
    return 0.03 if i % 3 else 0.12


def use_plots(kind: str) -> None:
    """Swap the app's plot widgets for textual-plotext's (`plotext`) before the app is built."""
    if kind == "plotext":
        import tui_plotext
        from trialtui.tui import app as app_module
        from trialtui.tui.widgets import detail

        app_module.SpeedupHistory = tui_plotext.SpeedupHistory
        detail.TimingSpread, detail.RooflinePlot = tui_plotext.TimingSpread, tui_plotext.RooflinePlot


CHILD = """
import sys, time
t0 = float(sys.argv[1])
sys.argv = sys.argv[:1]
from pathlib import Path
sys.path.insert(0, {bench_dir!r})
import tui
tui.use_plots({plots!r})
app = tui.build(Path({root!r}))
async def stop(pilot):
    await pilot.pause()
    print(app.first_frame_wall - t0)
    await pilot.press("q")
app.run(headless=True, size=(120, 36), auto_pilot=stop)
"""


def fresh_interpreter_first_paint(root: Path, plots: str) -> float:
    """Wall time from starting `python` to the first frame, imports included."""
    code = CHILD.format(bench_dir=str(Path(__file__).parent), root=str(root), plots=plots)
    return float(child([sys.executable, "-c", code, repr(time.time())]))


def measure_in_child(root: Path, plots: str, presses: int) -> dict[str, float]:
    """One variant in a fresh interpreter: nothing the other variant imported or warmed is shared."""
    return json.loads(child([sys.executable, __file__, "--child", plots, "--root", str(root), "--presses", str(presses)]))


def child(cmd: list[str]) -> str:
    """The last line a child printed; its stderr when it failed."""
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"a measuring child failed ({out.returncode}):\n{out.stderr[-3000:]}")
    return out.stdout.strip().splitlines()[-1]


def table(args: argparse.Namespace, runs: dict[str, list[dict[str, float]]]) -> None:
    """One column per variant and round."""
    names = {"hand": "hand-written", "plotext": "textual-plotext"}
    order = [(k, i) for i in range(max(len(v) for v in runs.values())) for k in runs]  # as they ran
    heads = [f"{names[k]}{f' #{i + 1}' if len(runs[k]) > 1 else ''}" for k, i in order]
    cells = [runs[k][i] for k, i in order]
    rows = [
        (f"first paint, {args.trials:,} trials: make_app → first frame", "≤ 1 s", "first_paint_s", "{:.2f} s"),
        ("  of which Engine + Store open (lock, checkpoint)", "", "engine_and_store_open_s", "{:.2f} s"),
        ("first paint, fresh interpreter (imports included)", "", "cold_s", "{:.2f} s"),
        ("key press → repaint, p50", "", "p50_ms", "{:.1f} ms"),
        ("key press → repaint, p95", "≤ 50 ms", "p95_ms", "{:.1f} ms"),
        ("key press → repaint, max", "", "max_ms", "{:.1f} ms"),
        ("key presses counted", "", "presses", "{:.0f}"),
        ("engine events streaming meanwhile", "", "events_per_s", "{:.0f} /s"),
        (f"history plot, {args.trials:,} trials: update + render, CPU time", "", "history_cpu_ms", "{:.1f} ms"),
        ("timing plot, one trial: update + render, CPU time", "", "timing_cpu_ms", "{:.1f} ms"),
        ("roofline plot, one trial: update + render, CPU time", "", "roofline_cpu_ms", "{:.1f} ms"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"| {'measure':<{width}} | target | " + " | ".join(heads) + " |")
    print(f"|{'-' * (width + 2)}|--------|" + "|".join("-" * (len(h) + 2) for h in heads) + "|")
    for name, target, key, fmt in rows:
        values = " | ".join(fmt.format(c[key]).ljust(len(h)) for c, h in zip(cells, heads))
        print(f"| {name:<{width}} | {target:<6} | {values} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    parser.add_argument("--presses", type=int, default=200)
    parser.add_argument("--plots", choices=["both", "hand", "plotext"], default="both")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--child", choices=["hand", "plotext"], help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        use_plots(args.child)
        print(json.dumps(asyncio.run(measure(args.root, args.presses))))
        return
    kinds = ["hand", "plotext"] if args.plots == "both" else [args.plots]
    runs: dict[str, list[dict[str, float]]] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "bench"
        lay_down(root, args.trials, random.Random(7))
        for _ in range(args.rounds):
            for kind in kinds:
                run = measure_in_child(root, kind, args.presses)
                run["cold_s"] = fresh_interpreter_first_paint(root, kind)
                runs[kind].append(run)
    print(f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} at the end")
    table(args, runs)
    if os.environ.get("OUT"):  # where the lead's batch run collects outputs
        Path(os.environ["OUT"], "tui_plots.json").write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
