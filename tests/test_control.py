"""The CLI beside a running engine: branch/note/rerun/finalize go through the control channel, not refused."""

from __future__ import annotations

import asyncio
import os
import stat
import threading
import time

import pytest
from click.testing import CliRunner

from trialtui.cli.trials import trials
from trialtui.core.store import STATE_DIR
from trialtui.engine import control
from trialtui.engine import events as ev

from conftest import KB_GOOD, write_problem
from test_engine import collect, make_engine


@pytest.fixture
def root(tmp_path):
    return write_problem(tmp_path / "p", files={"kernel.py": KB_GOOD})


class Running:
    """An engine running in its own thread's event loop, as a TUI or watcher would in another terminal."""

    def __init__(self, engine):
        self.engine = engine
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(engine.run(watch=False),))

    def __enter__(self):
        self.thread.start()
        state = self.engine.store.state_dir
        for _ in range(200):
            try:
                control.send(state, "ping", timeout=1)
                break
            except control.Unavailable:
                time.sleep(0.02)
        asyncio.run_coroutine_threadsafe(self.engine.drain(), self.loop).result(30)
        return self

    def __exit__(self, *exc):
        self.loop.call_soon_threadsafe(self.engine.stop)
        self.thread.join(10)
        self.loop.close()
        self.engine.close()


def two_trials(root):
    """t1 (correct, KB_GOOD) and kernel.py holding a second version, which the engine records on start as t2."""
    engine = make_engine(root)
    engine.store.add_trial("kernel.py", KB_GOOD, state="correct")
    (root / "kernel.py").write_text(KB_GOOD + "\n# v2\n")
    return engine


def test_cli_branch_beside_a_running_engine_is_sent_to_it_and_has_reached_it_when_the_command_returns(root):
    engine = two_trials(root)
    seen = collect(engine)
    with Running(engine):
        assert engine.store.heads["kernel.py"] == "t2"
        result = CliRunner().invoke(trials, ["branch", "t1", "--dir", str(root)])
        arrived = [e for e in seen if isinstance(e, ev.SaveIgnored) and e.how == "checkout" and e.head == "t1"]
        assert result.exit_code == 0, result.output
        assert arrived  # the engine has applied it by the time the command answers (no polling delay)
        assert f"sent to the running trialtui, pid {os.getpid()}" in result.output
        assert (root / "kernel.py").read_text() == KB_GOOD
        assert engine.store.heads["kernel.py"] == "t1"


def test_cli_note_and_rerun_beside_a_running_engine(root):
    engine = two_trials(root)
    seen = collect(engine)
    with Running(engine) as running:
        result = CliRunner().invoke(trials, ["note", "t1", "the", "baseline", "--dir", str(root)])
        assert result.exit_code == 0 and "t1: the baseline (sent to the running trialtui" in result.output
        assert engine.store.get("t1").note == "the baseline"
        assert any(isinstance(e, ev.StateChanged) and e.trial_id == "t1" and "noted" in e.message for e in seen)
        result = CliRunner().invoke(trials, ["rerun", "t2", "t9", "--dir", str(root)])
        assert result.exit_code != 0 and "no trial 't9'" in result.output  # all known, or nothing queued
        result = CliRunner().invoke(trials, ["rerun", "t2", "--dir", str(root)])
        assert result.exit_code == 0 and "queued t2 (sent to the running trialtui" in result.output
        asyncio.run_coroutine_threadsafe(engine.drain(), running.loop).result(30)
        result = CliRunner().invoke(trials, ["import", "--format", "hf", str(root), "--dir", str(root)])
        assert result.exit_code != 0  # import is still refused while an engine runs
    assert [e.trial_id for e in seen if isinstance(e, ev.ResultReady)].count("t2") == 2


def test_a_branch_from_a_second_terminal_reaches_the_running_tui(root):
    from trialtui.tui.app import make_app

    engine = two_trials(root)

    async def body():
        app = make_app(engine.problem, engine=engine)
        async with app.run_test(size=(120, 36)) as pilot:
            for _ in range(300):
                if app.heads.get("kernel.py") == "t2" and engine.lanes.idle and not engine._pending:
                    break
                await pilot.pause(0.05)
            start = time.monotonic()
            reply = await asyncio.to_thread(control.send, engine.store.state_dir, "branch", {"trial": "t1"})
            while app.heads.get("kernel.py") != "t1" and time.monotonic() - start < 60:
                await pilot.pause(0.01)
            shown = app.heads.get("kernel.py")
            engine.stop()
        return reply, shown

    reply, shown = asyncio.run(body())
    engine.close()
    assert reply["head"] == "t1" and shown == "t1"  # how fast it shows is for benches/latency.py


def test_the_socket_is_owner_only_and_a_malformed_command_is_refused(root):
    with Running(make_engine(root)) as running:
        path = control.socket_path(running.engine.store.state_dir)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        with pytest.raises(control.Refused, match="unknown command"):
            control.send(running.engine.store.state_dir, "format_disk")
        with pytest.raises(control.Refused, match="no trial 't99'"):
            control.send(running.engine.store.state_dir, "branch", {"trial": "t99"})
    assert not path.exists()  # removed when the engine stops
    with pytest.raises(control.Unavailable):
        control.send(root / STATE_DIR, "ping", timeout=1)


def test_a_long_problem_path_gets_a_private_socket_elsewhere(tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    path = control.socket_path(deep / STATE_DIR)
    assert len(os.fsencode(path)) <= 100 and path.parent.name == f"trialtui-{os.getuid()}"
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_cli_finalize_beside_a_running_engine_runs_in_it(root, records_unread):
    from test_engine import GpuBench

    engine = make_engine(root, bench=GpuBench([100.0, 100.0]))
    with Running(engine):
        result = CliRunner().invoke(trials, ["finalize", "t1", "--dir", str(root)])
        assert result.exit_code == 0, result.output
        assert "(sent to the running trialtui" in result.output
        assert (root / "final" / "kernel.py").read_text() == KB_GOOD
        assert "- Library work: not weighed: no kernel records here" in (root / "final" / "REPORT.md").read_text()
        assert not engine.paused  # watching resumed
