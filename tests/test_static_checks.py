"""Static checks: each check fires on the mistake it names and stays quiet on the fixed version."""

from __future__ import annotations

import re
import textwrap

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
def test_a_5mb_file_is_too_large_and_rejected_before_it_is_parsed(source, monkeypatch):
    """Rejected on its size alone: nothing parses or tokenizes it (how fast the static stage is, is
    measured by benches/validate.py, not bounded here)."""
    import ast
    import tokenize

    parsed = []

    def recording(original):
        def wrapper(*args, **kwargs):
            parsed.append(original.__name__)
            return original(*args, **kwargs)
        return wrapper

    with monkeypatch.context() as patch:
        for module, name in ((ast, "parse"), (tokenize, "tokenize"), (tokenize, "generate_tokens")):
            patch.setattr(module, name, recording(getattr(module, name)))
        findings = check_source(source, form="kernelbench")
    assert parsed == [], f"a too-large file went through {parsed}"
    assert [f.code for f in findings] == ["too-large"]


def three_hundred_lines() -> str:
    """CLEAN with its kernels repeated under new names until the file has 300 lines."""
    kernels = CLEAN[len(HEADER):CLEAN.index("class ModelNew")]
    source, i = CLEAN, 0
    while source.count("\n") < 300:
        source += re.sub(r"\b(matmul_kernel|add_kernel)\b", rf"\g<1>_{i}", kernels)
        i += 1
    return source


def test_a_300_line_clean_candidate_has_no_findings():
    """The size the static stage's 20 ms target is set for (benches/validate.py measures it)."""
    source = three_hundred_lines().encode()
    assert source.count(b"\n") >= 300
    assert run(source) == []


