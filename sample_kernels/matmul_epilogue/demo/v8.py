# strategy: autotune over three big-tile Hopper configs, unmasked K loop when BLOCK_K divides K, wrapped row/column indices instead of load masks
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _linear_silu_kernel(x_ptr, w_ptr, b_ptr, out_ptr, M, N, K, stride_xm, stride_wn, stride_om,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                        GROUP_M: tl.constexpr, EVEN_K: tl.constexpr):
    # program id -> (pid_m, pid_n), walking GROUP_M rows of tiles column by column for L2 reuse
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (pid % num_pid_in_group) % group_size_m
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    # rows/columns past the edge wrap around: loads need no M/N masks, the store masks them out
    rows = (offs_m % M).to(tl.int64)
    cols = (offs_n % N).to(tl.int64)
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + rows[:, None] * stride_xm + offs_k[None, :]
    w_ptrs = w_ptr + cols[None, :] * stride_wn + offs_k[:, None]  # a (BLOCK_K, BLOCK_N) tile of W^T
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        if EVEN_K:
            a = tl.load(x_ptrs)
            b = tl.load(w_ptrs)
        else:
            a = tl.load(x_ptrs, mask=offs_k[None, :] < K - k, other=0.0)
            b = tl.load(w_ptrs, mask=offs_k[:, None] < K - k, other=0.0)
        if a.dtype == tl.float32:  # bf16 runs as fp32 in the CPU interpreter: keep the products exact
            acc = tl.dot(a, b, acc, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    bias = tl.load(b_ptr + cols).to(tl.float32)
    z = acc + bias[None, :]
    y = z * tl.sigmoid(z)
    out_ptrs = out_ptr + offs_m.to(tl.int64)[:, None] * stride_om + offs_n[None, :]
    tl.store(out_ptrs, y.to(out_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


_with_even_k = triton.heuristics({"EVEN_K": lambda args: args["K"] % args["BLOCK_K"] == 0})(_linear_silu_kernel)

# Hopper: 128-256 wide tiles on two warpgroups, 3-4 stage pipelines (128-144 KB of shared memory).
_tuned = triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=3, num_warps=8),
        triton.Config({"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=3, num_warps=8),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_stages=4, num_warps=8),
    ],
    key=["M", "N", "K"],
)(_with_even_k)

# The CPU interpreter runs one fixed config: autotuning there would only time numpy.
_INTERPRETER_CONFIG = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 2}


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)  # holds the parameters; its forward is never called

    def forward(self, x):
        w, b = self.linear.weight.contiguous(), self.linear.bias
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        M, K = x2.shape
        N = w.shape[0]
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        args = (x2, w, b, out, M, N, K, x2.stride(0), w.stride(0), out.stride(0))
        if x.is_cuda:
            def grid(meta):
                return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

            _tuned[grid](*args)
        else:
            cfg = _INTERPRETER_CONFIG
            grid = (triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"]),)
            _with_even_k[grid](*args, **cfg)
        return out.view(*x.shape[:-1], N)
