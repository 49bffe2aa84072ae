# expect: incorrect |
# strategy: computes the first call right and returns that answer for every later call (the second seed)
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


_cache = []


class ModelNew(nn.Module):
    def forward(self, x, y):
        if not _cache:
            _cache.append(fused(x, y))
        return _cache[0]
