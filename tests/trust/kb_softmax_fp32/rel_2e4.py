# expect: incorrect | normwise
# why: every value is 2e-4 too large in relative terms; each is ~1e-4, far below atol, so only the normwise check sees it (issue 13.3)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, o_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=m, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(o_ptr + row * cols + offs, e / tl.sum(e, axis=0) * 1.0002, mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
