"""A snapshot's Triton kernels are the candidate's own, though the snapshot runs under the problem's path (issue 34:
an engine's every save after its first was flagged `fallback`, its own kernel counted as a library's)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KERNEL = textwrap.dedent('''
    import torch
    import triton
    import triton.language as tl


    @triton.jit
    def double_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


    def run(x):
        out = torch.empty_like(x)
        double_kernel[(1,)](x, out, x.numel(), BLOCK=64)
        return out
''')
PROBE = textwrap.dedent('''
    import sys, torch
    from trialtui.runner.candidate import Session
    from trialtui.runner.loader import load_module

    session = Session.__new__(Session)
    from trialtui.runner.candidate import LaunchCounter
    session.counter = LaunchCounter()
    msg = {"candidate": sys.argv[1], "candidate_as": sys.argv[2] if len(sys.argv) > 2 else None}
    session.set_homes(msg)
    session.counter.install()
    module = load_module(msg["candidate"], "trialtui_candidate", msg["candidate_as"])
    module.run(torch.arange(8, dtype=torch.float32))
    print(session.counter.count, sorted(session.counter.own_names))
''')


@pytest.mark.parametrize("runs_as_problem", [True, False])
def test_a_kernel_defined_in_the_candidate_is_its_own_whether_run_as_the_problem_or_as_itself(tmp_path, runs_as_problem):
    pytest.importorskip("triton")
    problem, snapshot = tmp_path / "problem", tmp_path / "store" / "snapshots" / "t2"
    problem.mkdir()
    snapshot.mkdir(parents=True)
    (snapshot / "kernel.py").write_text(KERNEL)
    argv = [str(snapshot / "kernel.py")] + ([str(problem / "kernel.py")] if runs_as_problem else [])
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TRITON_INTERPRET": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["1", "['double_kernel']"]
