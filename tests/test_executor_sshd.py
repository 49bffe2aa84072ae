"""The SSH executor against OpenSSH's sshd on 127.0.0.1, started here (tests/sshd_server.py): the server a
GPU box runs, where test_executor_ssh.py uses asyncssh's to cut a connection at an exact line."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from trialtui.core.problem_dir import load_problem
from trialtui.engine import events as ev
from trialtui.engine.executors import executor_for
from trialtui.engine.loop import Engine

from conftest import KB_GOOD, write_problem
from procs import alive, cmdline, descendants, wait_for
from sshd_server import Sshd, missing

pytest.importorskip("asyncssh", reason="asyncssh is not installed (pip install asyncssh): the SSH executor needs it")
from test_executor_ssh import assert_remote_job_is_the_local_one, settings_for  # noqa: E402 - needs asyncssh

pytestmark = [pytest.mark.slow, pytest.mark.skipif(missing() is not None, reason=missing() or "")]


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    found = Sshd(tmp_path_factory.mktemp("openssh"))
    yield found
    found.close()


@pytest.fixture
def executor(sshd):
    found = executor_for(None, settings_for(sshd), "cpu")
    found.open()
    yield found
    found.close()


def test_a_job_through_sshd_gives_the_local_result_and_its_log_lands_here(tmp_path, sshd, executor):
    assert_remote_job_is_the_local_one(tmp_path, executor, sshd.url())
    host = executor.hello["pid"]
    assert host in descendants(sshd.pid) and "-m trialtui.engine.executors.host" in cmdline(host)  # sshd ran it


def first_run_waits(mark: Path) -> str:
    """KB_GOOD whose first run waits five seconds (the cut comes while it waits: a busy machine's lag
    never lets that job finish first) and whose run after the reconnection goes through."""
    gate = (f"        import os, time\n        if not os.path.exists({str(mark)!r}):\n"
            f"            open({str(mark)!r}, 'w').close()\n            time.sleep(5)\n")
    head, sep, tail = KB_GOOD.partition("    def forward(self, x):\n")
    assert sep, "KB_GOOD's forward moved"
    return head + sep + gate + tail


def test_a_connection_lost_mid_job_marks_the_trial_interrupted_and_it_runs_once_more(tmp_path, sshd, executor):
    root = write_problem(tmp_path / "prob", files={"kernel.py": first_run_waits(tmp_path / "first-run")},
                         config="seeds = 1\nbench_timeout_s = 120\n")
    first_host = executor.hello["pid"]
    accepted_before = sshd.accepted()
    engine = Engine(load_problem(root), executor=executor)
    states: list[str] = []
    cut: list[list[int]] = []

    def on_event(event: ev.Event) -> None:
        if isinstance(event, ev.StateChanged) and event.trial_id == "t1":
            states.append(event.state)
        elif isinstance(event, ev.Progress) and event.phase == "correctness" and not cut:
            # the job runs on the host and its result is not yet sent: its processes, then sshd's, go
            cut.append(descendants(first_host))
            cut.append(sshd.cut())

    engine.subscribe(on_event)
    try:
        asyncio.run(engine.run(once=True))
        trial = engine.store.get("t1")
    finally:
        engine.close()
    assert cut and cut[1], "no sshd session to kill while the job ran"
    assert "interrupted" in states and states.index("interrupted") < len(states) - 1
    assert trial.state == "correct", trial.result
    assert trial.result.env["executor"] == sshd.url()
    assert sshd.accepted() == accepted_before + 1  # connected again, once
    wait_for(lambda: not alive(first_host) and not any(alive(p) for p in cut[0]),
             "the first host process and everything it started to be gone once sshd's session was killed")
