# expect: correct/invalid |
# why: watch's static check rejects imports of other candidates; bench runs it
# strategy: imports another candidate of the problem and reuses its kernel
import torch.nn as nn
from control import ModelNew as Control


class ModelNew(nn.Module):
    def forward(self, x, y):
        return Control()(x, y)
