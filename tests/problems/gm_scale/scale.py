# strategy: fused multiply-add, one pass
import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 2.0 + 1.0, mask=mask)


def custom_kernel(data):
    out = torch.empty_like(data)
    n = data.numel()
    scale_kernel[(triton.cdiv(n, 1024),)](data, out, n, BLOCK=1024)
    return out
