"""Softplus row by row in a Python loop, float32, KernelBench form: eager is slow on purpose, so an
honest one-kernel candidate beats it by far more than 10x on the GPU (the suspicious bound)."""

import torch
import torch.nn as nn

rows = 512
cols = 1024


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.stack([torch.nn.functional.softplus(row) for row in x])


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
