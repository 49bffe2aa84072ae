# expect: error |
# strategy: a Triton kernel that stores far outside its output: an illegal address, the CUDA context dies
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def wild(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(o_ptr + offs + (1 << 36), tl.load(x_ptr + offs, mask=offs < n))


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        wild[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return torch.relu(out + y)
