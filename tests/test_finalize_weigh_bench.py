"""benches/gpu_finalize_weigh.py, the GPU check of finalize's library weigh, run here in its CPU smoke mode: the
sample copied with `[profile] when = "never"`, the decoy written beside the honest kernel, both scored by one
watch and finalized by id, and the rows written (on a CPU no records: nothing weighed, nothing refused)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_finalize_weigh_bench_scores_finalizes_and_writes_its_rows(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "benches" / "gpu_finalize_weigh.py")], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "OUT": str(tmp_path), "DEVICE": "cpu"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    found = json.loads((tmp_path / "finalize_weigh.json").read_text())
    assert found["device"] == "cpu" and found["failures"] == []
    assert [(r["file"], r["finalized"], r["library"]) for r in found["rows"]] == [("kernel.py", True, None),
                                                                               ("hidden.py", True, None)]
    assert "$ trialtui trials finalize" in done.stdout
