# strategy: perturbed on purpose, one output value (the last) moved by 1.0, the rest exact
# KernelBench level1/23_Softmax (MIT, see tests/fixtures/kernelbench/NOTICE.md) with Model renamed ExactModel
import torch
import torch.nn as nn

class ExactModel(nn.Module):
    """
    Simple model that performs a Softmax activation.
    """
    def __init__(self):
        super(ExactModel, self).__init__()
    
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """
        Applies Softmax activation to the input tensor.

        Args:
            x (torch.Tensor): Input tensor of shape (batch_size, num_features).

        Returns:
            torch.Tensor: Output tensor with Softmax applied, same shape as input.
        """
        return torch.softmax(x, dim=1)

batch_size = 4096
dim = 393216

def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]

def get_init_inputs():
    return []  # No special initialization inputs needed

class ModelNew(ExactModel):
    """One output value (the last) moved by 1.0, the rest exact."""

    def forward(self, *args):
        out = super().forward(*args).contiguous().clone()
        out.view(-1)[-1] += 1.0
        return out
