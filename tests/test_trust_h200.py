"""The trust corpus's headers held to a real run on the H200 (`benches/gpu_trust.py` at main 6c1d821 and
efc8718, in two device calls: the problems the first watch did not finish in its time ran in the second;
kept in tests/fixtures/gpu/h200-2026-12-02b/trust_part*.json): a header edited so that it no longer says
what the GPU gave fails here, on the CPU, before the next GPU run does."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("gpu_trust", HERE.parent / "benches" / "gpu_trust.py")
gpu_trust = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpu_trust)
RUNS = [json.loads((HERE / "fixtures" / "gpu" / "h200-2026-12-02b" / f"trust_part{i}.json").read_text()) for i in (1, 2)]
NOT_FINAL = {"queued", "validating", "benchmarking", "missing"}  # the first watch's time ran out on these
ROWS = {(r["problem"], r["candidate"]): r for run in RUNS for r in run["rows"] if r["got"] not in NOT_FINAL}


def test_every_candidate_of_the_h200_run_got_what_its_header_says_on_a_gpu():
    wrong = []
    for row in ROWS.values():
        path = gpu_trust.TRUST / row["problem"] / row["candidate"]
        assert path.exists(), f"{path} is in the H200 run but not in the corpus"
        want = gpu_trust.expectation(path)
        wrong += [f"{row['problem']}/{row['candidate']}: {m}"
                  for m in gpu_trust.judge(want, row["got"], row["message"], row["flags"])]
    assert len(ROWS) >= 85 and not wrong, "\n".join(wrong)

