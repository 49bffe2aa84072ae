# strategy: fix the GELU: the identity needs sigmoid(2u), not sigmoid(u); still two kernels
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _bias_gelu_kernel(x_ptr, bias_ptr, out_ptr, n_elements, dim, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(bias_ptr + offs % dim, mask=mask, other=0.0).to(tl.float32)
    v = x + b
    u = 0.7978845608028654 * (v + 0.044715 * v * v * v)  # sqrt(2/pi) * (v + 0.044715 v^3)
    # 0.5 * (1 + tanh(u)) == sigmoid(2u): one exp instead of a tanh
    y = v * tl.sigmoid(2.0 * u)
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _add_kernel(a_ptr, b_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, (a + b).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(dim) * 0.5)

    def forward(self, x, residual):
        x = x.contiguous()
        residual = residual.contiguous()
        n = x.numel()
        grid = (triton.cdiv(n, BLOCK),)
        activated = torch.empty_like(x)
        _bias_gelu_kernel[grid](x, self.bias, activated, n, self.bias.numel(), BLOCK=BLOCK)
        out = torch.empty_like(x)
        _add_kernel[grid](activated, residual, out, n, BLOCK=BLOCK)
        return out
