# strategy: 2D tiles (4 rows x 1024 columns, 8 warps): bias once per tile, no per-element modulo, int64 rows; GELU as v / (1 + 2^(v*(c0 + c1 v^2)))
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl

# gelu_tanh(v) = v * sigmoid(2u) with u = sqrt(2/pi) * (v + 0.044715 v^3)
#             = v / (1 + exp(-2u)) = v / (1 + 2^(v * (C0 + C1 * v^2)))
C0 = tl.constexpr(-2.0 * math.sqrt(2.0 / math.pi) / math.log(2.0))
C1 = tl.constexpr(-2.0 * math.sqrt(2.0 / math.pi) / math.log(2.0) * 0.044715)
TILE = 4096  # elements per program: 16 per thread at 8 warps, two 16-byte vectors per fp16 tensor


@triton.jit
def _bias_gelu_residual_kernel(
    x_ptr, bias_ptr, res_ptr, out_ptr, n_rows, dim, n_col_blocks,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(0)
    pid_m = pid // n_col_blocks  # one scalar division per program, none per element
    pid_n = pid - pid_m * n_col_blocks
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < dim
    b = tl.load(bias_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    offs = rows.to(tl.int64)[:, None] * dim + cols[None, :]  # int64: safe past 2^31 elements
    mask = (rows < n_rows)[:, None] & col_ok[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
    r = tl.load(res_ptr + offs, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
    v = x + b[None, :]
    y = v / (1.0 + tl.exp2(v * (C0 + C1 * (v * v)))) + r
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(dim) * 0.5)

    def forward(self, x, residual):
        x = x.contiguous()
        residual = residual.contiguous()
        out = torch.empty_like(x)
        dim = self.bias.numel()
        n_rows = x.numel() // dim
        block_n = min(1024, triton.next_power_of_2(dim))
        block_m = max(1, TILE // block_n)
        n_col_blocks = triton.cdiv(dim, block_n)
        grid = (triton.cdiv(n_rows, block_m) * n_col_blocks,)
        _bias_gelu_residual_kernel[grid](
            x, self.bias, residual, out, n_rows, dim, n_col_blocks,
            BLOCK_M=block_m, BLOCK_N=block_n, num_warps=8,
        )
        return out
