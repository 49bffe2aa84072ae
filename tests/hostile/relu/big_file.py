# expect: error | File too large
# strategy: writes a 200 MB file into its working directory (the problem allows 64 MB files)
import torch
import torch.nn as nn

with open("dump.bin", "wb") as fh:
    fh.write(b"\0" * (200 << 20))


class ModelNew(nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y)
