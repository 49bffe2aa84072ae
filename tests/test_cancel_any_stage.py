"""Issue 36, point 3: `x` cancels a trial in any stage, the validation and compile stage (the CPU
preview) included, and what the lane waits for reads the same in the tree and the status bar."""

from __future__ import annotations

import asyncio
import time

import pytest

from trialtui.core.problem_dir import load_problem
from trialtui.engine.lanes import Lane, Lanes
from trialtui.engine.loop import Engine

from conftest import KB_GOOD, as_validation, no_analysis, write_problem
from test_engine import FakeBench, ok_validate, until


class HangingCompile:
    """A compile stage that runs until its job is cancelled, as one whose candidate sleeps at import."""

    def __init__(self):
        self.started = self.cancelled = False

    def __call__(self, problem, path, compile=True, handle=None, **kw):
        if not compile:
            return ok_validate(problem, path)
        self.started = True
        deadline = time.monotonic() + 600
        while not (handle is not None and handle.cancelled) and time.monotonic() < deadline:
            time.sleep(0.01)
        self.cancelled = handle is not None and handle.cancelled
        return as_validation({"ok": False, "invalid": False, "warnings": [], "kernels": [],
                              "errors": [{"code": "cancelled", "message": "cancelled", "severity": "error", "runtime": True}]})


def engine_on(tmp_path, lane: Lane, validate, bench=None) -> Engine:
    root = write_problem(tmp_path / "p", files={"kernel.py": KB_GOOD})
    return Engine(load_problem(root), device="cuda" if lane.gpu else "cpu", lanes=Lanes([lane]),
                  bench=bench or FakeBench(), validate=validate, analyze=no_analysis)


async def cancel_when(engine: Engine, ready, what: str) -> float:
    task = asyncio.create_task(engine.run())
    try:
        await until(lambda: "t1" in {t.id for t in engine.store.trials()} and ready(), what)
        assert engine.cancel("t1")
        started = time.monotonic()
        await until(lambda: engine.store.get("t1").state == "cancelled", "t1 to be cancelled")
        return time.monotonic() - started
    finally:
        engine.stop()
        await task


@pytest.mark.parametrize("lane", [Lane("cpu", None), Lane("gpu0", "0")], ids=["cpu lane", "gpu lane"])
def test_a_trial_is_cancelled_while_its_compile_stage_runs(tmp_path, lane):
    """On the cpu lane the job waits for the compile stage (validating, on the lane); on a GPU lane the bench
    runs beside it: either way x stops both, and the trial is cancelled, not invalid or benchmarked."""
    validate, bench = HangingCompile(), FakeBench(seconds=600.0)
    engine = engine_on(tmp_path, lane, validate, bench)
    waiting = "validating" if lane.gpu is None else "benchmarking"
    took = asyncio.run(cancel_when(engine, lambda: validate.started and engine.store.get("t1").state == waiting
                                   and engine.lanes.lanes[0].job is not None, f"t1 {waiting} on its lane"))
    assert took < 300  # not the 600 s the stage would have taken
    assert validate.cancelled, "the compile job itself was cancelled"
    t1 = engine.store.get("t1")
    assert t1.state == "cancelled" and t1.result is None
    if lane.gpu is None:
        assert not bench.calls  # the cpu lane never started the bench
    engine.close()


def test_a_queued_trial_is_cancelled_with_its_compile_stage(tmp_path):
    """t1 holds the lane (a long bench); t2, queued behind it, still compiles: x stops its compile job too."""
    hanging = HangingCompile()

    def validate(problem, path, compile=True, name=None, **kw):
        return hanging(problem, path, compile, **kw) if name == "other.py" else ok_validate(problem, path)

    bench = FakeBench(seconds=600.0)
    engine = engine_on(tmp_path, Lane("gpu0", "0"), validate, bench)
    (engine.problem.root / "other.py").write_text(KB_GOOD + "\n# other\n")

    async def body():
        task = asyncio.create_task(engine.run())
        try:
            def queued() -> str | None:
                other = [t for t in engine.store.trials() if t.file == "other.py"]
                return other[0].id if other and other[0].state == "queued" and hanging.started else None

            await until(queued, "other.py queued behind kernel.py with its compile running")
            trial_id = queued()
            assert engine.cancel(trial_id)
            await until(lambda: engine.store.get(trial_id).state == "cancelled", "the queued trial to be cancelled")
            await until(lambda: hanging.cancelled, "its compile job to be cancelled")
        finally:
            engine.stop()
            await task

    asyncio.run(body())
    assert not bench.calls  # neither bench finished: t1 was stopped with the engine, t2 never started
    engine.close()


SLEEPS_AT_IMPORT = KB_GOOD.replace("import torch\n", "import time\nimport torch\ntime.sleep(300)\n", 1)


@pytest.mark.slow
def test_a_candidate_that_sleeps_at_import_is_cancelled_during_the_real_compile_stage(tmp_path):
    root = write_problem(tmp_path / "p", files={"kernel.py": SLEEPS_AT_IMPORT},
                         config="validate_timeout_s = 900\nbench_timeout_s = 900\n")
    engine = Engine(load_problem(root), device="cpu", lanes=Lanes([Lane("cpu", None)]))

    async def body():
        task = asyncio.create_task(engine.run())
        try:
            await until(lambda: any(t.state == "validating" for t in engine.store.trials()) and engine.lanes.lanes[0].job,
                        "t1 waiting for its compile stage on the cpu lane")
            await asyncio.sleep(1.0)  # the compile job is importing the candidate
            assert engine.cancel("t1")
            started = time.monotonic()
            await until(lambda: engine.store.get("t1").state == "cancelled", "t1 to be cancelled", timeout_s=240)
            return time.monotonic() - started
        finally:
            engine.stop()
            await task

    assert asyncio.run(body()) < 240  # not the 300 s the import sleeps
    engine.close()
