"""The analyze job on real reference files: FLOPs, minimum bytes and fusion at bench sizes, no GPU."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import KB_REFERENCE, write_problem
from test_bench_job import GM_REFERENCE, GM_TASK

from trialtui.core.problem_dir import load_problem
from trialtui.core.job_spec import AnalyzeSpec
from trialtui.engine.jobs import run_child
from trialtui.runner.analyze_job import run

LINEAR_SOFTMAX = '''
import torch
import torch.nn as nn

batch_size = 8
in_features = 64
out_features = 32


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.softmax(torch.relu(self.linear(x)) * 2.0, dim=-1)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
'''
SAMPLES = sorted(p.parent for p in (Path(__file__).parents[1] / "sample_kernels").glob("*/reference.py"))
BIG = "[bench_sizes]\nbatch_size = 16384\nin_features = 8192\nout_features = 8192\n"
# Boolean-mask indexing has a data-dependent shape: the meta device cannot run it.
MASKED = KB_REFERENCE.replace("return torch.relu(x + self.bias)", "y = x + self.bias\n        return y[y > 0].sum()")


def analyze(root, **extra):
    return run(AnalyzeSpec(**load_problem(root).job_spec(), **extra))


def test_linear_softmax_at_bench_sizes_runs_on_meta(tmp_path):
    r = analyze(write_problem(tmp_path / "p", LINEAR_SOFTMAX, config=BIG), gpu="NVIDIA H200")
    b, k, n = 16384, 8192, 8192
    assert r["state"] == "ok" and r["device"] == "meta" and r["scaled"] is None
    assert r["flops"] == 2 * b * k * n and r["matmul_like"]
    assert r["min_bytes"] == 4 * (b * k + k * n + n) + 4 * b * n  # x, weight, bias read; output written
    assert [op["op"] for op in r["ops"]] == ["aten.addmm", "aten.relu", "aten.mul", "aten._softmax"]
    assert r["ops"][0]["inputs"] == [[n], [b, k], [k, n]]
    (fusion,) = r["fusion"]
    assert fusion["pattern"] == "matmul_epilogue" and fusion["ops"] == ["addmm", "relu", "mul", "_softmax"]
    assert fusion["saves_bytes"] == 3 * 2 * 4 * b * n
    assert r["eager_bytes"] > 3 * r["min_bytes"]
    roof = r["roofline"]
    assert roof["bound"] == "compute" and roof["source"] == "datasheet" and roof["compute_dtype"] == "float32"


def test_bias_relu_is_an_elementwise_chain_with_no_matmul_flops(tmp_path):
    r = analyze(write_problem(tmp_path / "p", config="[bench_sizes]\nbatch_size = 65536\ndim = 4096\n"),
                gpu="NVIDIA H100 80GB HBM3")
    assert r["flops"] == 0 and not r["matmul_like"]
    assert r["min_bytes"] == 4 * (65536 * 4096 * 2 + 4096)
    assert [f["pattern"] for f in r["fusion"]] == ["elementwise_chain"] and r["fusion"][0]["ops"] == ["add", "relu"]
    assert r["roofline"]["bound"] == "memory" and r["roofline"]["gpu"] == "NVIDIA H100 SXM"
    from trialtui.core.analysis_result import AnalysisResult
    from trialtui.render import render_analysis

    text = render_analysis(AnalysisResult.from_json(r))  # no "FLOPs 0" beside a roofline that counts none
    assert "FLOPs none counted (torch counts matmuls and convolutions)" in text and "FLOPs 0" not in text


def test_no_gpu_named_means_no_roofline(tmp_path):
    assert analyze(write_problem(tmp_path / "p"))["roofline"] is None


def test_data_dependent_reference_falls_back_to_cpu_at_small_bench_sizes(tmp_path):
    r = analyze(write_problem(tmp_path / "p", MASKED, config="[bench_sizes]\nbatch_size = 64\n"))
    assert r["state"] == "ok" and r["device"] == "cpu" and r["scaled"] is None
    assert r["fallback"] and r["fallback"][0].startswith("meta:")
    assert r["case"] == {"batch_size": 64}


def test_data_dependent_reference_at_huge_sizes_scales_from_test_sizes(tmp_path):
    config = "[test_sizes]\nbatch_size = 8\n[bench_sizes]\nbatch_size = 8388608\n"
    r = analyze(write_problem(tmp_path / "p", MASKED, config=config))
    assert r["device"] == "cpu" and r["case"] == {"batch_size": 8}
    assert r["scaled"]["factor"] == pytest.approx(8388608 / 8) and "approximate" in r["scaled"]["note"]
    assert r["min_bytes"] > 1e9 and r["fallback"][0].startswith("meta:")


def test_gpumode_reference_with_a_generator_analyzes_on_cpu(tmp_path):
    root = write_problem(tmp_path / "gm", reference=GM_REFERENCE)
    (root / "task.yml").write_text(GM_TASK)
    r = analyze(root, gpu="NVIDIA H200")
    assert r["state"] == "ok" and r["case"] == {"rows": 4096, "cols": 4096, "seed": 2}
    assert r["min_bytes"] == 2 * 4096 * 4096 * 4 and [op["kind"] for op in r["ops"]] == ["reduction"]


def test_gpumode_inputs_name_the_dtype_of_the_analysis_and_its_roofline(tmp_path):
    """GPU MODE's inputs keep the dtype generate_input gives them (nothing casts them to trialtui.toml's)."""
    from test_least_bytes import TASK, VECTORADD

    root = write_problem(tmp_path / "gm", reference=VECTORADD)
    (root / "task.yml").write_text(TASK)
    r = analyze(root, gpu="NVIDIA H200")
    assert r["dtype"] == "float16" and r["roofline"]["compute_dtype"] == "float16"
    kb = analyze(write_problem(tmp_path / "kb", config='dtype = "bfloat16"\n'), gpu="NVIDIA H200")
    assert kb["dtype"] == "bfloat16"


def test_a_reference_that_raises_gives_an_error_result(tmp_path):
    broken = KB_REFERENCE.replace("return torch.relu(x + self.bias)", "raise ValueError('nope')")
    r = analyze(write_problem(tmp_path / "p", broken))
    assert r["state"] == "error" and "nope" in r["message"]


@pytest.mark.parametrize("root", SAMPLES, ids=[p.name for p in SAMPLES])
def test_every_sample_problem_analyzes_at_bench_sizes_on_cpu(root):
    r = analyze(root, gpu="NVIDIA H200")
    assert r["state"] == "ok" and r["min_bytes"] > 0 and r["roofline"]["floor_us"] > 0


@pytest.mark.slow
def test_analyze_job_runs_as_a_child_process(tmp_path):
    root = write_problem(tmp_path / "p", LINEAR_SOFTMAX, config=BIG)
    r = run_child("trialtui.runner.analyze_job", AnalyzeSpec(**load_problem(root).job_spec(), gpu="NVIDIA H200"), timeout_s=120,
                  log_path=tmp_path / "analyze.log")
    assert r["version"] == 1 and r["state"] == "ok" and r["flops"] == 2 * 16384 * 8192 * 8192


def test_an_engines_analysis_forks_from_its_fork_server_and_says_the_same(tmp_path):
    """A cold analyze job imported torch again (3.6 CPU-s a problem on a 2-core CPU); an engine's warm
    processes give it a fork of the fork server, with the same analysis."""
    from trialtui.core import job_kinds
    from trialtui.engine import forkservers
    from trialtui.engine.jobs import WarmChildren
    from trialtui.engine.profile import analyze

    root = write_problem(tmp_path / "p", LINEAR_SOFTMAX, config=BIG)
    env = {"CUDA_VISIBLE_DEVICES": ""}
    forkservers.close_servers()  # servers outlive tests (as they outlive a session's engines): none from an earlier one
    assert forkservers.running(job_kinds.ANALYZE.module, env) is None
    warm = WarmChildren()
    try:
        r = analyze(load_problem(root), gpu="NVIDIA H200", use_cache=False, warm=warm)
        assert warm.take(job_kinds.ANALYZE.module, env) is None  # a one-off: no analysis job left waiting for a next one
    finally:
        warm.close()
    assert forkservers.running(job_kinds.ANALYZE.module, env) is not None  # it ran as a fork of this server
    cold = analyze(load_problem(root), gpu="NVIDIA H200", use_cache=False)
    assert r["state"] == cold["state"] == "ok" and r["flops"] == cold["flops"] == 2 * 16384 * 8192 * 8192
    assert r["min_bytes"] == cold["min_bytes"]
