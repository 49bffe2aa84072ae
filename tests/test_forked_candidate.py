"""On the CPU the candidate's process is a fork of the checker (torch imported once): it must hold no more
than the exec'd one did: no capability to trace the checker, no descriptor but its pipes and the log, no
trialtui variable in its os.environ, the scratch directory as cwd, and nothing the checker computed (the
fork is made before the reference is loaded; the hostile corpus's verdict/ cases run through it on the CPU)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from trialtui.core.prctl import CAP_SYS_PTRACE, drop_ptrace_now

pytestmark = pytest.mark.slow


def cap_eff() -> int:
    for line in open("/proc/self/status"):
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return 0


def test_drop_ptrace_now_takes_the_capability_out_of_a_running_process():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        ok = drop_ptrace_now()
        os.write(write, json.dumps([ok, cap_eff()]).encode())
        os._exit(0)
    os.close(write)
    ok, eff = json.loads(os.read(read, 100))
    os.waitpid(pid, 0)
    assert ok and not eff & (1 << CAP_SYS_PTRACE)


PROBE = textwrap.dedent('''
    import json, os, sys
    os.environ["TRITON_INTERPRET"] = "1"
    import torch, triton
    from trialtui.runner.candidate_link import CandidateProcess, ForkedProcess
    link = CandidateProcess("trialtui.runner.candidate", fork=True)
    assert isinstance(link.process, ForkedProcess), type(link.process)
    pid = link.process.pid
    reply, _ = link.request("ready", timeout_s=60)  # it answers the protocol, so it is set up
    fds = {fd: os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
    status = open(f"/proc/{pid}/status").read()
    eff = int(next(l for l in status.splitlines() if l.startswith("CapEff:")).split()[1], 16)
    cwd = os.readlink(f"/proc/{pid}/cwd")
    link.close()
    print(json.dumps({"fds": fds, "eff": eff, "cwd": cwd, "scratch": str(link.scratch), "reply": reply,
                      "log": os.readlink("/proc/self/fd/2")}))
''')


def test_a_forked_candidate_process_holds_only_its_pipes_and_log_and_no_ptrace():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    facts = json.loads(out.stdout.strip().splitlines()[-1])
    # /dev/null, the log (stdout and stderr), and the two protocol pipes: none of the checker's other descriptors
    kinds = sorted("log" if target == facts["log"] else "pipe" if target.startswith("pipe:") else target
                   for target in facts["fds"].values())
    assert kinds == sorted(["/dev/null", "/dev/null", "log", "log", "pipe", "pipe"]), facts["fds"]
    assert not facts["eff"] & (1 << CAP_SYS_PTRACE)
    assert facts["cwd"] == facts["scratch"]
    assert facts["reply"]["ok"] is True


def test_the_checker_forks_only_in_its_own_job_process():
    from trialtui.runner import bench_job

    assert bench_job._JOB_PROCESS is False  # imported here (a test runner that ran torch ops): exec, not fork


EARLY = textwrap.dedent('''
    import json, os, sys
    os.environ["TRITON_INTERPRET"] = "0"  # a GPU job's warm checker
    from trialtui.runner.candidate_link import CandidateProcess
    before = "torch" in sys.modules  # a GPU job starts its candidate's process before it imports torch
    from trialtui.runner import bench_job
    bench_job.prewarm()  # what a warm checker does while another job may be timing on its GPU
    link = bench_job._READY[0]
    import select
    sent = link._channel is not None  # nothing was asked of it: no CUDA context, no Triton launch
    reply, _ = link.request("ready", timeout_s=120, device="cpu")
    stale = bool(link.channel._buffer) or bool(select.select([link.channel._fd], [], [], 1.0)[0])  # a reply left over
    link.close()
    print(json.dumps({"torch_before": before, "sent": sent, "ops": sorted(link.op_s), "stale": stale, "ok": reply["ok"]}))
''')


def test_a_warm_gpu_checker_starts_its_candidate_process_before_torch_and_asks_it_nothing():
    out = subprocess.run([sys.executable, "-c", EARLY], capture_output=True, text=True, timeout=300, check=True)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == {"torch_before": False, "sent": False, "ops": ["ready"], "stale": False, "ok": True}
