# expect: correct |
# gpu-expect: incorrect | computes something else when timed
# why: on the GPU the work runs on a side stream that waits for nothing: it races with whatever wrote its input on the
# current stream. Each timed call's input is rewritten on the current stream just before the call (issue 33), so the
# side work reads the last call's input and is `incorrect` (H200, 2026-12-02). Before that, the inputs stood still and it
# was `correct` with the checker's clock as its headline (2026-12-01: 640 µs, 0.13× eager, the 20 launches in it).
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
        if not x.is_cuda:
            bias_relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, self.bias, out, x.numel(), x.shape[-1], BLOCK=1024)
            return out
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            for _ in range(20):
                bias_relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, self.bias, out, x.numel(), x.shape[-1], BLOCK=1024)
        return out
