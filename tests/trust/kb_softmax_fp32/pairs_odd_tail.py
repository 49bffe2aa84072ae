# expect: incorrect | NaN where the reference is finite
# why: columns are handled in pairs, so at an odd row length the last column is never written (correct at even bench sizes; issue 13.4)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, o_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < (cols // 2) * 2
    x = tl.load(x_ptr + row * cols + offs, mask=m, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(o_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
