# strategy: online softmax: one pass keeps a running max and rescales the running sum, a second pass normalises (two passes, overflow-safe)
import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, n_cols, stride_x, stride_out, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    out_row = out_ptr + row * stride_out
    # pass 1: running max m and denominator d, rescaled whenever the max grows
    m = tl.full([], float("-inf"), tl.float32)
    d = tl.full([], 0.0, tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        d = d * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    inv = 1.0 / d
    # pass 2: normalise and store
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=float("-inf")).to(tl.float32)
        tl.store(out_row + cols, (tl.exp(x - m) * inv).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(data: torch.Tensor) -> torch.Tensor:
    x = data.contiguous()
    out = torch.empty_like(x)
    n_rows, n_cols = x.shape
    _softmax_kernel[(n_rows,)](x, out, n_cols, x.stride(0), out.stride(0), BLOCK=BLOCK)
    return out
