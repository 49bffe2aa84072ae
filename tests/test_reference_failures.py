"""A reference that fails at a case, or gives two outputs for one input (nn.Dropout in a KernelBench model left in
training mode), is the problem's failure: said as such, once, before any candidate is judged, never a candidate's
`incorrect` or `error` nor a timed call blamed on its streams. A reference that puts its inputs on "cuda" runs
on a machine without CUDA, as GPU MODE's do."""

from __future__ import annotations

import pytest
import torch
from conftest import KB_GOOD, KB_REFERENCE, write_problem
from test_bench_job import FAST

from trialtui.core.problem_dir import load_problem
from trialtui.engine.bench import bench_file
from trialtui.engine.validate import validate_file
from trialtui.runner.judging import random_reference

DROPOUT = KB_REFERENCE.replace(
    "        self.bias = nn.Parameter(torch.randn(dim))",
    "        self.bias = nn.Parameter(torch.randn(dim))\n        self.dropout = nn.Dropout(0.2)",
).replace("return torch.relu(x + self.bias)", "return self.dropout(torch.relu(x + self.bias))")
NOISE = KB_REFERENCE.replace("return torch.relu(x + self.bias)", "return torch.relu(x + self.bias) + 1e-3 * torch.rand_like(x)")
SAME_OPS = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(dim))
        self.dropout = nn.Dropout(0.2)

    def forward(self, x):
        return self.dropout(torch.relu(x + self.bias))
'''


@pytest.mark.slow
@pytest.mark.parametrize("reference, cause", [(DROPOUT, "its dropout (nn.Dropout in training mode)"),
                                              (NOISE, "a random op in its forward")])
def test_a_random_reference_is_the_problems_failure_not_the_candidates(tmp_path, reference, cause):
    root = write_problem(tmp_path / "p", reference, files={"cand.py": SAME_OPS}, config=FAST)
    result = bench_file(load_problem(root), root / "cand.py", device="cpu")
    assert result.state == "error" and result.reference_failed, result.message
    assert "reference.py is random: two calls on the same input differ" in result.message and cause in result.message
    assert "stream" not in result.message  # reference_failed: decide says fix_reference (tests/test_decide.py)


@pytest.mark.slow
def test_validate_says_the_preview_failed_for_the_references_randomness(tmp_path):
    root = write_problem(tmp_path / "p", DROPOUT, files={"cand.py": SAME_OPS}, config=FAST)
    preview = validate_file(root, root / "cand.py")["preview"]
    assert preview["correct"] is False and preview["reference_random"] is True
    assert preview["message"].startswith("reference.py is random")


def test_a_deterministic_reference_is_not_random_however_its_output_is_made():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Dropout(0.5)).eval()
    assert random_reference(model, model, torch.randn(4, 8), 1e-5, 1e-5) is None
    model.train()
    assert "its 1 (nn.Dropout in training mode)" in random_reference(model, model, torch.randn(4, 8), 1e-5, 1e-5)


CUDA_INPUTS = KB_REFERENCE.replace("return [torch.randn(batch_size, dim)]",
                                   "return [torch.randn(batch_size, dim).cuda()]")
RAISES = KB_REFERENCE.replace("return [torch.randn(batch_size, dim)]", "raise KeyError('no such size')")


@pytest.mark.slow
def test_a_reference_that_raises_making_inputs_is_the_problems_failure(tmp_path):
    root = write_problem(tmp_path / "p", RAISES, files={"cand.py": KB_GOOD}, config=FAST)
    result = bench_file(load_problem(root), root / "cand.py", device="cpu")
    assert result.state == "error" and result.reference_failed
    assert "reference.py fails at" in result.message and "KeyError" in result.message


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="where CUDA is, .cuda() is CUDA")
def test_a_kernelbench_reference_that_asks_for_cuda_runs_without_it(tmp_path):
    root = write_problem(tmp_path / "p", CUDA_INPUTS, files={"cand.py": KB_GOOD}, config=FAST)
    result = bench_file(load_problem(root), root / "cand.py", device="cpu")
    assert result.state == "correct", result.message


FP16_INPUTS = KB_REFERENCE.replace("return [torch.randn(batch_size, dim)]",
                                   "return [torch.randn(batch_size, dim, dtype=torch.float16)]")


@pytest.mark.slow
@pytest.mark.parametrize("reference, config, said", [
    (FP16_INPUTS, "", True),  # the problem chose fp16; trialtui.toml's default float32 casts it away
    (FP16_INPUTS, 'dtype = "float16"\n', False),
    (KB_REFERENCE, 'dtype = "bfloat16"\n', False),  # KernelBench's fp32 run in bf16 on purpose: nothing to say
])
def test_an_input_dtype_the_problem_chose_and_the_config_casts_away_is_said(tmp_path, reference, config, said):
    root = write_problem(tmp_path / "p", reference, files={"cand.py": KB_GOOD}, config=FAST + config)
    result = bench_file(load_problem(root), root / "cand.py", device="cpu")
    codes = [f["code"] for f in result.flags]
    assert ("inputs-cast" in codes) is said, result.flags
    if said:
        assert "get_inputs makes float16 tensors" in next(f["message"] for f in result.flags if f["code"] == "inputs-cast")
