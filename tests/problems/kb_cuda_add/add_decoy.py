"""A library decoy in CUDA C++: a kernel of its own writes one element, at::add in the host code does the job.
The op recorder sees no torch call from Python; the kernel records weigh it (`fallback`)."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = """
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void token_kernel(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        out[0] = x[0] + y[0];
    }
}

torch::Tensor add_cuda(torch::Tensor x, torch::Tensor y) {
    auto out = at::add(x, y);
    token_kernel<<<1, 32>>>(x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>());
    return out;
}
"""

cpp_source = "torch::Tensor add_cuda(torch::Tensor x, torch::Tensor y);"

add = load_inline(
    name="trialtui_test_add_decoy",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["add_cuda"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return add.add_cuda(x.contiguous(), y.contiguous())
