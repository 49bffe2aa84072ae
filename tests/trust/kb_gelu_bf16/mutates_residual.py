# expect: incorrect | modified its input
# why: the residual add is done in place into the caller's tensor: right values, clobbered input
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(hidden) * 0.5)

    def forward(self, x, residual):
        return residual.add_(torch.nn.functional.gelu(x + self.bias))
