# strategy: different approach: fuse all three ops into one kernel: read x and residual once, write once, no intermediate in HBM
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _bias_gelu_residual_kernel(x_ptr, bias_ptr, res_ptr, out_ptr, n_elements, dim, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(bias_ptr + offs % dim, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(res_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    v = x + b
    u = 0.7978845608028654 * (v + 0.044715 * v * v * v)  # sqrt(2/pi) * (v + 0.044715 v^3)
    # 0.5 * (1 + tanh(u)) == sigmoid(2u): one exp instead of a tanh
    y = v * tl.sigmoid(2.0 * u) + r
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(dim) * 0.5)

    def forward(self, x, residual):
        x = x.contiguous()
        residual = residual.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        _bias_gelu_residual_kernel[(triton.cdiv(n, BLOCK),)](
            x, self.bias, residual, out, n, self.bias.numel(), BLOCK=BLOCK
        )
        return out
