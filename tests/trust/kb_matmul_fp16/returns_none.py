# expect: incorrect | output structure differs
# why: the result is computed into a buffer and never returned
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, A, B):
        C = torch.empty((A.shape[0], B.shape[1]), device=A.device, dtype=A.dtype)
        torch.matmul(A, B, out=C)
