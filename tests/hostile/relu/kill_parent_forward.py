# expect: error | SIGKILL
# strategy: kills its parent process from forward
import os
import signal

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, y):
        os.kill(os.getppid(), signal.SIGKILL)
        return torch.relu(x + y)
