# expect: error | exit
# strategy: leaves from forward with os._exit(0), skipping every handler
import os

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, y):
        os._exit(0)
