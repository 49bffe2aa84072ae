"""Gemm + bias + ReLU, float32, KernelBench form, with KernelBench's own constant styles:
a chained assignment and a tuple derived from another size (as in level2/76_Gemm_Add_ReLU)."""

import torch
import torch.nn as nn

batch_size = 1024
in_features = out_features = 2048
bias_shape = (out_features,)


class Model(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super(Model, self).__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return torch.relu(self.gemm(x) + self.bias)


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, bias_shape]
