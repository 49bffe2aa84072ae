# expect: correct |
# gpu-expect: correct |
# why: a kernel that keeps its answers, keyed on a sampled fingerprint of the input (the memoizing exploit of
# flashinfer-bench issue 21 and kernelbot PR 501), is right wherever the input repeats: every untimed check and,
# on the CPU, the three timed calls. On a GPU every timed call's input is new in every element (runner/fresh_inputs.py),
# so its fingerprint never repeats, the memo never answers, and it does the whole work on every call: `correct` at
# its honest cost (H200, 2026-12-02: 234 µs, 0.61x eager, every output kept in its memo). Under the canaries before
# (a few elements changed) the fingerprint missed the change and the kept answer was `incorrect` (issue 24.2).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, o_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=m, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(o_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.kept = {}

    def forward(self, x):
        key = (x.data_ptr(), tuple(x.shape), float(x.reshape(-1)[::4099].sum()))
        if key not in self.kept:
            out = torch.empty_like(x)
            softmax_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
            self.kept[key] = out
        return self.kept[key]
