# expect: incorrect | normwise
# why: zero-mean noise of at most 5e-5 per value (right mean, every value inside atol) is ~7% of the row's norm
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        gen = torch.Generator(device=x.device).manual_seed(0)
        noise = (torch.rand(x.shape, generator=gen, device=x.device) - 0.5) * 1e-4
        return torch.softmax(x, dim=-1) + noise
