# strategy: four rows per program so each weight chunk is loaded once for four rows; per-row scale as 1 / (sqrt(mean) + eps)
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_M = 4
BLOCK_N = 1024


@triton.jit
def _rmsnorm_kernel(x_ptr, w_ptr, out_ptr, n_rows, n_cols, stride_x, stride_out, eps,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < n_rows
    x_rows = x_ptr + rows.to(tl.int64)[:, None] * stride_x
    out_rows = out_ptr + rows.to(tl.int64)[:, None] * stride_out
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_ok[:, None] & (cols < n_cols)[None, :]
        x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        acc += x * x
    rms = tl.sqrt(tl.sum(acc, axis=1) / n_cols)
    rstd = 1.0 / (rms + eps)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        col_ok = cols < n_cols
        mask = row_ok[:, None] & col_ok[None, :]
        x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
        y = x * rstd[:, None] * w[None, :]
        tl.store(out_rows + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))
        self.eps = eps

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        out = torch.empty_like(x2)
        n_rows, n_cols = x2.shape
        _rmsnorm_kernel[(triton.cdiv(n_rows, BLOCK_M),)](
            x2, self.weight, out, n_rows, n_cols, x2.stride(0), out.stride(0), self.eps,
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
        )
        return out.view(x.shape)
