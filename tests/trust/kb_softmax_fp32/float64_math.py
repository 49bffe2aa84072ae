# expect: correct |
# flags: no-custom-kernel
# why: more accurate than the reference (float64 inside) must never fail
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.softmax(x.double(), dim=-1).to(x.dtype)
