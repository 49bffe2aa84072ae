# expect: correct |
# flags: no-custom-kernel
# gpu-flags: suspicious
# why: one vectorized PyTorch call against the row loop
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def forward(self, x):
        return F.softplus(x)
