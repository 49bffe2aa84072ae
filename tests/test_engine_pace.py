"""A save at typing pace (issue 34): it never waits in `queued` for work that is not its own, and nothing
else runs on the GPU while a job times. Fake jobs and a fake warm checker, on the CPU."""

from __future__ import annotations

import asyncio
import threading
import time

from trialtui.core.analysis_result import AnalysisResult
from trialtui.core.problem_dir import load_problem
from trialtui.engine import events as ev
from trialtui.engine.gpu_lock import GpuLock
from trialtui.engine.lanes import Lane, Lanes
from trialtui.engine.loop import Engine
from trialtui.engine.shared import Shared

from conftest import KB_GOOD, write_problem
from test_engine import FakeBench, collect, ok_validate, run_for, until, write_atomic

ANALYSIS = AnalysisResult.from_json({"state": "ok", "flops": 0, "min_bytes": 8.0, "dtype": "float32", "matmul_like": False})


class TimingBench(FakeBench):
    """A fake bench job that uses warm children and says when it times, as the checker's progress lines do."""

    uses_warm_children = True

    def __init__(self):
        super().__init__(seconds=0.05)
        self.timing: list[tuple[float, float]] = []
        self.held: list[bool] = []

    def json(self, problem, path, *, on_progress=None, **kw):
        self.held.append(GpuLock("0").holds())
        start = time.monotonic()
        if on_progress is not None:
            on_progress({"phase": "timing", "i": 0, "n": 8})
        result = super().json(problem, path, **kw)
        self.timing.append((start, time.monotonic()))
        result["timing"] = {"median_us": 100.0, "rse": 0.001, "p20_us": 100.0, "p80_us": 100.0}
        result["env"] = {"device": "cuda", "gpu": "NVIDIA H200", "driver": "580.159.04"}  # timed on a GPU
        return result


class SlowWarm:
    """A warm checker whose `prepare` would take all of `seconds` (CUDA contexts, CUPTI, the reference's outputs)."""

    def __init__(self, seconds: float = 300.0):
        self.seconds = seconds
        self.prepares: list[tuple[float, float, bool]] = []  # start, end, whether it gave up for a job
        self.held: list[bool] = []
        self.done = threading.Event()  # the test is over: a prepare still running ends

    def prime(self, *args, **kw) -> None:
        pass

    def prepare(self, module, env, spec, timeout_s, give_up=None):
        self.held.append(GpuLock("0").holds())
        start = time.monotonic()
        while time.monotonic() < start + self.seconds and not self.done.is_set():
            if give_up is not None and give_up():
                self.prepares.append((start, time.monotonic(), True))
                return None
            time.sleep(0.01)
        self.prepares.append((start, time.monotonic(), False))
        return {"phase": "prepared"}

    def close(self) -> None:
        pass


def warm_engine(tmp_path, bench, warm, monkeypatch) -> tuple[Engine, Shared]:
    root = write_problem(tmp_path / "p", files={"kernel.py": KB_GOOD})
    (root / "trialtui.toml").write_text("[watch]\nquiet_ms = 50\n[profile]\nwhen = \"never\"\n")
    shared = Shared(warm=warm)
    engine = Engine(load_problem(root), device="cuda", lanes=Lanes([Lane("gpu0", "0")]), bench=bench,
                    validate=ok_validate, shared=shared)
    monkeypatch.setattr(engine.executor, "analyze", lambda problem, **kw: ANALYSIS)
    return engine, shared


def test_a_save_during_a_prepare_goes_to_benchmarking_without_waiting_for_it(tmp_path, monkeypatch):
    bench, warm = TimingBench(), SlowWarm()
    engine, shared = warm_engine(tmp_path, bench, warm, monkeypatch)
    seen = collect(engine)

    async def body():
        try:
            await until(lambda: engine.store.get("t1").state == "correct" and engine.lanes.lanes[0].job is not None,
                        "t1's result, then the lane preparing the next job")
            write_atomic(engine.problem.root / "kernel.py", KB_GOOD + "\n# a comment-only edit\n")
            await until(lambda: any(t.id == "t2" and t.state == "correct" for t in engine.store.trials()), "t2's result")
        finally:
            warm.done.set()

    asyncio.run(run_for(engine, body))
    assert warm.prepares[0][2] is True  # the prepare gave way to the save (alone it would take minutes)
    started = next(e for e in seen if isinstance(e, ev.StateChanged) and e.trial_id == "t2" and e.state == "benchmarking")
    assert started.message == "on gpu0; its checker finishes preparing first"  # what the trial waits for
    assert all(warm.held) and all(bench.held)  # every prepare and job held the GPU's host-wide lane
    engine.close()
    shared.close()


def test_the_next_save_does_not_wait_for_the_last_trials_verdicts(tmp_path, monkeypatch):
    bench, warm = TimingBench(), SlowWarm(seconds=0.0)
    engine, shared = warm_engine(tmp_path, bench, warm, monkeypatch)
    release = threading.Event()
    monkeypatch.setattr(engine.executor, "analyze", lambda problem, **kw: (release.wait(300), ANALYSIS)[1])

    async def body():
        await until(lambda: engine.store.get("t1").state == "correct", "t1's result")
        write_atomic(engine.problem.root / "kernel.py", KB_GOOD + "\n# a comment-only edit\n")
        try:  # the reference's analysis (13 s of a problem's first job on the H200) still runs
            await until(lambda: any(t.id == "t2" and t.state == "correct" for t in engine.store.trials()), "t2's result")
            assert engine.store.get("t1").decision is None  # t1's verdicts and decision still wait for it
        finally:
            release.set()
        await until(lambda: engine.store.get("t2").decision is not None, "t2's decision")

    asyncio.run(run_for(engine, body))
    assert engine.store.get("t1").decision is not None
    engine.close()
    shared.close()


def test_nothing_prepares_while_a_job_times(tmp_path, monkeypatch):
    bench, warm = TimingBench(), SlowWarm(seconds=0.2)
    engine, shared = warm_engine(tmp_path, bench, warm, monkeypatch)

    async def body():
        for i in range(3):
            await until(lambda: engine.lanes.idle and not engine._pending, "an idle lane")
            write_atomic(engine.problem.root / "kernel.py", KB_GOOD + f"\n# edit {i}\n")
            await until(lambda n=i + 2: len(bench.timing) >= n, "the save's job")

    asyncio.run(run_for(engine, body))
    assert len(bench.timing) == 4 and warm.prepares
    for start, end, _ in warm.prepares:
        assert all(end <= t0 or start >= t1 for t0, t1 in bench.timing), "a prepare overlapped a job's timing"
    engine.close()
    shared.close()
