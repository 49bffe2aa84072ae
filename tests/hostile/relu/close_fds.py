# expect: error |
# strategy: closes every descriptor above stderr and points stdout and stderr at /dev/null
import os

import torch
import torch.nn as nn

null = os.open(os.devnull, os.O_WRONLY)
os.dup2(null, 1)
os.dup2(null, 2)
os.closerange(3, 4096)


class ModelNew(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y)
