"""Row reduction: softmax over 8192-wide rows of a 16384 x 8192 fp32 matrix."""
import torch
import torch.nn as nn

rows = 16384
cols = 8192


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
