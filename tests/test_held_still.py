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
from types import SimpleNamespace

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
    import json, os, time
    os.environ["TRITON_INTERPRET"] = "1"
    import torch, triton
    from trialtui.runner import process_tree
    from trialtui.runner.candidate_link import CandidateProcess
    link = CandidateProcess("trialtui.runner.candidate", fork=True)
    pid = link.process.pid
    link.request("ready", timeout_s=60)
    link.hold()
    end = time.monotonic() + 10
    while not process_tree._stopped(pid) and time.monotonic() < end:  # a busy machine: the stop may land late
        time.sleep(0.01)
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
    """The hold comes once the batch's clock has stopped: its cost is in no figure. Read from the order of the
    clock's own readings, so a busy machine does not decide it."""
    pytest.importorskip("torch")
    from test_fresh_inputs import Link, checker_and_candidate, honest

    from trialtui.runner import timed_phase

    seen: list = []

    def perf_counter_ns():
        seen.append(time.perf_counter_ns())
        return seen[-1]

    monkeypatch.setattr(timed_phase, "time", SimpleNamespace(perf_counter_ns=perf_counter_ns, perf_counter=time.perf_counter,
                                                            monotonic=time.monotonic, sleep=time.sleep))

    class Held(Link):
        def hold(self):
            seen.append("hold")

    session, calls = checker_and_candidate(monkeypatch, honest, 10, link=Held)
    session.timed = calls
    batch = calls.batch(0, 10)
    stop = next(i for i, v in enumerate(seen) if v != "hold" and (v - seen[0]) / 1000.0 == batch.wall_us)
    assert seen.count("hold") == 1 and stop < seen.index("hold")


def test_a_kernel_without_children_files_is_walked_through_proc_and_a_dead_process_holds_nothing(monkeypatch, tmp_path):
    script = tmp_path / "ticker.py"
    script.write_text(TICKER)
    child = subprocess.Popen([sys.executable, str(script), str(tmp_path / "count")])
    try:
        assert until(lambda: len(process_tree.subtree(child.pid)) == 1)
        grandchild = process_tree.subtree(child.pid)
        real = Path.read_text
        monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: (_ for _ in ()).throw(FileNotFoundError(self))
                            if self.name == "children" else real(self, *a, **k))
        assert process_tree.subtree(child.pid) == grandchild  # CONFIG_PROC_CHILDREN off: one pass over /proc
    finally:
        for pid in process_tree.descendants(child.pid):
            os.kill(pid, signal.SIGKILL)
        child.kill()
        child.wait()
    assert process_tree.hold(child.pid) == []


ESCAPES = textwrap.dedent('''
    """A candidate whose ticking grandchild leaves its tree: setsid and a double fork re-parent it."""
    import os, time

    def main():
        base = os.environ["TICK_BASE"]
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                n = 0
                while True:
                    n += 1
                    with open(base + ".tmp", "w") as f:
                        f.write(f"{os.getpid()} {n}")
                    os.replace(base + ".tmp", base)
                    time.sleep(0.001)
            os._exit(0)
        os.wait()
        while os.read(0, 4096):
            pass

    if __name__ == "__main__":
        main()
''')

STRAYS = textwrap.dedent('''
    import json, os, subprocess, sys, time
    from trialtui.runner import process_tree
    from trialtui.runner.candidate_link import CandidateProcess
    folder, ticker = sys.argv[1], sys.argv[2]

    def read(path):
        try:
            return [int(v) for v in open(path).read().split()]
        except (OSError, ValueError):
            return None

    def until(condition):
        end = time.monotonic() + 20
        while not condition() and time.monotonic() < end:
            time.sleep(0.01)
        return condition()

    own = subprocess.Popen([sys.executable, ticker, folder + "/own", "leaf"])  # the checker's own child
    link = CandidateProcess("escapes", {**os.environ, "PYTHONPATH": folder, "TICK_BASE": folder + "/escapee"})
    assert until(lambda: read(folder + "/escapee") and read(folder + "/own"))
    escapee = read(folder + "/escapee")[0]
    adopted = process_tree._parent(escapee) == os.getpid()
    link.hold()
    held = sorted(link._held)
    before = read(folder + "/escapee")[1], read(folder + "/own")[0]
    time.sleep(0.3)
    still = read(folder + "/escapee")[1] == before[0]
    own_ran = read(folder + "/own")[0] > before[1]
    link._release()
    resumed = until(lambda: read(folder + "/escapee")[1] > before[0])
    for pid in (escapee, own.pid):
        os.kill(pid, 9)
    link.close(wait=False)
    print(json.dumps({"adopted": adopted, "held": escapee in held and own.pid not in held, "still": still,
                      "own_ran": own_ran, "resumed": resumed}))
''')


@pytest.mark.slow
def test_a_process_that_left_the_candidates_tree_is_held_and_the_checkers_own_are_not(tmp_path):
    """A double fork re-parents the candidate's grandchild to the process that started the candidate (a subreaper)
    and its mark (core.prctl.mark_lineage, a hard limit only ever lowered) says whose it is: it stops with the candidate. A child the
    checker started itself carries no mark and keeps running."""
    (tmp_path / "escapes.py").write_text(ESCAPES)
    (tmp_path / "ticker.py").write_text(TICKER)
    out = subprocess.run([sys.executable, "-c", STRAYS, str(tmp_path), str(tmp_path / "ticker.py")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"adopted": True, "held": True, "still": True,
                                                               "own_ran": True, "resumed": True}


def test_the_candidates_mark_is_inherited_and_the_markers_parent_carries_none():
    from trialtui.core import prctl

    probe = subprocess.Popen([sys.executable, "-c", "import os, time; os.fork() == 0 and time.sleep(5); time.sleep(5)"],
                             preexec_fn=prctl.prepare_candidate_child)
    try:
        assert until(lambda: len(process_tree.subtree(probe.pid)) == 1)
        grandchild = process_tree.subtree(probe.pid)[0]
        assert prctl.marked(os.getpid()) is False and prctl.marked(probe.pid) and prctl.marked(grandchild)
    finally:
        for pid in process_tree.subtree(probe.pid):
            os.kill(pid, signal.SIGKILL)
        probe.kill()
        probe.wait()
