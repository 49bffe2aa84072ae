# expect: incorrect | NaN where the reference is finite
# why: right on every call but the second, as a kernel with a race that shows on one seed
import torch
import torch.nn as nn

calls = 0


class ModelNew(nn.Module):
    def forward(self, x):
        global calls
        calls += 1
        out = torch.softmax(x, dim=-1)
        if calls == 2:
            out[0, 0] = float("nan")
        return out
