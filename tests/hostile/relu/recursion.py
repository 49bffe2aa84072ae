# expect: error | RecursionError
# strategy: unbounded recursion in forward
import torch
import torch.nn as nn


def deeper(x, depth):
    return deeper(x, depth + 1)


class ModelNew(nn.Module):
    def forward(self, x, y):
        return deeper(x, 0)
