# expect: correct |
# why: an online (running max, rescaled sum) softmax over 1024-wide chunks sums in another order
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def online_softmax_kernel(x_ptr, o_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = x_ptr + row * cols
    running_max = -float("inf")
    running_sum = 0.0
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(base + offs, mask=offs < cols, other=-float("inf"))
        new_max = tl.maximum(running_max, tl.max(x, axis=0))
        running_sum = running_sum * tl.exp(running_max - new_max) + tl.sum(tl.exp(x - new_max), axis=0)
        running_max = new_max
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m = offs < cols
        x = tl.load(base + offs, mask=m, other=-float("inf"))
        tl.store(o_ptr + row * cols + offs, tl.exp(x - running_max) / running_sum, mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        online_softmax_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=1024)
        return out
