"""A reference whose output is all zeros: the check cannot tell a right kernel from a trivial one,
and its norm is zero (a normwise error must not divide by it)."""

import torch
import torch.nn as nn

n = 1 << 20


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(-x.abs())


def get_inputs():
    return [torch.randn(n)]


def get_init_inputs():
    return []
