# expect: incorrect | output structure differs
# strategy: the right values in the wrong container: return [fused(x, y)]
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_relu(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), 0.0), mask=m)


def fused(x, y):
    out = torch.empty_like(x)
    add_relu[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
    return out


class ModelNew(nn.Module):
    def forward(self, x, y):
        return [fused(x, y)]
