# expect: invalid | does not define ModelNew
# why: the class is still called Model: nothing for the harness to build
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(dim))

    def forward(self, x):
        return torch.relu(x + self.bias)
