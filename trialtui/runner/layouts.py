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


ARRANGE: dict[Layout, Callable[[torch.Tensor], torch.Tensor]] = {
    Layout.CONTIGUOUS: lambda t: t,
    Layout.PADDED: padded,
    Layout.OFFSET: offset,
}


def arrange(layout: str | None, value: Any) -> Any:
    """Every tensor inside `value` laid out as `layout` says (None: as it is)."""
    if layout is None:
        return value
    return map_tensors(value, ARRANGE[Layout(layout)])
