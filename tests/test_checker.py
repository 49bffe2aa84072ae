"""The checker (runner/bench_job.run) against a candidate in its own process: correctness semantics.

The checker runs in this test process and starts the candidate's process itself, so these tests
exercise the verdict, not the job plumbing around it (tests/test_bench_job.py does that).
"""

from __future__ import annotations

import os

import pytest

from trialtui.core.job_spec import BenchSpec
from trialtui.core.problem_dir import load_problem
from trialtui.core.result import check_result
from trialtui.runner import bench_job

from conftest import KB_GOOD, write_problem

pytestmark = pytest.mark.slow

ROWNORM_REF = '''
import torch
import torch.nn as nn

rows = 6
cols = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x / x.norm(dim=-1, keepdim=True)


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
'''
ROWNORM_OK = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        # another summation order: blocked partial sums of squares
        parts = (x * x).reshape(x.shape[0], 64, -1).sum(-1)
        return x / parts.sum(-1, keepdim=True).sqrt()
'''
GM_MATMUL_REF = '''
import torch


def generate_input(m, n, k, seed):
    g = torch.Generator(device="cpu").manual_seed(seed)
    a = torch.randn(m, k, generator=g, dtype=torch.float32).to(torch.float16)
    b = torch.randn(k, n, generator=g, dtype=torch.float32).to(torch.float16)
    return a.to(torch.get_default_device()), b.to(torch.get_default_device())


def ref_kernel(data):
    a, b = data
    return (a.float() @ b.float()).to(torch.float16)


def check_implementation(data, output):
    expected = ref_kernel(data)
    ok = torch.allclose(output.float(), expected.float(), atol=2e-2, rtol=2e-2)
    return ok, "" if ok else "mismatch found"
'''
GM_MATMUL_TASK = "tests:\n  - {m: 64, n: 48, k: 256, seed: 3}\nbenchmarks:\n  - {m: 1024, n: 1024, k: 1024, seed: 4}\n"


def run(tmp_path, candidate: str, reference: str | None = None, config: str = "seeds = 2\n", task: str | None = None,
        timeout_s: float = 90):  # a bound on hangs, not on speed: a loaded 2-core machine imports torch slowly
    kw = {"reference": reference} if reference else {}
    root = write_problem(tmp_path / "p", files={"cand.py": candidate}, config=config, **kw)
    if task:
        (root / "task.yml").write_text(task)
    problem = load_problem(root)
    spec = problem.job_spec(candidate=str(root / "cand.py"), device="cpu", seeds=problem.config.seeds,
                            baselines=["eager"], timeout_s=timeout_s)
    before = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        return check_result(bench_job.run(BenchSpec.from_wire(spec)))
    finally:  # the worker's later tests get the environment they started with
        if before is None:
            del os.environ["TRITON_INTERPRET"]
        else:
            os.environ["TRITON_INTERPRET"] = before


def test_correct_candidate_reports_both_checks(tmp_path):
    r = run(tmp_path, KB_GOOD)
    assert r["state"] == "correct", r["message"]
    c = r["correctness"]
    assert c["normwise_err"] is not None and c["normwise_err"] <= c["normwise_bound"]
    assert c["launches"] > 0


def test_systematic_small_error_passes_elementwise_but_fails_normwise(tmp_path):
    wrong = ROWNORM_OK.replace(".sqrt()", ".sqrt() * (1 + 2e-4)")
    r = run(tmp_path, wrong, reference=ROWNORM_REF)
    assert r["state"] == "incorrect"
    assert "normwise" in r["message"]
    assert r["correctness"]["max_abs_err"] < 1e-4  # every element is inside atol: only the norm sees it


def test_other_summation_order_passes_normwise(tmp_path):
    r = run(tmp_path, ROWNORM_OK, reference=ROWNORM_REF)
    assert r["state"] == "correct", r["message"]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_bound_uses_a_float32_truth(tmp_path, dtype):
    r = run(tmp_path, ROWNORM_OK, reference=ROWNORM_REF, config=f'seeds = 1\ndtype = "{dtype}"\n')
    assert r["state"] == "correct", r["message"]
    wrong = ROWNORM_OK.replace(".sqrt()", ".sqrt() * 1.02")
    r = run(tmp_path / "w", wrong, reference=ROWNORM_REF, config=f'seeds = 1\ndtype = "{dtype}"\n')
    assert r["state"] == "incorrect"


def test_gpumode_fp16_is_judged_by_its_own_check_not_fp32_defaults(tmp_path):
    plain = "def custom_kernel(data):\n    a, b = data\n    return a @ b\n"
    r = run(tmp_path, plain, reference=GM_MATMUL_REF, task=GM_MATMUL_TASK)
    assert r["state"] == "correct", r["message"]
    wrong = "def custom_kernel(data):\n    a, b = data\n    return (a @ b) * 1.1\n"
    r = run(tmp_path / "w", wrong, reference=GM_MATMUL_REF, task=GM_MATMUL_TASK)
    assert r["state"] == "incorrect"
    assert "check_implementation: mismatch found" in r["message"]
    assert "TF32" not in r["message"]


def test_gpumode_explicit_tolerance_still_applies(tmp_path):
    plain = "def custom_kernel(data):\n    a, b = data\n    return (a.float() @ b.float() * 1.005).half()\n"
    r = run(tmp_path, plain, reference=GM_MATMUL_REF, task=GM_MATMUL_TASK, config="seeds = 1\natol = 1e-4\nrtol = 1e-4\n")
    assert r["state"] == "incorrect"
    assert "outside atol=0.0001" in r["message"]


@pytest.mark.parametrize("body, fragment", [
    ("return None", "output structure differs"),
    ("return [torch.relu(x + self.bias)]", "output structure differs"),
    ("return torch.relu(x + self.bias).double()", "dtype torch.float64"),
    ("return torch.relu(x + self.bias)[:, :-1]", "shape"),
    ("return object()", "output structure differs"),
])
def test_outputs_are_data_and_wrong_types_are_incorrect(tmp_path, body, fragment):
    cand = KB_GOOD.split("class ModelNew")[0] + f'''
class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(dim))

    def forward(self, x):
        {body}
'''
    r = run(tmp_path, cand)
    assert r["state"] == "incorrect", r["message"]
    assert fragment in r["message"]


def test_candidate_cannot_reach_the_reference_output_through_gc(tmp_path):
    cheat = KB_GOOD.split("class ModelNew")[0] + '''
import gc


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()

    def forward(self, x):
        for obj in gc.get_objects():
            if isinstance(obj, torch.Tensor) and obj.shape == x.shape and obj is not x:
                obj.zero_()
        return torch.zeros_like(x)
'''
    r = run(tmp_path, cheat)
    assert r["state"] == "incorrect"


def test_candidate_has_no_path_to_the_result(tmp_path):
    probe = KB_GOOD.replace("import torch\n", "import torch, sys, os, json\nprint('ARGV', sys.argv, 'CWD', os.getcwd(), 'FDS', sorted(os.listdir('/proc/self/fd')), file=sys.stderr)\n", 1)
    r = run(tmp_path, probe)
    assert r["state"] == "correct"
    # the candidate's argv names only its exchange directory; its cwd is a scratch directory
    assert not (tmp_path / "p" / "result.json").exists()


def test_hang_is_a_timeout_naming_the_step(tmp_path):
    # a hang that sleeps: the checker's deadline is the claim, not a core spent for 30 s (the corpora spin)
    hang = KB_GOOD.replace("out = torch.empty_like(x)", "out = torch.empty_like(x)\n        while True: __import__('time').sleep(0.05)")
    r = run(tmp_path, hang, timeout_s=30)  # the import must be over before it runs out, even on a busy machine
    assert r["state"] == "timeout"
    assert "checking correctness: timed out after 30 s" in r["message"]


def test_candidate_process_death_is_an_error(tmp_path):
    die = KB_GOOD.replace("out = torch.empty_like(x)", "out = torch.empty_like(x)\n        import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    r = run(tmp_path, die)
    assert r["state"] == "error"
    assert "died from SIGKILL" in r["message"]


def test_importing_the_reference_is_flagged_as_fallback(tmp_path):
    cand = KB_GOOD + '''
import importlib.util as _u
import pathlib as _p
_s = _u.spec_from_file_location("theref", str(_p.Path(__file__).with_name("reference.py")))
_m = _u.module_from_spec(_s)
_s.loader.exec_module(_m)
'''
    r = run(tmp_path, cand)
    assert r["state"] == "correct"
    assert "fallback" in [f["code"] for f in r["flags"]]
