"""Linear layer + SiLU: y = silu(x @ W^T + b) in bfloat16 (KernelBench form).

Compute-bound at the bench size: 2*M*N*K = 137 GFLOP per call, which only tensor cores deliver
at speed. Eager PyTorch runs cuBLAS (bias fused) and then a separate SiLU kernel.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4096  # M
in_features = 4096  # K
out_features = 4096  # N


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return F.silu(self.linear(x))


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
