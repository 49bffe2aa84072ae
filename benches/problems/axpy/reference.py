"""Memory-bound: out = a * x + y over 64M fp32 elements (768 MB moved)."""
import torch
import torch.nn as nn

n = 1 << 26


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return 2.5 * x + y


def get_inputs():
    return [torch.randn(n), torch.randn(n)]


def get_init_inputs():
    return []
