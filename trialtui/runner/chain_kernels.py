"""The chain's kernels in Triton (runner/fresh_inputs.py holds what they compute, and the same in torch)."""

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


@triton.jit
def _step(a, b, w):
    """chain.step: one Feistel round of the 64-bit state (a, b) taking the 32-bit word w."""
    return b ^ _mix(a ^ w), a


@triton.jit
def _key(seed_ptr, hashes_ptr, salt, prev, has_prev):
    """chain.key: the call's 64-bit key, fed forward so that no chosen hash gives a chosen key."""
    seed = tl.load(seed_ptr)
    key = _mix((seed & 0xFFFFFFFF) ^ _mix(((seed >> 32) & 0xFFFFFFFF) ^ salt))
    xa = (tl.load(hashes_ptr + 2 * prev).to(tl.int64) & 0xFFFFFFFF) * has_prev ^ key
    xb = (tl.load(hashes_ptr + 2 * prev + 1).to(tl.int64) & 0xFFFFFFFF) * has_prev ^ _mix(key ^ 0x3C6EF372)
    a, b = _step(xa, xb, 0xA54FF53A)
    a, b = _step(a, b, 0x510E527F)
    a, b = _step(a, b, 0x9B05688C)
    a, b = _step(a, b, 0x1F83D9AB)
    return a ^ xa, b ^ xb


@triton.jit(do_not_specialize=["n", "salt_hi", "salt_lo", "prev", "has_prev"])
def refresh_kernel(base_ptr, other_ptr, out_ptr, hashes_ptr, seed_ptr, n, salt_hi, salt_lo, prev, has_prev,
                   BLOCK: tl.constexpr):
    """fresh_inputs.refresh; the 32-bit salt comes in two halves that each fit an int32 argument."""
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    mask = idx < n
    k1, k2 = _key(seed_ptr, hashes_ptr, salt_hi.to(tl.int64) * 2 + salt_lo.to(tl.int64), prev, has_prev.to(tl.int64))
    r = _mix(_mix((idx & 0xFFFFFFFF) ^ k1) ^ k2 ^ (idx >> 32))
    b = tl.load(base_ptr + idx, mask=mask)
    o = tl.load(other_ptr + idx, mask=mask)
    if b.dtype == tl.float64:
        t = (r >> 8).to(tl.float64) * 5.9604644775390625e-08  # 2**-24
        tl.store(out_ptr + idx, (b + t * (o - b)).to(out_ptr.dtype.element_ty), mask=mask)
    else:
        t = (r >> 8).to(tl.float32) * 5.9604644775390625e-08
        bw = b.to(tl.float32)
        tl.store(out_ptr + idx, (bw + t * (o.to(tl.float32) - bw)).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _halve(a, b, N: tl.constexpr):
    """One level of the lanes' tree: each even lane's state takes its odd neighbour's two words."""
    al, ar = tl.split(tl.reshape(a, (N // 2, 2)))
    bl, br = tl.split(tl.reshape(b, (N // 2, 2)))
    a, b = _step(al, bl, ar)
    return _step(a, b, br)


@triton.jit(do_not_specialize=["n", "chunk", "call"])
def fold_kernel(words_ptr, n, chunk, out_ptr, hashes_ptr, call, SALT_A: tl.constexpr, SALT_B: tl.constexpr,
                ABSORB: tl.constexpr, BLOCK: tl.constexpr, LOG_BLOCK: tl.constexpr):
    """chain.fold: each lane runs its words through the state in turn, the lanes meet in a tree, and the
    program's state goes to out[2p:2p+2] or, with ABSORB (one program), into hashes[call]."""
    p = tl.program_id(0).to(tl.int64)
    lanes = tl.arange(0, BLOCK).to(tl.int64)
    a = _mix((p * BLOCK + lanes) ^ SALT_A)
    b = _mix((p * BLOCK + lanes) ^ SALT_B)
    for c in range(chunk):
        idx = (p * chunk + c) * BLOCK + lanes
        mask = idx < n
        w = tl.load(words_ptr + idx, mask=mask, other=0).to(tl.int64) & 0xFFFFFFFF
        a2, b2 = _step(a, b, w)
        a = tl.where(mask, a2, a)
        b = tl.where(mask, b2, b)
    for level in tl.static_range(LOG_BLOCK):
        a, b = _halve(a, b, BLOCK >> level)
    one = tl.arange(0, 1)
    if ABSORB:
        ha = tl.load(hashes_ptr + 2 * call + one).to(tl.int64) & 0xFFFFFFFF
        hb = tl.load(hashes_ptr + 2 * call + 1 + one).to(tl.int64) & 0xFFFFFFFF
        ha, hb = _step(ha, hb, a)
        ha, hb = _step(ha, hb, b)
        tl.store(hashes_ptr + 2 * call + one, ha.to(tl.int32))
        tl.store(hashes_ptr + 2 * call + 1 + one, hb.to(tl.int32))
    else:
        tl.store(out_ptr + 2 * p + one, a.to(tl.int32))
        tl.store(out_ptr + 2 * p + 1 + one, b.to(tl.int32))


@triton.jit
def _fmix32(x):
    """fresh_inputs._fmix_t on uint32 lanes (their products wrap at 2**32)."""
    x = x ^ (x >> 16)
    x = x * 0x85EBCA6B
    x = x ^ (x >> 13)
    x = x * 0xC2B2AE35
    return x ^ (x >> 16)


@triton.jit(do_not_specialize=["n", "salt_hi", "salt_lo", "prev", "has_prev"])
def flush_kernel(words_ptr, n, out_ptr, hashes_ptr, seed_ptr, salt_hi, salt_lo, prev, has_prev, CHUNK: tl.constexpr,
                 BLOCK: tl.constexpr, LOG_BLOCK: tl.constexpr):
    """fresh_inputs.flush's first pass: program p's state to out[2p:2p+2]. Each lane's CHUNK words are loaded
    before its chain of mixes takes them, so the pass waits on memory, not on its arithmetic."""
    p = tl.program_id(0).to(tl.int64)
    lanes = p * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    k1, k2 = _key(seed_ptr, hashes_ptr, salt_hi.to(tl.int64) * 2 + salt_lo.to(tl.int64), prev, has_prev.to(tl.int64))
    a = _mix(lanes ^ k1).to(tl.uint32)
    for c in tl.static_range(CHUNK):
        idx = (p * CHUNK + c) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
        w = tl.load(words_ptr + idx, mask=idx < n, other=0).to(tl.uint32, bitcast=True)
        a = _fmix32(a ^ w)
    a64 = a.to(tl.int64)
    b = _mix(lanes ^ k2)
    for level in tl.static_range(LOG_BLOCK):
        a64, b = _halve(a64, b, BLOCK >> level)
    one = tl.arange(0, 1)
    tl.store(out_ptr + 2 * p + one, a64.to(tl.int32))
    tl.store(out_ptr + 2 * p + 1 + one, b.to(tl.int32))
