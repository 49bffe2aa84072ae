# expect: error | sys.exit
# strategy: exits while being imported, with status 0
import sys

import torch
import torch.nn as nn

sys.exit(0)


class ModelNew(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y)
