# strategy: one program per row, three passes over 1024-wide chunks: row max, sum of exp(x - max), normalise and store
import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, n_cols, stride_x, stride_out, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    out_row = out_ptr + row * stride_out
    # pass 1: the row maximum
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        m = tl.maximum(m, x)
    row_max = tl.max(m, axis=0)
    # pass 2: the denominator
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        acc += tl.exp(x - row_max)
    inv = 1.0 / tl.sum(acc, axis=0)
    # pass 3: normalise and store
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=float("-inf")).to(tl.float32)
        tl.store(out_row + cols, (tl.exp(x - row_max) * inv).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(data: torch.Tensor) -> torch.Tensor:
    x = data.contiguous()
    out = torch.empty_like(x)
    n_rows, n_cols = x.shape
    _softmax_kernel[(n_rows,)](x, out, n_cols, x.stride(0), out.stride(0), BLOCK=BLOCK)
    return out
