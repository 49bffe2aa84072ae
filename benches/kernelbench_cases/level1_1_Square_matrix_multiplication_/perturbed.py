# strategy: perturbed on purpose, every output value scaled by (1 + 2e-4): wrong by a relative 2e-4 everywhere
# KernelBench level1/1_Square_matrix_multiplication_ (MIT, see tests/fixtures/kernelbench/NOTICE.md) with Model renamed ExactModel
import torch
import torch.nn as nn

class ExactModel(nn.Module):
    """
    Simple model that performs a single square matrix multiplication (C = A * B)
    """
    def __init__(self):
        super(ExactModel, self).__init__()
    
    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        """
        Performs the matrix multiplication.

        Args:
            A (torch.Tensor): Input matrix A of shape (N, N).
            B (torch.Tensor): Input matrix B of shape (N, N).

        Returns:
            torch.Tensor: Output matrix C of shape (N, N).
        """
        return torch.matmul(A, B)

N = 2048 * 2

def get_inputs():
    A = torch.rand(N, N)
    B = torch.rand(N, N)
    return [A, B]

def get_init_inputs():
    return []  # No special initialization inputs needed

class ModelNew(ExactModel):
    """Every output value scaled by (1 + 2e-4): wrong by a relative 2e-4 everywhere."""

    def forward(self, *args):
        return super().forward(*args) * (1 + 2e-4)
