# expect: incorrect | modified its input
# why: returns the right values but scribbles the input first and restores only some of it
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        out = x.clone()
        x[-1] = 0.0
        return out
