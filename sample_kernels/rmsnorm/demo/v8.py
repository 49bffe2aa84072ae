# strategy: rows in registers, several rows per program when rows are narrow, warps scaled with the tile, evict_first; two-pass kernel past 32K columns
import torch
import torch.nn as nn
import triton
import triton.language as tl

MAX_REGISTER_COLS = 32768  # 64 fp32 per thread at 16 warps; wider rows take the two-pass kernel
TILE = 4096  # elements per program for narrow rows


@triton.jit
def _rmsnorm_rows_kernel(x_ptr, w_ptr, out_ptr, n_rows, n_cols, stride_x, stride_out, eps,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    col_ok = cols < n_cols
    mask = (rows < n_rows)[:, None] & col_ok[None, :]
    rows = rows.to(tl.int64)
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0,
                eviction_policy="evict_first").to(tl.float32)
    w = tl.load(w_ptr + cols, mask=col_ok, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    y = x * rstd[:, None] * w[None, :]
    tl.store(out_ptr + rows[:, None] * stride_out + cols[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rmsnorm_two_pass_kernel(x_ptr, w_ptr, out_ptr, n_cols, stride_x, stride_out, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    out_row = out_ptr + row * stride_out
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0, eviction_policy="evict_last").to(tl.float32)
        acc += x * x
    rstd = tl.rsqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_row + cols, (x * rstd * w).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))
        self.eps = eps

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        out = torch.empty_like(x2)
        n_rows, n_cols = x2.shape
        block_n = triton.next_power_of_2(n_cols)
        if block_n > MAX_REGISTER_COLS:
            _rmsnorm_two_pass_kernel[(n_rows,)](
                x2, self.weight, out, n_cols, x2.stride(0), out.stride(0), self.eps, BLOCK=4096, num_warps=8,
            )
            return out.view(x.shape)
        block_m = min(16, max(1, TILE // block_n))
        num_warps = min(16, max(4, block_m * block_n // 512))  # 16 values per thread, 32-64 past 8K columns
        _rmsnorm_rows_kernel[(triton.cdiv(n_rows, block_m),)](
            x2, self.weight, out, n_rows, n_cols, x2.stride(0), out.stride(0), self.eps,
            BLOCK_M=block_m, BLOCK_N=block_n, num_warps=num_warps,
        )
        return out.view(x.shape)
