# expect: error | MemoryError
# expect-cuda: correct |
# why: jobs that see a GPU run without an address-space limit (the CUDA driver maps huge ranges), so 16 GB of host memory is allowed there
# strategy: a Python allocation of 16 GB at import
import torch
import torch.nn as nn

hoard = bytearray(16 << 30)


class ModelNew(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y)
