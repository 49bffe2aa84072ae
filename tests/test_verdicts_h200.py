"""Verdicts as the H200 gave them (2026-12-01), kept as fixtures: real KernelBench and GPU MODE problems
at their own sizes (benches/gpu_kernelbench.py, benches/gpu_gpumode.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trialtui.core.result import check_result

GPU = Path(__file__).parent / "fixtures" / "gpu"


def load(name):
    return json.loads((GPU / name).read_text())


def test_kernelbench_at_their_own_sizes_get_the_expected_verdicts():
    data = load("kernelbench-h200-2026-12-01-run1.json")
    judged = [r for r in data["rows"] if r["state"] != "error"]
    # the eight errors of that run were the exchange refusing 6-8 GB tensors (EFBIG, fixed: files of 256 MB);
    # RMSNorm, the largest, ran again afterwards (the next test)
    assert len(judged) >= 18
    assert all(r["ok"] for r in judged), [r for r in judged if not r["ok"]]
    assert {r["candidate"] for r in judged if r["state"] == "correct"} == {"correct"}
    for result in data["results"]:
        check_result(result)


def test_only_the_normwise_check_caught_a_systematic_error_on_the_h200():
    data = load("kernelbench-h200-2026-12-01-run1.json")
    gelu = next(r for r in data["rows"] if r["problem"].endswith("MinGPTNewGelu") and r["candidate"] == "perturbed")
    assert gelu["state"] == "incorrect" and gelu["message"].count("normwise") == 1


def test_rmsnorm_at_its_own_size_fits_where_it_ran_out_of_memory_before():
    data = load("kernelbench-rmsnorm-h200-2026-12-01.json")
    assert [r["ok"] for r in data["rows"]] == [True, True]
    for result in data["results"]:
        memory = result["memory"]
        assert result["peak_mem_bytes"] == max(p["total_bytes"] for p in memory["phases"].values())
        # 7.5 GB in and 7.5 GB out per case: the whole job stays within 4.6x of that, fp64 reference included
        assert memory["case_bytes"] == 15032385536
        assert result["peak_mem_bytes"] <= 4.6 * memory["case_bytes"]
    correct = data["results"][0]
    assert correct["baselines"]["eager"]["cached"] is False


def test_gpumode_upstream_problems_score_on_the_h200():
    data = load("gpumode-h200-2026-12-01.json")
    assert len(data["rows"]) >= 11 and all(r["ok"] for r in data["rows"])
    styles = {r["job"] for r in data["rows"] if r["job"].startswith("style/")}
    assert "style/cpu_generator" in styles  # the reference's own CPU generator, moved to the GPU
    assert all(r["peak_mem_gib"] is not None for r in data["rows"])
