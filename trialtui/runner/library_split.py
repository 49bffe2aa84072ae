"""The library's share of a candidate's timed calls: which torch functions it calls that do work, and how
much of the GPU time their kernels take (issue 33: a token kernel of its own beside `torch.matmul` doing
the job is `fallback`, whatever it launches). Runs in the candidate's process; what it reports is checked
as data on the checker's side (runner/timed_phase.py)."""

from __future__ import annotations

from typing import Any, Callable

import torch

from trialtui.core.json_types import number

# torch functions that allocate, reshape or only look at tensors: anything else a candidate's call runs
# through torch is library work (ATen's kernels, cuBLAS, cuDNN) whose share of the GPU time gets weighed
SHAPE_FUNCTIONS = frozenset({
    "__get__", "__getitem__", "__len__", "__iter__", "__format__", "__repr__", "__bool__", "__index__", "__int__",
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "zero_",
    "ones", "ones_like", "full", "full_like", "new_zeros", "new_ones", "new_full", "fill_", "detach", "clone",
    "contiguous", "copy_", "to", "cuda", "float", "half", "bfloat16", "view", "view_as", "reshape", "reshape_as",
    "t", "transpose", "permute", "expand", "expand_as", "squeeze", "unsqueeze", "flatten", "unflatten", "narrow",
    "select", "split", "chunk", "size", "stride", "dim", "numel", "element_size", "data_ptr", "is_contiguous",
    "storage_offset", "untyped_storage", "get_device", "type", "arange", "as_strided", "unbind", "item",
})


class LibraryOps:
    """The torch functions a call runs besides allocation and shape handling (a TorchFunctionMode around one
    call: no dispatch mode, whose first use imports torch._dynamo, 2.3 s). With `timed`, each one also
    between two CUDA events on the current stream: its GPU time, for `library_split`."""

    def __init__(self, timed: bool = False):
        self.timed = timed
        self.ops: set[str] = set()
        self.spans: list[tuple[str, Any, Any]] = []

    def __enter__(self) -> LibraryOps:
        from torch.overrides import TorchFunctionMode

        seen, spans, timed = self.ops, self.spans, self.timed

        class Mode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                name = getattr(func, "__name__", None) or str(func)
                if name in SHAPE_FUNCTIONS:
                    return func(*args, **(kwargs or {}))
                seen.add(name[:60])
                if not timed:
                    return func(*args, **(kwargs or {}))
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                out = func(*args, **(kwargs or {}))
                end.record()
                spans.append((name[:60], start, end))
                return out

        self._mode = Mode()
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._mode.__exit__(*exc)


def library_split(calls: list[Callable[[], Any]], runs: int = 5) -> dict[str, Any] | None:
    """`kernel_split`'s answer without CUPTI (whose first start costs 3.7-5.3 s a process on the H200):
    the GPU time of each torch compute function a call runs, between events around it on the current
    stream, against the whole call's. What is not torch's counts as the candidate's own (launch gaps
    too: the split errs towards the candidate). A candidate's process could lie here as in CUPTI's
    records (docs/SECURITY.md): this weighs an honest decoy, it is no defence."""
    total, library = 0.0, {}
    for i in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with LibraryOps(timed=True) as seen:
            start.record()
            calls[i % len(calls)]()
            end.record()
        torch.cuda.synchronize()
        total += start.elapsed_time(end) * 1000.0
        for name, a, b in seen.spans:
            library[name] = library.get(name, 0.0) + a.elapsed_time(b) * 1000.0
    spent = sum(library.values())
    if total <= 0:
        return None
    own = max(0.0, total - spent)
    top = sorted(library.items(), key=lambda kv: -kv[1])[:5]
    return {"own_us": own / runs, "library_us": spent / runs, "own_share": own / (own + spent),
            "library_top": [[f"torch.{name}", us / runs] for name, us in top]}


def kernel_split(calls: list[Callable[[], Any]], own_names: set[str], runs: int = 5) -> dict[str, Any] | None:
    """GPU time of a few calls, from CUPTI's kernel records, split into the candidate's own kernels (the
    Triton and CUDA C++ kernels it defines) and everything else (ATen, cuBLAS, cuDNN, torch.compile's)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(runs):
            calls[i % len(calls)]()
        torch.cuda.synchronize()
    own, other = 0.0, {}
    for evt in prof.events():
        if evt.device_type != DeviceType.CUDA:
            continue
        us = float(evt.time_range.elapsed_us())
        if any(name and name in evt.name for name in own_names):
            own += us
        else:
            other[evt.name] = other.get(evt.name, 0.0) + us
    library = sum(other.values())
    if own + library <= 0:
        return None
    top = sorted(other.items(), key=lambda kv: -kv[1])[:5]
    return {"own_us": own / runs, "library_us": library / runs, "own_share": own / (own + library),
            "library_top": [[name[:120], us / runs] for name, us in top]}


def reported_split(value: Any) -> dict[str, Any] | None:
    """`kernel_split` as the candidate's process reports it to the checker, checked as data."""
    if not isinstance(value, dict):
        return None
    own, library, share = (number(value.get(k)) for k in ("own_us", "library_us", "own_share"))
    if own is None or library is None or share is None or not 0 <= share <= 1:
        return None
    top = [[str(n)[:120], float(us)] for n, us in (value.get("library_top") or [])[:5]
           if isinstance(us, (int, float)) and not isinstance(us, bool)]
    return {"own_us": own, "library_us": library, "own_share": share, "library_top": top}
