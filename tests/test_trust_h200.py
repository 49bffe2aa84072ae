"""The trust corpus's headers held to a real run on the H200 (`benches/gpu_trust.py`, its output kept in
tests/fixtures/gpu/h200-2026-12-01d/trust.json): a header edited so that it no longer says what the GPU
gave fails here, on the CPU, before the next GPU run does."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("gpu_trust", HERE.parent / "benches" / "gpu_trust.py")
gpu_trust = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpu_trust)
RUN = json.loads((HERE / "fixtures" / "gpu" / "h200-2026-12-01d" / "trust.json").read_text())


def test_every_candidate_of_the_h200_run_got_what_its_header_says_on_a_gpu():
    wrong = []
    for row in RUN["rows"]:
        path = gpu_trust.TRUST / row["problem"] / row["candidate"]
        assert path.exists(), f"{path} is in the H200 run but not in the corpus"
        want = gpu_trust.expectation(path)
        wrong += [f"{row['problem']}/{row['candidate']}: {m}"
                  for m in gpu_trust.judge(want, row["got"], row["message"], row["flags"])]
    assert len(RUN["rows"]) >= 85 and not wrong, "\n".join(wrong)

