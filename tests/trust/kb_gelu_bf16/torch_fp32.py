# expect: correct |
# flags: no-custom-kernel
# why: the same math in float32, rounded once at the end: more accurate than the reference
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(hidden) * 0.5)

    def forward(self, x, residual):
        v = x.float() + self.bias.float()
        return (torch.nn.functional.gelu(v) + residual.float()).to(x.dtype)
