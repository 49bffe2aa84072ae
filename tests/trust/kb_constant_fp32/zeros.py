# expect: correct |
# flags: trivial-reference, no-custom-kernel
# why: matches a constant reference exactly; the flag says the check is weak, and ||ref|| = 0 must not break the normwise check
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.zeros_like(x)
