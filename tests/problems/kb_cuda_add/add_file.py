"""x + y with the CUDA source in add_kernel.cu beside this wrapper, built by torch's `load`."""

import os

import torch.nn as nn
from torch.utils.cpp_extension import load

ext = load(
    name="trialtui_test_add_file",
    sources=[os.path.join(os.path.dirname(os.path.abspath(__file__)), "add_kernel.cu")],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return ext.add_cuda(x.contiguous(), y.contiguous())
