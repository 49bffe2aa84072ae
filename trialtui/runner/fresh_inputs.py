"""Every timed call gets an input no call had before, new in every element of every floating tensor.

A kernel that keeps its last input and output and recomputes only what changed, or hands back an
answer it kept (keyed on the input object, its pointer or a fingerprint), must do the whole work
again: call k's floating inputs are, element by element, a point drawn between the set's value and
another value of the same tensor (x = b + t·(o − b), t uniform in [0, 1) from torch's generator
seeded per call, o the value a third of the tensor further on). Every value is new and continuous (no table of
answers built ahead helps), changes reach every row, column and block, and a convex combination of
two values of a tensor stays inside any interval its values lie in (positive stays positive, [0, 1)
stays [0, 1)). The checker rebuilds any call's input from the same seed, bit for bit (the same
generator and kernels on the same device), and runs the reference on it.

A tensor with structure a correct kernel may rely on (a triangle, symmetry, sorted rows, a mask,
indices, rows summing to one) is left as it is (`structured`); integer tensors are never touched.
Where every input is like that, a kept answer is not caught (docs/SECURITY.md).
"""

from __future__ import annotations

import random
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


def call_seed(batch_seed: int, call: int, tensor: int) -> int:
    """The RNG seed of one tensor of one call, from the batch's seed (drawn by the checker)."""
    return random.Random(batch_seed * 1_000_003 + call * 1009 + tensor).getrandbits(62)


def partner(base: torch.Tensor) -> torch.Tensor:
    """The values each element moves towards: the tensor itself, rolled by a third of its length plus one
    (values of the same tensor, so the blend stays inside any interval the tensor's values lie in)."""
    flat = base.reshape(-1)
    return torch.roll(flat, flat.numel() // 3 + 1).view(base.shape)


def blend_into(out: torch.Tensor, base: torch.Tensor, other: torch.Tensor, seed: int) -> None:
    """out = base + t·(other − base), t uniform per element from torch's generator seeded with `seed` on
    the tensors' device: torch's own kernels on both sides (nothing from a cache a candidate could
    write), the same bits in the candidate's process and the checker's."""
    generator = torch.Generator(device=base.device).manual_seed(seed)
    t = torch.rand(base.shape, generator=generator, dtype=base.dtype, device=base.device)
    torch.lerp(base, other, t, out=out)


class Refresher:
    """The candidate's process's side: applies call after call's new values to the input sets in place,
    from pristine copies it keeps, and puts the sets back after the batch."""

    def __init__(self, sets: list[Any]) -> None:
        self.sets = sets
        self.targets = [[tensors_of(s)[i] for i in refreshed(s)] for s in sets]
        self.pristine = [[(t.clone(), partner(t)) for t in ts] for ts in self.targets]

    def before(self, batch_seed: int, call: int, set_index: int) -> None:
        """Call `call` of the batch (on input set `set_index`): its tensors as drawn for it."""
        for j, (tensor, (base, other)) in enumerate(zip(self.targets[set_index], self.pristine[set_index])):
            blend_into(tensor, base, other, call_seed(batch_seed, call, j))

    def restore(self) -> None:
        for ts, bases in zip(self.targets, self.pristine):
            for tensor, (base, _) in zip(ts, bases):
                tensor.copy_(base)


def input_of(base: Any, batch_seed: int, call: int) -> Any:
    """Call `call`'s input rebuilt from an untouched copy of its set, once (the checker keeps a `Refresher`
    of its own copies instead, so the structure scan and the partners are made once per set)."""
    refresher = Refresher([clone(base)])
    refresher.before(batch_seed, call, 0)
    return refresher.sets[0]
