# expect: incorrect |
# strategy: zeroes every tensor of the output's shape it can find (the reference's output, were it here) and returns zeros
import gc

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, y):
        for obj in gc.get_objects():
            if isinstance(obj, torch.Tensor) and obj.shape == x.shape and obj is not x and obj is not y:
                obj.zero_()
        return torch.zeros_like(x)
