# strategy: perturbed on purpose, every output value scaled by (1 + 2e-4): wrong by a relative 2e-4 everywhere
# KernelBench level2/12_Gemm_Multiply_LeakyReLU (MIT, see tests/fixtures/kernelbench/NOTICE.md) with Model renamed ExactModel
import torch
import torch.nn as nn

class ExactModel(nn.Module):
    """
    Simple model that performs a Gemm, multiplies the result, and applies LeakyReLU.
    """
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super(ExactModel, self).__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.leaky_relu = nn.LeakyReLU(negative_slope)

    def forward(self, x):
        x = self.gemm(x)
        x = x * self.multiplier
        x = self.leaky_relu(x)
        return x

batch_size = 1024
in_features  = 8192  
out_features = 8192
multiplier = 2.0
negative_slope = 0.1

def get_inputs():
    return [torch.rand(batch_size, in_features)]

def get_init_inputs():
    return [in_features, out_features, multiplier, negative_slope]

class ModelNew(ExactModel):
    """Every output value scaled by (1 + 2e-4): wrong by a relative 2e-4 everywhere."""

    def forward(self, *args):
        return super().forward(*args) * (1 + 2e-4)
