# expect: error | memory
# expect-cuda: correct |
# why: jobs that see a GPU run without an address-space limit (the CUDA driver maps huge ranges), so 16 GB of host memory is allowed there
# strategy: fills 16 GB with ones (the problem's address-space limit is 6 GB on a CPU job)
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, y):
        torch.ones(16 << 30, dtype=torch.uint8)
        return torch.relu(x + y)
