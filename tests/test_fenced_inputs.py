"""The candidate's untimed calls get every input up to 64 MB packed at the start of a buffer whose rest is NaN, so a
kernel that reads past an input's end (a missing mask that another operand's zero hides) fails on the CPU too,
where Triton's interpreter reads whatever memory lies beyond (issue: a matmul with no K mask passed)."""

from __future__ import annotations

import pytest
import torch
from conftest import write_problem
from test_bench_job import FAST

from trialtui.core.problem_dir import load_problem
from trialtui.engine.bench import bench_file
from trialtui.engine.validate import validate_file
from trialtui.runner.layouts import arrange

ROW_DOT = '''
import torch
import torch.nn as nn

rows = 5
dim = 37


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, v):
        return x @ v


def get_inputs():
    return [torch.randn(rows, dim), torch.randn(dim)]


def get_init_inputs():
    return []
'''
CANDIDATE = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_dot(x_ptr, v_ptr, out_ptr, dim, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * dim + offs{x_mask})
    v = tl.load(v_ptr + offs, mask=offs < dim, other=0.0)
    tl.store(out_ptr + row, tl.sum(x * v, axis=0))


class ModelNew(nn.Module):
    def forward(self, x, v):
        out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
        row_dot[(x.shape[0],)](x, v, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
'''


@pytest.mark.slow
@pytest.mark.parametrize("x_mask, state", [("", "incorrect"), (", mask=offs < dim, other=0.0", "correct")])
def test_a_read_past_an_inputs_end_is_incorrect_where_another_operands_zero_hid_it(tmp_path, x_mask, state):
    root = write_problem(tmp_path / "p", ROW_DOT, files={"cand.py": CANDIDATE.replace("{x_mask}", x_mask)}, config=FAST)
    result = bench_file(load_problem(root), root / "cand.py", device="cpu")
    assert result.state == state, result.message
    preview = validate_file(root, root / "cand.py")["preview"]
    assert preview["correct"] is (state == "correct")
    if state == "incorrect":
        assert "NaN where the reference is finite" in result.message and "a read past an input's end" in result.message


def test_fenced_inputs_keep_their_values_shapes_and_which_are_one_tensor():
    x, ints, strided = torch.randn(3, 5), torch.arange(4), torch.randn(5, 3).t()
    a, b, c, again = arrange(None, [x, ints, strided, x])
    assert torch.equal(a, x) and torch.equal(b, ints) and c is strided and again is a
    assert a.is_contiguous() and a.data_ptr() != x.data_ptr()
    beyond = a.untyped_storage().nbytes() // a.element_size()
    assert torch.isnan(torch.as_strided(a, (beyond - a.numel(),), (1,), a.numel())).all()
