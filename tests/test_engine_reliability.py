"""Nothing stuck: a job or task that raises fails its trial and says so; interrupted trials run again on start."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from click.testing import CliRunner

from trialtui.cli import trials as cli_trials
from trialtui.core.store import Store
from trialtui.engine import events as ev
from trialtui.engine.lanes import Job, Lane, Lanes

from conftest import KB_GOOD, as_validation, no_analysis, write_problem
from test_engine import FakeBench, collect, make_engine, ok_validate


@pytest.fixture
def root(tmp_path):
    return write_problem(tmp_path / "p", files={"kernel.py": KB_GOOD})


class RaisingBench(FakeBench):
    """Raises (a bug of trialtui's own, not the kernel's) on the calls listed."""

    def __init__(self, raise_on: set[int]):
        super().__init__()
        self.raise_on, self.n = raise_on, 0

    def json(self, problem, path, **kw):
        self.n += 1
        if self.n in self.raise_on:
            raise RuntimeError("dictionary changed size during iteration")
        return super().json(problem, path, **kw)


def test_a_job_that_raises_fails_its_trial_reports_it_and_the_lane_goes_on(root):
    (root / "other.py").write_text(KB_GOOD + "\n# other\n")
    engine = make_engine(root, bench=RaisingBench({1}))
    seen = collect(engine)
    asyncio.run(asyncio.wait_for(engine.run(once=True), 30))  # drain() returns: nothing is stuck
    states = {t.file: t.state for t in engine.store.trials()}
    assert sorted(states.values()) == ["correct", "error"]
    errors = [e for e in seen if isinstance(e, ev.EngineError)]
    assert len(errors) == 1 and "RuntimeError: dictionary changed size" in errors[0].message
    failed = next(t for t in engine.store.trials() if t.state == "error")
    assert errors[0].message.startswith(failed.id)
    engine.close()


def test_a_lane_survives_a_job_without_a_handler(capsys):
    async def body():
        lanes = Lanes([Lane("cpu", None)])
        ran = []

        async def boom(lane):
            raise ValueError("boom")

        async def fine(lane):
            ran.append(lane.name)

        lanes.start()
        lanes.submit(Job("t1", "k.py", boom))
        lanes.submit(Job("t2", "k.py", fine))
        for _ in range(100):
            if ran:
                break
            await asyncio.sleep(0.01)
        await lanes.stop()
        return ran

    assert asyncio.run(body()) == ["cpu"]
    assert "ValueError: boom" in capsys.readouterr().err


def test_a_failing_subscriber_does_not_stop_the_engine(root, capsys):
    engine = make_engine(root)
    engine.subscribe(lambda event: 1 / 0)
    seen = collect(engine)
    asyncio.run(engine.run(once=True))
    assert {t.state for t in engine.store.trials()} == {"correct"}
    assert any(isinstance(e, ev.ResultReady) for e in seen)
    assert "ZeroDivisionError" in capsys.readouterr().err
    engine.close()


def interrupted_store(root: Path) -> None:
    """A dead session: k.py saved three times (t1, t2, t3: t3 is what the file holds) and other.py once."""
    (root / "other.py").write_text("x = 'other'\n")
    with Store.open(root) as store:
        for n, (file, text) in enumerate([("kernel.py", "a = 1\n"), ("kernel.py", "a = 2\n"),
                                          ("kernel.py", KB_GOOD), ("other.py", "x = 'other'\n")]):
            trial = store.add_trial(file, text)
            store.update(trial.id, state="queued" if n != 1 else "validating",
                         validation=as_validation({"ok": True}) if n != 1 else None)
        store._disk.close()  # the process dies: no closing checkpoint, the lock goes with it
        import os
        os.close(store._lock_fd)
        store._lock_fd = None


def test_on_start_interrupted_trials_whose_file_is_current_run_first_newest_first(root):
    interrupted_store(root)
    bench = FakeBench()
    engine = make_engine(root, bench=bench)
    seen = collect(engine)
    asyncio.run(engine.run(once=True))
    assert engine.store.recovered == ["t1", "t2", "t3", "t4"]
    # queue policy: every save is measured; the current ones (t4, t3) first, newest first, then t2, t1
    ran = [call[0] for call in bench.calls]
    assert ran[:2] == [engine.store.snapshot_path(engine.store.get(t).sha256).name for t in ("t4", "t3")]
    assert {t.state for t in engine.store.trials()} == {"correct"}
    assert any(isinstance(e, ev.Notice) and "4 trial(s) interrupted" in e.message for e in seen)
    engine.close()


def test_under_latest_stale_interrupted_trials_are_superseded(root):
    interrupted_store(root)
    engine = make_engine(root, config="[watch]\nbusy = 'latest'\n")
    asyncio.run(engine.run(once=True))
    assert {t.id: t.state for t in engine.store.trials()} == {
        "t1": "superseded", "t2": "superseded", "t3": "correct", "t4": "correct"}
    engine.close()


def test_the_switch_turns_requeue_off_and_names_the_cli_way(root):
    interrupted_store(root)
    engine = make_engine(root, config="[watch]\nrerun_interrupted = false\n")
    seen = collect(engine)
    asyncio.run(engine.run(once=True))
    assert {t.state for t in engine.store.trials()} == {"interrupted"}
    assert any(isinstance(e, ev.Notice) and "trials rerun --interrupted" in e.message for e in seen)
    engine.close()


def test_latest_runs_the_newest_save_before_older_queued_saves_of_other_files(root):
    engine = make_engine(root, config="[watch]\nbusy = 'latest'\n")
    older = engine.store.add_trial("other.py", "x = 1\n")
    newer = engine.store.add_trial("kernel.py", "y = 2\n")
    engine._enqueue(older)
    engine._enqueue(newer)
    assert [job.trial_id for job in engine.lanes.queue] == [newer.id, older.id]
    engine.close()
    fifo = make_engine(write_problem(root.parent / "q", files={"kernel.py": KB_GOOD}))
    a, b = fifo.store.add_trial("other.py", "x = 1\n"), fifo.store.add_trial("kernel.py", "y = 2\n")
    fifo._enqueue(a)
    fifo._enqueue(b)
    assert [job.trial_id for job in fifo.lanes.queue] == [a.id, b.id]
    fifo.close()


def test_trials_rerun_without_a_running_engine_runs_them_here(root, monkeypatch):
    interrupted_store(root)
    bench = FakeBench()

    def local(problem, store, device, executor=None):
        from trialtui.engine.loop import Engine

        return Engine(problem, device="cuda", store=store, lanes=Lanes([Lane("gpu0", "0")]), bench=bench,
                      validate=ok_validate, analyze=no_analysis)

    monkeypatch.setattr(cli_trials, "local_engine", local)
    result = CliRunner().invoke(cli_trials.trials, ["rerun", "t3", "--dir", str(root)])
    assert result.exit_code == 0, result.output
    assert "t3 result correct" in result.output
    with Store.open(root, writer=False) as reader:
        assert {t.id: t.state for t in reader.trials()} == {
            "t1": "interrupted", "t2": "interrupted", "t3": "correct", "t4": "interrupted"}
    result = CliRunner().invoke(cli_trials.trials, ["rerun", "--interrupted", "--dir", str(root)])
    assert result.exit_code == 0, result.output
    with Store.open(root, writer=False) as reader:
        assert {t.state for t in reader.trials()} == {"correct"}
    assert len(bench.calls) == 4  # t2 had never been validated: it was, then ran
    result = CliRunner().invoke(cli_trials.trials, ["rerun", "--dir", str(root)])
    assert result.exit_code != 0 and "give trial IDs or --interrupted" in result.output
