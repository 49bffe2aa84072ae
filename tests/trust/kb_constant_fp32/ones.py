# expect: incorrect | outside atol=
# why: a constant other than the reference's: a zero-norm reference must still reject it
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.ones_like(x)
