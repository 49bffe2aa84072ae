"""The candidate held still while the checker measures (issue 33): between its batches the candidate's processes
are stopped, so the checker's own loops and the baselines share neither the CPU nor the GPU's queue with
anything of the candidate's (docs/SECURITY.md, "The GPU between the checker's calls"). A thread, a child and
a grandchild all stop; the next request lets them run again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from trialtui.runner import process_tree

TICKER = textwrap.dedent('''
    import os, subprocess, sys, threading, time
    out, leaf = sys.argv[1], len(sys.argv) > 2
    if not leaf:
        subprocess.Popen([sys.executable, __file__, out + ".grandchild", "leaf"])

    def tick(path):
        n = 0
        while True:
            n += 1
            with open(path + ".tmp", "w") as f:
                f.write(str(n))
            os.replace(path + ".tmp", path)
            time.sleep(0.001)

    threading.Thread(target=tick, args=(out + ".thread",), daemon=True).start()
    tick(out)
''')


def counts(base: Path) -> list[int | None]:
    found = []
    for suffix in ("", ".thread", ".grandchild"):
        try:
            found.append(int(Path(str(base) + suffix).read_text() or 0))
        except (OSError, ValueError):
            found.append(None)
    return found


def until(condition, timeout_s: float = 20.0) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.01)
    return False


def test_a_held_tree_runs_nothing_until_it_is_released(tmp_path):
    script = tmp_path / "ticker.py"
    script.write_text(TICKER)
    base = tmp_path / "count"
    child = subprocess.Popen([sys.executable, str(script), str(base)])
    try:
        assert until(lambda: None not in counts(base)), "the ticker did not start"
        held = process_tree.hold(child.pid)
        assert child.pid in held and len(held) == 2  # the child and its grandchild (threads stop with them)
        assert until(lambda: all(process_tree._stopped(pid) for pid in held))
        before = counts(base)
        time.sleep(0.3)
        assert counts(base) == before  # nothing ran: not the process, its thread, nor its child
        process_tree.release(held)
        assert until(lambda: all(a > b for a, b in zip(counts(base), before)))  # all run again
    finally:
        for pid in process_tree.subtree(child.pid):
            os.kill(pid, signal.SIGKILL)
        child.kill()
        child.wait()


PROBE = textwrap.dedent('''
    import json, os
    os.environ["TRITON_INTERPRET"] = "1"
    import torch, triton
    from trialtui.runner import process_tree
    from trialtui.runner.candidate_link import CandidateProcess
    link = CandidateProcess("trialtui.runner.candidate", fork=True)
    pid = link.process.pid
    link.request("ready", timeout_s=60)
    link.hold()
    held = process_tree._stopped(pid)
    reply, _ = link.request("ready", timeout_s=60)  # the next request lets it run: it answers
    running = not process_tree._stopped(pid)
    link.hold()
    link.close()  # a held process is still closed and reaped
    print(json.dumps({"held": held, "answered": reply["ok"], "running": running, "gone": link.process.poll() is not None}))
''')


@pytest.mark.slow
def test_the_link_holds_the_candidate_until_its_next_request():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"held": True, "answered": True, "running": True,
                                                               "gone": True}


def test_the_checker_holds_the_candidate_after_each_batch_outside_its_clock(monkeypatch):
    """The hold comes once the batch's clock has stopped: its cost is in no figure."""
    pytest.importorskip("torch")
    from test_fresh_inputs import Link, checker_and_candidate, honest

    holds = []

    class SlowHold(Link):
        def hold(self):
            holds.append(time.monotonic())
            time.sleep(1.0)

    session, calls = checker_and_candidate(monkeypatch, honest, 10, link=SlowHold)
    session.timed = calls
    batch = calls.batch(0, 10)
    assert len(holds) == 1 and batch.wall_us < 1e6
