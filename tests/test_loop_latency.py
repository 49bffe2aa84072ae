"""benches/loop_latency.py's reduced run on the CPU: the H200 measurement of issue 34 keeps working between GPU runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_pace_part_prints_each_save_and_writes_its_rows(tmp_path):
    out = tmp_path / "loop_latency.json"
    done = subprocess.run([sys.executable, str(ROOT / "benches" / "loop_latency.py"), "--device", "cpu", "--smoke",
                           "--parts", "pace", "--gaps", "2", "--json", str(out)],
                          capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    printed = done.stdout.splitlines()
    assert any(line.startswith("pace 2 s, first save after start: final ") for line in printed)
    assert any(line.startswith("pace 2 s, save 2: final ") for line in printed)
    report = json.loads(out.read_text())
    (run,) = report["pace"]["gaps"]
    assert [row["save"] for row in run["saves"]] == [0, 1, 2]
    assert all(row["state"] == "correct" and row["final_us"] for row in run["saves"])
    assert run["final_p50_s"] > 0 and report["pace"]["cold_median_us"] > 0
