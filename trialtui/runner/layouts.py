"""Held-out layouts made from packed tensors (core/heldout.py's `Layout`), the same in the checker and
the candidate's process: tensors cross between them packed (runner/wire.py), so each side lays out its own."""

from __future__ import annotations

from typing import Any, Callable

import torch

from trialtui.core.heldout import Layout
from trialtui.runner.tensors import map_tensors

PAD = 3  # elements past each row: the row stride is no power of two and no multiple of the row's length


def _filled(shape: tuple[int, ...], like: torch.Tensor) -> torch.Tensor:
    """A buffer whose unused elements poison a kernel that reads them (NaN where the dtype has one)."""
    fill = float("nan") if like.is_floating_point() or like.is_complex() else 0
    return torch.full(shape, fill, dtype=like.dtype, device=like.device)


def padded(t: torch.Tensor) -> torch.Tensor:
    """The same values with each row inside a wider buffer; a 1-D tensor as every other element of one."""
    if t.dim() == 0 or t.numel() == 0:
        return t
    if t.dim() == 1:
        buffer = _filled((2 * t.shape[0],), t)
        view = buffer[::2]
    else:
        buffer = _filled((*t.shape[:-1], t.shape[-1] + PAD), t)
        view = buffer[..., : t.shape[-1]]
    view.copy_(t)
    return view


def offset(t: torch.Tensor) -> torch.Tensor:
    """The same values, packed, one element into their storage."""
    if t.dim() == 0 or t.numel() == 0:
        return t
    buffer = _filled((t.numel() + 1,), t)
    view = buffer[1:].view(t.shape)
    view.copy_(t)
    return view


FENCE = 65536  # elements of poison past a fenced tensor: more than any block a kernel loads past its end
FENCED_BYTES = 64 * 2**20  # tensors up to this are fenced (test sizes); larger ones are left as they are


def fenced(t: torch.Tensor) -> torch.Tensor:
    """The same values, packed at the start of a buffer whose rest is poison: a kernel that reads past a tensor's
    end (a missing mask on its last block) reads NaN there, on the CPU interpreter too, instead of whatever lay
    beyond. A tensor with a layout of its own (a view the problem made) is left so."""
    if t.dim() == 0 or t.numel() == 0 or not t.is_contiguous() or t.numel() * t.element_size() > FENCED_BYTES:
        return t
    buffer = _filled((t.numel() + min(t.numel(), FENCE),), t)
    view = buffer[: t.numel()].view(t.shape)
    view.copy_(t)
    return view


ARRANGE: dict[Layout, Callable[[torch.Tensor], torch.Tensor]] = {
    Layout.CONTIGUOUS: lambda t: t,
    Layout.PADDED: padded,
    Layout.OFFSET: offset,
}


def arrange(layout: str | None, value: Any) -> Any:
    """Every tensor inside `value` laid out as `layout` says (None: `fenced`), one tensor handed in twice still one."""
    lay = ARRANGE[Layout(layout)] if layout is not None else fenced
    made: dict[int, torch.Tensor] = {}
    return map_tensors(value, lambda t: made[id(t)] if id(t) in made else made.setdefault(id(t), lay(t)))
