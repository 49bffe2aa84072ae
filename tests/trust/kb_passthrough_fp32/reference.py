"""A clamp that never bites: the output equals the input, so returning the input itself is right."""

import torch
import torch.nn as nn

n = 1 << 24


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x.clamp(-1e30, 1e30)


def get_inputs():
    return [torch.randn(n)]


def get_init_inputs():
    return []
