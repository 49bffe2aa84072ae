"""Launches of a CUDA C++ candidate's own code, counted in the candidate's process.

Triton launches are counted at the JIT (runner/candidate.py's LaunchCounter). A CUDA C++
candidate's kernels are launched from its extension's functions, so each call into a module that
`load_inline`/`load` built from sources defining a `__global__` kernel counts as one: without any,
the bench flags the candidate as running no kernel of its own (`no-custom-kernel`), as it does a
Triton candidate that launches none. An extension of host code only (ATen ops, cuBLAS) counts nothing.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from trialtui.core.languages.cuda import CUDA_SUFFIXES
from trialtui.core.languages.cuda_text import device_code


class Counted:
    """A built extension whose functions count a launch on each call."""

    def __init__(self, module: Any, counter: Any):
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_counter", counter)

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._module, attr)
        if not callable(value):
            return value
        counter = self._counter

        def counted(*args, **kwargs):
            counter.count += 1
            counter.native += 1  # its host code may call a library: CUPTI weighs the call (runner/candidate.py)
            return value(*args, **kwargs)

        return counted

    def __setattr__(self, attr: str, value: Any) -> None:
        setattr(self._module, attr, value)


def defines_kernel(kind: str, arguments: dict[str, Any]) -> bool:
    """Whether the sources of a load_inline/load call define a __global__ kernel: an extension that
    only calls ATen or a library (cuBLAS) from host code launches no kernel of the candidate's own."""
    return bool(kernel_names(kind, arguments))


def kernel_names(kind: str, arguments: dict[str, Any]) -> set[str]:
    """The __global__ kernels the sources of a load_inline/load call define: the candidate's own, where
    the timed calls' GPU time is weighed."""
    if kind == "load_inline":
        texts = arguments.get("cuda_sources") or []
        texts = [texts] if isinstance(texts, str) else [str(t) for t in texts]
    else:
        texts = []
        for entry in arguments.get("sources") or []:
            if str(entry).endswith(CUDA_SUFFIXES):
                try:
                    texts.append(Path(entry).read_text(errors="replace"))
                except OSError:
                    continue
    return {name for text in texts for name in device_code(text).kernels}


def install(counter: Any) -> None:
    """Wrap what load_inline and load return when their sources define a kernel; before the candidate
    is imported."""
    import torch.utils.cpp_extension as ext

    for kind in ("load_inline", "load"):
        original = getattr(ext, kind)
        signature = inspect.signature(original)

        def build(*args, __original=original, __kind=kind, __signature=signature, **kwargs):
            module = __original(*args, **kwargs)
            arguments = __signature.bind(*args, **kwargs).arguments
            if module is None or not defines_kernel(__kind, arguments):
                return module
            getattr(counter, "own_names", set()).update(kernel_names(__kind, arguments))
            return Counted(module, counter)

        setattr(ext, kind, build)
