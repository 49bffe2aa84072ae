# expect: incorrect | allow_tf32
# why: 1e-3 relative error on an fp32 problem is TF32's signature: the message names allow_tf32
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return torch.relu(self.gemm(x) + self.bias) * 1.001
