"""Launches of a CUDA C++ candidate's own code, counted in the candidate's process.

Triton launches are counted at the JIT (runner/candidate.py's LaunchCounter). A CUDA C++
candidate's kernels are launched from its extension's functions, so each call into a module that
`load_inline`/`load` built counts as one: without any, the bench flags the candidate as running
PyTorch only (`no-custom-kernel`), as it does a Triton candidate that launches no kernel.
"""

from __future__ import annotations

from typing import Any


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
            return value(*args, **kwargs)

        return counted

    def __setattr__(self, attr: str, value: Any) -> None:
        setattr(self._module, attr, value)


def install(counter: Any) -> None:
    """Wrap what load_inline and load return; before the candidate is imported."""
    import torch.utils.cpp_extension as ext

    for name in ("load_inline", "load"):
        original = getattr(ext, name)

        def build(*args, __original=original, **kwargs):
            module = __original(*args, **kwargs)
            return module if module is None else Counted(module, counter)

        setattr(ext, name, build)
