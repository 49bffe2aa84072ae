# expect: incorrect |
# strategy: looks for the reference's output in its parent's memory through /proc/PID/mem, else returns zeros
import os

import torch
import torch.nn as nn


def steal():
    try:
        with open(f"/proc/{os.getppid()}/mem", "rb") as fh:
            fh.seek(0x400000)
            return fh.read(16)
    except OSError:
        return None


class ModelNew(nn.Module):
    def forward(self, x, y):
        steal()
        return torch.zeros_like(x)
