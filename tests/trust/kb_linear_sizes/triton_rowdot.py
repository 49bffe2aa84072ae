# expect: correct |
# why: one output per program, K summed in 16-wide chunks with tl.sum: another summation order than the GEMM
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rowdot_kernel(x_ptr, w_ptr, b_ptr, o_ptr, N, K, BK: tl.constexpr):
    row = tl.program_id(0)
    col = tl.program_id(1)
    acc = 0.0
    for k0 in range(0, K, BK):
        ks = k0 + tl.arange(0, BK)
        m = ks < K
        acc += tl.sum(tl.load(x_ptr + row * K + ks, mask=m, other=0.0) * tl.load(w_ptr + col * K + ks, mask=m, other=0.0), axis=0)
    tl.store(o_ptr + row * N + col, tl.maximum(acc + tl.load(b_ptr + col), 0.0))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        M, K = x.shape
        N = self.gemm.weight.shape[0]
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        rowdot_kernel[(M, N)](x, self.gemm.weight, self.bias, out, N, K, BK=16)
        return out
