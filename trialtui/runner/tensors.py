"""Tensors inside nested values (tuples, lists and dicts), walked the same way in the checker and the
candidate's process: mapped, listed in order, copied, counted in bytes; and the dtypes that may cross
between the two by name (runner/wire.py, the timed calls' slots in runner/timed_batch.py)."""

from __future__ import annotations

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
