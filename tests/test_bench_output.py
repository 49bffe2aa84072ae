"""GPU benches print each row as it completes: a run takes minutes on a loaded GPU box, and one that prints
only at the end looks hung (benches/gpu_containment.py printed nothing for 225 s; issue 36)."""

from __future__ import annotations

import importlib
import threading
import time
from pathlib import Path

BENCHES = Path(__file__).resolve().parents[1] / "benches"


def test_the_containment_bench_prints_each_hostile_row_before_the_next_job_ends(monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(BENCHES))
    bench = importlib.import_module("gpu_containment")
    first_printed = threading.Event()
    calls = []
    deadline = time.monotonic() + 60

    def row(case, via: str) -> dict:
        return {"case": case.id, "via": via, "state": "error", "mismatch": "", "left": [], "files_changed": False,
                "largest_log": 0}

    def bench_case(corpus_dir, case, device, tmp):
        calls.append(case.id)
        if len(calls) > 1:  # every later job ends only once the first row is out
            assert first_printed.wait(max(0.0, deadline - time.monotonic())), "no row was printed while later jobs ran"
        return row(case, "bench")

    real_print = print

    def watching_print(*args, **kwargs):
        real_print(*args, **kwargs)
        first_printed.set()

    monkeypatch.setattr(bench, "bench_case", bench_case)
    monkeypatch.setattr(bench, "watch_problem", lambda d, name, cases, device, tmp: [row(c, "watch") for c in cases])
    monkeypatch.setattr(bench, "print", watching_print, raising=False)
    rows = bench.hostile("cpu", Path("/nonexistent"))
    printed = capsys.readouterr().out.splitlines()
    assert len(rows) > 2 and len(printed) == len(rows)
    assert all(line.startswith("ok ") for line in printed)
