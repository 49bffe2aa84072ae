"""Held-out cases on the H200 (`benches/gpu_generalize.py`, kept in tests/fixtures/gpu/h200-2026-12-02/): the
samples' finalized kernels and three tuned variants of one, checked where they were never tuned. The
general kernels pass every case within the 30 s budget; each variant is named with the case it fails; the
matmul story's TMA kernel fails every size whose rows are not 16-byte aligned (a real limit of that
kernel, said on its card)."""

from __future__ import annotations

import json
from pathlib import Path

RUN = json.loads((Path(__file__).resolve().parent / "fixtures" / "gpu" / "h200-2026-12-02" / "gpu_generalize.json").read_text())
ROWS = {(r["story"], r["kernel"]): r for r in RUN["rows"]}


def test_general_kernels_pass_every_held_out_case_within_the_budget():
    for story in ("bias_gelu_residual", "softmax", "rmsnorm"):
        row = ROWS[(story, "demo/v8.py")]
        assert row["passed"] == row["checked"] >= 8 and not row["fails"] and row["seconds"] < row["budget_s"], row["line"]
        assert row["line"] == f"generalizes: {row['checked']} of {row['checked']} held-out cases"


def test_each_tuned_variant_is_named_with_the_case_it_fails():
    expected = {"hard-coded batch": "batch_size=16411", "unmasked tail": "dim=4095",
                "assumes contiguous": "non-contiguous inputs"}
    for variant, case in expected.items():
        row = ROWS[("bias_gelu_residual", variant)]
        assert row["fails"] and row["passed"] == row["checked"] - 1
        assert row["line"].startswith(f"generalizes: {row['passed']} of {row['checked']} held-out cases; fails at")
        assert case in row["line"]


def test_the_tma_matmul_is_named_with_its_alignment_limit():
    row = ROWS[("matmul_epilogue", "demo/v9.py")]
    assert row["fails"] and "in_features=4099" in row["line"] and "16-byte aligned" in row["line"]
