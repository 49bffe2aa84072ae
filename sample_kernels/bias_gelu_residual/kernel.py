# strategy: port eager op by op: three Triton kernels (bias add, GELU, residual add), fp32 math inside each
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _add_bias_kernel(x_ptr, bias_ptr, out_ptr, n_elements, dim, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(bias_ptr + offs % dim, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, (x + b).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _gelu_tanh_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    v = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    u = 0.7978845608028654 * (v + 0.044715 * v * v * v)  # sqrt(2/pi) * (v + 0.044715 v^3)
    t = 2.0 * tl.sigmoid(2.0 * u) - 1.0  # tanh(u): Triton has no tanh builtin
    tl.store(out_ptr + offs, (0.5 * v * (1.0 + t)).to(out_ptr.dtype.element_ty), mask=mask)


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
        biased = torch.empty_like(x)
        _add_bias_kernel[grid](x, self.bias, biased, n, self.bias.numel(), BLOCK=BLOCK)
        activated = torch.empty_like(x)
        _gelu_tanh_kernel[grid](biased, activated, n, BLOCK=BLOCK)
        out = torch.empty_like(x)
        _add_kernel[grid](activated, residual, out, n, BLOCK=BLOCK)
        return out
