"""CUDA C++ candidates on a CPU-only machine: validation compiles their device code with nvcc for
real (registers, spills, shared memory, tensor-core instructions), never runs them, and a
benchmark without a GPU says it needs one. Skipped only where the nvcc wheel is not installed
(`pip install -e '.[cuda]'`, part of the dev extra)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from test_compile_stage import copy_problem, line_of
from trialtui.core.languages.cuda import CudaSource
from trialtui.core.languages.cuda_text import device_code
from trialtui.core.problem_dir import load_problem
from trialtui.engine.bench import bench_file
from trialtui.engine.validate import validate_file
from trialtui.render import render_validation
from trialtui.runner import cuda_compile_job, nvcc

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(nvcc.tool("nvcc") is None or nvcc.host_compiler() is None,
                       reason="no nvcc (pip install -e '.[cuda]') or no g++"),
]


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return copy_problem("kb_cuda_add", tmp_path_factory.mktemp("cuda"))


def test_inline_candidate_validates_with_real_register_counts(root):
    path = root / "add_inline.py"
    report = validate_file(root, path, arch="sm_90,sm_80")
    assert report["ok"] and not report["invalid"], report["errors"]
    assert report["language"] == "cuda"
    assert [w["code"] for w in report["warnings"]] == []  # no no-launch, no no-triton-kernel
    kernels = {k["arch"]: k for k in report["kernels"]}
    assert set(kernels) == {"sm_90", "sm_80"}
    for k in kernels.values():
        assert k["name"] == "add_kernel" and k["line"] == line_of(path, "__global__ void add_kernel")
        assert 4 <= k["registers"] <= 64  # what ptxas -v printed for this arch
        assert (k["spills"], k["shared_bytes"], k["tensor_cores"]) == (0, 0, False)
        assert (k["block_threads"], k["num_warps"]) == (256, 8)  # add_kernel<<<..., block>>> with const int block = 256
        assert k["widest_load"].startswith("ld.global") and k["vector_width"] == 32
    preview = report["preview"]
    assert preview["correct"] is None and "not run on the CPU" in preview["message"]
    text = render_validation(report, path.name)
    assert "CPU preview: none (not run on the CPU" in text and "INCORRECT" not in text
    assert f"kernel add_kernel (sm_90): {kernels['sm_90']['registers']} regs, 0 spills" in text


def test_broken_cuda_source_is_a_compile_error_at_the_nvcc_line(root):
    path = root / "broken.py"
    report = validate_file(root, path)
    assert not report["ok"] and report["invalid"]
    [error] = report["errors"]
    assert error["code"] == "compile-error" and error["line"] == line_of(path, "z[i]")
    assert 'identifier "z" is undefined' in error["message"] and "add_kernel" in error["message"]
    assert "sm_90" in error["message"] and error["hint"].startswith("nvcc's message, at the line it names")


def test_cu_file_beside_a_wrapper_validates_with_its_vector_loads(root):
    report = validate_file(root, root / "add_file.py")
    assert report["ok"], report["errors"]
    [kernel] = report["kernels"]
    assert kernel["name"] == "add_vec4_kernel" and kernel["source"] == "add_kernel.cu"
    assert kernel["registers"] > 0 and kernel["vector_width"] == 128  # float4: ld.global.nc.v4.f32
    assert kernel["line"] is None  # the .cu file's lines are not the candidate's


def test_gpumode_submission_with_a_dispatched_template_kernel_gets_its_registers(tmp_path):
    """GPU MODE's own CUDA submission: its kernel is a template that AT_DISPATCH instantiates; here
    one float specialization is built so the facts are real."""
    fixture = Path(__file__).parent / "fixtures" / "gpumode" / "problems" / "pmpp_v2" / "vectoradd_py"
    root = Path(shutil.copytree(fixture, tmp_path / "vectoradd", ignore=shutil.ignore_patterns("solutions")))
    shutil.copyfile(fixture.parent / "utils.py", tmp_path / "utils.py")  # task.yml's ../utils.py
    path = root / "cuda_inline.py"
    shutil.copyfile(fixture / "solutions" / "correct" / "submission_cuda_inline.py", path)
    report = validate_file(root, path)
    assert report["ok"] and report["language"] == "cuda", report["errors"]
    [kernel] = report["kernels"]
    assert kernel["name"] == "add_kernel" and kernel["instantiated"] == "float" and kernel["registers"] > 0
    assert kernel["line"] == line_of(path, "__global__ void add_kernel")


CUBLAS = '''import torch
from torch.utils.cpp_extension import load_inline

source = """
#include <torch/extension.h>
#include <cublas_v2.h>
torch::Tensor mm(torch::Tensor a, torch::Tensor b) {
    auto c = torch::empty({a.size(0), b.size(1)}, a.options());
    cublasHandle_t handle;
    cublasCreate(&handle);
    float one = 1, zero = 0;
    cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, b.size(1), a.size(0), a.size(1), &one, b.data_ptr<float>(),
                b.size(1), a.data_ptr<float>(), a.size(1), &zero, c.data_ptr<float>(), b.size(1));
    return c;
}
"""
ext = load_inline("mm", "torch::Tensor mm(torch::Tensor a, torch::Tensor b);", cuda_sources=source,
                  functions=["mm"], extra_ldflags=["-lcublas"])


class ModelNew(torch.nn.Module):
    def forward(self, x, y):
        return ext.mm(x, y)
'''


def test_a_cublas_call_through_load_inline_is_valid_and_never_run_here(root):
    """issue 17: KernelBench's own cuBLAS-through-load_inline kernel was called invalid after a CPU run."""
    path = root / "cublas.py"
    path.write_text(CUBLAS)
    try:
        report = validate_file(root, path)
    finally:
        path.unlink()
    assert report["ok"] and not report["invalid"] and report["kernels"] == []
    header, warning = report["warnings"]
    assert header["code"] == "cuda-header-missing" and header["message"].startswith("cublas_v2.h is not on this machine")
    assert warning["code"] == "no-launch" and "no CUDA kernel to compile" in warning["message"]
    assert "cuBLAS" in warning["hint"]


def test_bench_without_a_gpu_says_it_needs_one_and_runs_nothing(root):
    result = bench_file(load_problem(root), root / "add_inline.py", device="cpu").to_json()
    assert result["state"] == "error" and result["needs_gpu"] is True
    assert result["message"].startswith("needs a GPU") and "CUDA C++" in result["message"]
    assert result["correctness"] is None and result["timing"] is None


def test_without_nvcc_validation_warns_instead_of_failing(monkeypatch, tmp_path):
    monkeypatch.setattr(nvcc, "tool", lambda name: None)
    source = CudaSource("__global__ void k(float* x) { x[0] = 1; }\n", "cuda_sources of load_inline at line 3", 5)
    out = cuda_compile_job.compile_all([source], ["sm_90"], tmp_path / "cand.py", tmp_path, 60)
    assert out["compile"]["errors"] == [] and out["compile"]["kernels"] == []
    [finding] = out["findings"]
    assert finding["severity"] == "warning" and finding["code"] == "cuda-not-compiled"
    assert "nvcc not found" in finding["message"] and "[cuda]' (NVIDIA's nvidia-cuda-nvcc wheel)" in finding["hint"]


MMA = r'''
__global__ void mma_kernel(const unsigned* a, const unsigned* b, float* c) {
    float acc[4] = {0, 0, 0, 0};
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(acc[0]), "+f"(acc[1]), "+f"(acc[2]), "+f"(acc[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    c[threadIdx.x] = acc[0] + acc[1] + acc[2] + acc[3];
}
'''
HOST_HELPER = '''#include <torch/extension.h>
float helper(float x) { return torch::zeros({1}).item<float>() + x; }
__global__ void uses_host(float* x) { x[0] = helper(x[0]); }
'''


def test_tensor_core_instructions_are_read_from_sass_and_host_blanking_is_not_blamed(tmp_path):
    tool = nvcc.tool("nvcc")
    out = nvcc.compile_device(tool, device_code(MMA), name="cand.py", base_line=10, arch="sm_90", flags=(),
                              workdir=tmp_path, timeout_s=300)
    [kernel] = out["kernels"]
    assert (kernel["tensor_cores"], kernel["tensor_core_op"], kernel["sass_op"]) == (True, "mma", "HMMA")
    assert kernel["line"] == 11
    # helper() is host code (it mentions torch) and is blanked: the error that follows is a doubt, not the file's
    out = nvcc.compile_device(tool, device_code(HOST_HELPER), name="cand.py", base_line=1, arch="sm_90", flags=(),
                              workdir=tmp_path, timeout_s=300)
    assert out["errors"] == [] and out["kernels"] == []
    assert ['"helper"' in d["error"] for d in out["doubts"]] == [True]


def test_a_library_header_this_machine_lacks_is_dropped_not_blamed(tmp_path):
    tool = nvcc.tool("nvcc")
    source = "#include <cublas_v2.h>\n#include <cutlass/cutlass.h>\n__global__ void k(float* x) { x[0] = 1; }\n"
    out = nvcc.compile_device(tool, device_code(source), name="cand.py", base_line=1, arch="sm_90", flags=(),
                              workdir=tmp_path, timeout_s=300)
    assert out["errors"] == [] and out["missing_headers"] == ["cublas_v2.h", "cutlass/cutlass.h"]
    assert [k["name"] for k in out["kernels"]] == ["k"]
    # what the missing header declared is all the kernel lacks, as far as this machine can tell
    source = "#include <cublas_v2.h>\n__global__ void k(float* x) { cublasStatus_t s = CUBLAS_STATUS_SUCCESS; }\n"
    out = nvcc.compile_device(tool, device_code(source), name="cand.py", base_line=1, arch="sm_90", flags=(),
                              workdir=tmp_path, timeout_s=300)
    assert out["errors"] == [] and out["doubts"] and out["missing_headers"] == ["cublas_v2.h"]


HEAVY = """__global__ void heavy(const float4* x, float4* y) {
    float4 a[16];
    #pragma unroll
    for (int i = 0; i < 16; ++i) a[i] = x[i * blockDim.x + threadIdx.x];
    float4 s = {0, 0, 0, 0};
    #pragma unroll
    for (int i = 0; i < 16; ++i) {
        s.x += a[i].x * a[15 - i].y; s.y += a[i].y * a[15 - i].z; s.z += a[i].z * a[15 - i].w; s.w += a[i].w * a[15 - i].x;
    }
    y[threadIdx.x] = s;
}
"""


def test_the_user_s_device_flags_reach_nvcc_and_spills_are_counted(tmp_path):
    """extra_cuda_cflags that change device code pass (-maxrregcount here); arch flags do not."""
    tool = nvcc.tool("nvcc")
    free = nvcc.compile_device(tool, device_code(HEAVY), name="cand.py", base_line=1, arch="sm_90", flags=(),
                               workdir=tmp_path, timeout_s=300)["kernels"][0]
    flags = ("-maxrregcount=32", "-gencode=arch=compute_80,code=sm_80", "--use_fast_math")
    out = nvcc.compile_device(tool, device_code(HEAVY), name="cand.py", base_line=1, arch="sm_90", flags=flags,
                              workdir=tmp_path, timeout_s=300)
    [capped] = out["kernels"]
    assert free["registers"] > 32 and free["spills"] == 0
    assert capped["registers"] == 32 and capped["spills"] > 0 and capped["local_bytes"] >= 4 * capped["spills"]
    assert "-maxrregcount=32" in out["command"] and "--use_fast_math" in out["command"]
    assert "-gencode" not in out["command"] and "-arch=sm_90 " in out["command"]
    assert nvcc.target("sm_90", ("-gencode=arch=compute_90a,code=sm_90a",)) == "sm_90a"
    assert nvcc.target("sm_90", flags) == "sm_90"


def test_ptxas_rejecting_a_kernel_is_the_file_s_error_at_the_kernel(tmp_path):
    source = "\n__global__ void big(float* x) {\n  __shared__ float s[20000];\n  s[threadIdx.x] = x[0];\n" \
             "  __syncthreads();\n  x[threadIdx.x] = s[threadIdx.x ^ 1];\n}\n"
    out = nvcc.compile_device(nvcc.tool("nvcc"), device_code(source), name="cand.py", base_line=20, arch="sm_90",
                              flags=(), workdir=tmp_path, timeout_s=300)
    [error] = out["errors"]
    assert error["line"] == 21 and "too much shared data" in error["error"]
