"""Save to number (issue 16): the compile stage beside the GPU job, and a preliminary median before the final one."""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import replace

import pytest

from trialtui.core.analysis_result import AnalysisResult
from trialtui.core.validation_report import ValidationReport
from trialtui.core.problem_dir import load_problem
from trialtui.engine import events as ev
from trialtui.engine.headless import HeadlessPrinter
from trialtui.engine.lanes import Lane, Lanes
from trialtui.engine.loop import Engine

from conftest import KB_GOOD, as_profile, as_result, as_validation, no_analysis, write_problem
from test_engine import FakeBench, collect, ok_validate


class SlowCompile:
    """The compile stage takes `seconds`; the static stage is instant. Records when the compile ended."""

    def __init__(self, seconds: float, report: ValidationReport | None = None):
        self.seconds = seconds
        self.report = report or replace(ok_validate(None, None), kernels=[{"registers": 40, "spills": 0}])
        self.ended: float | None = None

    def __call__(self, problem, path, compile=True, **kw):
        if not compile:
            return ok_validate(problem, path)
        time.sleep(self.seconds)
        self.ended = time.monotonic()
        return self.report


INVALID = as_validation({"ok": False, "invalid": True, "warnings": [], "kernels": [],
                         "errors": [{"line": 4, "code": "compile", "message": "ptxas: too many resources", "severity": "error"}]})


def engine_with(tmp_path, bench, validate, lane: Lane) -> Engine:
    root = write_problem(tmp_path / "p", files={"kernel.py": KB_GOOD})
    return Engine(load_problem(root), device="cuda" if lane.gpu else "cpu", lanes=Lanes([lane]),
                  bench=bench, validate=validate, analyze=no_analysis)


def test_on_an_idle_gpu_lane_the_job_starts_while_the_compile_stage_still_runs(tmp_path):
    bench, validate = FakeBench(seconds=0.05), SlowCompile(0.8)
    engine = engine_with(tmp_path, bench, validate, Lane("gpu0", "0"))
    seen = collect(engine)
    asyncio.run(engine.run(once=True))
    (_, _, started, ended), = bench.calls
    assert started < validate.ended  # overlapped, not queued behind the compile
    t1 = engine.store.get("t1")
    assert t1.state == "correct"
    assert t1.validation["kernels"] == [{"registers": 40, "spills": 0}]  # the facts still reach the trial
    assert any(isinstance(e, ev.StateChanged) and e.message.startswith("compiled: 1 kernel(s), ≤40 registers")
               for e in seen)
    engine.close()


def test_a_compile_failure_cancels_the_running_gpu_job_and_the_trial_is_invalid(tmp_path):
    bench, validate = FakeBench(seconds=600.0), SlowCompile(0.3, INVALID)
    engine = engine_with(tmp_path, bench, validate, Lane("gpu0", "0"))
    started = time.monotonic()
    asyncio.run(engine.run(once=True))
    assert time.monotonic() - started < 300  # the 600 s job was cancelled, not waited for
    t1 = engine.store.get("t1")
    assert t1.state == "invalid"
    assert "too many resources" in t1.validation["errors"][0]["message"]
    assert t1.result is None  # the cancelled job's outcome is not the trial's
    assert t1.decision.action == "fix"
    assert engine.lanes.idle
    engine.close()


def test_on_the_cpu_lane_the_job_waits_for_the_compile_stage(tmp_path):
    bench, validate = FakeBench(seconds=0.05), SlowCompile(0.5)
    engine = engine_with(tmp_path, bench, validate, Lane("cpu", None))
    asyncio.run(engine.run(once=True))
    (_, _, started, _), = bench.calls
    assert started >= validate.ended  # interpreter against interpreter on the same cores: one after the other
    engine.close()


class PreliminaryBench(FakeBench):
    """Sends the checker's progress lines, a good and a malformed preliminary, then the final result."""

    def __init__(self, lines):
        super().__init__()
        self.lines = lines

    def json(self, problem, path, *, on_progress=None, **kw):
        for line in self.lines:
            on_progress(line)
        return super().json(problem, path, **kw)


GOOD_LINE = {"phase": "preliminary", "median_us": 140.0, "p20_us": 138.0, "p80_us": 144.0, "n": 40,
             "speedup": {"eager": 1.61}}


@pytest.mark.parametrize("bad", [
    {**GOOD_LINE, "median_us": "fast"}, {**GOOD_LINE, "median_us": -1.0}, {**GOOD_LINE, "median_us": float("nan")},
    {**GOOD_LINE, "speedup": [1.0]}, {k: v for k, v in GOOD_LINE.items() if k != "n"},
])
def test_a_preliminary_median_is_an_event_never_stored_and_a_malformed_one_is_dropped(tmp_path, bad):
    engine = engine_with(tmp_path, PreliminaryBench([GOOD_LINE, bad]), ok_validate, Lane("gpu0", "0"))
    seen = collect(engine)
    asyncio.run(engine.run(once=True))
    prelim = [e for e in seen if isinstance(e, ev.Preliminary)]
    assert prelim == [ev.Preliminary("t1", 140.0, 138.0, 144.0, 40, {"eager": 1.61})]
    result_at = next(i for i, e in enumerate(seen) if isinstance(e, ev.ResultReady))
    assert seen.index(prelim[0]) < result_at
    t1 = engine.store.get("t1")
    assert t1.result.timing["median_us"] == 100.0 and "preliminary" not in repr(t1.result)  # the final number is the only one kept
    line = HeadlessPrinter.text(prelim[0])
    assert line.startswith("t1 preliminary 140.00 µs ±2.1% (n=40) 1.61× eager")
    assert "final number follows" in line
    engine.close()


class FakeEvent:
    def __init__(self, clock):
        self.clock = clock
        self.at = None

    def record(self):
        self.at = self.clock()

    def elapsed_time(self, end):
        return 0.1  # ms


def test_time_alternating_sends_one_preliminary_once_both_batch_sizes_ran_and_stops_at_its_noise_bound(monkeypatch):
    torch = pytest.importorskip("torch")
    from trialtui.runner import timing

    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    clock = FakeClock()
    monkeypatch.setattr(timing, "time", clock)

    class Bencher:
        def __init__(self, round_s):
            self.round_s, self.waits, self.busy = round_s, 0, 0

        def keep_busy(self):
            self.busy += 1

        def wait(self):
            self.waits += 1

        def time_round(self, calls):
            clock.now += self.round_s  # the GPU's time, on a clock no busy machine can stretch
            return [(FakeEvent(clock.monotonic), FakeEvent(clock.monotonic)) for _ in calls]

    def noisy_batch(start, n):  # never stable: the run goes to its time cap
        return [100.0 + (i % 7) * 5 for i in range(n)], n * 200.0

    sent = []
    samples, _ = timing.time_alternating(Bencher(0.002), noisy_batch, {"eager": [lambda: None]}, time_cap_s=0.4,
                                         on_preliminary=lambda s, w: sent.append((s, w)))
    assert len(sent) == 1
    assert len(sent[0][1]) == len(timing.BATCHES)  # a first look after one batch of each size...
    assert len(sent[0][0]["candidate"]) < len(samples["candidate"])  # ... not the final samples
    line = timing.preliminary(sent[0][0])
    assert line["phase"] == "preliminary" and line["n"] == len(sent[0][0]["candidate"])
    # the final's quantity (the candidate's events, which the final keeps where the clock confirms them), with its spread
    assert line["median_us"] == pytest.approx(statistics.median(sent[0][0]["candidate"]))
    assert line["p20_us"] <= line["median_us"] <= line["p80_us"]
    assert line["speedup"]["eager"] == pytest.approx(100.0 / line["median_us"])
    assert ev.Preliminary.of("t1", line).median_us == line["median_us"]  # what the engine accepts

    sent.clear()
    samples, walls = timing.time_alternating(Bencher(0.0001), lambda s, n: ([100.0] * n, n * 200.0),
                                             {"eager": [lambda: None]}, on_preliminary=lambda s, w: sent.append(s))
    assert len(sent) == 1  # stable at once: the loop stops at its noise bound, MIN_BATCHES batches in
    assert len(walls) == timing.MIN_BATCHES
    assert {n for _, n, _ in walls} == set(timing.BATCHES)
    # before each batch of baseline rounds the GPU is held while the host queues them: 40 µs a round at least
    lead = Bencher(0.0001)
    _, walls = timing.time_alternating(lead, lambda s, n: ([100.0] * n, n * 200.0), {"eager": [lambda: None]})
    from trialtui.runner import gpu_wait

    held_ns = lead.waits * gpu_wait.WAIT_NS
    assert held_ns >= sum(n for _, n, _ in walls) * timing.LEAD_PER_ROUND_NS and lead.waits >= len(walls)
    # and before the first batch the GPU is kept busy once, so the first rounds run at the others' clocks
    seen = []
    busy = Bencher(0.0001)
    busy.keep_busy = lambda: seen.append("busy")
    timing.time_alternating(busy, lambda s, n: (seen.append("batch") or [100.0] * n, n * 200.0), {"eager": [lambda: None]})
    assert seen[:2] == ["busy", "batch"] and seen.count("busy") == 1


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now


def test_the_median_noise_bound_ignores_a_few_slow_outliers():
    from trialtui.runner import timing

    steady = [100.0 + (i % 5) * 0.2 for i in range(100)]
    assert timing.median_rse(steady) < timing.TARGET_RSE
    assert timing.median_rse(steady + [400.0] * 3) < timing.TARGET_RSE  # a clock ramp's first calls
    assert timing.median_rse([100.0 + (i % 2) * 40 for i in range(100)]) > timing.TARGET_RSE  # bimodal: keep timing


def test_the_status_bar_and_tree_show_the_preliminary_median_until_the_job_ends(tmp_path):
    from test_tui import SIZE, screen_text, wait_for
    from test_tui_scenarios import STORY, add_running, running_events, scenario

    from trialtui.tui.app import TrialApp

    problem, store, engine = scenario(tmp_path, len(STORY))
    add_running(store, problem, engine)

    async def body():
        app = TrialApp(problem, engine, clock=lambda: 100.0)
        async with app.run_test(size=SIZE) as pilot:
            for event in running_events(store):
                engine.emit(event)
            await wait_for(pilot, lambda: "t9" in app.status.activity.started)
            engine.emit(ev.Preliminary("t9", 140.0, 138.0, 144.0, 40, {"eager": 1.61}))
            await wait_for(pilot, lambda: "t9" in app.status.activity.preliminary)
            await pilot.pause(0.3)
            app.status.refresh()
            await pilot.pause()
            text = screen_text(app)
            assert "≈140.00 µs ±2.1% 1.61× eager, preliminary" in text
            engine.emit(ev.QueueChanged(lanes={"gpu0": None}, queued=[]))
            await wait_for(pilot, lambda: "t9" not in app.status.activity.preliminary)

    asyncio.run(body())
    store.close()


def _profiled(monkeypatch, root, bench_calls):
    from trialtui.engine import profile as profile_module

    monkeypatch.setattr(profile_module, "detect_device", lambda: "cuda")
    monkeypatch.setattr(profile_module, "analyze", lambda problem, **kw: AnalysisResult.failure("not here"))
    monkeypatch.setattr(profile_module, "profile_file", lambda problem, path, **kw: as_profile(
        {"source": "ncu", "available": False, "reason": "no ncu in this test"}))

    def bench(problem, path, **kw):
        bench_calls.append(path)
        return as_result({"state": "incorrect", "message": "benchmarked again", "env": {"device": "cuda"}})

    monkeypatch.setattr(profile_module, "bench_file", bench)
    return profile_module.profile_candidate(load_problem(root), root / "kernel.py")


def test_profile_reuses_the_verdict_of_the_same_source_against_the_same_reference(tmp_path, monkeypatch):
    from trialtui.core.baselines import reference_hash
    from trialtui.core.model import TrialState
    from trialtui.core.store import Store

    root = write_problem(tmp_path / "p", files={"kernel.py": KB_GOOD})
    result = {"version": 1, "state": "correct", "message": "", "timing": {"median_us": 120.0, "rse": 0.002},
              "baselines": {"eager": {"median_us": 180.0}}, "speedup": {"eager": 1.5}, "flags": [],
              "env": {"device": "cuda", "gpu": "NVIDIA H200"}, "dtype": "float32", "sizes": [{}],
              "reference_sha": reference_hash(root / "reference.py")}
    with Store.open(root) as store:
        _, trial = store.record("kernel.py", KB_GOOD)
        store.update(trial.id, state=TrialState.CORRECT, result=as_result(result))
    calls: list = []
    out = _profiled(monkeypatch, root, calls)
    assert calls == [] and out.state == "correct" and out.median_us == 120.0  # no second benchmark

    (root / "kernel.py").write_text(KB_GOOD + "\n# another version\n")
    assert _profiled(monkeypatch, root, calls).state == "incorrect" and len(calls) == 1  # new source: checked

    (root / "kernel.py").write_text(KB_GOOD)
    (root / "reference.py").write_text((root / "reference.py").read_text() + "\n# edited\n")
    assert _profiled(monkeypatch, root, calls).state == "incorrect" and len(calls) == 2  # new reference: checked


def test_a_compile_stage_that_raises_cancels_the_gpu_job_before_the_lane_takes_another(tmp_path):
    class Broken(SlowCompile):
        def __call__(self, problem, path, compile=True, **kw):
            if compile:
                time.sleep(0.3)
                raise RuntimeError("the compile stage itself broke")
            return ok_validate(problem, path)

    bench = FakeBench(seconds=600.0)
    engine = engine_with(tmp_path, bench, Broken(0.3), Lane("gpu0", "0"))
    seen = collect(engine)
    started = time.monotonic()
    asyncio.run(engine.run(once=True))
    assert time.monotonic() - started < 300  # the 600 s job was cancelled with it
    assert engine.store.get("t1").state == "error"
    assert any(isinstance(e, ev.EngineError) and "the compile stage itself broke" in e.message for e in seen)
    engine.close()
