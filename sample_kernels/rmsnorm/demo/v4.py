# strategy: split in two kernels, each with its own launch shape: a row reduction writes rstd, a 2D elementwise kernel normalises
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_M = 4
BLOCK_N = 1024


@triton.jit
def _rstd_kernel(x_ptr, rstd_ptr, n_rows, n_cols, stride_x, eps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < n_rows
    x_rows = x_ptr + rows.to(tl.int64)[:, None] * stride_x
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = row_ok[:, None] & (cols < n_cols)[None, :]
        x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0).to(tl.float32)
        acc += x * x
    tl.store(rstd_ptr + rows, tl.rsqrt(tl.sum(acc, axis=1) / n_cols + eps), mask=row_ok)


@triton.jit
def _normalize_kernel(x_ptr, rstd_ptr, w_ptr, out_ptr, n_rows, n_cols, stride_x, stride_out,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    row_ok = rows < n_rows
    col_ok = cols < n_cols
    mask = row_ok[:, None] & col_ok[None, :]
    x = tl.load(x_ptr + rows.to(tl.int64)[:, None] * stride_x + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    rstd = tl.load(rstd_ptr + rows, mask=row_ok, other=0.0)
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    y = x * rstd[:, None] * w[None, :]
    tl.store(out_ptr + rows.to(tl.int64)[:, None] * stride_out + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))
        self.eps = eps

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        out = torch.empty_like(x2)
        n_rows, n_cols = x2.shape
        rstd = torch.empty(n_rows, device=x.device, dtype=torch.float32)
        _rstd_kernel[(triton.cdiv(n_rows, BLOCK_M),)](
            x2, rstd, n_rows, n_cols, x2.stride(0), self.eps, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
        )
        _normalize_kernel[(triton.cdiv(n_rows, BLOCK_M), triton.cdiv(n_cols, BLOCK_N))](
            x2, rstd, self.weight, out, n_rows, n_cols, x2.stride(0), out.stride(0),
            BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
        )
        return out.view(x.shape)
