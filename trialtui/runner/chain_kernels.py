"""The chain's two kernels in Triton (runner/fresh_inputs.py holds what they compute, and the same in torch)."""

import triton
import triton.language as tl


@triton.jit
def _mix(x):
    """chain.mix on int64 lanes holding 32-bit values."""
    x = x & 0xFFFFFFFF
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & 0xFFFFFFFF
    x = x ^ (x >> 15)
    x = (x * 0x846CA68B) & 0xFFFFFFFF
    return x ^ (x >> 16)


@triton.jit(do_not_specialize=["n", "salt_hi", "salt_lo", "prev", "has_prev"])
def refresh_kernel(base_ptr, other_ptr, out_ptr, hashes_ptr, seed_ptr, n, salt_hi, salt_lo, prev, has_prev,
                   BLOCK: tl.constexpr):
    """fresh_inputs.refresh; the 32-bit salt comes in two halves that each fit an int32 argument."""
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    mask = idx < n
    seed = tl.load(seed_ptr)
    salt = salt_hi.to(tl.int64) * 2 + salt_lo.to(tl.int64)
    key = _mix((seed & 0xFFFFFFFF) ^ _mix(((seed >> 32) & 0xFFFFFFFF) ^ salt))
    previous = tl.load(hashes_ptr + prev).to(tl.int64) & 0xFFFFFFFF
    k = _mix((previous * has_prev) ^ key)
    r = _mix(_mix((idx & 0xFFFFFFFF) ^ k) ^ (idx >> 32))
    b = tl.load(base_ptr + idx, mask=mask)
    o = tl.load(other_ptr + idx, mask=mask)
    if b.dtype == tl.float64:
        t = (r >> 8).to(tl.float64) * 5.9604644775390625e-08  # 2**-24
        tl.store(out_ptr + idx, (b + t * (o - b)).to(out_ptr.dtype.element_ty), mask=mask)
    else:
        t = (r >> 8).to(tl.float32) * 5.9604644775390625e-08
        bw = b.to(tl.float32)
        tl.store(out_ptr + idx, (bw + t * (o.to(tl.float32) - bw)).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit(do_not_specialize=["n", "call"])
def digest_kernel(words_ptr, n, hashes_ptr, call, BLOCK: tl.constexpr):
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    mask = idx < n
    w = tl.load(words_ptr + idx, mask=mask, other=0).to(tl.int64) & 0xFFFFFFFF
    v = _mix(w ^ _mix((idx & 0xFFFFFFFF) ^ 0x5BD1E995) ^ (idx >> 32))
    v = tl.where(mask, v, 0)
    total = tl.sum(v, axis=0) & 0xFFFFFFFF
    tl.atomic_add(hashes_ptr + call, total.to(tl.int32))
