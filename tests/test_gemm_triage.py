"""A compute-bound GEMM under its roof gets a GEMM engineer's triage, each remedy with the evidence it
came from: the compile stage's SASS (HGMMA or only HMMA, the wgmma tile per warpgroup), stages against
shared memory, TMA loads, and on real H200 counters the tensor pipe and DRAM re-reads.

Compile facts: tests/fixtures/gemm/matmul_epilogue_compile_facts.json (the compile stage on the story's
versions); timings: the story's H200 recordings of 2026-12-01 (bf16 4096³, datasheet ceilings: v8 at 0.57 of
speed-of-light, kept in tests/fixtures/gemm/ since the samples' recordings are replaced by each live run);
counters: tests/fixtures/ncu-h200.
"""

from __future__ import annotations

import re

import json
from pathlib import Path

import pytest

from conftest import as_result

from trialtui.core import ncu
from trialtui.core.config import Config
from trialtui.core.decide import decide
from trialtui.core.gpus import datasheet
from trialtui.core.languages.cuda_text import sass_mma_facts
from trialtui.core.model import Trial
from trialtui.core.profilers.ncu import verdicts_from_ncu
from trialtui.core.roofline import Roofline, roofline
from trialtui.core.verdicts import Context, verdicts_from_analytic

ROOT = Path(__file__).resolve().parents[1]
FACTS = json.loads((ROOT / "tests" / "fixtures" / "gemm" / "matmul_epilogue_compile_facts.json").read_text())
RECORDED = ROOT / "tests" / "fixtures" / "gemm" / "recorded-h200-2026-12-01"  # the story's recordings of that day
NCU = ROOT / "tests" / "fixtures" / "ncu-h200"


def recorded(version: str) -> dict:
    return json.loads((RECORDED / f"{version}.json").read_text())


def context(version: str) -> Context:
    result = recorded(version)["result"]
    return Context(roofline=Roofline.from_dict(result["roofline"]), measured_us=result["timing"]["median_us"],
                   matmul_like=True, sol_target=0.7)


def by_id(verdicts) -> dict:
    return {v.id: v for v in verdicts}


def test_sass_reading_counts_wgmma_and_mma_sync_and_the_widest_tile():
    sass = ("        /*0a70*/                   HGMMA.64x64x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT ;\n"
            "        /*0b70*/                   HGMMA.64x256x16.F32.BF16 R24, gdesc[UR8], R24 ;\n"
            "        /*0c00*/                   UTMALDG.2D [UR8], [UR10] ;\n")
    assert sass_mma_facts(sass) == {"sass_hgmma": 2, "sass_hmma": 0, "wgmma_shape": "64x256x16", "sass_tma": True}
    assert sass_mma_facts("  HMMA.16816.F32.BF16 R4, R8, R12, R4 ;") == {
        "sass_hgmma": 0, "sass_hmma": 1, "wgmma_shape": None, "sass_tma": False}


def test_v8_below_its_roof_is_triaged_as_a_gemm_not_told_to_use_exp2():
    found = by_id(verdicts_from_analytic(context("v8"), FACTS["v8"]))
    assert "compute_bound" not in found
    assert re.search(r"= 0\.[5-6]\d of speed-of-light", found["gemm_below_roof"].evidence)  # its H200 recording
    assert "HGMMA.64x64x16" in found["narrow_mma_tile"].evidence  # the SASS of its compiled config
    assert "no cp.async.bulk.tensor in the PTX, no UTMALDG in the SASS" in found["no_tma"].evidence
    assert "num_stages 3" in found["shallow_pipeline"].evidence
    trial = Trial("t8", "kernel.py", "", 0.0, "correct", result=as_result(recorded("v8")["result"]), sol=0.57)
    decision = decide([trial], trial, list(found.values()), Config(target_speedup=1.0, profile_when="never"),
                      source="import triton\n@triton.jit\n")
    assert decision.action == "continue"
    assert "exp2" not in decision.reason and not any("exp2" in h for h in decision.hints)
    # the lead remedy names its evidence: the wgmma tile the SASS shows
    assert "HGMMA.64x64x16" in decision.reason and "larger tiles" in decision.hints[0]


def test_tma_and_wide_wgmma_are_not_asked_of_a_kernel_that_has_them():
    facts = FACTS["v9"]
    assert facts["sass_tma"] and facts["wgmma_shape"] == "64x256x16"
    ctx = context("v8")  # v9 has no GPU number yet: v8's time stands in for a GEMM below the roof
    found = by_id(verdicts_from_analytic(ctx, facts))
    assert "gemm_below_roof" in found and "no_tma" not in found and "narrow_mma_tile" not in found


def test_mma_sync_on_sm90_is_named_from_the_sass():
    found = by_id(verdicts_from_analytic(context("v3"), FACTS["v3_m16"]))
    v = found["mma_sync_on_hopper"]
    assert v.title == "Tensor cores used without wgmma on Hopper"
    assert "4 HMMA (mma.sync), no HGMMA (wgmma)" in v.evidence
    assert "mma_sync_on_hopper" not in by_id(verdicts_from_analytic(context("v3"), FACTS["v3"]))


def test_a_gemm_at_its_target_gets_no_triage():
    ctx = context("v8")
    fast = Context(roofline=ctx.roofline, measured_us=ctx.roofline.floor_us / 0.9, matmul_like=True, sol_target=0.7)
    found = by_id(verdicts_from_analytic(fast, FACTS["v8"]))
    assert "at_sol" in found and not {"gemm_below_roof", "narrow_mma_tile", "no_tma", "shallow_pipeline"} & set(found)


@pytest.fixture(scope="module")
def mm_dot() -> dict:
    raw = ncu.parse_raw((NCU / "mm_dot_raw.csv").read_text())
    details = ncu.parse_details((NCU / "mm_dot_details.csv").read_text())
    return ncu.merge(raw, details)[0]


def test_real_h200_counters_of_a_tl_dot_gemm_give_tensor_pipe_and_l2_evidence(mm_dot):
    n = 4096
    roof = roofline(2 * n**3, 3 * n * n * 2 + 2 * n, "bfloat16", datasheet("NVIDIA H200"))
    found = by_id(verdicts_from_ncu(mm_dot["metrics"], mm_dot["rules"], Context(roofline=roof, matmul_like=True)))
    assert "compute_bound" not in found  # its remedy (cheaper math) is not a GEMM's
    assert "0.67 of speed-of-light" in found["gemm_below_roof"].evidence
    assert "tensor pipe 78.8% of peak" in found["gemm_below_roof"].evidence
    assert "2.0× the 100.7 MB minimum" in found["gemm_l2_reuse"].evidence
    assert "mma_sync_on_hopper" not in found  # it issues wgmma (4.9 %)
