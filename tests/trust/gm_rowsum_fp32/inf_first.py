# expect: incorrect | Inf where the reference is finite
# why: an Inf where the reference is finite is caught before the problem's own check runs
import torch
import triton
import triton.language as tl


@triton.jit
def rowsum_kernel(x_ptr, o_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * cols + offs, mask=offs < cols, other=0.0)
    tl.store(o_ptr + row, tl.sum(acc, axis=0))


def custom_kernel(data):
    out = torch.empty(data.shape[0], device=data.device, dtype=data.dtype)
    rowsum_kernel[(data.shape[0],)](data, out, data.shape[1], BLOCK=1024)
    return out.index_fill(0, torch.tensor([0], device=out.device), float("inf"))
