"""The SSH executor against a real SSH server on 127.0.0.1 (asyncssh's, started here): the remote host is
this machine, its command `python -m trialtui.engine.executors.host` runs in a directory of its own, and
every job there goes through the same supervisor, checker and candidate as a local one."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from trialtui.core.config import ExecutorSettings
from trialtui.core.executor import ExecutorError
from trialtui.core.problem_dir import load_problem
from trialtui.engine import events as ev
from trialtui.engine.bench import bench_file
from trialtui.engine.executors import executor_for
from trialtui.engine.jobs import ChildHandle
from trialtui.engine.loop import Engine

from conftest import KB_GOOD, write_problem
from procs import DEADLINE_S, children, cmdline, descendants, wait_for

asyncssh = pytest.importorskip("asyncssh", reason="asyncssh is not installed (pip install asyncssh): no SSH server to test against")
from ssh_server import SshServer  # noqa: E402 - needs asyncssh

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    found = SshServer(tmp_path_factory.mktemp("sshd"))
    yield found
    found.close()


def settings_for(server: SshServer, **more) -> ExecutorSettings:
    return ExecutorSettings(**{"url": server.url(), "python": sys.executable, "identity": str(server.identity),
                               "known_hosts": str(server.known_hosts), **more})


@pytest.fixture
def executor(server):
    found = executor_for(None, settings_for(server), "cpu")
    found.open()
    yield found
    found.close()


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def assert_remote_job_is_the_local_one(tmp_path, executor, url: str) -> None:
    """A bench job through `executor` against the same job here: same verdict and figures, progress
    streamed back, the log landed here, no path of the host's in the result."""
    root = write_problem(tmp_path / "prob", files={"kernel.py": KB_GOOD})
    problem = load_problem(root)
    here = bench_file(problem, root / "kernel.py", device="cpu", log_path=root / ".trialtui" / "logs" / "here.log").to_json()
    log = root / ".trialtui" / "logs" / "there.log"
    phases = []
    there = executor.bench(problem, root / "kernel.py", device="cpu", log_path=log,
                           on_progress=lambda event: phases.append(event.get("phase"))).to_json()
    assert here["state"] == there["state"] == "correct", there.get("message")
    for key in ("seeds", "passed", "max_abs_err", "mismatch_frac", "launches"):
        assert there["correctness"][key] == here["correctness"][key], key
    assert there["env"]["host"] == socket.gethostname()
    assert there["env"]["executor"] == url
    assert "correctness" in phases  # progress streams back while the job runs
    assert there["log"] == str(log) and log.is_file()  # the capped log, as the job left it there
    assert "trialtui-host-" not in json.dumps(there)  # every path is this machine's


def test_a_job_over_ssh_gives_the_local_result_and_its_log_lands_here(tmp_path, server, executor):
    assert_remote_job_is_the_local_one(tmp_path, executor, server.url())
    assert any("-m trialtui.engine.executors.host" in c for c in server.commands)


def test_the_compile_stage_runs_on_the_host(tmp_path, executor):
    root = write_problem(tmp_path / "prob", files={"kernel.py": KB_GOOD})
    report = executor.validate(load_problem(root), root / "kernel.py")
    assert report["ok"], report["errors"]
    assert report["kernels"]  # Triton compiled it there, for sm_90
    assert Path(report["log"]).parent == root / ".trialtui" / "logs" and Path(report["log"]).is_file()


def test_a_cancelled_job_is_swept_on_the_host(tmp_path, executor):
    slow = KB_GOOD.replace("        out = torch.empty_like(x)", "        while x.numel() > 0:\n            x = x + 0")
    root = write_problem(tmp_path / "prob", files={"kernel.py": slow}, config="bench_timeout_s = 300\n")
    host = executor.hello["pid"]

    def jobs() -> set[int]:
        """The host's job processes, not the fork servers they came from (those stay for the next job:
        a base, the host's child, and the modules' servers it forked); none while a process it started
        has not exec'd yet (its command line still the host's)."""
        below = descendants(host)
        if any(cmdline(pid) == cmdline(host) for pid in below):
            return set()
        bases = {pid for pid in children(host) if "trialtui.runner.forkserver" in cmdline(pid)}
        return set(below) - bases - {pid for base in bases for pid in children(base)}

    ready = wait_for(jobs, "the host's warm job processes")  # what the job will take
    handle = ChildHandle()
    result: dict = {}
    checking = threading.Event()  # the job runs the candidate there (a process count cannot say: the warm job
    # that takes it has its candidate's process started already, and a CI run waited 180 s for a new one)

    def progress(event: dict) -> None:
        if event.get("phase") == "correctness":
            checking.set()

    job = threading.Thread(target=lambda: result.update(executor.bench(
        load_problem(root), root / "kernel.py", device="cpu", handle=handle, on_progress=progress).to_json()))
    job.start()
    assert checking.wait(DEADLINE_S), f"gave up after {DEADLINE_S:g} s waiting for the job to run there"
    handle.cancel()
    job.join(timeout=300)
    assert result["state"] == "cancelled", result.get("message")
    wait_for(lambda: not any(alive(pid) for pid in ready), "the cancelled job's processes to be swept on the host")


def test_a_lost_connection_marks_the_trial_interrupted_and_it_runs_once_more(tmp_path, server, executor):
    root = write_problem(tmp_path / "prob", files={"kernel.py": KB_GOOD})
    first_host = executor.hello["pid"]
    hosts_before = sum("executors.host" in c for c in server.commands)
    engine = Engine(load_problem(root), executor=executor)
    states: list[str] = []
    dropped: list[list[int]] = []

    def mid_job(line: bytes) -> bool:
        """The host's first progress line of the bench job: it is running there, and its result not yet sent."""
        if b'"event":"progress"' in line and b'"phase":"correctness"' in line:
            dropped.append(descendants(first_host))
            return True
        return False

    server.cut_when = mid_job

    def on_event(event: ev.Event) -> None:
        if isinstance(event, ev.StateChanged) and event.trial_id == "t1":
            states.append(event.state)

    engine.subscribe(on_event)
    try:
        asyncio.run(engine.run(once=True))
        trial = engine.store.get("t1")
    finally:
        engine.close()
    assert "interrupted" in states and states.index("interrupted") < len(states) - 1
    assert trial.state == "correct", trial.result
    assert trial.result.env["executor"] == server.url()
    assert sum("executors.host" in c for c in server.commands) == hosts_before + 1  # connected again, once
    wait_for(lambda: not alive(first_host) and not any(alive(p) for p in dropped[0]),
             "the first host process and everything it started to be gone once its connection was cut")


def test_watch_and_finalize_over_ssh_from_trialtui_toml_name_where_each_trial_ran(tmp_path, server):
    s = settings_for(server)
    config = (f'[executor]\nurl = "{s.url}"\npython = "{s.python}"\nidentity = "{s.identity}"\n'
              f'known_hosts = "{s.known_hosts}"\n')
    root = write_problem(tmp_path / "prob", files={"kernel.py": KB_GOOD}, config=config)
    out = subprocess.run([sys.executable, "-m", "trialtui", "watch", str(root), "--headless", "--once"],
                         capture_output=True, text=True, timeout=600, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert out.returncode == 0, out.stderr
    assert f"ran on {socket.gethostname()} · CPU ({server.url()})" in out.stdout, out.stdout
    out = subprocess.run([sys.executable, "-m", "trialtui", "trials", "finalize", "t1", "--dir", str(root)],
                         capture_output=True, text=True, timeout=600, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert out.returncode == 0, out.stderr
    report = (root / "final" / "REPORT.md").read_text()
    assert f"- Ran on: {socket.gethostname()} through {server.url()}" in report
    assert "generalizes: 7 of 8 held-out cases" in report  # the held-out check ran there too (KB_GOOD indexes flat)


def test_an_unreachable_host_is_refused_naming_it(server):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens there once the socket closes
    executor = executor_for(f"ssh://{server.user}@127.0.0.1:{port}", settings_for(server), "cpu")
    with pytest.raises(ExecutorError, match=f"cannot reach ssh {server.user}@127.0.0.1:{port}"):
        executor.open()
    executor.close()


def test_a_host_without_trialtui_says_what_to_install(server):
    executor = executor_for(None, settings_for(server, python="/nonexistent/python3"), "cpu")
    with pytest.raises(ExecutorError, match=r"pip install -e '\.\[runner\]' in a trialtui checkout"):
        executor.open()
    executor.close()
