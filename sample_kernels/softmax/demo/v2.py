# strategy: two passes instead of three: skip the max pass and sum exp(x) directly, then normalise and store
import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def _softmax_kernel(x_ptr, out_ptr, n_cols, stride_x, stride_out, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    out_row = out_ptr + row * stride_out
    # pass 1: the denominator
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        acc += tl.exp(x)
    inv = 1.0 / tl.sum(acc, axis=0)
    # pass 2: normalise and store
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=float("-inf")).to(tl.float32)
        tl.store(out_row + cols, (tl.exp(x) * inv).to(out_ptr.dtype.element_ty), mask=mask)


def custom_kernel(data: torch.Tensor) -> torch.Tensor:
    x = data.contiguous()
    out = torch.empty_like(x)
    n_rows, n_cols = x.shape
    _softmax_kernel[(n_rows,)](x, out, n_cols, x.stride(0), out.stride(0), BLOCK=BLOCK)
    return out
