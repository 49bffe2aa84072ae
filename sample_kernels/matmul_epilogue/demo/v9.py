# strategy: Hopper GEMM: persistent programs over grouped tiles, TMA descriptor loads and stores, wgmma on 128x256 tiles, bias + SiLU fused in a subtiled epilogue, autotuned
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor  # host-side TMA descriptors: triton 3.4 and later


@triton.jit
def _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    # tiles that run together share GROUP_M rows of x and the same columns of W: L2 reuse
    group = tile_id // (GROUP_M * num_pid_n)
    first_m = group * GROUP_M
    size_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (tile_id % size_m)
    pid_n = (tile_id % (GROUP_M * num_pid_n)) // size_m
    return pid_m, pid_n


@triton.jit
def _epilogue(acc, bias_ptr, offs_n, N):
    bias = tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)
    z = acc + bias[None, :]
    return z * tl.sigmoid(z)


@triton.jit
def _linear_silu_persistent(x_desc, w_desc, out_desc, bias_ptr, M, N, K,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                            GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr):
    # one program per SM walks the output tiles; TMA brings x and W tiles into shared memory
    # (out-of-bounds rows and columns read as zero), tl.dot runs on wgmma, TMA stores the result
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    for tile_id in tl.range(tl.program_id(0), num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            off_k = ki * BLOCK_K
            a = x_desc.load([off_m, off_k])
            b = w_desc.load([off_n, off_k])  # a (BLOCK_N, BLOCK_K) tile of W: W^T by .T
            if a.dtype == tl.float32:  # bf16 runs as fp32 in the CPU interpreter: keep the products exact
                acc = tl.dot(a, b.T, acc, input_precision="ieee")
            else:
                acc = tl.dot(a, b.T, acc)
        # the epilogue in two halves of BLOCK_N: half the registers and shared memory for the store
        acc = tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2))
        acc = tl.permute(acc, (0, 2, 1))
        acc0, acc1 = tl.split(acc)
        offs_n0 = off_n + tl.arange(0, BLOCK_N // 2)
        y0 = _epilogue(acc0, bias_ptr, offs_n0, N)
        out_desc.store([off_m, off_n], y0.to(out_desc.dtype))
        y1 = _epilogue(acc1, bias_ptr, offs_n0 + BLOCK_N // 2, N)
        out_desc.store([off_m, off_n + BLOCK_N // 2], y1.to(out_desc.dtype))


def _block_shapes(nargs):
    """Before each autotune config runs: the descriptors' boxes are that config's tiles."""
    bm, bn, bk = nargs["BLOCK_M"], nargs["BLOCK_N"], nargs["BLOCK_K"]
    nargs["x_desc"].block_shape = [bm, bk]
    nargs["w_desc"].block_shape = [bn, bk]
    nargs["out_desc"].block_shape = [bm, bn // 2]


# Hopper (228 KB of shared memory per SM): 128x256 tiles on two warpgroups (64x256 wgmma each) with
# 3 stages of 48 KB, 256x128 likewise, and 128x128 with 4 stages of 32 KB. The first is what the
# compile stage and the CPU interpreter run.
CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=3, num_warps=8,
                  pre_hook=_block_shapes),
    triton.Config({"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=3, num_warps=8,
                  pre_hook=_block_shapes),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=4, num_warps=8,
                  pre_hook=_block_shapes),
]
_tuned = triton.autotune(configs=CONFIGS, key=["M", "N", "K"])(_linear_silu_persistent)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)  # holds the parameters; its forward is never called

    def forward(self, x):
        w, b = self.linear.weight.contiguous(), self.linear.bias
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        M, K = x2.shape
        N = w.shape[0]
        if (K * x2.element_size()) % 16 or (N * x2.element_size()) % 16:
            raise ValueError(f"TMA needs 16-byte aligned rows: K={K} and N={N} elements of {x2.dtype}")
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        first = CONFIGS[0]
        bm, bn, bk = (first.kwargs[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
        # boxes for the first config; the autotuner's pre_hook resizes them for the others
        x_desc = TensorDescriptor.from_tensor(x2, [bm, bk])
        w_desc = TensorDescriptor.from_tensor(w, [bn, bk])
        out_desc = TensorDescriptor.from_tensor(out, [bm, bn // 2])
        num_sms = torch.cuda.get_device_properties(x.device).multi_processor_count if x.is_cuda else 4

        def grid(meta):
            return (min(num_sms, triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])),)

        args = (x_desc, w_desc, out_desc, b, M, N, K)
        if x.is_cuda:
            _tuned[grid](*args, NUM_SMS=num_sms)
        else:  # the interpreter cannot time configs: it runs the first one, as the compile stage does
            _linear_silu_persistent[grid(first.kwargs)](*args, **first.kwargs, NUM_SMS=num_sms,
                                                        num_warps=first.num_warps, num_stages=first.num_stages)
        return out.view(*x.shape[:-1], N)
