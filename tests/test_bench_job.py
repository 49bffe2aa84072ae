"""The benchmark child on the CPU: correctness rules, cheating flags and bad kernels become results."""

from __future__ import annotations

from pathlib import Path

import pytest

from trialtui.core.problem_dir import load_problem
from trialtui.core.result import CPU_TIMING_LABEL, check_result
from trialtui.engine.bench import bench_file

from conftest import KB_GOOD, write_problem

pytestmark = pytest.mark.slow

FAST = "seeds = 2\nbench_timeout_s = 90\n"  # a bound on hangs, not on speed: a loaded 2-core machine took 21 s for one job


def bench(tmp_path, candidate: str, reference: str | None = None, config: str = FAST, **kwargs):
    kw = {"reference": reference} if reference else {}
    root = write_problem(tmp_path / "p", files={"cand.py": candidate}, config=config, **kw)
    result = bench_file(load_problem(root), root / "cand.py", device="cpu", **kwargs).to_json()
    check_result(result)
    return result


def variant(old: str, new: str) -> str:
    assert old in KB_GOOD
    return KB_GOOD.replace(old, new)


def test_correct_candidate_passes_with_cpu_label_and_no_speedup(tmp_path):
    r = bench(tmp_path, KB_GOOD)
    assert r["state"] == "correct", r["message"]
    assert r["correctness"]["passed"] and r["correctness"]["seeds"] == 2
    assert r["correctness"]["launches"] > 0 and "judged_by" not in r["correctness"]
    assert r["timing"]["label"] == CPU_TIMING_LABEL
    assert r["speedup"] is None
    assert not [f for f in r["flags"] if f["code"] == "no-custom-kernel"]
    phases = r["phases_s"]  # where the seconds went, step by step, the candidate's own clock apart
    assert {"load", "correctness", "correctness.compare", "candidate.run", "candidate.load", "exchange.mb"} <= set(phases)
    assert phases["exchange.mb"] > 0
    assert Path(r["log"]).read_text().endswith("trialtui: correct\n")  # the log it names never reads empty


def test_wrong_values_are_incorrect_with_numbers(tmp_path):
    r = bench(tmp_path, variant("tl.maximum(x + b, 0.0)", "tl.maximum(x + b, 0.0) * 1.01"))
    assert r["state"] == "incorrect"
    assert Path(r["log"]).read_text().splitlines()[-1] == f"trialtui: incorrect: {r['message']}"
    c = r["correctness"]
    assert not c["passed"] and c["max_abs_err"] > 0 and c["mismatch_frac"] > 0
    assert c["first_mismatch"] is not None
    assert r["timing"] is None and r["speedup"] is None


def test_output_the_kernel_never_wrote_fails(tmp_path):
    # the mask skips the last element of each launch block: torch.empty_like memory is left as is
    r = bench(tmp_path, variant("m = offs < n", "m = offs < n - 1"))
    assert r["state"] == "incorrect"
    assert "NaN" in r["message"]


def test_candidate_that_modifies_its_input_fails(tmp_path):
    r = bench(tmp_path, variant("out = torch.empty_like(x)", "out = torch.empty_like(x)\n        x.mul_(1.0).add_(0.5).sub_(0.5).mul_(2).div_(2)\n        x[0, 0] = 42.0"))
    assert r["state"] == "incorrect"
    assert "modified its input" in r["message"]


def test_pytorch_only_candidate_is_flagged_no_custom_kernel(tmp_path):
    torch_only = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(dim))

    def forward(self, x):
        return torch.relu(x + self.bias)
'''
    r = bench(tmp_path, torch_only)
    assert r["state"] == "correct"
    assert [f for f in r["flags"] if f["code"] == "no-custom-kernel"]


@pytest.mark.parametrize(
    "body, expect",
    [
        ("raise ValueError('boom in forward')", "ValueError: boom in forward"),
        ("import sys; sys.exit(3)", "sys.exit(3)"),
        ("import os; os._exit(7)", "exited with code 7"),
    ],
)
def test_kernels_that_raise_or_exit_become_error_results(tmp_path, body, expect):
    r = bench(tmp_path, variant("out = torch.empty_like(x)", f"out = torch.empty_like(x)\n        {body}"))
    assert r["state"] == "error"
    assert expect in r["message"]


@pytest.mark.parametrize("old, new, function", [
    ("out = torch.empty_like(x)", "out = torch.empty_like(x)\n        raise ValueError('boom')", "forward"),
    ("    m = offs < n", "    m = offs < n\n    m = m + tl.arange(0, 4)", "bias_relu"),  # re-raised by the interpreter
])
def test_a_raising_candidate_names_its_own_innermost_line_and_keeps_the_traceback_in_the_log(tmp_path, old, new, function):
    source = variant(old, new)
    line = source.splitlines().index(new.splitlines()[-1]) + 1
    r = bench(tmp_path, source)
    assert r["state"] == "error"
    assert r["message"].startswith(f"checking correctness: cand.py:{line} in {function}: "), r["message"]
    assert "Traceback" in Path(r["log"]).read_text() and "candidate.py" in r["traceback"]  # trialtui's frames: there only


def test_hanging_kernel_times_out_and_is_killed(tmp_path):
    r = bench(tmp_path, variant("out = torch.empty_like(x)", "out = torch.empty_like(x)\n        while True: pass"),
              config="seeds = 1\nbench_timeout_s = 4\n")
    assert r["state"] == "timeout"
    assert "timed out after 4 s" in r["message"]


def test_a_spinning_kernel_in_a_slow_starting_job_names_its_step_the_hint_and_the_key(tmp_path):
    # the job's torch import counted against its request deadline but not against the supervisor's kill: a job
    # that took longer to start than the margin was killed first, "timed out after 120 s; the job was killed"
    slow = tmp_path / "slow"
    slow.mkdir()
    (slow / "sitecustomize.py").write_text("import time\ntime.sleep(3)\n")  # a cold start, in the job only
    r = bench(tmp_path, variant("out = torch.empty_like(x)", "out = torch.empty_like(x)\n        while True: pass"),
              config="seeds = 1\nbench_timeout_s = 10\n", env={"PYTHONPATH": str(slow)})
    assert r["state"] == "timeout"
    assert r["message"].startswith("checking correctness: timed out after 10 s (bench_timeout_s in trialtui.toml); "
                                   "the candidate did not answer 'run' in time"), r["message"]
    assert "an endless loop, or test sizes too large for the interpreter" in r["message"]


def test_megabytes_on_stdout_go_to_a_capped_log_not_the_result(tmp_path):
    r = bench(tmp_path, variant("out = torch.empty_like(x)", "out = torch.empty_like(x)\n        print('x' * 4_000_000)"))
    assert r["state"] == "correct"
    from pathlib import Path

    log = Path(r["log"])
    assert 1_000_000 < log.stat().st_size <= 2_100_000  # capped: first and last megabyte, the cut marked
    assert b"bytes of output cut here" in log.read_bytes()
    assert len(r["log_tail"]) <= 4000


def test_missing_module_is_invalid_by_the_static_stage_as_under_watch(tmp_path):
    r = bench(tmp_path, "import not_a_real_module_xyz\n" + KB_GOOD)
    assert r["state"] == "invalid"  # the watcher's static stage: one verdict either way
    assert "not_a_real_module_xyz" in r["message"]


def test_import_failure_the_static_stage_cannot_see_is_an_error_naming_it(tmp_path):
    r = bench(tmp_path, "import importlib\nimportlib.import_module('not_a_real_' + 'module_xyz')\n" + KB_GOOD)
    assert r["state"] == "error"
    assert "not_a_real_module_xyz" in r["message"]
    assert "importing the candidate" in r["message"]


def test_constant_reference_warns_that_the_check_is_weak(tmp_path):
    from conftest import KB_REFERENCE

    ref = KB_REFERENCE.replace("return torch.relu(x + self.bias)", "return torch.zeros_like(x)")
    zeros = variant("tl.maximum(x + b, 0.0)", "x * 0.0")
    r = bench(tmp_path, zeros, reference=ref)
    assert r["state"] == "correct"
    assert [f for f in r["flags"] if f["code"] == "trivial-reference"]


def test_a_tf32_sized_error_on_the_cpu_is_not_blamed_on_tf32_nor_excused_by_allowing_it(tmp_path):
    """TF32 exists on CUDA devices only: a kernel 0.1 % off on the CPU is wrong, and `allow_tf32 = true` (which
    its hint used to suggest) does not make it right."""
    wrong = variant("tl.maximum(x + b, 0.0)", "tl.maximum(x + b, 0.0) * 1.001")
    r = bench(tmp_path / "plain", wrong)
    assert r["state"] == "incorrect" and "TF32" not in r["message"] and "allow_tf32" not in r["message"]
    r = bench(tmp_path / "allowed", wrong, config=FAST + "allow_tf32 = true\n")
    assert r["state"] == "incorrect", r["message"]


GM_REFERENCE = '''
import torch


def generate_input(rows, cols, seed):
    g = torch.Generator(device=torch.get_default_device()).manual_seed(seed)
    return torch.randn(rows, cols, generator=g, device=torch.get_default_device())


def ref_kernel(data):
    return torch.softmax(data, dim=-1)


def check_implementation(data, output):
    ok = torch.allclose(output, ref_kernel(data), atol=1e-5, rtol=1e-5)
    return ok, "" if ok else "softmax mismatch"
'''
GM_TASK = "tests:\n  - {rows: 4, cols: 33, seed: 1}\nbenchmarks:\n  - {rows: 4096, cols: 4096, seed: 2}\n"
GM_GOOD = '''
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, o_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=m, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(o_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=m)


def custom_kernel(data):
    out = torch.empty_like(data)
    softmax_kernel[(data.shape[0],)](data, out, data.shape[1], BLOCK=triton.next_power_of_2(data.shape[1]))
    return out
'''


def gm_problem(tmp_path, candidate):
    root = write_problem(tmp_path / "gm", reference=GM_REFERENCE, files={"cand.py": candidate}, config=FAST)
    (root / "task.yml").write_text(GM_TASK)
    return bench_file(load_problem(root), root / "cand.py", device="cpu").to_json()


def test_gpumode_candidate_passes(tmp_path):
    r = gm_problem(tmp_path, GM_GOOD)
    assert r["state"] == "correct", r["message"]
    assert r["sizes"] == [{"rows": 4, "cols": 33, "seed": 1}]
    assert r["correctness"]["judged_by"] == "check_implementation"  # no tolerance of trialtui's was used


def test_gpumode_wrong_candidate_fails(tmp_path):
    r = gm_problem(tmp_path, GM_GOOD.replace("x = x - tl.max(x, axis=0)", "x = x - 1.0").replace("e / tl.sum(e, axis=0)", "e"))
    assert r["state"] == "incorrect"


def test_warm_child_runs_the_job_with_imports_done_and_keeps_its_log(tmp_path):
    """The job goes to the process that already imported torch and waits for a spec (checked by that
    process taking it, not by a time bound: how fast a warm start is lives in benches/loop_latency.py)."""
    from procs import alive, warm_job_waiting, wait_for
    from trialtui.engine.bench import BENCH_MODULE, child_env
    from trialtui.engine.jobs import WarmChildren

    root = write_problem(tmp_path / "p", files={"cand.py": KB_GOOD, "bad.py": variant(
        "out = torch.empty_like(x)", "out = torch.empty_like(x)\n        print('to the log'); import os; os._exit(9)")},
        config=FAST)
    problem = load_problem(root)
    warm = WarmChildren()
    try:
        warm.prime(BENCH_MODULE, child_env("cpu"))
        waiting = warm_job_waiting(warm, BENCH_MODULE)  # the imports are done while "the user edits"
        good = bench_file(problem, root / "cand.py", device="cpu", warm=warm, log_path=tmp_path / "good.log").to_json()
        assert good["state"] == "correct", good.get("message")
        assert (tmp_path / "good.log").read_text() == "trialtui: correct\n"  # no warning of runpy's that its module is imported
        wait_for(lambda: not alive(waiting), "the warm process to end with the job it took")
        waiting = warm_job_waiting(warm, BENCH_MODULE)  # run_child primed the next one
        bad = bench_file(problem, root / "bad.py", device="cpu", warm=warm, log_path=tmp_path / "bad.log").to_json()
        assert bad["state"] == "error" and "exited with code 9" in bad["message"]
        assert "to the log" in (tmp_path / "bad.log").read_text()
        wait_for(lambda: not alive(waiting), "the second warm process to end with the job it took")
    finally:
        warm.close()


def test_bench_all_gpus_runs_one_pinned_job_per_visible_gpu(tmp_path, monkeypatch):
    import json as _json

    from click.testing import CliRunner

    from trialtui.cli import cli

    root = write_problem(tmp_path / "p", files={"cand.py": KB_GOOD}, config=FAST)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    out = CliRunner().invoke(cli, ["bench", str(root / "cand.py"), "--device", "cpu", "--all-gpus", "--json"])
    assert out.exit_code == 0, out.output
    results = _json.loads(out.output)
    assert set(results) == {"gpu0", "gpu1"}
    assert all(r["state"] == "correct" for r in results.values())
    assert {name: r["env"]["visible_devices"] for name, r in results.items()} == {"gpu0": "0", "gpu1": "1"}
