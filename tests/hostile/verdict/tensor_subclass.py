# expect: incorrect |
# strategy: a tensor subclass whose comparisons always pass: only its data crosses
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


Liar = type("Liar", (getattr(torch, "Ten" + "sor"),), {
    "__eq__": lambda self, other: torch.ones_like(self, dtype=torch.bool),
    "allclose": lambda self, *a, **k: True,
})


class ModelNew(nn.Module):
    def forward(self, x, y):
        return torch.zeros_like(x).as_subclass(Liar)
