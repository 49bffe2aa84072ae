# expect: error | Too many open files
# strategy: opens files until the open-file limit (512 in this problem) stops it
import torch
import torch.nn as nn

hoard = [open("/dev/null") for _ in range(100_000)]


class ModelNew(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y)
