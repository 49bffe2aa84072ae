"""Stores and a scripted engine for the TUI tests: realistic trials, fixed clocks, no GPU.

The stores are real (`Store.add_trial`/`update`) and hold results shaped like the H200 fixtures in
tests/fixtures/gpu; decisions come from the real `decide`. FakeEngine has the Engine's interface
and records the operations the keys call; tests push engine events through `emit`. The tests at
the bottom hold the scenarios to the honesty rules every pane relies on.
"""

from __future__ import annotations

import asyncio
import copy
import time
from pathlib import Path
from typing import Any

import pytest

from trialtui.core.decide import decide
from trialtui.core.gpus import datasheet
from trialtui.core.model import Trial, TrialState, Verdict
from trialtui.core.validation_report import ValidationReport
from trialtui.core.problem import Problem
from trialtui.core.problem_dir import load_problem
from trialtui.core.roofline import roofline
from trialtui.core.store import Store
from trialtui.engine import events as ev
from trialtui.engine.lanes import Lane, Lanes
from trialtui.tui import describe

from conftest import KB_GOOD, as_profile, as_result, write_problem

T0 = 1767261600.0  # 2026-01-01 10:00:00 UTC: snapshots print saved-at times, so they are fixed
SIZES = [{"batch_size": 16384, "dim": 8192}]
H200_ENV = {"device": "cuda", "torch": "2.11.0+cu130", "triton": "3.6.0", "python": "3.12.3", "gpu": "NVIDIA H200",
            "sm_count": 132, "l2_bytes": 62914560, "capability": "9.0", "cuda": "13.0", "driver": "580.159.04"}
CPU_ENV = {"device": "cpu", "torch": "2.13.0+cpu", "triton": "3.9.0", "python": "3.11.7", "gpu": None,
           "interpreted": True}
EAGER = {"median_us": 412.7, "min_us": 405.2, "p20_us": 409.9, "p80_us": 415.3, "mean_us": 413.0, "std_us": 3.1,
         "n": 500, "rse": 0.0011, "cached": False}
CONFIG = 'dtype = "bfloat16"\nmax_trials = {max_trials}\ntarget_speedup = 2.5\n[bench_sizes]\nbatch_size = 16384\ndim = 8192\n'


def version(n: int, strategy: str) -> str:
    """A distinct candidate source per version, with its strategy comment."""
    return KB_GOOD.replace("# strategy: fused bias relu", f"# strategy: {strategy}") + f"\n# v{n}\n"


def gpu_result(median_us: float | None, state: str = "correct", message: str = "", **correctness: Any) -> dict:
    """A bench result as an H200 run writes it (tests/fixtures/gpu/result_*.json)."""
    corr = {"seeds": 5, "cases": 1, "passed": state == "correct", "max_abs_err": 0.0039, "max_rel_err": 0.0078,
            "mismatch_frac": 0.0, "first_mismatch": None, "message": message, "launches": 5, **correctness}
    timing = None
    if median_us is not None:
        timing = {"median_us": median_us, "min_us": median_us * 0.97, "p20_us": median_us * 0.985,
                  "p80_us": median_us * 1.02, "mean_us": median_us * 1.01, "std_us": median_us * 0.02, "n": 500,
                  "rse": 0.0012, "kernel_us": median_us * 0.96, "cuda_graph": False,
                  "label": "GPU, CUDA events, L2 flushed, median"}
    speedup = {"eager": EAGER["median_us"] / median_us} if median_us and state == "correct" else None
    return {"version": 1, "state": state, "correctness": corr, "timing": timing,
            "baselines": {"eager": dict(EAGER)} if timing else {}, "speedup": speedup, "flags": [],
            "env": dict(H200_ENV), "sizes": copy.deepcopy(SIZES), "dtype": "bfloat16", "message": message}


def cpu_result() -> dict:
    return {"version": 1, "state": "correct",
            "correctness": {"seeds": 5, "cases": 1, "passed": True, "max_abs_err": 0.0, "max_rel_err": 0.0,
                            "mismatch_frac": 0.0, "first_mismatch": None, "message": "", "launches": 5},
            "timing": {"median_us": 5962.9, "min_us": 1729.5, "p20_us": 1729.5, "p80_us": 6032.2, "mean_us": 4574.9,
                       "std_us": 2464.4, "n": 3, "rse": 0.31, "kernel_us": None,
                       "label": "CPU, interpreted — not a GPU timing"},
            "baselines": {}, "speedup": None, "flags": [], "env": dict(CPU_ENV), "sizes": [{}], "dtype": "float32",
            "message": ""}


def validation(kernel: str = "rmsnorm_fwd", registers: int = 40, spills: int = 0, shared: int = 0) -> ValidationReport:
    return ValidationReport.from_json({"ok": True, "errors": [], "warnings": [], "elapsed_ms": 1694.0,
            "kernels": [{"name": kernel, "arch": "sm_90", "registers": registers, "spills": spills,
                         "shared_bytes": shared, "num_warps": 8, "num_stages": 3, "tensor_cores": False,
                         "tensor_core_op": None}],
            "preview": {"correct": True, "max_abs_err": 0.0, "max_rel_err": 0.0, "mismatch_frac": 0.0, "message": ""}})


def invalid_validation() -> ValidationReport:
    return ValidationReport.from_json({"ok": False, "elapsed_ms": 2.1, "kernels": [], "warnings": [], "preview": None,
            "errors": [{"severity": "error", "code": "undefined-name", "line": 14, "col": 8,
                        "message": "name 'BLOCK_N' is not defined inside the @triton.jit kernel",
                        "hint": "pass the value in as a tl.constexpr argument"}]})


ROOF = roofline(flops=16384 * 8192 * 4, min_bytes=16384 * 8192 * 2 * 2 + 8192 * 2, dtype="bfloat16",
                ceilings=datasheet("NVIDIA H200"))

VERDICTS = [
    Verdict(id="memory_low_bw", severity="warning", title="Memory-bound at low bandwidth",
            evidence="SM 31%, memory 58% (DRAM 57%); the minimum bytes at the measured time use 47% of 4,800 GB/s",
            hint="Raise useful bandwidth: coalesced, vectorized (16-byte) loads, more bytes in flight per SM.",
            source="ncu"),
    Verdict(id="extra_dram", severity="warning", title="Extra DRAM traffic",
            evidence="DRAM moved 805.3 MB, 1.5× the 536.9 MB minimum (each input read once, each output written once)",
            hint="Fuse the passes into one kernel, keep reused tiles on chip.", source="ncu"),
    Verdict(id="narrow_loads", severity="info", title="Narrow global loads",
            evidence="widest global load 4 bytes (16-byte vector loads move the most per instruction)",
            hint="Keep BLOCK contiguous and aligned so loads vectorize.", source="ncu"),
]
PROFILE = {"available": True, "reason": None, "report": "profiles/t3.ncu-rep", "roofline": ROOF.to_dict(),
           "bound": "memory",
           "kernels": [{"id": 0, "name": "rmsnorm_fwd", "grid": [4096, 1, 1], "block": [256, 1, 1],
                        "duration_ns": 312000.0,
                        "metrics": {"gpu__time_duration.sum": 312000.0,
                                    "sm__throughput.avg.pct_of_peak_sustained_elapsed": 31.2,
                                    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": 58.4,
                                    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": 57.1,
                                    "dram__bytes_read.sum": 537001984.0, "launch__registers_per_thread": 40.0},
                        "rules": [{"section": "SpeedOfLight", "rule": "SOLBottleneck", "type": "WRN",
                                   "description": "Memory is more heavily utilized than Compute.",
                                   "speedup_type": "global", "speedup": 41.0}]}]}

# (strategy, parent version or None, state, median µs or None, extra fields)
STORY = [
    ("one program per row, two passes", None, "correct", 412.0, {}),
    ("four rows per program", 1, "incorrect", None,
     {"message": "case 1 (defaults) seed 0: output: 1384 of 134217728 values (0.00%) outside atol=0.01 rtol=0.01; "
                 "max abs err 41.3", "max_abs_err": 41.3, "max_rel_err": 3.1e3, "mismatch_frac": 0.0000103,
      "first_mismatch": [118, 0]}),
    ("rsqrt(ms + eps) fix", 2, "correct", 315.0, {}),
    ("split into reduce + scale kernels", 3, "correct", 448.0, {}),
    ("2048-wide chunks, 8 warps", 3, "correct", 312.0, {}),
    ("eviction hints on the second pass", 5, "correct", 313.0, {}),
    ("row in registers: one read", 6, "correct", 229.0, {}),
    ("rows per program scaled with width", 7, "correct", 196.5, {}),
]


class FakeEngine:
    """The Engine's interface with scripted behaviour: records key operations, emits what tests push."""

    def __init__(self, problem: Problem, store: Store, device: str = "cuda") -> None:
        self.problem, self.store, self.device = problem, store, device
        self.lanes = Lanes([Lane("gpu0", "0")] if device == "cuda" else [Lane("cpu", None)])
        self.paused = False
        self.saves_while_paused = 0
        self.calls: list[tuple[str, str | None]] = []
        self._subscribers: list = []
        self._stop: asyncio.Event | None = None

    def subscribe(self, fn) -> None:
        self._subscribers.append(fn)

    def emit(self, event: ev.Event) -> None:
        for fn in list(self._subscribers):
            fn(event)

    async def run(self) -> None:
        self._stop = asyncio.Event()
        await self._stop.wait()

    def stop(self) -> None:
        if self._stop is not None:
            self._stop.set()

    def close(self) -> None:
        self.store.close()

    def cancel(self, trial_id: str) -> bool:
        self.calls.append(("cancel", trial_id))
        return True

    def rerun(self, trial_id: str, lane: str | None = None) -> None:
        self.calls.append(("rerun", trial_id))

    def toggle_pause(self) -> bool:
        self.paused = not self.paused
        self.calls.append(("pause" if self.paused else "resume", None))
        return self.paused

    def branch(self, trial_id: str) -> Trial | None:
        self.calls.append(("branch", trial_id))
        recorded = self.store.branch(trial_id)
        self.emit(ev.Notice(f"{self.store.get(trial_id).file} now holds {trial_id}'s source; "
                            "the next save grows from it"))
        return recorded

    def profile_now(self, trial_id: str) -> None:
        self.calls.append(("profile", trial_id))


def make_problem(root: Path, max_trials: int = 30) -> Problem:
    write_problem(root, files={"kernel.py": version(1, STORY[0][0])}, config=CONFIG.format(max_trials=max_trials))
    return load_problem(root)


def fill(store: Store, problem: Problem, upto: int, *, decide_all: bool = True) -> list[Trial]:
    """Add STORY's first `upto` versions as finished trials with fixed times, verdicts on t3."""
    ids: dict[int, str] = {}
    for n, (strategy, parent, state, median, extra) in enumerate(STORY[:upto], start=1):
        fields: dict[str, Any] = {"created": T0 + 97 * n}
        trial = store.add_trial("kernel.py", version(n, strategy), parent=ids.get(parent), **fields)
        ids[n] = trial.id
        numbers = dict(extra)
        message = numbers.pop("message", "")
        result = gpu_result(median, state, message, **numbers)
        update: dict[str, Any] = {"state": TrialState(state), "result": as_result(result), "validation": validation(),
                                  "log": f"logs/{trial.id}.log"}
        if median:
            update["sol"] = ROOF.sol(median)
        if trial.id == "t3":
            update.update(profile=as_profile(PROFILE), verdicts=VERDICTS)
        store.update(trial.id, **update)
        log = store.state_dir / "logs" / f"{trial.id}.log"
        log.parent.mkdir(exist_ok=True)
        log.write_text(f"[bench] {trial.id}: 5 seeds on 1 case\n[bench] timing: 500 runs, L2 flushed\n")
    if decide_all:
        for trial in store.trials():
            if trial.state_enum.is_final:
                decision = decide(store.trials(), trial, trial.verdicts, problem.config, source=store.read_source(trial))
                store.update(trial.id, decision=decision)
    return store.trials()


def add_running(store: Store, problem: Problem, engine: FakeEngine) -> None:
    """t(n+1) benchmarking 3/5 seeds on gpu0 and one more queued behind it."""
    head = store.heads["kernel.py"]
    running = store.add_trial("kernel.py", version(90, "vectorized 16-byte loads"), parent=head, created=T0 + 2000)
    store.update(running.id, state=TrialState.BENCHMARKING, validation=validation())
    queued = store.add_trial("kernel.py", version(91, "num_stages 4"), parent=running.id, created=T0 + 2050)
    store.update(queued.id, state=TrialState.QUEUED, validation=validation())


def running_events(store: Store) -> list[ev.Event]:
    ids = [t.id for t in store.trials()]
    running, queued = ids[-2], ids[-1]
    return [ev.QueueChanged(lanes={"gpu0": running}, queued=[queued]),
            ev.StateChanged(running, "benchmarking", "on gpu0"),
            ev.Progress(running, "correctness", 3, 5, None)]


@pytest.fixture
def utc(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.delenv("TZ")
    time.tzset()


def scenario(tmp_path: Path, upto: int, max_trials: int = 30, device: str = "cuda") -> tuple[Problem, Store, FakeEngine]:
    problem = make_problem(tmp_path / "rmsnorm", max_trials=max_trials)
    store = Store.open(problem.root, writer=True)
    fill(store, problem, upto)
    return problem, store, FakeEngine(problem, store, device=device)


# The scenarios hold to the rules the panes rely on.


def test_story_best_is_the_last_version(tmp_path):
    from trialtui.core import tree

    problem, store, _ = scenario(tmp_path, len(STORY))
    best = tree.best(store.trials(), "eager")
    assert best is not None and best.id == f"t{len(STORY)}"
    store.close()


def test_cpu_result_has_no_speed_in_any_wording(tmp_path):
    problem, store, _ = scenario(tmp_path, 1)
    trial = store.update("t1", result=as_result(cpu_result()))
    assert describe.outcome(trial, "eager") == ("correct (CPU)", "success")
    assert describe.speed_text(trial, "eager") == describe.CPU_CORRECT
    assert "×" not in describe.speed_text(trial, "eager")
    store.close()


def test_recorded_result_names_gpu_and_date(tmp_path):
    problem, store, _ = scenario(tmp_path, 1)
    result = {**gpu_result(300.0), "recorded": {"gpu": "NVIDIA H200", "date": "2026-03-02"}}
    trial = store.update("t1", result=as_result(result))
    assert describe.measured_on(trial.result).endswith("replayed from a recording on NVIDIA H200, 2026-03-02")
    assert "replayed from a recording on NVIDIA H200, 2026-03-02" in describe.speed_text(trial, "eager")
    store.close()

