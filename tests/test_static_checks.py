"""Static checks: each check fires on the mistake it names and stays quiet on the fixed version."""

from __future__ import annotations

import re
import statistics
import textwrap
import time

import pytest

from trialtui.core.static_checks import MAX_SOURCE_BYTES, check_source

HEADER = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl
"""

# A realistic candidate that every check must leave alone: autotuned matmul, an elementwise
# kernel launched with a class-level block size, a launch grid lambda.
CLEAN = HEADER + '''

@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4, num_stages=3),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=8, num_stages=3),
    ],
    key=["M", "N", "K"],
)
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


class ModelNew(nn.Module):
    BLOCK = 1024

    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        M, K = a.shape
        K, N = b.shape
        c = torch.empty((M, N), device=a.device, dtype=torch.float32)
        grid = lambda META: (triton.cdiv(M, META["BLOCK_M"]), triton.cdiv(N, META["BLOCK_N"]))
        matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                            c.stride(0), c.stride(1))
        out = torch.empty_like(c)
        n = c.numel()
        add_kernel[(triton.cdiv(n, self.BLOCK),)](c, c, out, n, BLOCK_SIZE=self.BLOCK)
        return out
'''


def run(source: str | bytes, form: str = "kernelbench", **kwargs):
    if isinstance(source, str):
        source = textwrap.dedent(source)
    return check_source(source, form=form, **kwargs)


def codes(source: str | bytes, form: str = "kernelbench", **kwargs) -> list[str]:
    return [f.code for f in run(source, form, **kwargs)]


def only(source: str | bytes, code: str, form: str = "kernelbench", **kwargs):
    """The one finding with `code` (failing the test when there are none or several)."""
    found = [f for f in run(source, form, **kwargs) if f.code == code]
    assert len(found) == 1, found
    return found[0]


def line_of(source: str, text: str) -> int:
    """The 1-based line where `text` first appears."""
    return next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if text in line)


def kernel_file(kernel: str, model: str = "") -> str:
    """A candidate around one kernel; the model defaults to a trivial ModelNew."""
    model = model or "class ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n"
    return HEADER + "\n" + textwrap.dedent(kernel) + "\n\n" + textwrap.dedent(model)


ADD_KERNEL = """\
@triton.jit
def add_kernel(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
"""


def launch(block: str) -> str:
    """A candidate that launches ADD_KERNEL with `block` as BLOCK_SIZE (an expression)."""
    return kernel_file(ADD_KERNEL, f"""\
        class ModelNew(nn.Module):
            def forward(self, x):
                out = torch.empty_like(x)
                add_kernel[(1,)](x, out, x.numel(), BLOCK_SIZE={block})
                return out
        """)


# -- the clean candidate and the result's shape ---------------------------------------------------


def test_clean_candidate_has_no_findings():
    assert run(CLEAN) == []


def test_findings_are_sorted_by_line_and_carry_hints():
    source = "import scipy\nimport threading\nfrom . import x\n" + CLEAN.replace("BLOCK = 1024", "BLOCK = 1000")
    findings = run(source)
    assert len(findings) >= 4
    lines = [f.line or 0 for f in findings]
    assert lines == sorted(lines)
    assert all(f.hint and f.message and f.severity in ("error", "warning", "info") for f in findings)


def test_unknown_form_is_a_programming_error():
    with pytest.raises(ValueError, match="unknown problem form"):
        check_source(CLEAN, form="leetcode")


# -- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize("source", [b"", "", "   \n\n", "# only a comment\n"])
def test_empty_file_is_an_error(source):
    finding = only(source, "empty")
    assert finding.severity == "error"


def test_a_file_with_code_is_not_empty():
    assert "empty" not in codes("x = 1\n")


@pytest.mark.parametrize("source", [b"\x7fELF\x02\x01\x01\x00\x00\x00garbage", "x = 1\n\0"])
def test_binary_garbage_is_an_error_not_a_traceback(source):
    finding = only(source, "binary")
    assert finding.severity == "error" and "binary" in finding.message


def test_binary_finding_points_at_the_nul_byte():
    finding = only(b"x = 1\ny = 2\nz = \x00\n", "binary")
    assert (finding.line, finding.col) == (3, 5)


def test_text_with_lone_surrogates_is_an_encoding_error():
    assert codes("x = 1\n# \ud800\n") == ["encoding"]


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_non_utf8_bytes_are_an_error_with_their_position(bom):
    finding = only(bom + "x = 1\n# café\n".encode("latin-1"), "encoding")
    assert finding.severity == "error"
    assert (finding.line, finding.col) == (2, 6)
    assert "0xe9" in finding.message


@pytest.mark.parametrize("source", ["# café\nx = 1\n".encode(), b"\xef\xbb\xbfx = 1\n", "\ufeffx = 1\n"])
def test_utf8_with_or_without_bom_is_read(source):
    assert codes(source) == ["no-entry-point", "no-triton-kernel"]


@pytest.mark.parametrize("source", [b"x = 1\n" * 900_000, "x = 1\n" * 900_000])
def test_a_5mb_file_is_too_large_and_rejected_fast(source):
    start = time.perf_counter()
    findings = check_source(source, form="kernelbench")
    elapsed = time.perf_counter() - start
    assert [f.code for f in findings] == ["too-large"]
    assert elapsed < 0.05, f"{elapsed * 1000:.1f} ms"


def test_a_file_under_the_size_limit_is_parsed():
    source = b"x = 1\n" + b"#" * (MAX_SOURCE_BYTES - 10) + b"\n"
    assert "too-large" not in codes(source)


def test_syntax_error_has_line_and_column():
    finding = only("x = 1\ndef f(:\n    pass\n", "syntax")
    assert finding.severity == "error"
    assert (finding.line, finding.col) == (2, 7)
    assert "def f(:" in finding.hint


def test_valid_syntax_has_no_syntax_finding():
    assert "syntax" not in codes("x = 1\ndef f():\n    pass\n")


def test_nesting_too_deep_to_parse_is_a_syntax_error():
    assert codes("x = " + "+".join(["1"] * 5000)) == ["syntax"]


def test_deep_but_valid_expressions_do_not_crash_the_checks():
    # 800 terms parse, but exceed a recursive ast.NodeVisitor; the checks walk iteratively.
    source = CLEAN + "\nTOTAL = " + "+".join(["1"] * 800) + "\n"
    assert run(source) == []


# -- structure ------------------------------------------------------------------------------


def test_missing_model_new_is_an_error():
    finding = only(CLEAN.replace("class ModelNew", "class MyModel"), "no-entry-point")
    assert finding.severity == "error" and "ModelNew" in finding.message


def test_gpumode_candidate_needs_custom_kernel():
    kernel = kernel_file(ADD_KERNEL, "def custom_kernel(data):\n    return data\n")
    assert "no-entry-point" not in codes(kernel, form="gpumode")
    assert "custom_kernel" in only(kernel.replace("def custom_kernel", "def my_kernel"), "no-entry-point",
                                   form="gpumode").message
    # The entry point follows the form: a KernelBench check of the same file wants ModelNew.
    assert "no-entry-point" in codes(kernel, form="kernelbench")


def test_pure_pytorch_candidate_is_flagged_but_legal():
    source = HEADER + "\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
    finding = only(source, "no-triton-kernel")
    assert finding.severity == "warning"


@pytest.mark.parametrize("decorators", [
    "@triton.jit",
    "@triton.autotune(configs=[triton.Config({})], key=[])\n@triton.jit",
    "@triton.heuristics({'EVEN': lambda args: args['n'] % 2 == 0})\n@triton.jit",
    "@jit",
    "@triton.jit(debug=True)",
])
def test_each_kernel_decorator_counts_as_a_custom_kernel(decorators):
    kernel = f"from triton import jit\n{decorators}\ndef k(x_ptr, n):\n    tl.store(x_ptr, 0)\n"
    assert "no-triton-kernel" not in codes(kernel_file(kernel))


# -- self-contained -------------------------------------------------------------------------


def test_third_party_import_is_an_error():
    finding = only(CLEAN + "\nimport scipy.linalg\n", "import-not-allowed")
    assert finding.severity == "error" and "scipy" in finding.message


def test_stdlib_torch_triton_numpy_math_imports_are_allowed():
    source = CLEAN + "\nimport math, os, functools\nimport numpy as np\nfrom triton.language import extra\n"
    assert run(source) == []


def test_relative_import_is_an_error():
    finding = only(CLEAN + "\nfrom . import helpers\n", "relative-import")
    assert finding.severity == "error"
    assert "relative-import" not in codes(CLEAN + "\nfrom triton import cdiv\n")


def test_gpumode_candidates_may_import_the_problems_task_types():
    model = "from task import input_t, output_t\n\ndef custom_kernel(data: input_t) -> output_t:\n    return data\n"
    kernel = kernel_file(ADD_KERNEL, model)
    assert run(kernel, form="gpumode") == []
    assert "import-not-allowed" in codes(kernel.replace("custom_kernel", "ModelNew"), form="kernelbench")


def test_importing_a_sibling_candidate_is_an_error():
    finding = only(CLEAN + "\nfrom v1_tiled import matmul_kernel as k1\n", "sibling-import",
                   siblings={"v1_tiled", "v2"})
    assert finding.severity == "error"
    assert "sibling-import" not in codes(CLEAN + "\nimport math\n", siblings={"v1_tiled", "v2"})


@pytest.mark.parametrize("line", [
    "from reference import Model",
    "import reference",
    "ref = importlib.import_module('reference')",
    "exec(open('reference.py').read())",
    "expected = torch.load('reference_out.pt')",
])
def test_using_the_reference_is_an_error(line):
    finding = only(CLEAN + "\nimport importlib\n" + line + "\n", "reference-import")
    assert finding.severity == "error"


def test_reading_other_files_is_not_a_reference_import():
    assert "reference-import" not in codes(CLEAN + "\nimport importlib\nweights = open('weights.bin', 'rb')\n")


# -- Triton constraints -----------------------------------------------------------------------


ARANGE_KERNEL = """\
BLOCK = {block}

@triton.jit
def k(x_ptr):
    offs = tl.arange(0, {extent})
    tl.store(x_ptr + offs, 0)
"""


@pytest.mark.parametrize("block,extent", [(0, "100"), (0, "BLOCK"), (96, "BLOCK"), (0, "2 * 48")])
def test_arange_extent_not_a_power_of_two_is_an_error(block, extent):
    source = kernel_file(ARANGE_KERNEL.format(block=block or 100, extent=extent))
    finding = only(source, "arange-not-pow2")
    assert finding.severity == "error" and finding.line == line_of(source, "tl.arange")


@pytest.mark.parametrize("extent", ["128", "BLOCK", "2 * 64"])
def test_arange_power_of_two_extent_is_fine(extent):
    assert "arange-not-pow2" not in codes(kernel_file(ARANGE_KERNEL.format(block=128, extent=extent)))


@pytest.mark.parametrize("source", [
    launch("100"),
    launch("B").replace("out = torch.empty_like(x)", "B = 1000\n        out = torch.empty_like(x)"),
    launch("self.BLOCK").replace("class ModelNew(nn.Module):", "class ModelNew(nn.Module):\n    BLOCK = 96"),
    launch("self.block").replace("    def forward",
                                 "    def __init__(self):\n        self.block = 48\n\n    def forward"),
    launch("1024").replace("x.numel(), BLOCK_SIZE=1024", "x.numel(), 100"),  # positional
    launch("128 if x.numel() > 4096 else 100"),
])
def test_block_size_literal_not_a_power_of_two_is_an_error(source):
    finding = only(source, "block-not-pow2")
    assert finding.severity == "error" and "BLOCK_SIZE" in finding.message


@pytest.mark.parametrize("source", [
    launch("1024"),
    launch("triton.next_power_of_2(x.numel())"),
    launch("B").replace("out = torch.empty_like(x)", "B = 1000\n        B = triton.next_power_of_2(B)\n"
                        "        out = torch.empty_like(x)"),
])
def test_power_of_two_or_computed_block_size_is_fine(source):
    assert "block-not-pow2" not in codes(source)


def test_chains_of_constants_are_followed_in_linear_time():
    # B18 = 2**18, reached through 2**18 paths when every use is followed afresh.
    chain = "".join(f"B{i} = B{i - 1} + B{i - 1}\n" for i in range(1, 19))
    source = "B0 = 1\n" + chain + launch("B18 // 256 * 3")
    start = time.process_time()
    finding = only(source, "block-not-pow2")
    assert "BLOCK_SIZE=3072" in finding.message
    assert time.process_time() - start < 0.5


def test_chains_of_alternatives_stay_small():
    # Each level doubles the possible values; past a cap they count as unknown, not as 2**30 values.
    chain = "".join(f"B{i} = B{i - 1} if x else B{i - 1}\n" for i in range(1, 19))
    source = "x = 1\nB0 = 3\n" + chain + launch("B18")
    start = time.process_time()
    assert "block-not-pow2" not in codes(source)
    assert time.process_time() - start < 0.5


def test_autotune_config_block_not_a_power_of_two_is_an_error():
    source = CLEAN.replace('"BLOCK_M": 128', '"BLOCK_M": 48')
    finding = only(source, "block-not-pow2")
    assert "BLOCK_M=48" in finding.message and finding.line == line_of(source, '"BLOCK_M": 48')


def test_config_sweeps_are_read_through_comprehensions():
    sweep = 'configs=[triton.Config({"BLOCK_M": m, "BLOCK_N": 64, "BLOCK_K": 32}) for m in [{}]],'
    start = CLEAN.index("configs=[")
    end = CLEAN.index("key=[")
    bad = CLEAN[:start] + sweep.replace("{}", "64, 96") + "\n    " + CLEAN[end:]
    good = CLEAN[:start] + sweep.replace("{}", "64, 128") + "\n    " + CLEAN[end:]
    assert "BLOCK_M=96" in only(bad, "block-not-pow2").message
    assert "block-not-pow2" not in codes(good)


def test_num_warps_not_a_power_of_two_is_an_error():
    finding = only(CLEAN.replace("num_warps=8", "num_warps=6"), "num-warps-not-pow2")
    assert finding.severity == "error"
    assert "num-warps-not-pow2" not in codes(CLEAN)


DOT_KERNEL = """\
@triton.jit
def k(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, {k})
    a = tl.load(a_ptr + rm[:, None] * {k} + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], c)
"""
DOT_LAUNCH = """\
class ModelNew(nn.Module):
    def forward(self, a, b, c):
        k[(1,)](a, b, c, BM={m}, BN=64, BK=32)
        return c
"""


def dot_file(m: int, k: str) -> str:
    return kernel_file(DOT_KERNEL.format(k=k), DOT_LAUNCH.format(m=m))


def test_dot_with_k_below_16_is_an_error():
    source = dot_file(32, "8")
    finding = only(source, "dot-tile-too-small")
    assert finding.severity == "error" and "K = 8" in finding.message
    assert finding.line == line_of(source, "tl.dot(")


def test_dot_with_k_from_a_constexpr_below_16_is_an_error():
    finding = only(dot_file(32, "BK").replace("BK=32", "BK=8"), "dot-tile-too-small")
    assert finding.severity == "error" and "K = 8 (BK, launch at line" in finding.message


def test_dot_with_m_below_16_is_a_warning():
    finding = only(dot_file(8, "BK"), "dot-tile-too-small")
    assert finding.severity == "warning" and "M = 8" in finding.message


def test_dot_with_tiles_of_16_or_more_is_fine():
    assert "dot-tile-too-small" not in codes(dot_file(16, "BK"))
    assert "dot-tile-too-small" not in codes(dot_file(16, "16"))
    assert "dot-tile-too-small" not in codes(CLEAN.replace('"BLOCK_K": 32', '"BLOCK_K": 16'))


def test_dot_k_from_an_autotune_config_below_16_is_an_error():
    source = CLEAN.replace('"BLOCK_K": 32}, num_warps=8', '"BLOCK_K": 8}, num_warps=8')
    finding = only(source, "dot-tile-too-small")
    assert finding.severity == "error" and "BLOCK_K, triton.Config at line" in finding.message


def test_block_parameter_used_as_a_shape_must_be_constexpr():
    source = kernel_file(ADD_KERNEL.replace("BLOCK_SIZE: tl.constexpr", "BLOCK_SIZE"))
    finding = only(source, "block-not-constexpr")
    assert finding.severity == "error" and "BLOCK_SIZE" in finding.message
    assert finding.line == line_of(source, "def add_kernel")
    assert "block-not-constexpr" not in codes(kernel_file(ADD_KERNEL))


def test_tile_shape_parameters_must_be_constexpr():
    source = CLEAN.replace("BLOCK_N: tl.constexpr", "BLOCK_N").replace(
        "offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)", "offs_n = pid_n * 64 + tl.arange(0, 64)")
    assert "BLOCK_N" in only(source, "block-not-constexpr").message  # still a tl.zeros shape


def test_block_named_scalar_that_sizes_nothing_is_left_alone():
    kernel = """\
    @triton.jit
    def k(x_ptr, BLOCK_STRIDE, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK_STRIDE + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, 0)
    """
    model = "class ModelNew(nn.Module):\n    def forward(self, x):\n        k[(1,)](x, BLOCK_STRIDE=100, BLOCK=128)"
    found = codes(kernel_file(kernel, model))
    assert "block-not-constexpr" not in found and "block-not-pow2" not in found


def test_autotune_key_naming_a_missing_parameter_is_an_error():
    finding = only(CLEAN.replace('key=["M", "N", "K"]', 'key=["M", "N", "n_cols"]'), "autotune-key")
    assert finding.severity == "error" and "'n_cols'" in finding.message


def test_empty_autotune_key_with_several_configs_is_a_warning():
    finding = only(CLEAN.replace('key=["M", "N", "K"]', "key=[]"), "autotune-key")
    assert finding.severity == "warning" and "2 configs" in finding.message


def test_empty_autotune_key_with_one_config_is_fine():
    second = '        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=8, num_stages=3),\n'
    one = CLEAN.replace(second, "").replace('key=["M", "N", "K"]', "key=[]")
    assert one != CLEAN and "autotune-key" not in codes(one)


def test_autotune_config_naming_a_missing_parameter_is_an_error():
    finding = only(CLEAN.replace('"BLOCK_M": 128', '"BLOCK_SIZE_M": 128'), "autotune-config")
    assert finding.severity == "error" and "BLOCK_SIZE_M" in finding.message


def test_passing_an_autotuned_parameter_at_launch_is_an_error():
    source = CLEAN.replace("c.stride(0), c.stride(1))", "c.stride(0), c.stride(1), BLOCK_K=32)")
    finding = only(source, "autotune-config")
    assert finding.severity == "error" and "BLOCK_K" in finding.message
    assert "autotune-config" not in codes(CLEAN)


# -- cheating ---------------------------------------------------------------------------------


FALLBACK = """\
class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        try:
            add_kernel[(1,)](x, out, x.numel(), BLOCK_SIZE=1024)
        except Exception:
            {handler}
        return out
"""


@pytest.mark.parametrize("handler", [
    "return F.relu(x)",
    "return torch.nn.functional.gelu(x)",
    "return Model()(x)",
    "return ref_kernel(x)",
    "return super().forward(x)",
    "return torch.matmul(x, x)",
    "return x @ x",
])
def test_except_handler_falling_back_to_pytorch_is_an_error(handler):
    source = kernel_file(ADD_KERNEL, FALLBACK.format(handler=handler))
    finding = only(source, "fallback-to-reference")
    assert finding.severity == "error" and finding.line == line_of(source, "except Exception")


@pytest.mark.parametrize("handler", [
    "raise RuntimeError('add_kernel failed')",
    "out.zero_()",
])
def test_except_handler_that_does_not_compute_the_answer_is_fine(handler):
    assert "fallback-to-reference" not in codes(kernel_file(ADD_KERNEL, FALLBACK.format(handler=handler)))


@pytest.mark.parametrize("line", [
    "time.perf_counter = lambda: 0.0",
    "torch.cuda.synchronize = lambda: None",
    "torch.cuda.Event.elapsed_time = lambda self, other: 0.001",
    "triton.testing.do_bench = lambda fn, **kw: 0.001",
    "tt.do_bench = lambda fn, **kw: 0.001",
    "setattr(torch.cuda, 'synchronize', lambda: None)",
    "setattr(time, 'perf_counter', lambda: 0.0)",
    "torch.cuda.Event, x = object, 1",
])
def test_patching_a_timing_function_is_an_error(line):
    source = CLEAN + "\nimport time\nimport triton.testing as tt\n" + line + "\n"
    finding = only(source, "timing-patch")
    assert finding.severity == "error" and finding.line == len(source.splitlines())


def test_calling_timing_functions_is_fine():
    source = CLEAN + "\nimport time\nt0 = time.perf_counter()\ntorch.cuda.synchronize()\n"
    assert "timing-patch" not in codes(source)


@pytest.mark.parametrize("line,severity", [
    ("import threading", "error"),
    ("from concurrent.futures import ThreadPoolExecutor", "error"),
    ("import multiprocessing as mp", "error"),
    ("from torch import multiprocessing", "error"),
    ("side = torch.cuda.Stream()", "warning"),
    ("ctx = torch.cuda.stream(None)", "warning"),
])
def test_threads_and_side_streams_are_flagged(line, severity):
    finding = only(CLEAN + "\n" + line + "\n", "threads-or-streams")
    assert finding.severity == severity


def test_current_stream_use_is_fine():
    assert "threads-or-streams" not in codes(CLEAN + "\nstream = torch.cuda.current_stream()\n")


@pytest.mark.parametrize("line", [
    "class Lazy(torch.Tensor):\n    pass",
    "fake = torch.Tensor._make_subclass(torch.Tensor, torch.empty(1))",
])
def test_tensor_subclass_tricks_are_an_error(line):
    assert only(CLEAN + "\n" + line + "\n", "lazy-tensor").severity == "error"


def test_ordinary_module_subclass_is_not_a_lazy_tensor():
    assert "lazy-tensor" not in codes(CLEAN + "\nclass Helper(nn.Module):\n    pass\n")


# -- speed ------------------------------------------------------------------------------------


def three_hundred_lines() -> str:
    """CLEAN with its kernels repeated under new names until the file has 300 lines."""
    kernels = CLEAN[len(HEADER):CLEAN.index("class ModelNew")]
    source, i = CLEAN, 0
    while source.count("\n") < 300:
        source += re.sub(r"\b(matmul_kernel|add_kernel)\b", rf"\g<1>_{i}", kernels)
        i += 1
    return source


def test_a_300_line_candidate_checks_in_well_under_20_ms():
    source = three_hundred_lines().encode()
    assert source.count(b"\n") >= 300
    assert run(source) == []
    cpu, wall = [], []
    for _ in range(30):
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        check_source(source, form="kernelbench")
        cpu.append(time.process_time() - start_cpu)
        wall.append(time.perf_counter() - start_wall)
    cpu_ms, wall_ms = statistics.median(cpu) * 1000, statistics.median(wall) * 1000
    lines = source.count(b"\n")
    print(f"static checks, {lines}-line candidate: median {cpu_ms:.1f} ms CPU, {wall_ms:.1f} ms wall")
    # Target 20 ms. CPU time, so that other processes on a busy CI machine do not count; the
    # bound is generous so that a slow machine does not fail it.
    assert cpu_ms < 40, f"{cpu_ms:.1f} ms"
