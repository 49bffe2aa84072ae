"""Headlines no kernel can reach are flagged `impossible` (issue 33): the problem's least work at the GPU's
datasheet ceilings, with the numbers of the issue's table (H200, 2026-12-01)."""

from __future__ import annotations

import pytest

from conftest import as_result

from trialtui.core.flags import disqualifications
from trialtui.core.roofline import impossible_message, physical_floor

SOFTMAX_8192_FP32 = dict(flops=5 * 8192 * 8192, min_bytes=2 * 8192 * 8192 * 4, dtype="float32")
GEMM_4096_BF16 = dict(flops=2 * 4096**3, min_bytes=3 * 4096 * 4096 * 2, dtype="bfloat16")
GEMM_4096_FP32 = dict(flops=2 * 4096**3, min_bytes=3 * 4096 * 4096 * 4, dtype="float32")


@pytest.mark.parametrize("work, median_us, impossible", [
    (SOFTMAX_8192_FP32, 51.1, True),  # 512 MB in 51 µs: 10.5 TB/s, the H200 copies at 4.3
    (SOFTMAX_8192_FP32, 55.8, True),
    (SOFTMAX_8192_FP32, 133.0, False),  # the honest kernel
    (GEMM_4096_BF16, 50.9, True),  # 137 GFLOP in 50.9 µs: 2.7 PFLOP/s, the H200 peaks at 0.99 dense
    (GEMM_4096_BF16, 152.6, False),  # faster than cuBLAS but possible: the floor alone cannot say
    (GEMM_4096_FP32, 1200.0, False),  # an fp32 GEMM on tensor cores (split products) is no fp32 CUDA-core job
])
def test_a_headline_below_the_work_at_the_datasheet_ceilings_is_impossible(work, median_us, impossible):
    floor = physical_floor(work["flops"], work["min_bytes"], work["dtype"], "NVIDIA H200")
    message = impossible_message(floor, median_us)
    assert (message is not None) == impossible
    if message:  # both numbers, and the ceilings they come from
        assert f"{median_us:.1f} µs" in message and f"{floor.floor_us:.1f} µs" in message and "datasheet" in message


def test_the_outputs_writes_up_to_l2s_size_are_not_the_calls_dram_traffic():
    """An output's writes land in L2 and may reach DRAM after the kernel's end event: an honest fp32 softmax
    8192 × 1024 (32 MB in, 32 MB out) read 20.06 µs on an H100, and a candidate doing the same whole work with the
    same kernel 20.03 µs, flagged `impossible` against all 64 MB at 3.35 TB/s (20.03 µs; h100-2026-12-05e). Only
    the writes past L2's 50 MB count; a 512 MB softmax in 51 µs stays impossible."""
    import json
    from pathlib import Path

    rows = json.loads((Path(__file__).parent / "fixtures" / "gpu" / "h100-2026-12-05e" / "exploits.json").read_text())["rows"]
    short = {r["candidate"]: r for r in rows if r["problem"] == "softmax_short_fp32"}
    mb = 8192 * 1024 * 4
    old = physical_floor(0.0, 2 * mb, "float32", "NVIDIA H100 80GB HBM3")
    assert old.floor_us == pytest.approx(short["honest.py"]["floor_us"])  # the rule the run was judged by
    assert impossible_message(old, short["defers_the_copy.py"]["median_us"])  # the false `impossible`
    now = physical_floor(0.0, 2 * mb, "float32", "NVIDIA H100 80GB HBM3", written_bytes=mb)
    assert now.min_bytes == mb and now.floor_us == pytest.approx(old.floor_us / 2)
    for row in short.values():
        assert impossible_message(now, row["median_us"]) is None, row["candidate"]
    big = physical_floor(**SOFTMAX_8192_FP32, gpu_name="NVIDIA H200", written_bytes=8192 * 8192 * 4)
    assert big.min_bytes == 2 * 8192 * 8192 * 4 - 60 * 2**20 and impossible_message(big, 51.1)
    assert "must cross DRAM within the call" in impossible_message(big, 51.1)


def test_no_floor_where_the_gpu_has_no_datasheet_entry():
    assert physical_floor(1e9, 1e9, "float32", "Some Future GPU") is None


def test_an_impossible_result_is_never_best():
    result = {"state": "correct", "flags": [{"code": "impossible", "message": "51.1 µs is below the physical floor"}]}
    assert disqualifications(as_result(result), None) == ["impossible: 51.1 µs is below the physical floor"]


def test_counting_flops_does_not_import_dynamo():
    """The FLOP count runs in a cold checker whenever a candidate beats every baseline: it must not pay
    torch._dynamo's import (seconds) through the counting mode's dynamo guard."""
    import subprocess
    import sys

    code = ("import sys, types, torch\n"
            "from trialtui.runner.timed_work import flops as count\n"
            "call = types.SimpleNamespace(fn=lambda xs: torch.softmax(xs[0] @ xs[1], -1))\n"
            "flops = count(call, [torch.randn(8, 16), torch.randn(16, 4)])\n"
            "print(flops, 'torch._dynamo' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    flops, dynamo = done.stdout.split()
    assert float(flops) == 2 * 8 * 16 * 4 and dynamo == "False"


# the H200 run of 2026-12-02 (tests/fixtures/gpu/h200-2026-12-02e): bias + GELU + residual v7, fp16 16384×8192,
# 805 MB in 187.0 µs = 4.31 TB/s, above the calibrated copy rate (4.22 TB/s), under the datasheet's 4.8
V7_ROOF = {"source": "calibrated", "floor_us": 190.77, "gpu": "NVIDIA H200"}
V7_WORK = {"min_bytes": 805322752.0, "floor_us": 167.78, "floor_gpu": "NVIDIA H200"}


def test_an_honest_kernel_above_the_calibrated_copy_rate_stays_eligible():
    result = {"state": "correct", "flags": [], "roofline": V7_ROOF, "timing": {"median_us": 187.0, "work": V7_WORK}}
    assert disqualifications(as_result(result), 190.77 / 187.0) == []
    suspicious = {**result, "flags": [{"code": "suspicious", "message": "3.5× eager"}]}
    assert disqualifications(as_result(suspicious), 190.77 / 187.0) == []


def test_an_honest_kernel_past_the_datasheet_roofline_stays_eligible_where_the_floor_checked_it():
    """h100-2026-12-05e: the honest fp32 softmax 8192 × 1024 at 20.06 µs against a roofline of 20.03 µs (64 MB at
    the H100's datasheet 3.35 TB/s); a run 0.3 % faster reads 100.2 % of speed-of-light. Its writes may stay in L2
    past the kernel's end, and the runner's floor (10.0 µs) leaves them out: the floor decides, not the roofline."""
    roof = {"source": "datasheet", "floor_us": 20.03, "gpu": "NVIDIA H100 SXM"}
    work = {"min_bytes": 2 * 8192 * 1024 * 4, "floor_us": 10.02, "floor_gpu": "NVIDIA H100 SXM"}
    result = {"state": "correct", "flags": [], "roofline": roof, "timing": {"median_us": 19.99, "work": work}}
    assert disqualifications(as_result(result), 20.03 / 19.99) == []


@pytest.mark.parametrize("roof, work", [
    (V7_ROOF, {**V7_WORK, "floor_us": None}),  # a GPU without a datasheet entry: nothing else checked it
    ({**V7_ROOF, "source": "datasheet"}, None),  # a result from before the floor existed
    (V7_ROOF, None),
])
def test_above_100_percent_disqualifies_where_no_datasheet_floor_vouches(roof, work):
    timing = {"median_us": 187.0, **({"work": work} if work else {})}
    result = {"state": "correct", "flags": [], "roofline": roof, "timing": timing}
    reasons = disqualifications(as_result(result), 1.02)
    assert len(reasons) == 1 and reasons[0].startswith("speed-of-light 102%")


def test_the_detail_pane_says_a_speed_past_the_measured_rate_is_under_the_datasheets():
    """102 % of speed-of-light reads as an error unless the pane says against what (the rate this GPU measured, or
    every byte at the DRAM rate) and how far under its physical floor the kernel still is."""
    from rich.style import Style
    from rich.table import Table

    from trialtui.core.config import Config
    from trialtui.core.model import Trial
    from trialtui.tui.widgets.metrics_grid import MetricsGrid

    result = {"state": "correct", "flags": [], "env": {"device": "cuda", "gpu": "NVIDIA H200"},
              "timing": {"median_us": 187.6, "p20_us": 187.0, "p80_us": 188.0, "n": 100, "work": V7_WORK},
              "speedup": {"eager": 3.47}, "roofline": {**V7_ROOF, "bound": "memory", "hbm_gbps": 4221.5}}

    def sol_row(sol: float, roof_source: str) -> str:
        trial = Trial("t7", "kernel.py", "", 0.0, "correct", result=as_result({**result, "roofline": {
            **result["roofline"], "source": roof_source}}), sol=sol)
        grid = Table()
        grid.add_column()
        grid.add_column()
        MetricsGrid(lambda var, **extra: Style(), "eager", Config())._timing_rows(grid, trial)
        labels = [str(c) for c in grid.columns[0]._cells]
        return str(grid.columns[1]._cells[labels.index("SoL")])

    assert "past the rate this GPU measured; 89% of the speed its physical floor allows" in sol_row(1.017, "calibrated")
    assert "past every byte at the DRAM rate; 89% of the speed" in sol_row(1.017, "datasheet")
    assert " past " not in sol_row(0.95, "calibrated") and " past " not in sol_row(0.99, "datasheet")
