"""Run reference code that names "cuda" on a machine without CUDA.

GPU MODE references are written for the GPU: `torch.Generator(device="cuda")`, `torch.randn(...,
device="cuda")`, `x.cuda()`. On a CPU-only machine trialtui still checks candidates (through
Triton's interpreter), so while the reference's own functions run, every CUDA device they name is
taken as `target` (the CPU, or the meta device for shape-only analysis).
"""

from __future__ import annotations

import functools
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import torch
from torch.overrides import TorchFunctionMode

_Generator = torch.Generator


def _is_cuda(device: Any) -> bool:
    if isinstance(device, torch.device):
        return device.type == "cuda"
    return isinstance(device, str) and device.split(":")[0] == "cuda"


class _MappedDevices(TorchFunctionMode):
    """Rewrites CUDA devices in torch calls (factory `device=`, `.to("cuda")`, `.cuda()`)."""

    def __init__(self, target: torch.device):
        super().__init__()
        self.target = target

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func is torch.Tensor.cuda:
            return args[0].to(self.target)
        if _is_cuda(kwargs.get("device")):
            kwargs["device"] = self.target
        if func is torch.Tensor.to:
            args = tuple(self.target if _is_cuda(a) else a for a in args)
        return func(*args, **kwargs)


def _generator_class(target: torch.device) -> type:
    generator_device = "cpu" if target.type == "meta" else str(target)

    class MappedGenerator(_Generator):
        """`torch.Generator(device="cuda")` as a generator for the target device."""

        def __new__(cls, device: Any = None):
            if device is None:
                return super().__new__(cls)
            return super().__new__(cls, generator_device if _is_cuda(device) else device)

        def __init__(self, device: Any = None):
            pass  # everything happened in __new__

    return MappedGenerator


@contextmanager
def cuda_as(target: torch.device) -> Iterator[None]:
    """Inside, reference code that names CUDA gets `target` instead."""
    saved = torch.Generator
    torch.Generator = _generator_class(target)
    try:
        with _MappedDevices(target):
            yield
    finally:
        torch.Generator = saved


def mapped(fn: Callable[..., Any], target: torch.device) -> Callable[..., Any]:
    """`fn` run under `cuda_as(target)`."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        with cuda_as(target):
            return fn(*args, **kwargs)

    return call
