"""Warm jobs are forks of a fork server (engine/forkservers.py, runner/forkserver.py): a forked job must
hold what an exec'd one holds (its environment, working directory, descriptors), nothing of the
server (its request socket) or of its supervisor (the token of its events), and jobs must go on, as exec'd ones, when the server is gone.

The job is tests/containment_job.py: it runs the lines in its spec and reports what they found.
"""

from __future__ import annotations

import os
import signal
import textwrap
from pathlib import Path

import pytest

from procs import children, cmdline, wait_for
from trialtui.core.config import Limits
from trialtui.engine import forkservers
from test_containment import CodeSpec
from trialtui.engine.jobs import WarmChildren, run_child

pytestmark = pytest.mark.slow
HERE = Path(__file__).resolve().parent
JOB = "containment_job"
ENV = {"PYTHONPATH": str(HERE), "FORKSERVER_TEST": "1"}
FACTS = """
import os, sys
from pathlib import Path
out["forked"] = "trialtui.runner.supervisor" in sys.modules  # what only a fork of the supervisor holds
out["cwd_is_scratch"] = Path.cwd().name.startswith("trialtui-scratch-")
def target(fd):
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None  # the descriptor listdir itself used
links = {int(fd): target(fd) for fd in os.listdir("/proc/self/fd")}
out["fds"] = sorted(fd for fd, link in links.items() if link)
out["sockets"] = [fd for fd, link in links.items() if link and link.startswith("socket:")]
out["env"] = dict(os.environ)
out["argv"] = sys.argv[1:]
out["main"] = sys.modules["__main__"].__name__ == "__main__" and sys.modules["__main__"].__file__.endswith("containment_job.py")
out["session_leader"] = os.getsid(0) == os.getpid()
out["token"] = getattr(sys.modules.get("trialtui.runner.supervisor"), "TOKEN", "")  # read after the fork: never here
"""


def facts(tmp_path: Path, warm: WarmChildren | None, env: dict[str, str] = ENV) -> dict:
    result = run_child(JOB, CodeSpec(code=textwrap.dedent(FACTS)), timeout_s=60, log_path=tmp_path / "job.log",
                       env=env, limits=Limits(), warm=warm)
    assert result.get("state") == "ok", result
    return result


def test_a_forked_warm_job_holds_what_an_exec_one_does_and_nothing_of_its_server(tmp_path):
    env = {**ENV, "FORKSERVER_TEST": "cold-and-forked"}  # no other test's server: the first job is exec'd
    cold = facts(tmp_path, None, env)
    warm = WarmChildren()
    try:
        warm.prime(JOB, env)
        forked = facts(tmp_path, warm, env)
    finally:
        warm.close()
    assert not cold["forked"] and forked["forked"]
    for key in ("cwd_is_scratch", "fds", "sockets", "main", "session_leader"):
        assert forked[key] == cold[key], key
    assert forked["argv"] == ["--warm"] and cold["argv"] == []
    assert forked["sockets"] == [] and forked["cwd_is_scratch"] and forked["session_leader"]
    assert forked["token"] == ""  # the supervisor's secret for its events to the engine
    assert forked["env"] == cold["env"]  # the job's environment exactly, not the server's with additions


def test_a_job_outside_the_warm_pool_forks_where_the_process_runs_a_server_for_it(tmp_path):
    """The finalize's and the held-out check's jobs: a new interpreter only where no engine of the
    process started a server for their module and environment."""
    env = {**ENV, "FORKSERVER_TEST": "outside-the-pool"}
    assert not facts(tmp_path, None, env)["forked"]
    warm = WarmChildren()
    try:
        warm.prime(JOB, env)
        assert facts(tmp_path, None, env)["forked"]
    finally:
        warm.close()


def test_warm_jobs_go_on_when_their_fork_server_and_its_base_are_gone(tmp_path):
    warm = WarmChildren()
    try:
        warm.prime(JOB, ENV)
        server = forkservers.server(JOB, ENV)  # the process's server that prime forked from
        base = server.process._server  # the base it was forked from
        for each in (server, base):
            os.kill(each.process.pid, signal.SIGKILL)
            wait_for(lambda: not each.alive(), "the fork server to die")
        first = facts(tmp_path, warm)  # the one primed before the kill was never forked, or forked and fine
        second = facts(tmp_path, warm)  # primed after the kill: from a new server
        assert first["state"] == second["state"] == "ok"
        assert second["forked"]
        new = forkservers.server(JOB, ENV)
        assert new is not server and new.alive()
    finally:
        warm.close()


def test_engines_of_one_process_share_one_base_and_its_servers_of_each_environment(tmp_path):
    """One torch import serves every module and interpreter flag (the compile stage's server and the
    checker's); a second engine in the process forks from the same servers; each job sees its own flag."""
    interpreted, compiled = {**ENV, "TRITON_INTERPRET": "1"}, {**ENV, "TRITON_INTERPRET": "0"}
    first, second = WarmChildren(), WarmChildren()
    try:
        first.prime(JOB, interpreted)
        first.prime(JOB, compiled)
        assert facts(tmp_path, first, interpreted)["env"]["TRITON_INTERPRET"] == "1"
        assert facts(tmp_path, first, compiled)["env"]["TRITON_INTERPRET"] == "0"
        servers = {forkservers.server(JOB, env).process.pid for env in (interpreted, compiled)}
        first.close()
        second.prime(JOB, interpreted)
        ((waiting,),) = second._ready.values()
        parent = int(Path(f"/proc/{waiting.process.pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        assert parent in servers  # forked by the first engine's server, not a new one
        assert facts(tmp_path, second, interpreted)["forked"]
        assert {forkservers.server(JOB, env).process.pid for env in (interpreted, compiled)} == servers
        bases = [pid for pid in children(os.getpid()) if "trialtui.runner.forkserver" in cmdline(pid)
                 and any(child in servers for child in children(pid))]
        assert len(servers) == 2 and len(bases) == 1
    finally:
        first.close()
        second.close()
