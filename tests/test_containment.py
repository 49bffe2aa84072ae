"""The process layout around every job: supervisor, stub parent, sweep, limits, capped log, restored files.

The job here is tests/containment_job.py, which runs a few lines of Python without torch, so each
case takes a fraction of a second. Every process a job starts carries a unique marker in its
environment; after each case /proc must hold none of them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

from trialtui.core.config import ConfigError, Limits, parse_config
from trialtui.core.job_spec import JobSpec
from trialtui.engine.jobs import ChildHandle, run_child
from trialtui.runner.job_log import LOG_KEEP

HERE = Path(__file__).resolve().parent
JOB = "containment_job"


@dataclass(frozen=True, kw_only=True)
class CodeSpec(JobSpec):
    """containment_job's spec: the lines to run, and the problem files the engine's guard covers while they run."""

    code: str  # Python source, run with `spec` (the JSON received) and `out` (the result's keys) in scope
    reference: str | None = None  # a file the guard snapshots and restores, as a problem's reference
    candidate: str | None = None  # the same, as a candidate

    sent_when_set: ClassVar[tuple[str, ...]] = (*JobSpec.sent_when_set, "reference", "candidate")
SLEEPER = f"{sys.executable!r}, '-c', 'import time; time.sleep(300)'"


def marked(marker: str) -> list[int]:
    """Pids whose environment holds the marker."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if f"CONTAINMENT_MARK={marker}".encode() in environ and state != "Z":
            found.append(int(entry))
    return found


def job(tmp_path: Path, code: str, *, timeout_s: float = 10.0, limits: Limits | None = None, handle=None,
        spec: dict | None = None) -> tuple[dict, str]:
    marker = uuid.uuid4().hex
    result = run_child(
        JOB, CodeSpec(code=textwrap.dedent(code), **(spec or {})), timeout_s=timeout_s, log_path=tmp_path / "job.log",
        env={"PYTHONPATH": str(HERE), "CONTAINMENT_MARK": marker}, limits=limits or Limits(), handle=handle,
    )
    return result, marker


def assert_no_leftovers(marker: str) -> None:
    deadline = time.monotonic() + 60  # generous: returns as soon as they are gone
    while marked(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marked(marker) == [], "processes of the job are still running"


def test_the_result_travels_by_pipe_and_no_path_to_it_is_in_argv_env_or_cwd(tmp_path):
    result, marker = job(tmp_path, """
        import os, sys
        out["argv"] = sys.argv
        out["cwd"] = os.getcwd()
        out["env_paths"] = [k for k, v in os.environ.items() if "result" in (k + v).lower() and not k.startswith("PYTEST")]
        out["cwd_files"] = sorted(os.listdir("."))
        out["stdin"] = sys.stdin.read()
    """)
    assert result["state"] == "ok", result
    assert result["argv"][1:] == []
    assert result["env_paths"] == []
    assert result["cwd_files"] == ["job-spec.json"]
    assert result["stdin"] == ""
    assert "trialtui-scratch-" in result["cwd"] and not Path(result["cwd"]).exists()
    assert result["containment"] == {"swept": 0, "log_cut": 0}
    assert_no_leftovers(marker)


def test_setsid_and_double_fork_leftovers_are_swept(tmp_path):
    result, marker = job(tmp_path, f"""
        import os, subprocess
        subprocess.Popen([{SLEEPER}], start_new_session=True)
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv({sys.executable!r}, [{SLEEPER}])
            os._exit(0)
    """)
    assert result["state"] == "ok", result
    assert result["containment"]["swept"] >= 2
    assert_no_leftovers(marker)


def test_a_job_that_kills_its_parent_kills_only_the_stub(tmp_path):
    result, marker = job(tmp_path, f"""
        import os, signal, subprocess
        subprocess.Popen([{SLEEPER}], start_new_session=True)
        os.kill(os.getppid(), signal.SIGKILL)
    """)
    assert result["state"] == "error"
    assert "killed its parent" in result["message"]
    assert_no_leftovers(marker)


def test_a_job_that_kills_the_supervisor_leaves_nothing_the_supervisor_reported(tmp_path):
    result, marker = job(tmp_path, f"""
        import os, signal, subprocess, time
        subprocess.Popen([{SLEEPER}], start_new_session=True)
        time.sleep(3)  # the supervisor reports its descendants every 0.25 s: a dozen reports, even on a busy machine
        stub = os.getppid()
        supervisor = int(open(f"/proc/{{stub}}/stat").read().rsplit(")", 1)[1].split()[1])
        os.kill(supervisor, signal.SIGKILL)
        time.sleep(30)
    """)
    assert result["state"] == "error"
    assert "supervisor died (killed by SIGKILL)" in result["message"]
    assert result["containment"]["killed"] >= 1
    assert_no_leftovers(marker)


def test_a_hanging_job_times_out_and_nothing_is_left(tmp_path):
    result, marker = job(tmp_path, f"""
        import subprocess
        subprocess.Popen([{SLEEPER}], start_new_session=True)
        while True:
            pass
    """, timeout_s=1.0)
    assert result["state"] == "timeout"  # the 1 s budget ended it: nothing else would
    assert "(before it reported any step)" in result["message"]
    assert_no_leftovers(marker)


def test_a_job_that_hangs_outside_a_request_says_its_last_reported_step(tmp_path):
    """A hang the job's own deadlines cannot name (the checker loading a reference that hangs) still says how
    far the job got, from its progress lines."""
    result, _ = job(tmp_path, """
        import json
        with open(spec["progress"], "a", buffering=1) as fh:
            fh.write(json.dumps({"phase": "correctness", "i": 1, "n": 4}) + "\\n")
            fh.write(json.dumps({"phase": "loading the reference"}) + "\\n")
        while True:
            pass
    """, timeout_s=2.0)
    assert result["state"] == "timeout"
    assert "timed out after 2 s (its last step reported: loading the reference); the job was killed" in result["message"]


def test_cancel_ends_the_job_and_its_processes(tmp_path):
    handle = ChildHandle()
    threading.Timer(0.5, handle.cancel).start()
    result, marker = job(tmp_path, f"""
        import subprocess, time
        subprocess.Popen([{SLEEPER}], start_new_session=True)
        time.sleep(600)
    """, handle=handle)
    assert result["state"] == "cancelled"  # it had 600 s of sleep left: only the cancel ended it
    assert_no_leftovers(marker)


def test_when_the_engine_dies_the_supervisor_sweeps_the_job(tmp_path):
    marker = uuid.uuid4().hex
    engine = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        from trialtui.core.config import Limits
        import sys
        sys.path.insert(0, {str(HERE)!r})
        from test_containment import CodeSpec
        from trialtui.engine.jobs import run_child
        code = "import subprocess, time\\nsubprocess.Popen([{SLEEPER}], start_new_session=True)\\ntime.sleep(60)"
        run_child({JOB!r}, CodeSpec(code=code), timeout_s=60, log_path={str(tmp_path / 'e.log')!r},
                  env={{"PYTHONPATH": {str(HERE)!r}, "CONTAINMENT_MARK": {marker!r}}}, limits=Limits())
    """)])
    deadline = time.monotonic() + 10
    while len(marked(marker)) < 2 and time.monotonic() < deadline:  # the job and its sleeper
        time.sleep(0.05)
    assert len(marked(marker)) >= 2
    engine.kill()
    engine.wait()
    assert_no_leftovers(marker)


def test_the_log_keeps_the_first_and_last_megabyte_and_marks_the_cut(tmp_path):
    result, marker = job(tmp_path, """
        import sys
        sys.stdout.write("FIRST\\n" + "x" * 5_000_000 + "\\nLAST\\n")
    """)
    log = (tmp_path / "job.log").read_bytes()
    assert result["state"] == "ok"
    assert len(log) < 2 * 1024 * 1024
    assert log.startswith(b"FIRST") and log.rstrip().endswith(b"LAST")
    cut = len(b"FIRST\n" + b"x" * 5_000_000 + b"\nLAST\n") - 2 * LOG_KEEP
    assert f"[trialtui: {cut} bytes of output cut here".encode() in log
    assert result["containment"]["log_cut"] == cut


def test_a_changed_reference_is_an_error_naming_it_and_is_restored(tmp_path):
    reference = tmp_path / "reference.py"
    reference.write_text("ORIGINAL = 1\n")
    result, _ = job(tmp_path, """
        with open(spec["reference"], "a") as fh:
            fh.write("HACKED = 1\\n")
    """, spec={"reference": str(reference)})
    assert result["state"] == "error"
    assert "reference.py changed while the job ran;" in result["message"]
    assert reference.read_text() == "ORIGINAL = 1\n"
    kept = Path(result["restored"][0]["kept"])
    assert kept.read_text() == "ORIGINAL = 1\nHACKED = 1\n"


def test_a_removed_candidate_is_restored(tmp_path):
    candidate = tmp_path / "cand.py"
    candidate.write_text("X = 1\n")
    result, _ = job(tmp_path, "import os; os.remove(spec['candidate'])", spec={"candidate": str(candidate)})
    assert result["state"] == "error" and "cand.py changed while the job ran" in result["message"]
    assert result["restored"][0]["how"] == "removed"
    assert candidate.read_text() == "X = 1\n"


def test_rlimits_are_set_on_the_job(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no GPU seen: the address-space limit applies
    result, _ = job(tmp_path, """
        import resource
        out["limits"] = {name: resource.getrlimit(getattr(resource, name))[0]
                         for name in ("RLIMIT_AS", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_CPU", "RLIMIT_NPROC")}
    """, timeout_s=7, limits=Limits(address_space_mb=3000, file_size_mb=5, open_files=200, processes=64))
    got = result["limits"]
    assert got["RLIMIT_AS"] == 3000 << 20
    assert got["RLIMIT_FSIZE"] == 5 << 20
    assert got["RLIMIT_NOFILE"] == 200
    assert 7 * (os.cpu_count() or 1) + 10 <= got["RLIMIT_CPU"] <= 7 * (os.cpu_count() or 1) + 15
    assert got["RLIMIT_NPROC"] > 64


def test_a_big_allocation_fails_under_the_address_space_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    result, _ = job(tmp_path, "out['n'] = len(bytearray(4 << 30))", limits=Limits(address_space_mb=2048))
    assert result["state"] == "error"
    assert "MemoryError" in result["message"]


def test_the_file_size_limit_stops_a_huge_write(tmp_path):
    result, _ = job(tmp_path, """
        with open("big", "wb") as fh:
            fh.write(b"x" * (3 << 20))
    """, limits=Limits(file_size_mb=1))
    assert result["state"] == "error"
    assert "File too large" in result["message"]  # Python ignores SIGXFSZ, so the write fails


def test_limits_table_is_validated():
    assert parse_config({"limits": {"address_space_mb": 0, "sandbox": True}}).limits.sandbox is True
    with pytest.raises(ConfigError, match="unknown key.*memory_mb"):
        parse_config({"limits": {"memory_mb": 1}})
    with pytest.raises(ConfigError, match="limits.open_files must be a whole number"):
        parse_config({"limits": {"open_files": -1}})
    with pytest.raises(ConfigError, match="limits.sandbox must be true or false"):
        parse_config({"limits": {"sandbox": "yes"}})


@pytest.mark.skipif(subprocess.run(["which", "bwrap"], capture_output=True).returncode != 0,
                    reason="bubblewrap (bwrap) is not installed")
def test_the_sandbox_makes_the_problem_read_only_and_cuts_the_network(tmp_path):
    reference = tmp_path / "reference.py"
    reference.write_text("ORIGINAL = 1\n")
    result, marker = job(tmp_path, """
        import errno, socket
        try:
            open(spec["reference"], "a").write("HACKED = 1\\n")
            out["write"] = "written"
        except OSError as exc:
            out["write"] = errno.errorcode[exc.errno]
        try:
            socket.create_connection(("1.1.1.1", 53), timeout=2)
            out["net"] = "connected"
        except OSError as exc:
            out["net"] = type(exc).__name__
        open("scratch-ok", "w").write("fine")
    """, spec={"reference": str(reference)}, limits=Limits(sandbox=True))
    assert result["state"] == "ok", result
    assert result["write"] == "EROFS"
    assert result["net"] != "connected"
    assert reference.read_text() == "ORIGINAL = 1\n"
    assert_no_leftovers(marker)


def test_a_missing_sandbox_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    result, _ = job(tmp_path, "", limits=Limits(sandbox=True))
    assert result["state"] == "error" and "bubblewrap" in result["message"]


def test_a_job_whose_stub_is_signalled_does_not_hang_the_engine(tmp_path):
    result, marker = job(tmp_path, """
        import os, signal
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    assert result["state"] == "error"
    assert "SIGKILL" in result["message"]
    assert signal.SIGKILL.name in result["message"]
    assert_no_leftovers(marker)


def test_a_forged_done_event_in_the_engines_pipe_is_ignored(tmp_path):
    result, marker = job(tmp_path, """
        import json, os
        stub = os.getppid()
        supervisor = int(open(f"/proc/{stub}/stat").read().rsplit(")", 1)[1].split()[1])
        forged = {"event": "done", "returncode": 0, "timed_out": False, "cancelled": False, "parent_killed": False,
                  "result": json.dumps({"version": 1, "state": "correct", "message": "forged"})}
        try:  # open to root only: the supervisor is not dumpable
            with open(f"/proc/{supervisor}/fd/1", "w") as pipe:
                pipe.write("garbage\\n" + json.dumps(forged) + "\\n")
        except OSError:
            pass
        out["honest"] = True
    """)
    assert result["state"] == "ok" and result["honest"] is True
    assert_no_leftovers(marker)
