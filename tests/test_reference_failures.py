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


COUNTED = KB_REFERENCE.replace("    def forward(self, x):\n", """    def forward(self, x):
        with open(__file__ + ".calls", "a") as fh:
            fh.write("x")
""")


@pytest.mark.slow
def test_a_warm_checker_looks_once_per_problem_and_its_jobs_do_not_look_again(tmp_path):
    """The warm checker looks at the reference while the user edits (runner/prepared.py): what it runs ahead and what
    its job then runs add up to what a cold job runs, so the look's two calls are not made again on the save →
    number path; and a random reference it saw is the job's reference_failed."""
    from trialtui.engine.bench import BENCH_MODULE, child_env, problem_spec
    from trialtui.engine.jobs import WarmChildren

    root = write_problem(tmp_path / "p", COUNTED, files={"good.py": KB_GOOD}, config=FAST)
    calls, problem = root / "reference.py.calls", load_problem(root)

    def counted() -> int:
        n = len(calls.read_text()) if calls.exists() else 0
        calls.unlink(missing_ok=True)
        return n

    assert bench_file(problem, root / "good.py", device="cpu").state == "correct"
    cold = counted()
    warm = WarmChildren()
    try:
        warm.prime(BENCH_MODULE, child_env("cpu"))
        assert warm.prepare(BENCH_MODULE, child_env("cpu"), problem_spec(problem, "cpu"), 120) is not None
        ahead = counted()
        assert bench_file(problem, root / "good.py", device="cpu", warm=warm).state == "correct"
        job = counted()
        # a cold job: the look's 2 calls, per seed (2) the output and its float64 truth, 1 in the timed phase;
        # the warm checker made all but the last ahead, and its job made that one only
        assert (cold, ahead, job) == (7, 6, 1)
        (root / "reference.py").write_text(DROPOUT)
        warm.prime(BENCH_MODULE, child_env("cpu"))
        assert warm.prepare(BENCH_MODULE, child_env("cpu"), problem_spec(load_problem(root), "cpu"), 120) is not None
        result = bench_file(load_problem(root), root / "good.py", device="cpu", warm=warm)
    finally:
        warm.close()
    assert result.state == "error" and result.reference_failed and "reference.py is random" in result.message


def test_a_checker_takes_the_prepared_look_without_running_the_reference():
    from trialtui.runner.checker import Checker
    from trialtui.runner.judging import ReferenceFailed
    from trialtui.runner.prepared import Prepared

    def checker(looked):
        return Checker(spec=None, reference=None, link=None, deadline=None,
                       prepared=Prepared("k", reference=None, first_look=looked))

    assert checker(("float16", "")).first_look({}, 0) == "float16"
    with pytest.raises(ReferenceFailed, match="^reference.py is random"):
        checker(("", "reference.py is random: ...")).first_look({}, 0)


def test_preparing_keeps_the_looks_outcome_and_what_it_raised():
    from trialtui.runner.judging import ReferenceFailed
    from trialtui.runner.prepared import _looked

    def fails(*_):
        raise ReferenceFailed("reference.py fails at {'n': 3}: ValueError")

    assert _looked(lambda *_: "bfloat16", None, None, {}, 0) == ("bfloat16", "")
    assert _looked(fails, None, None, {}, 0) == ("", "reference.py fails at {'n': 3}: ValueError")


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
