# expect: incorrect |
# gpu-expect: incorrect | allow_tf32
# why: 1e-3 relative error on an fp32 GEMM is TF32's signature on a GPU, where the message names allow_tf32; the CPU
#   has no TF32, so there it is an error like any other, and allow_tf32 does not excuse it (a softmax 0.1 % off was
#   told to set allow_tf32 and then passed)
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return torch.relu(self.gemm(x) + self.bias) * 1.001
