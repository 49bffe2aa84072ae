"""The checker split as the H200 ran it (benches/gpu_checker.py, 2026-12-01), kept as a fixture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trialtui.core.result import check_result

FIXTURE = Path(__file__).parent / "fixtures" / "gpu" / "checker-h200-2026-12-01.json"
SAMPLES = Path(__file__).parents[1] / "sample_kernels"
ROWS = {r["label"]: r for r in json.loads(FIXTURE.read_text())}


def codes(row):
    return {f["code"] for f in row["flags"]}


@pytest.mark.parametrize("label, sample", [
    ("softmax sample (GM fp32)", "softmax"),
    ("bias_gelu_residual sample (KB fp16)", "bias_gelu_residual"),
    ("rmsnorm sample (KB bf16)", "rmsnorm"),
    ("matmul_epilogue sample (KB bf16)", "matmul_epilogue"),
])
def test_split_layout_times_the_samples_as_the_old_layout_recorded(label, sample):
    row = check_result(ROWS[label])
    recorded = json.loads((SAMPLES / sample / "recorded" / "v1.json").read_text())["result"]
    assert row["state"] == "correct" and not codes(row) - {"tie"}
    assert row["timing"]["median_us"] == pytest.approx(recorded["timing"]["median_us"], rel=0.05)
    assert row["speedup"]["eager"] == pytest.approx(recorded["speedup"]["eager"], rel=0.05)
    assert row["baselines"]["eager"]["cached"] is False  # timed in the same run
    assert row["peak_mem_bytes"] > 0 and row["memory"]["case_bytes"] > 0


@pytest.mark.parametrize("label", ["softmax, Event.elapsed_time -> 1 ns", "softmax, events divided by 20"])
def test_patched_event_timers_are_flagged_at_run_time_and_by_the_wall_clock(label):
    row = ROWS[label]
    assert {"timing-patched", "timing-mismatch"} <= codes(row)
    # CUPTI saw the real kernel time: it too contradicts the forged events
    assert row["timing"]["kernel_us"] > 10 * row["timing"]["median_us"]


def test_side_stream_is_flagged():
    row = ROWS["softmax, side stream"]
    assert {"side-stream", "timing-mismatch"} <= codes(row)
