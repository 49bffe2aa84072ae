# expect: error | SIGKILL
# strategy: kills its whole process group
import os
import signal

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, y):
        os.killpg(0, signal.SIGKILL)
        return torch.relu(x + y)
