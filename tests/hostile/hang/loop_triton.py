# expect: timeout |
# strategy: a Triton kernel whose loop does not end in any reasonable time
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def spin(x_ptr, o_ptr, n, steps, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    acc = tl.load(x_ptr + offs, mask=m)
    for _ in range(steps):
        acc = acc * 1.0000001
    tl.store(o_ptr + offs, acc, mask=m)


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        spin[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), 1 << 40, BLOCK=1024)
        return torch.relu(out + y)
