# expect: error | memory
# strategy: fills 16 GB with ones (the problem's address-space limit is 6 GB on a CPU job)
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, y):
        torch.ones(16 << 30, dtype=torch.uint8)
        return torch.relu(x + y)
