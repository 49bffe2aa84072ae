# expect: invalid | syntax error
# why: the static stage rejects it; bench must give the same verdict as watch (issue 13.10)
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x +
