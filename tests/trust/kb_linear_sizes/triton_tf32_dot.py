# expect: correct |
# gpu-expect: incorrect | outside atol=
# why: tl.dot on fp32 inputs rounds them to TF32 on the GPU (the interpreter does not): wrong there with allow_tf32 = false
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gemm_bias_relu_kernel(x_ptr, w_ptr, b_ptr, o_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        ks = k0 + rk
        x = tl.load(x_ptr + rm[:, None] * K + ks[None, :], mask=(rm[:, None] < M) & (ks[None, :] < K), other=0.0)
        w = tl.load(w_ptr + rn[None, :] * K + ks[:, None], mask=(rn[None, :] < N) & (ks[:, None] < K), other=0.0)
        acc += tl.dot(x, w)
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    tl.store(o_ptr + rm[:, None] * N + rn[None, :], tl.maximum(acc, 0.0), mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        M, K = x.shape
        N = self.gemm.weight.shape[0]
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
        gemm_bias_relu_kernel[grid](x, self.gemm.weight, self.bias, out, M, N, K, BM=32, BN=32, BK=32)
        return out
