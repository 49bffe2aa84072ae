# expect: incorrect | less precisely when timed
# strategy: exact on the calls that are checked, off by 5e-5 on every timed one: each value inside the elementwise
# tolerance, the whole five times the normwise bound. It tells them apart by a switch the untimed calls run under
# (deterministic algorithms, on while fresh allocations are filled with NaN); any other way would do as well
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_relu(x_ptr, y_ptr, o_ptr, n, bias, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), 0.0) + bias, mask=m)


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        bias = 0.0 if torch.are_deterministic_algorithms_enabled() else 5e-5
        add_relu[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), bias, BLOCK=1024)
        return out
