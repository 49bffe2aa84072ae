"""Every timed call gets an input no earlier call had: a few values of its largest floating input are
replaced by others of the same tensor, at positions drawn by the checker for that call alone.

A kernel that memoizes its output (keyed on the input object, its pointer or a sampled fingerprint)
returns an answer for the wrong input, and the checker, which rebuilds any call's input from the same
draw and runs the reference on it, sees that on the calls it checks, chosen after the batch ran. The
values put in come from the tensor itself, so the input stays in its own domain (no negative
variance, no index out of range: integer tensors are never touched), and a tensor with structure a
correct kernel may rely on (a triangle, symmetry, sorted rows, a mask) gets none (`structured`). Applying a call's canaries also
restores the previous call's on the same input set: one small indexed write per call, outside the
timed events.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import torch

from trialtui.runner.loader import map_tensors

PER_CALL = 8  # positions replaced per call


def target(inputs: Any) -> torch.Tensor | None:
    """The largest contiguous floating tensor of an input set with no structure a kernel may rely on, the
    one a memo would have to fingerprint; None when every one has some (then no canaries)."""
    found: list[torch.Tensor] = []
    map_tensors(inputs, lambda t: found.append(t) or t)
    floating = [t for t in found if t.is_floating_point() and t.is_contiguous() and t.numel() > 1]
    for tensor in sorted(floating, key=lambda t: t.numel(), reverse=True):
        if not structured(tensor):
            return tensor
    return None


class Targets:
    """`target` once per input set of a timing session (the sets outlive it and get their values back
    after every batch): the structure test reads the whole tensor, a few passes of it."""

    def __init__(self) -> None:
        self.found: dict[int, tuple[Any, torch.Tensor | None]] = {}

    def of(self, inputs: Any) -> torch.Tensor | None:
        held = self.found.get(id(inputs))
        if held is None or held[0] is not inputs:
            held = self.found[id(inputs)] = (inputs, target(inputs))
        return held[1]


STRUCTURE_FRACTION = 0.01  # more zeros or whole numbers than this: a mask, a triangle, indices, counts


def structured(t: torch.Tensor) -> bool:
    """Whether replacing a few values could break what a correct kernel may assume of the input: zeros
    (triangular, banded, sparse, padded), whole numbers (masks, indices, counts), values that are not
    finite, symmetry of the last two dimensions, rows sorted or summing to one. Such a kernel (one that
    skips a triangle, say) would be right on the problem's inputs and wrong on a canary's, so these
    tensors get none: the same test on both sides picks the same tensor."""
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


@dataclass
class Draw:
    """One batch's canaries: per call, the positions written and the values (from the untouched set)."""

    positions: list[list[int]]
    sources: list[list[int]]
    numel: int  # of the tensor drawn for: a set whose chosen tensor differs in size gets none

    @classmethod
    def make(cls, seed: int, calls: int, numel: int) -> Draw | None:
        """None where the tensor is too small for distinct positions across the batch (under one a call)."""
        per = min(PER_CALL, numel // max(1, calls))
        if per < 1:
            return None
        rng = random.Random(seed)
        picked = rng.sample(range(numel), calls * per)  # distinct across the batch: writes never collide
        positions = [picked[i * per:(i + 1) * per] for i in range(calls)]
        sources = [[rng.randrange(numel) for _ in range(per)] for _ in range(calls)]
        return cls(positions, sources, numel)


class Writer:
    """Applies call after call's canaries to input sets in place (the candidate's process does this):
    everything is drawn and gathered before the batch, so each call costs one indexed write."""

    def __init__(self, sets: list[Any], draw: Draw, targets: Targets):
        self.flat = [None if (t := targets.of(s)) is None or t.numel() != draw.numel else t.view(-1) for s in sets]
        self.sets = len(sets)
        calls = len(draw.positions)
        self.plans: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * calls
        self.last: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        for k, flat in enumerate(self.flat):
            if flat is None:
                continue
            mine = list(range(k, calls, self.sets))
            if not mine:
                continue
            pos = torch.tensor([draw.positions[i] for i in mine], device=flat.device)
            values = flat[torch.tensor([draw.sources[i] for i in mine], device=flat.device)]
            original = flat[pos]
            # call n of this set writes its own canaries and puts back call n-1's (the first: its own twice)
            undo_pos = torch.cat([pos[:1], pos[:-1]])
            undo_val = torch.cat([values[:1], original[:-1]])
            both_pos, both_val = torch.cat([undo_pos, pos], dim=1), torch.cat([undo_val, values], dim=1)
            for row, i in enumerate(mine):
                self.plans[i] = (both_pos[row], both_val[row])
            self.last[k] = (pos[-1], original[-1])

    def before(self, call: int) -> None:
        """Call `call`'s input: its set as drawn for it (one launch)."""
        plan = self.plans[call]
        if plan is not None:
            self.flat[call % self.sets].index_put_((plan[0],), plan[1])

    def restore(self) -> None:
        """The sets as they were before the batch."""
        for k, (pos, original) in self.last.items():
            self.flat[k].index_put_((pos,), original)


def input_of(base: Any, draw: Draw, call: int, targets: Targets) -> Any:
    """Call `call`'s input rebuilt from an untouched copy of its set (the checker's side)."""
    from trialtui.runner.loader import clone

    chosen = targets.of(base)
    if chosen is None or chosen.numel() != draw.numel:
        return clone(base)
    found: list[torch.Tensor] = []
    map_tensors(base, lambda t: found.append(t) or t)
    inputs = clone(base)
    copies: list[torch.Tensor] = []
    map_tensors(inputs, lambda t: copies.append(t) or t)
    flat = copies[next(i for i, t in enumerate(found) if t is chosen)].view(-1)
    sources = flat[torch.tensor(draw.sources[call], device=flat.device)].clone()
    flat[torch.tensor(draw.positions[call], device=flat.device)] = sources
    return inputs
