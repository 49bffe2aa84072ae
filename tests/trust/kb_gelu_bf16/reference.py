"""Bias + GELU + residual, bfloat16, KernelBench form (the bias is a parameter: weights are copied)."""

import torch
import torch.nn as nn

batch_size = 8192
hidden = 8192


class Model(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(hidden) * 0.5)

    def forward(self, x, residual):
        return torch.nn.functional.gelu(x + self.bias) + residual


def get_inputs():
    return [torch.randn(batch_size, hidden), torch.randn(batch_size, hidden)]


def get_init_inputs():
    return [hidden]
