"""The store shared by threads: the engine writes on its event loop while worker threads read the tree.

The race this guards against: TinyDB's table is a dict; a reader iterating it while the loop inserts
saw "dictionary changed size during iteration", the lane running that read died, and its trial stayed
`benchmarking` for good. TRIALTUI_STRESS_S=30 runs the stress test for the issue's 30 seconds.
"""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path

import pytest

from conftest import as_result

from trialtui.core import store as store_mod
from trialtui.core.store import Store

RESULT = {"version": 1, "state": "correct", "speedup": {"eager": 1.5}, "timing": {"median_us": 10.0},
          "env": {"device": "cuda"}}


@pytest.fixture
def writer(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(store_mod.os, "fsync", lambda fd: None)  # durability is not under test: speed is
    root = tmp_path / "prob"
    root.mkdir()
    with Store.open(root) as store:
        yield store


def hammer(stop: threading.Event, errors: list[BaseException], read) -> threading.Thread:
    def loop() -> None:
        while not stop.is_set():
            try:
                read()
            except BaseException as exc:  # noqa: BLE001 - any failure is the finding
                errors.append(exc)
                return

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def test_reads_in_a_thread_beside_3000_adds_never_fail(writer):
    stop, errors = threading.Event(), []
    readers = [hammer(stop, errors, writer.trials), hammer(stop, errors, lambda: writer.record("other.py", "y = 0\n"))]
    for n in range(3000):
        writer.add_trial("k.py", f"x = {n}\n")
    stop.set()
    for thread in readers:
        thread.join()
    assert not errors, f"{len(errors)} reader error(s), first: {errors[0]!r}"
    assert len(writer.trials()) == 3001  # the reader's own save is recorded once


def test_stress_saves_results_and_reads_from_many_threads(writer, monkeypatch):
    monkeypatch.setattr(store_mod, "JOURNAL_LIMIT_BYTES", 64 << 10)  # checkpoints land among the reads too
    seconds = float(os.environ.get("TRIALTUI_STRESS_S", "3"))
    stop, errors = threading.Event(), []
    files = [f"k{n}.py" for n in range(5)]
    saves: list[str] = []
    lock = threading.Lock()

    def save() -> None:
        rng = random.Random()
        _, trial = writer.record(rng.choice(files), f"x = {rng.random()}\n")
        with lock:
            saves.append(trial.id)

    def result() -> None:
        with lock:
            pending = list(saves)
        if pending:
            trial_id = random.choice(pending)
            writer.update(trial_id, state="benchmarking")
            writer.update(trial_id, state="correct", result=as_result(RESULT))

    def read() -> None:
        trials = writer.trials()
        if trials:
            writer.get(random.choice(trials).id)
        writer.heads

    threads = [hammer(stop, errors, fn) for fn in (save, save, result, read, read, read)]
    time.sleep(seconds)
    deadline = time.monotonic() + 300  # a loaded machine saves fewer in the time: go on until 50 are in
    while len(saves) <= 50 and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    for thread in threads:
        thread.join()
    assert not errors, f"{len(errors)} error(s), first: {errors[0]!r}"
    ids = {t.id for t in writer.trials()}
    assert set(saves) <= ids and len(saves) > 50
    assert all(head in ids for head in writer.heads.values())
