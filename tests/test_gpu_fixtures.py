"""Results recorded on the H200 (benches/gpu_bench_check.py, 2026-11-29): the schema reads them, the
labels name GPU, dtype and shape, and the bad kernels got the verdicts BENCHMARKS.md reports."""

import json
from pathlib import Path

import pytest

from conftest import as_result

from trialtui.core.model import Trial
from trialtui.core.result import check_result
from trialtui.core.text import trial_summary
from trialtui.render import render_bench

HERE = Path(__file__).parent / "fixtures" / "gpu"


def load(name):
    return json.loads((HERE / name).read_text())


@pytest.mark.parametrize("name", ["axpy", "rowsoftmax", "matmul"])
def test_h200_results_follow_the_schema_and_are_labelled(name):
    result = check_result(load(f"result_{name}.json"))
    assert result["state"] == "correct"
    assert result["env"]["gpu"] == "NVIDIA H200"
    text = render_bench(as_result(result))
    assert "NVIDIA H200" in text and result["dtype"] in text and "vs eager (measured)" in text
    trial = Trial(id="t1", file="kernel.py", sha256="0", created=0.0, state="correct", result=as_result(result))
    assert "vs eager" in trial_summary(trial) and "NVIDIA H200" in trial_summary(trial)


@pytest.mark.parametrize("name", ["axpy", "rowsoftmax", "matmul"])
def test_cupti_kernel_time_agrees_with_ncu_within_3_percent(name):
    record = load("bench_check.json")["problems"][name]
    kernel_us = record["runs"][0]["kernel_us"]
    assert abs(kernel_us / record["ncu_us"] - 1) <= 0.03


def test_wrong_kernel_is_incorrect_with_numbers():
    bad = check_result(load("bad_wrong.json"))
    assert bad["state"] == "incorrect" and bad["speedup"] is None and bad["timing"] is None
    assert bad["correctness"]["mismatch_frac"] > 0.5


def test_side_stream_work_is_caught_by_the_cupti_cross_check():
    bad = check_result(load("bad_side_stream.json"))
    codes = {f["code"] for f in bad["flags"]}
    assert "side-stream" in codes


def test_illegal_memory_access_is_an_error_not_a_crash():
    bad = check_result(load("bad_illegal_address.json"))
    assert bad["state"] == "error" and "CUDA error" in bad["message"]


def test_a_gpu_bench_says_how_it_was_timed_and_what_torch_s_functions_weighed():
    """`trialtui bench` on a GPU: the timing label under the median (which clock, which band), the recorder's
    split of the timed calls' GPU time, and no kernel time where the bench took none (`trialtui profile` does)."""
    result = check_result(load("result_matmul.json"))
    result["timing"] = {**result["timing"], "kernel_us": None, "label": "GPU, the landing clock per call, L2 flushed, "
                        "its fastest large batch (the candidate's own events were not confirmed)",
                        "kernels": {"own_us": 20.0, "library_us": 180.0, "own_share": 0.1,
                                    "library_top": [["matmul(Tensor, Tensor)", 180.0]]}}
    text = render_bench(as_result(result))
    assert "kernel time" not in text and "  timed: GPU, the landing clock per call" in text
    assert "  library: torch's compute functions 90% of the timed calls' GPU time (matmul)" in text
