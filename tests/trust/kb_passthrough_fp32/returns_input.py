# expect: correct |
# flags: no-custom-kernel
# why: returns its input tensor itself (an alias); the values are right and the input is unchanged
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return x
