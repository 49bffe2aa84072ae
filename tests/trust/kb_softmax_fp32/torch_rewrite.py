# expect: correct |
# flags: no-custom-kernel
# why: right values from PyTorch ops only: correct, but flagged, so it can never be best
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        e = torch.exp(x - x.amax(dim=-1, keepdim=True))
        return e / e.sum(dim=-1, keepdim=True)
