# expect: error |
# strategy: lifts the recursion limit and recurses through a C function (RecursionError or SIGSEGV, by Python version)
import sys

import torch
import torch.nn as nn

sys.setrecursionlimit(10**6)


def deeper(depth):
    return sorted([depth], key=lambda d: deeper(d + 1))


class ModelNew(nn.Module):
    def forward(self, x, y):
        deeper(0)
        return torch.relu(x + y)
