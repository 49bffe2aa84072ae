"""Tensors inside nested values (tuples, lists and dicts), walked the same way in the checker and the
candidate's process: mapped, listed in order, copied, counted in bytes; the dtypes that may cross
between the two by name (runner/wire.py, the timed calls' slots in runner/timed_batch.py); and where a
timed call's outputs lie in memory, for a loop that copies them into the ring only after the batch's last
call (runner/timed_batch.Captured): whether any shares memory with another call's outputs or with the inputs
(a later call would overwrite it first), and, where with inputs only (GPU MODE's output buffer, handed in
and handed back), each call's own copy of the inputs they lie in."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable

import torch

DTYPES = {  # every dtype a tensor may cross in, by name ("float32")
    str(dtype).removeprefix("torch."): dtype
    for dtype in (
        torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
        torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128,
    )
}
for _name in ("float8_e4m3fn", "float8_e5m2"):
    if hasattr(torch, _name):
        DTYPES[_name] = getattr(torch, _name)


def map_tensors(value: Any, fn: Callable[[torch.Tensor], Any]) -> Any:
    """Apply `fn` to every tensor inside nested tuples, lists and dicts."""
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, tuple):
        return tuple(map_tensors(v, fn) for v in value)
    if isinstance(value, list):
        return [map_tensors(v, fn) for v in value]
    if isinstance(value, dict):
        return {k: map_tensors(v, fn) for k, v in value.items()}
    return value


def tensors_of(value: Any) -> list[torch.Tensor]:
    """Every tensor inside nested tuples, lists and dicts, in `map_tensors`' order."""
    found: list[torch.Tensor] = []
    map_tensors(value, lambda t: found.append(t) or t)
    return found


def clone(value: Any) -> Any:
    return map_tensors(value, lambda t: t.clone())


def nbytes(value) -> int:
    """Bytes of every tensor in a value (inputs, outputs, weights), however nested."""
    total = 0

    def add(t: torch.Tensor) -> None:
        nonlocal total
        total += t.numel() * t.element_size()

    map_tensors(value, add)
    return total


def shares_memory(outputs: list[Any], inputs: list[Any], private: dict[int, list[torch.Tensor]] | None = None) -> bool:
    """Whether any two calls' outputs, or an output and an input, overlap in memory: the bytes each tensor
    spans, from its first element to its last (a strided view spans its gaps). `private[i]`: tensors of call
    i's own, which its outputs may lie in."""
    owners = [tensors_of(out) + (private or {}).get(i, []) for i, out in enumerate(outputs)]
    owners.append([t for s in inputs for t in tensors_of(s)])
    spans = sorted((*_span(t), owner) for owner, found in enumerate(owners) for t in found if t.numel() > 0)
    reach: dict[int, int] = {}  # owner -> the furthest end seen, kept for the two owners reaching furthest
    for begin, finish, owner in spans:
        if any(end > begin and other != owner for other, end in reach.items()):
            return True
        reach[owner] = max(finish, reach.get(owner, finish))
        reach = dict(sorted(reach.items(), key=lambda item: -item[1])[:2])
    return False


@dataclass
class PrivateInputs:
    """Each call of a batch on its own copy of the input tensors its outputs lie in, the others shared."""

    calls: list[Callable[[], Any]]  # call i of the batch
    copies: dict[int, dict[int, torch.Tensor]]  # call -> {the tensor's position in its set: its own copy} (fresh_inputs.Refresher.own)
    tensors: dict[int, list[torch.Tensor]]  # call -> its own copies


def private_inputs(fn: Callable[[Any], Any], sets: list[Any], outputs: list[Any], n: int,
                   budget: int) -> PrivateInputs | None:
    """Calls of `fn` for a batch of n in which each call has its own copy of every input tensor any of `outputs`
    (a batch's, from the shared sets) lies in; None where outputs share memory across calls by themselves (no
    copy of the inputs helps) or the copies would not fit `budget` bytes (the ring's: a buffer handed in for
    the output fits as the output does)."""
    found = [tensors_of(s) for s in sets]
    inputs = [_span(t) for ts in found for t in ts if t.numel() > 0]
    free = [[t for t in tensors_of(out) if t.numel() > 0 and not any(_meet(_span(t), u) for u in inputs)] for out in outputs]
    if shares_memory(free, []):  # outputs in no input, overlapping across calls: their own copies would not help
        return None
    spans = [_span(t) for out in outputs for t in tensors_of(out) if t.numel() > 0]
    aliased = [[j for j, t in enumerate(ts) if t.numel() > 0 and any(_meet(_span(t), o) for o in spans)] for ts in found]
    if not any(aliased) or sum(found[i % len(sets)][j].nbytes for i in range(n) for j in aliased[i % len(sets)]) > budget:
        return None
    own = PrivateInputs([], {}, {})
    for i in range(n):
        copies = {j: found[i % len(sets)][j].clone() for j in aliased[i % len(sets)]}
        position = itertools.count()  # map_tensors walks a set in tensors_of's order
        inputs_i = map_tensors(sets[i % len(sets)], lambda t: copies.get(next(position), t))
        own.calls.append(lambda inputs=inputs_i: fn(inputs))
        own.copies[i] = copies
        own.tensors[i] = list(copies.values())
    return own


def _span(t: torch.Tensor) -> tuple[int, int]:
    size = (sum((n - 1) * stride for n, stride in zip(t.shape, t.stride())) + 1) * t.element_size()
    return t.data_ptr(), t.data_ptr() + size


def _meet(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def distinct_bytes(*values: Any) -> int:
    """Bytes of memory the tensors in `values` span, each byte once: a tensor handed in twice, views of one
    buffer, an expanded (stride-0) dimension, and an output written into an input's buffer (GPU MODE's) are
    counted once, so that the least traffic a kernel must make is never counted above what it is."""
    spans: dict[int, list[tuple[int, int, int]]] = {}
    for t in itertools.chain.from_iterable(tensors_of(v) for v in values):
        if t.numel() == 0:
            continue
        size = t.element_size()
        start = t.storage_offset() * size
        reach = sum((n - 1) * s for n, s in zip(t.shape, t.stride()) if s > 0)
        own = size * math.prod(n for n, s in zip(t.shape, t.stride()) if s != 0)
        spans.setdefault(t.untyped_storage()._cdata, []).append((start, start + (reach + 1) * size, own))
    return sum(min(_union(ranges), sum(own for _, _, own in ranges)) for ranges in spans.values())


def _union(ranges: list[tuple[int, int, int]]) -> int:
    total, reached = 0, None
    for start, end, _ in sorted(ranges):
        if reached is None or start >= reached:
            total, reached = total + end - start, end
        elif end > reached:
            total, reached = total + end - reached, end
    return total
