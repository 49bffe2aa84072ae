# expect: error | SIGKILL
# strategy: launches a kernel that spins, then kills its parent while the GPU is busy
import os
import signal

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def spin(x_ptr, o_ptr, n, steps, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.load(x_ptr + offs, mask=offs < n)
    for _ in range(steps):
        acc = acc * 1.0000001
    tl.store(o_ptr + offs, acc, mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        spin[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), 1 << 40, BLOCK=1024)
        os.kill(os.getppid(), signal.SIGKILL)
        return out
