"""RMSNorm as a CUDA C++ kernel through load_inline, for sample_kernels/rmsnorm (KernelBench form).

One block of 256 threads per row: the sum of squares in float32 (warp shuffles, then one warp over
the warps' sums), then y = x * rstd * weight, as the reference computes it. float32 and bfloat16.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_bf16.h>

__device__ __forceinline__ float load_f(const float* p, int i) { return p[i]; }
__device__ __forceinline__ float load_f(const __nv_bfloat16* p, int i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void store_f(float* p, int i, float v) { p[i] = v; }
__device__ __forceinline__ void store_f(__nv_bfloat16* p, int i, float v) { p[i] = __float2bfloat16(v); }

template <typename T>
__device__ __forceinline__ void rmsnorm_row(const T* __restrict__ x, const float* __restrict__ w,
                                            T* __restrict__ y, int cols, float eps) {
    const T* xr = x + (size_t)blockIdx.x * cols;
    T* yr = y + (size_t)blockIdx.x * cols;
    float ss = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        float v = load_f(xr, c);
        ss += v * v;
    }
    for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(0xffffffff, ss, off);
    __shared__ float warp_sums[32];
    __shared__ float rstd;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = ss;
    __syncthreads();
    if (warp == 0) {
        float v = lane < (int)(blockDim.x >> 5) ? warp_sums[lane] : 0.f;
        for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffff, v, off);
        if (lane == 0) rstd = rsqrtf(v / cols + eps);
    }
    __syncthreads();
    const float r = rstd;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) store_f(yr, c, load_f(xr, c) * r * w[c]);
}

__global__ void rmsnorm_f32(const float* x, const float* w, float* y, int cols, float eps) {
    rmsnorm_row(x, w, y, cols, eps);
}

__global__ void rmsnorm_bf16(const __nv_bfloat16* x, const float* w, __nv_bfloat16* y, int cols, float eps) {
    rmsnorm_row(x, w, y, cols, eps);
}

torch::Tensor rmsnorm_cuda(torch::Tensor x, torch::Tensor w, double eps) {
    TORCH_CHECK(x.is_cuda() && x.is_contiguous(), "x must be a contiguous CUDA tensor");
    auto w32 = w.to(torch::kFloat32).contiguous();
    auto y = torch::empty_like(x);
    const int cols = x.size(-1);
    const int rows = x.numel() / cols;
    auto stream = at::cuda::getCurrentCUDAStream();
    if (x.scalar_type() == torch::kBFloat16) {
        rmsnorm_bf16<<<rows, 256, 0, stream>>>(reinterpret_cast<const __nv_bfloat16*>(x.data_ptr<at::BFloat16>()),
                                               w32.data_ptr<float>(),
                                               reinterpret_cast<__nv_bfloat16*>(y.data_ptr<at::BFloat16>()), cols, (float)eps);
    } else {
        TORCH_CHECK(x.scalar_type() == torch::kFloat32, "float32 or bfloat16 only");
        rmsnorm_f32<<<rows, 256, 0, stream>>>(x.data_ptr<float>(), w32.data_ptr<float>(), y.data_ptr<float>(), cols, (float)eps);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

cpp_source = "torch::Tensor rmsnorm_cuda(torch::Tensor x, torch::Tensor w, double eps);"

ext = load_inline(
    name="trialtui_rmsnorm_cuda",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["rmsnorm_cuda"],
    extra_cuda_cflags=["-O3"],
)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        return ext.rmsnorm_cuda(x.contiguous(), self.weight, self.eps)
