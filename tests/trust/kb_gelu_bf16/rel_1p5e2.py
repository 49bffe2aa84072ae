# expect: incorrect | outside atol=
# absent: TF32
# why: 1.5% too large fails bf16's 1e-2 elementwise; a bfloat16 problem gets no TF32 hint (issue 13.1), emulated on the CPU or not
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_gelu_residual_kernel(x_ptr, b_ptr, r_ptr, o_ptr, n, hidden, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x_ptr + offs, mask=m, other=0.0).to(tl.float32) + tl.load(b_ptr + offs % hidden, mask=m, other=0.0).to(tl.float32)
    r = tl.load(r_ptr + offs, mask=m, other=0.0).to(tl.float32)
    g = 0.5 * v * (1.0 + tl.math.erf(v * 0.7071067811865476))
    tl.store(o_ptr + offs, ((g + r) * 1.015).to(o_ptr.dtype.element_ty), mask=m)


class ModelNew(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(hidden) * 0.5)

    def forward(self, x, residual):
        out = torch.empty_like(x)
        n = x.numel()
        bias_gelu_residual_kernel[(triton.cdiv(n, 256),)](x, self.bias, residual, out, n, x.shape[-1], BLOCK=256)
        return out
