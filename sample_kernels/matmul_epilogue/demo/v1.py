# strategy: straightforward tiled matmul on CUDA cores: 32x32 output tiles, K in steps of 8 via broadcast-multiply-and-sum, fp32 accumulation, fused bias + SiLU
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_M = 32
BLOCK_N = 32
BLOCK_K = 8


@triton.jit
def _linear_silu_kernel(x_ptr, w_ptr, b_ptr, out_ptr, M, N, K, stride_xm, stride_wn, stride_om,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        ks = k + offs_k
        a = tl.load(x_ptr + offs_m[:, None] * stride_xm + ks[None, :],
                    mask=(offs_m[:, None] < M) & (ks[None, :] < K), other=0.0).to(tl.float32)  # (BM, BK)
        b = tl.load(w_ptr + offs_n[None, :] * stride_wn + ks[:, None],
                    mask=(ks[:, None] < K) & (offs_n[None, :] < N), other=0.0).to(tl.float32)  # (BK, BN) of W^T
        acc += tl.sum(a[:, :, None] * b[None, :, :], axis=1)
    bias = tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)
    z = acc + bias[None, :]
    y = z * tl.sigmoid(z)
    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :], y.to(out_ptr.dtype.element_ty),
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)  # holds the parameters; its forward is never called

    def forward(self, x):
        w, b = self.linear.weight.contiguous(), self.linear.bias
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        M, K = x2.shape
        N = w.shape[0]
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N))
        _linear_silu_kernel[grid](x2, w, b, out, M, N, K, x2.stride(0), w.stride(0), out.stride(0),
                                  BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
        return out.view(*x.shape[:-1], N)
