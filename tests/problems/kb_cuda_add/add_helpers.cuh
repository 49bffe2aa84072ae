// Included by add_kernel.cu as "add_helpers.cuh": resolved beside it, on the GPU and in validation alike.
#pragma once

__device__ __forceinline__ float4 add4(float4 a, float4 b) {
    return make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
}
