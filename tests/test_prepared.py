"""Warm lanes (issue 16): the waiting checker makes the problem part of the next job ready, and the verdict
it then gives is the verdict a cold job gives."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest

from trialtui.core.problem_dir import load_problem
from trialtui.engine import events as ev
from trialtui.engine.bench import BENCH_MODULE, bench_file, child_env, problem_spec
from trialtui.engine.jobs import WarmChildren
from trialtui.engine.lanes import Lane, Lanes
from trialtui.engine.loop import Engine
from trialtui.runner.prepared import problem_key

from conftest import KB_GOOD, write_problem

pytestmark = pytest.mark.slow

# Off by a relative 3e-5 on every element: inside the elementwise fp32 tolerance, so only the normwise
# check against the float64 truth (prepared ahead, in the warm path) catches it.
SYSTEMATIC = KB_GOOD.replace("tl.maximum(x + b, 0.0)", "tl.maximum(x + b, 0.0) * 1.00003")
WRONG = KB_GOOD.replace("tl.maximum(x + b, 0.0)", "tl.maximum(x - b, 0.0)")


def test_the_problem_key_follows_the_reference_bytes_and_ignores_the_candidate(tmp_path):
    root = write_problem(tmp_path / "p", files={"kernel.py": KB_GOOD})
    problem = load_problem(root)
    base = problem_spec(problem, "cpu")
    key = problem_key(base)
    assert key == problem_key(replace(base, candidate="/x/kernel.py", candidate_as="k.py", timeout_s=5.0))
    assert key != problem_key(replace(base, seeds=base.seeds + 1))
    assert key != problem_key(replace(base, allow_tf32=not base.allow_tf32))
    (root / "reference.py").write_text((root / "reference.py").read_text() + "\n# edited\n")
    assert key != problem_key(base)
    (root / "reference.py").unlink()
    assert problem_key(base) is None


def _bench_warm(problem, path, warm, prepare: bool):
    env = child_env("cpu")
    if prepare:
        done = warm.prepare(BENCH_MODULE, env, problem_spec(problem, "cpu"), 120)
        assert done is not None and done["phase"] == "prepared"
        assert done["cases"] == len(problem.test_cases) * problem.config.seeds
    return bench_file(problem, path, device="cpu", warm=warm).to_json()


def test_a_prepared_checker_gives_the_cold_verdicts(tmp_path):
    root = write_problem(tmp_path / "p", files={"good.py": KB_GOOD, "systematic.py": SYSTEMATIC, "wrong.py": WRONG})
    problem = load_problem(root)
    warm = WarmChildren()
    try:
        for name, state in [("good.py", "correct"), ("systematic.py", "incorrect"), ("wrong.py", "incorrect")]:
            cold = bench_file(problem, root / name, device="cpu").to_json()
            warm.prime(BENCH_MODULE, child_env("cpu"))
            ready = _bench_warm(problem, root / name, warm, prepare=True)
            assert cold["state"] == ready["state"] == state, (name, cold["message"], ready["message"])
            assert cold["prepared"] == 0
            assert ready["prepared"] == ready["correctness"]["prepared"] or ready["state"] != "correct"
            assert ready["prepared"] == len(problem.test_cases) * problem.config.seeds
            for key in ("max_abs_err", "normwise_err", "normwise_bound"):
                assert cold["correctness"][key] == ready["correctness"][key], key
    finally:
        warm.close()


def test_a_reference_edited_after_preparing_is_not_judged_by_the_prepared_outputs(tmp_path):
    root = write_problem(tmp_path / "p", files={"kernel.py": KB_GOOD})
    problem = load_problem(root)
    warm = WarmChildren()
    try:
        warm.prime(BENCH_MODULE, child_env("cpu"))
        assert warm.prepare(BENCH_MODULE, child_env("cpu"), problem_spec(problem, "cpu"), 120) is not None
        # the reference now subtracts the bias: the prepared outputs are stale and must not be used
        (root / "reference.py").write_text((root / "reference.py").read_text().replace("x + self.bias", "x - self.bias"))
        result = bench_file(load_problem(root), root / "kernel.py", device="cpu", warm=warm).to_json()
        assert result["prepared"] == 0
        assert result["state"] == "incorrect"
    finally:
        warm.close()


def test_a_watching_engine_prepares_its_idle_lane_and_the_next_save_uses_it(tmp_path):
    root = write_problem(tmp_path / "p", config="[watch]\nquiet_ms = 50\n")
    problem = load_problem(root)
    engine = Engine(problem, device="cpu", lanes=Lanes([Lane("cpu", None)]))
    seen: list[ev.Event] = []
    engine.subscribe(seen.append)

    async def main():
        task = asyncio.create_task(engine.run())
        deadline = time.monotonic() + 300  # generous: a loaded machine is slow, never wrong
        while not engine._watching:  # the startup is done and the lane's prepare job is asked for
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        while not engine.lanes.idle:  # the prepare job holds the lane until the checker is ready
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        (root / "kernel.py").write_text(KB_GOOD)
        while not any(isinstance(e, ev.ResultReady) for e in seen):
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        reference = root / "reference.py"
        reference.write_text(reference.read_text().replace("x + self.bias", "x - self.bias"))
        while not any(isinstance(e, ev.Notice) and "reference.py changed" in e.message for e in seen):
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.3)
        while not engine.lanes.idle:  # prepared again, for the new reference
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        (root / "kernel.py").write_text(KB_GOOD + "\n# saved again\n")
        while sum(isinstance(e, ev.ResultReady) for e in seen) < 2:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        engine.stop()
        await task

    try:
        asyncio.run(main())
    finally:
        engine.close()
    t1 = engine.store.get("t1")
    assert t1.state == "correct", t1.result.message
    assert t1.result.prepared == len(problem.test_cases) * problem.config.seeds
    t2 = engine.store.get("t2")  # saved after the reference changed: prepared again, for the new one
    assert t2.state == "incorrect", t2.result.message
    assert t2.result.prepared == len(problem.test_cases) * problem.config.seeds
    queued = [e for e in seen if isinstance(e, ev.QueueChanged)]
    assert all("" not in e.queued and "" not in e.lanes.values() for e in queued)  # the prepare job is not a trial


def test_the_compile_stage_takes_a_warm_compile_job_that_did_not_import_triton(tmp_path):
    from trialtui.core.languages import DEFAULT, get_language
    from procs import warm_job_waiting
    from trialtui.engine.validate import compile_env, validate_file

    root = write_problem(tmp_path / "p", files={"kernel.py": KB_GOOD})
    triton = get_language(DEFAULT)
    warm = WarmChildren()
    try:
        warm.prime(triton.compile_job, compile_env(triton))
        key = warm._key(triton.compile_job, compile_env(triton))
        first = warm._ready[key][0]
        warm_job_waiting(warm, triton.compile_job)  # it imported while "the user edits"
        report = validate_file(load_problem(root), root / "kernel.py", warm=warm)
        assert warm._ready[key] and first not in warm._ready[key]  # taken by this job, and the next one primed
        # the trace forked inside it ran interpreted: triton was not imported before the fork
        assert report["ok"], report["errors"]
        assert report["kernels"] and report["preview"]["correct"]
    finally:
        warm.close()


def test_a_gpu_lane_keeps_two_checkers_waiting_and_takes_the_longest_waiting_first(monkeypatch):
    """Jobs shorter than a checker's imports (watch --once on the H200: 1-2 s against 4-5 s) must not
    wait for one every other job: the depth primed for a key holds after each take."""
    from trialtui.engine import jobs

    started = []

    class Fake:
        def __init__(self, launch, process=None):
            started.append(self)

        def alive(self):
            return True

        def close(self):
            pass

    class Server:
        def spawn(self):
            return None

    monkeypatch.setattr(jobs, "Supervised", Fake)
    monkeypatch.setattr(jobs.forkservers, "server", lambda module, env: Server())
    monkeypatch.setattr(jobs, "missing_runner", lambda: None)
    warm = WarmChildren()
    env = {"CUDA_VISIBLE_DEVICES": "0"}
    warm.prime("m", env, depth=2)
    assert len(started) == 2
    first = warm.take("m", env)
    assert first is started[0]  # the longest-waiting (the one `prepare` made ready)
    warm.prime("m", env)  # as run_child does after taking: back to the key's depth
    assert len(started) == 3 and warm.take("m", env) is started[1]
    warm.prime("m", {"CUDA_VISIBLE_DEVICES": ""})  # another key: one, as before
    assert len(started) == 4


def test_a_prepared_checker_compiles_the_compile_baseline_at_the_timed_case_and_it_computes_the_reference(
        tmp_path, monkeypatch):
    """The warm-up of `torch.compile` (3.9-6.9 s of every story job's timing phase on the H200, 2026-12-02)
    depends only on the problem: a prepared checker does it, at the case the job times, and the job times
    that very callable. Without a `compile` baseline nothing is compiled. (torch.compile is recorded, not
    run: inductor on a CPU costs a minute and is not what is tested.)"""
    import torch

    from trialtui.runner.loader import Reference
    from trialtui.runner.prepared import Prepared

    calls = []

    def compile(fn):
        def compiled(inputs):
            calls.append((tuple(t.shape for t in inputs), torch.is_grad_enabled()))
            return fn(inputs)
        return compiled

    monkeypatch.setattr(torch, "compile", compile)
    root = write_problem(tmp_path / "p", files={"kernel.py": KB_GOOD})
    problem = load_problem(root)
    spec = problem_spec(problem, "cpu")
    spec = replace(spec, baselines=["eager", "compile"], bench_cases=[{**spec.test_cases[0]}, *spec.test_cases[1:]])
    prepared = Prepared(problem_key(spec), Reference(spec.to_wire(), "cpu"))
    prepared.warm_baselines(replace(spec, baselines=["eager"]))
    assert prepared.baselines == {} and calls == []
    prepared.warm_baselines(spec)
    case = spec.bench_cases[0]
    inputs = prepared.reference.make_inputs(case, 0)
    assert calls == [(tuple(t.shape for t in inputs), False)] * 2  # twice, at the timed case, as the job calls it
    with torch.no_grad():
        torch.testing.assert_close(prepared.baselines["compile"](inputs), prepared.reference.call(case, 0).fn(inputs))
