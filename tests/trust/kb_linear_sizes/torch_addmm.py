# expect: correct |
# flags: no-custom-kernel
# why: loads only if bias_shape follows out_features at the test size
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return torch.addmm(self.bias, x, self.gemm.weight.t()).relu()
