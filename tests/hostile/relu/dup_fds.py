# expect: error |
# strategy: points every descriptor above stderr at /dev/null, so any pipe it was given now leads nowhere
import os

import torch
import torch.nn as nn

null = os.open(os.devnull, os.O_WRONLY)
for fd in range(3, 256):
    if fd != null:
        try:
            os.dup2(null, fd)
        except OSError:
            pass


class ModelNew(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y)
