"""RMSNorm (LLaMA style): y = x / sqrt(mean(x^2) + eps) * weight, computed in float32.

Memory-bound: one read and one write of x. Rows get scales spread over five decades, as real
activations do (padding tokens sit near zero), so rows whose mean square is below eps exist and
where eps goes in the formula matters.
"""

import torch
import torch.nn as nn

batch_size = 16384  # rows (tokens)
hidden = 8192
eps = 1e-6


class Model(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        rstd = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return (xf * rstd * self.weight.float()).to(x.dtype)


def get_inputs():
    scale = torch.logspace(-4, 1, batch_size)[torch.randperm(batch_size)]
    return [torch.randn(batch_size, hidden) * scale[:, None]]


def get_init_inputs():
    return [hidden, eps]
