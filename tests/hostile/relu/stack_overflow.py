# expect: error | SIGSEGV
# strategy: lifts the recursion limit and overflows the C stack: the process dies from a signal
import sys

import torch
import torch.nn as nn

sys.setrecursionlimit(10**8)


def deeper(depth):
    return deeper(depth + 1) + 1


class ModelNew(nn.Module):
    def forward(self, x, y):
        deeper(0)
        return torch.relu(x + y)
