"""A writer SIGKILLed at random moments: the store always reopens with every completed trial intact.

The child writes trials the way the engine does (add, then states up to a final one with a result),
reopens the store now and then, and checkpoints often (a tiny journal limit), so kills land in
journal appends, snapshot writes, checkpoints and lock handling alike. It prints a trial's id only
after the call that made it final returned: those are the trials that must survive.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from trialtui.core.store import Store

RUNS = 24

WRITER = r"""
import random, sys
from trialtui.core import store as store_mod
from trialtui.core.bench_result import BenchResult
store_mod.JOURNAL_LIMIT_BYTES = 6000
root, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
print("ready", flush=True)
while True:
    with store_mod.Store.open(root) as store:
        for _ in range(rng.randint(1, 12)):
            source = f"# strategy: run {seed}\nx = {rng.random()!r}\n" + "pad = 1\n" * rng.randint(0, 200)
            save, trial = store.record("k.py", source)
            store.update(trial.id, state="validating")
            store.update(trial.id, state="benchmarking")
            speedup = round(rng.uniform(0.5, 3.0), 6)
            result = {"version": 1, "state": "correct", "speedup": {"eager": speedup},
                      "timing": {"median_us": 100 / speedup}, "env": {"device": "cuda"}}
            log = store.write_blob("logs", trial.id + ".log", "ok")
            store.update(trial.id, state="correct", result=BenchResult.from_json(result), log=log)
            print("done", trial.id, speedup, flush=True)
            if rng.random() < 0.3:
                store.branch(f"t{rng.randint(1, int(trial.id[1:]))}")
"""


def run_and_kill(root: Path, seed: int, rng: random.Random) -> dict[str, float]:
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(root), str(seed)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout.readline().strip() == "ready"
    time.sleep(rng.uniform(0.02, 0.35))
    child.send_signal(signal.SIGKILL)
    out, _ = child.communicate()
    assert child.returncode == -signal.SIGKILL, "the writer stopped before it was killed"
    done = {}
    *lines, _cut = out.split("\n")  # a line the kill cut short ("done t7 1.2") has no newline yet: not a record
    for line in lines:
        assert len(line.split()) == 3, (line, out)
        _, trial_id, speedup = line.split()
        done[trial_id] = float(speedup)
    return done


def check_intact(root: Path, completed: dict[str, float]) -> None:
    with Store.open(root, writer=False) as reader:
        by_id = {t.id: t for t in reader.trials()}
        heads = reader.heads
        for trial_id, speedup in completed.items():
            trial = by_id[trial_id]
            assert trial.state == "correct" and trial.speedup() == speedup, trial_id
            assert reader.read_blob(trial.log) == "ok"
        for trial in by_id.values():
            assert trial.parent is None or trial.parent in by_id
            assert reader.snapshot_path(trial.sha256).exists()
        assert all(head in by_id for head in heads.values())
    with Store.open(root) as store:  # a writer opens it too, and finds the lock free
        assert not any(t.state_enum.reached_gpu and not t.state_enum.is_final for t in store.trials())


def test_sigkilled_writer_never_loses_a_completed_trial(tmp_path: Path):
    root = tmp_path / "prob"
    root.mkdir()
    (root / "k.py").write_text("x = 0\n")
    rng = random.Random(1234)
    completed: dict[str, float] = {}
    for seed in range(RUNS):
        completed.update(run_and_kill(root, seed, rng))
        check_intact(root, completed)
    assert len(completed) > RUNS, "the writer completed too few trials to prove anything"
