# expect: incorrect | outside atol=
# why: softmax over the wrong axis: fails both checks; the elementwise message is the one reported
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=0)
