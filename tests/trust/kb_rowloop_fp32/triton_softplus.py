# expect: correct |
# gpu-flags: suspicious
# why: right, and more than 10x faster than the looping eager reference on the GPU: flagged suspicious; best only where its speed-of-light (at most 100%) verifies the number (core/flags.py, issue 13.5)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softplus_kernel(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(o_ptr + offs, tl.where(x > 20.0, x, tl.log(1.0 + tl.exp(x))), mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        softplus_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
