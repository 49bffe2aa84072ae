# expect: timeout | timed out after
# why: on every machine the job is killed at bench_timeout_s; watch must agree with bench (issue 13.10)
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_relu_kernel(x_ptr, b_ptr, o_ptr, n, dim, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs % dim, mask=m)
    tl.store(o_ptr + offs, tl.maximum(x + b, 0.0), mask=m)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(dim))

    def forward(self, x):
        out = torch.empty_like(x)
        while True: time.sleep(60)  # hangs for good without a core (a spin burnt one for the whole timeout)
        bias_relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, self.bias, out, x.numel(), x.shape[-1], BLOCK=1024)
        return out
