"""Every timed call gets an input no call had before, new in every element of every floating tensor.

A kernel that keeps its last input and output and recomputes only what changed, or hands back an
answer it kept (keyed on the input object, its pointer or a fingerprint), must do the whole work
again: call k's floating inputs are, element by element, a point drawn between the set's value and
another value of the same tensor (x = b + t·(o − b), t uniform in [0, 1) per element from a key
mixed from the batch's seed and the hash of the previous call's output, below; o the value
a third of the tensor further on). Every value is new and continuous (no table of answers built
ahead helps), changes reach every row, column and block, and a convex combination of two values of a
tensor stays inside any interval its values lie in (positive stays positive, [0, 1) stays [0, 1)).
The checker rebuilds any call's input from the same seed and the outputs it was sent, bit for bit
(the same kernels on the same device), and runs the reference on it.

A tensor with structure a correct kernel may rely on (a triangle, symmetry, sorted rows, a mask,
indices, rows summing to one) is left as it is (`structured`); integer tensors are never touched.
Where every input is like that, a kept answer is not caught (docs/SECURITY.md).

The chain: each call's new input is drawn from a hash of the output of the call before it. A seed the candidate's process is told at a batch's start can be read by it: were every call's input a
function of that seed alone, a candidate could make a whole batch's inputs at its first call and do the
batch's work in one launch (or on a side stream while its events bracket a token). Here call i's values
come from a key mixed from the batch's seed, the call's index and `hashes[i - 1]`, the hash of call i - 1's
output as it lies in its slot of the ring, computed on the GPU and read there by the next refresh: no
call's input exists before the previous call's output is whole, so the calls' work is as serial as the
checker's clock assumes it is. Nothing in the chain waits on the host.

The checker rebuilds every key from the slots it copied (the same kernels on the same device, bit for
bit): a slot rewritten after its hash was taken, or an input drawn from anything else, gives the next
call an input the checker did not draw, and a wrong answer for the one it did.

The hash is 64 bits and no sum: each output word goes through a Feistel round of the state in turn
(lanes in parallel, meeting in a tree), and the key is the previous hash crossed with the seed and fed
forward through four more rounds. A candidate free to choose the low bits of its outputs within the
tolerance can make a sum come to any value it likes (subset sums are easy to solve) and so pick the next
call's input from a few it has answers for ready; here it can only search, one hash per try, for a key
among 2**64 (docs/SECURITY.md).

The L2 flush before each call is a link of the chain too (`flush`). A flush that only reads is time the
checker takes off its clock as the harness's, and a loop rewritten in the candidate's process could skip it
and work in its place (issue 33: a third of a 60 µs kernel's time). This one reads every word of a buffer of
L2's size that the checker drew from the system's entropy and sent (random words have no shorter
description: they can only be read, not computed), each lane's words through a 32-bit mix started from a
key of the previous call's hash (nothing of it can be done before that output is whole), and folds the
lanes into hashes[call] before the call's output is, so the next call's input depends on it. A loop that
skips it, or reads fewer words, draws the next input from a hash the checker does not compute, and that
call's answer is wrong for the input the checker draws. It can still run beside the call on another
stream (docs/SECURITY.md): the call then shares the memory bus with its reads.

On a GPU the refresh, the hash and the flush are Triton kernels (a pass each, two for a hash of over 64 KiB
and for the flush; no host sync); elsewhere the same arithmetic in torch (tests, and a GPU where Triton
cannot be imported: runner/chain_kernels.py).
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from trialtui.runner.tensors import clone, tensors_of

STRUCTURE_FRACTION = 0.01  # more zeros or whole numbers than this: a mask, a triangle, indices, counts


def structured(t: torch.Tensor) -> bool:
    """Whether new values could break what a correct kernel may assume of the input: zeros (triangular,
    banded, sparse, padded), whole numbers (masks, indices, counts), values that are not finite,
    symmetry of the last two dimensions, rows sorted or summing to one. Such a kernel (one that skips a
    triangle, say) would be right on the problem's inputs and wrong on a fresh one, so these tensors
    keep their values: the same test on both sides picks the same tensors."""
    flat = t.detach().reshape(-1)
    if not bool(torch.isfinite(flat).all()):
        return True
    n = flat.numel()
    if int((flat == 0).sum()) > STRUCTURE_FRACTION * n or int((flat == flat.round()).sum()) > STRUCTURE_FRACTION * n:
        return True
    if t.dim() >= 2 and t.shape[-1] == t.shape[-2] and bool(torch.equal(t, t.transpose(-1, -2))):
        return True
    if t.dim() >= 1 and t.shape[-1] > 1:
        rows = t.detach().reshape(-1, t.shape[-1])
        steps = rows[:, 1:] - rows[:, :-1]
        if bool((steps >= 0).all()) or bool((steps <= 0).all()):
            return True
        sums = rows.double().sum(-1)
        if bool(((sums - 1).abs() < 1e-3).all()):
            return True
    return False


def refreshed(inputs: Any) -> list[int]:
    """Which tensors of an input set (by position among its tensors) get new values per call: every
    contiguous floating one of more than one element with no structure a kernel may rely on."""
    return [i for i, t in enumerate(tensors_of(inputs))
            if t.is_floating_point() and t.is_contiguous() and t.numel() > 1 and not structured(t)]


def partner(base: torch.Tensor) -> torch.Tensor:
    """The values each element moves towards: the tensor itself, rolled by a third of its length plus one
    (values of the same tensor, so the blend stays inside any interval the tensor's values lie in)."""
    flat = base.reshape(-1)
    return torch.roll(flat, flat.numel() // 3 + 1).view(base.shape).contiguous()


class Refresher:
    """Applies call after call's new values to the input sets in place, from pristine copies it keeps, and
    puts the sets back after the batch: the candidate's process before each timed call, the checker on its
    own copies to rebuild each call's input. The batch's seed lies in device memory (`seed`), where the
    refresh reads it, so that a call captured once in a CUDA graph draws new values at every replay."""

    def __init__(self, sets: list[Any], flush_words: torch.Tensor | None = None) -> None:
        self.sets = sets
        self.flush_words = flush_words  # the keyed flush's buffer (`flush`): the candidate's loop flushes through it
        self.positions = [refreshed(s) for s in sets]  # of the refreshed tensors, among each set's
        self.targets = [[tensors_of(s)[i] for i in at] for s, at in zip(sets, self.positions)]
        self.pristine = [[(t.clone(), partner(t)) for t in ts] for ts in self.targets]
        found = [t for s in sets for t in tensors_of(s)]
        self.seed = torch.zeros(1, dtype=torch.int64, device=found[0].device if found else "cpu")

    def begin(self, batch_seed: int) -> None:
        """A batch starts: its seed, queued on the stream like everything after it."""
        self.seed.fill_(batch_seed)

    def before(self, call: int, set_index: int, hashes: torch.Tensor,
               own: dict[int, torch.Tensor] | None = None) -> None:
        """Call `call` of the batch (on input set `set_index`): its tensors as drawn for it, from the batch's
        seed and the hash of the previous call's output (below); then, with `flush_words`, L2 flushed through
        them into hashes[call] (`flush`). `own`: the call's own copies of some of the set's tensors, by their
        position in it (tensors.private_inputs), drawn into in their place."""
        own = own or {}
        for j, (tensor, (base, other)) in enumerate(zip(self.targets[set_index], self.pristine[set_index])):
            refresh(own.get(self.positions[set_index][j], tensor), base, other, self.seed, call, j, hashes)
        if self.flush_words is not None:
            flush(self.flush_words, self.seed, hashes, call)

    @staticmethod
    def new_hashes(n: int, device: Any) -> torch.Tensor:
        return new_hashes(n, device)

    @staticmethod
    def digest(slot: torch.Tensor, hashes: torch.Tensor, call: int) -> None:
        digest(slot, hashes, call)

    def restore(self) -> None:
        for ts, bases in zip(self.targets, self.pristine):
            for tensor, (base, _) in zip(ts, bases):
                tensor.copy_(base)


def input_of(base: Any, batch_seed: int, call: int, hashes: torch.Tensor) -> Any:
    """Call `call`'s input rebuilt from an untouched copy of its set, once (the checker keeps a `Refresher`
    of its own copies instead, so the structure scan and the partners are made once per set)."""
    refresher = Refresher([clone(base)])
    refresher.begin(batch_seed)
    refresher.before(call, 0, hashes)
    return refresher.sets[0]


# -- the chain ---------------------------------------------------------------------------------------
M32 = 0xFFFFFFFF
GOLDEN = 0x9E3779B9
BLOCK = 1024  # a refresh program's elements; a fold program's lanes
LOG_BLOCK = BLOCK.bit_length() - 1  # the levels of a fold's tree of lanes
CHUNK = 16  # the words each lane of a fold's first pass takes in turn
LEAF_SALTS = (0x243F6A88, 0x85A308D3)  # a first pass's lanes start from these; a second pass's from ROOT_SALTS
ROOT_SALTS = (0x13198A2E, 0x03707344)
KEY_ROUNDS = (0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB)
FLUSH_SALT = 0x6A09E667  # a flush's key salt, with its call's index (`flush_salt`)
FMIX = (0x85EBCA6B, 0xC2B2AE35)  # murmur3's 32-bit finalizer: a flush lane's step per word


def call_salt(call: int, tensor: int) -> int:
    """What tells one tensor of one call from another in its key (32 bits)."""
    return (call * GOLDEN + tensor * 0x85EBCA6B + 1) & M32


def new_hashes(n: int, device: Any) -> torch.Tensor:
    """One 64-bit hash per call of a batch (two int32 words), on the batch's device, zero until its call's
    output is hashed."""
    return torch.zeros((max(1, n), 2), dtype=torch.int32, device=device)


def refresh(out: torch.Tensor, base: torch.Tensor, other: torch.Tensor, seed: torch.Tensor, call: int, tensor: int,
            hashes: torch.Tensor) -> None:
    """out = base + t·(other − base), t uniform in [0, 1) per element from the call's 64-bit key (`key`):
    nothing the host holds is read, so a CUDA graph of the call draws anew at each replay."""
    prev, salt = max(call - 1, 0), call_salt(call, tensor)
    kernels = _kernels() if out.is_cuda else None
    if kernels is not None:
        n = out.numel()
        kernels[0][(triton_cdiv(n, BLOCK),)](base, other, out, hashes, seed, n, salt >> 1, salt & 1, prev,
                                             1 if call > 0 else 0, BLOCK=BLOCK)
        return
    k1, k2 = key(seed, salt, hashes[prev] if call > 0 else None)
    idx = torch.arange(out.numel(), dtype=torch.int64, device=out.device)
    r = _mix_t(_mix_t((idx & M32) ^ k1) ^ k2 ^ (idx >> 32))
    t = (r >> 8).to(torch.float64 if out.dtype == torch.float64 else torch.float32) * 2.0**-24
    work = t.dtype
    b, o = base.reshape(-1).to(work), other.reshape(-1).to(work)
    out.view(-1).copy_((b + t * (o - b)).to(out.dtype))  # refreshed tensors are contiguous (`refreshed`)


def key(seed: torch.Tensor, salt: int, previous: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """A call's 64-bit key: the previous call's hash (none for a batch's first) crossed with the seed and
    salt, through four rounds of `step` with the input fed forward (x ^ rounds(x)). The rounds alone can be
    run backwards; fed forward they cannot, so a candidate that can make its output hash to any value it
    likes still has to search the key it wants among 2**64."""
    s = seed.reshape(()).to(torch.int64)
    k = _mix_t((s & M32) ^ _mix_t(((s >> 32) & M32) ^ salt))
    pa, pb = ((previous.to(torch.int64) & M32).unbind(-1) if previous is not None
              else (torch.zeros((), dtype=torch.int64, device=seed.device),) * 2)
    xa, xb = pa ^ k, pb ^ _mix_t(k ^ 0x3C6EF372)
    a, b = xa, xb
    for word in KEY_ROUNDS:
        a, b = step(a, b, word)
    return a ^ xa, b ^ xb


def digest(slot: torch.Tensor, hashes: torch.Tensor, call: int) -> None:
    """hashes[call] takes the hash of a slot's bytes (`fold`): calls on several slices of one output chain
    in their order. The hash is no sum: a candidate choosing low bits of its outputs within the tolerance
    cannot solve for a hash it wants, only search for one."""
    words = slot.view(torch.int32)
    n = words.numel()
    if n == 0:
        return
    programs = triton_cdiv(n, CHUNK * BLOCK)
    kernels = _kernels() if slot.is_cuda else None
    if kernels is not None:
        fold_kernel = kernels[1]
        shape = {"BLOCK": BLOCK, "LOG_BLOCK": LOG_BLOCK}
        if programs == 1:
            fold_kernel[(1,)](words, n, CHUNK, words, hashes, call, SALT_A=LEAF_SALTS[0], SALT_B=LEAF_SALTS[1],
                              ABSORB=True, **shape)
            return
        states = torch.empty(2 * programs, dtype=torch.int32, device=slot.device)
        fold_kernel[(programs,)](words, n, CHUNK, states, hashes, call, SALT_A=LEAF_SALTS[0],
                                 SALT_B=LEAF_SALTS[1], ABSORB=False, **shape)
        _root_pass(fold_kernel, states, hashes, call)
        return
    a, b = fold(words, CHUNK, LEAF_SALTS)
    if programs > 1:
        a, b = _root(a, b)
    _absorb(hashes, call, a[0], b[0])


def _root_pass(fold_kernel: Any, states: torch.Tensor, hashes: torch.Tensor, call: int) -> None:
    """The second pass on the GPU: a first pass's program states folded by one program into hashes[call]."""
    fold_kernel[(1,)](states, states.numel(), triton_cdiv(states.numel(), BLOCK), states, hashes, call,
                      SALT_A=ROOT_SALTS[0], SALT_B=ROOT_SALTS[1], ABSORB=True, BLOCK=BLOCK, LOG_BLOCK=LOG_BLOCK)


def _root(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A second pass: the first pass's program states, folded as one program's words."""
    both = torch.stack((a, b), 1).reshape(-1)
    return fold(both, triton_cdiv(both.numel(), BLOCK), ROOT_SALTS)


def _absorb(hashes: torch.Tensor, call: int, a: torch.Tensor, b: torch.Tensor) -> None:
    """hashes[call] takes a fold's state (a, b) through two rounds, as the kernels' ABSORB does."""
    h = hashes[call].to(torch.int64) & M32
    ha, hb = step(h[0], h[1], a)
    ha, hb = step(ha, hb, b)
    hashes[call] = (((torch.stack((ha, hb)) + 2**31) & M32) - 2**31).to(torch.int32)  # the same bits, as int32 holds them


def flush_salt(call: int) -> int:
    return (call * GOLDEN + FLUSH_SALT) & M32


def flush(words: torch.Tensor, seed: torch.Tensor, hashes: torch.Tensor, call: int) -> None:
    """L2 flushed by reading every one of `words` (int32, L2's size), their fold absorbed into hashes[call]:
    lane i of program p starts from the call's key (`key`: the seed and hashes[call - 1]) mixed with
    p·BLOCK + i and takes words (p·CHUNK + c)·BLOCK + i in turn through murmur3's finalizer (a 32-bit state:
    the pass stays bound by memory, not by its arithmetic); the lanes meet in a tree as `fold`'s do, each
    with a second word of the key, and a root pass folds the programs' states into hashes[call]."""
    n, prev, salt = words.numel(), max(call - 1, 0), flush_salt(call)
    programs = triton_cdiv(n, CHUNK * BLOCK)
    kernels = _kernels() if words.is_cuda else None
    if kernels is not None:
        states = torch.empty(2 * programs, dtype=torch.int32, device=words.device)
        kernels[2][(programs,)](words, n, states, hashes, seed, salt >> 1, salt & 1, prev, 1 if call > 0 else 0,
                                CHUNK=CHUNK, BLOCK=BLOCK, LOG_BLOCK=LOG_BLOCK)
        _root_pass(kernels[1], states, hashes, call)
        return
    k1, k2 = key(seed, salt, hashes[prev] if call > 0 else None)
    flat = torch.zeros(programs * CHUNK * BLOCK, dtype=torch.int64, device=words.device)
    flat[:n] = words.reshape(-1).to(torch.int64) & M32
    w = flat.view(programs, CHUNK, BLOCK)
    lane = torch.arange(programs * BLOCK, dtype=torch.int64, device=words.device).view(programs, BLOCK)
    a = _mix_t(lane ^ k1)
    for c in range(CHUNK):
        a = _fmix_t(a ^ w[:, c])
    a, b = _lanes_meet(a, _mix_t(lane ^ k2))
    a, b = _root(a, b)
    _absorb(hashes, call, a[0], b[0])


def fold(words: torch.Tensor, chunk: int, salts: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor]:
    """The state of each program of `chunk`·BLOCK words: lane i of program p starts from its salts mixed
    with p·BLOCK + i and takes words (p·chunk + c)·BLOCK + i for c = 0 … chunk − 1 in turn (`step`); then
    neighbouring lanes meet, the even one taking the odd one's two words, until one is left. The same as
    chain_kernels.fold_kernel, bit for bit."""
    n = words.numel()
    programs = triton_cdiv(n, chunk * BLOCK)
    flat = torch.zeros(programs * chunk * BLOCK, dtype=torch.int64, device=words.device)
    flat[:n] = words.reshape(-1).to(torch.int64) & M32
    present = (torch.arange(flat.numel(), device=words.device) < n).view(programs, chunk, BLOCK)
    w = flat.view(programs, chunk, BLOCK)
    lane = torch.arange(programs * BLOCK, dtype=torch.int64, device=words.device).view(programs, BLOCK)
    a, b = _mix_t(lane ^ salts[0]), _mix_t(lane ^ salts[1])
    for c in range(chunk if programs > 1 else triton_cdiv(n, BLOCK)):  # one program: no lane takes a word after n
        a2, b2 = step(a, b, w[:, c])
        a, b = torch.where(present[:, c], a2, a), torch.where(present[:, c], b2, b)
    return _lanes_meet(a, b)


def _lanes_meet(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each program's lanes (a row) meet in a tree, the even lane taking its odd neighbour's two words, until
    one state per program is left (chain_kernels._halve)."""
    programs = a.shape[0]
    while a.shape[1] > 1:
        pa, pb = a.view(programs, -1, 2), b.view(programs, -1, 2)
        a, b = step(pa[..., 0], pb[..., 0], pa[..., 1])
        a, b = step(a, b, pb[..., 1])
    return a[:, 0], b[:, 0]


def step(a: Any, b: Any, w: Any) -> tuple[Any, Any]:
    """One Feistel round of a 64-bit state (a, b) of 32-bit halves taking a 32-bit word: (b ^ mix(a ^ w), a).
    Unlike a sum, no word's share of a hash can be chosen apart from the words after it."""
    return b ^ _mix_t(a ^ w), a


def _mix_t(x: torch.Tensor) -> torch.Tensor:
    """`mix` on an int64 tensor of 32-bit values."""
    x = x & M32
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & M32
    x = x ^ (x >> 15)
    x = (x * 0x846CA68B) & M32
    return x ^ (x >> 16)


def _fmix_t(x: torch.Tensor) -> torch.Tensor:
    """murmur3's 32-bit finalizer on an int64 tensor of 32-bit values (chain_kernels._fmix32)."""
    x = x ^ (x >> 16)
    x = (x * FMIX[0]) & M32
    x = x ^ (x >> 13)
    x = (x * FMIX[1]) & M32
    return x ^ (x >> 16)


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


@functools.cache
def _kernels():
    """The refresh, hash and flush kernels (runner/chain_kernels.py), or None where Triton cannot be imported."""
    try:
        from trialtui.runner import chain_kernels
    except Exception:  # noqa: BLE001 - no Triton: torch's arithmetic
        return None
    return chain_kernels.refresh_kernel, chain_kernels.fold_kernel, chain_kernels.flush_kernel
