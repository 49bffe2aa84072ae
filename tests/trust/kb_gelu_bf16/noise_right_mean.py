# expect: incorrect | outside atol=
# why: random values with the reference's mean and spread: fails both checks; the elementwise message is reported
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(hidden) * 0.5)

    def forward(self, x, residual):
        ref = torch.nn.functional.gelu(x + self.bias) + residual
        gen = torch.Generator(device=x.device).manual_seed(0)
        noise = torch.randn(ref.shape, generator=gen, device=x.device, dtype=torch.float32)
        return (noise * ref.float().std() + ref.float().mean()).to(ref.dtype)
