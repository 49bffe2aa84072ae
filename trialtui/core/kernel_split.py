"""The library's share of a profiled call, weighed from kernel records that trialtui's recorder in the candidate's
process has no part in (Nsight Compute's, CUPTI's): the kernels the candidate's source defines against every
other kernel (cuBLAS's, ATen's, torch.compile's). Where library kernels did most of the work the trial is
`fallback` whatever token kernels of its own it launched (issue 33). The bench's split (runner/library_split.py)
sees the torch functions a call runs; a decoy that reaches a library around them (cuBLAS through ctypes, a
torch call under `torch._C.DisableTorchFunction`) is weighed here, on the profile every new best gets."""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from trialtui.core.bench_result import BenchResult
from trialtui.core.json_types import number
from trialtui.core.model import Trial
from trialtui.core.profile_result import ProfileResult
from trialtui.core.result import flag
from trialtui.core.store import Store
from trialtui.core.validation_report import ValidationReport

LIBRARY_SHARE = 0.5  # the candidate's own kernels did less of the GPU time than this: `fallback`
# ATen's copies and fills: what allocation and layout cost (the bench's recorder passes `contiguous`, `zero_`),
# weighed on neither side, so neither an honest kernel's buffers nor a decoy's padding moves the share
NEUTRAL = re.compile(r"copy_kernel|FillFunctor|fill_kernel|CatArrayBatchedCopy|memset|memcpy", re.IGNORECASE)
# how libraries name their kernels (namespaces, cuBLAS's and torch.compile's prefixes): such a record is never taken
# for the candidate's own, so a token kernel named after the cuBLAS kernel it calls does not pass that one for its own
GLOBAL = re.compile(r"__global__\s+(?:void\s+)?(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*[(<]")
LIBRARY_SPACES = re.compile(r"(^|[\s:(<,])(at|c10|cub|cutlass|cudnn|cublas|cublasLt|flash|thrust)::")
LIBRARY_PREFIXES = re.compile(r"nvjet|sm\d+_xmma|xmma|cutlass|cublas|cudnn|cutensor|gemv2[NT]_kernel|gemvNSP|gemmSN_|"
                              r"gemmk1_kernel|splitKreduce_kernel|(ampere|volta|turing|maxwell|hopper)_"
                              r"\w*gemm|triton_(poi|per|red|tem)_|softmax_warp_", re.IGNORECASE)


@dataclass(frozen=True)
class KernelSplit:
    """GPU time per profiled call: the candidate's own kernels, the others, and the largest others by name."""

    own_us: float
    library_us: float
    library_top: tuple[tuple[str, float], ...]
    source: str  # whose records: "Nsight Compute's kernel records"

    @property
    def own_share(self) -> float:
        return self.own_us / (self.own_us + self.library_us)

    def fallback(self) -> dict[str, Any] | None:
        """The `fallback` flag where library kernels did most of the work; else None."""
        if self.own_share >= LIBRARY_SHARE:
            return None
        names = ", ".join(short_name(name)[:60] for name, _ in self.library_top[:3])
        return flag("fallback", f"{self.source}: library kernels did {1 - self.own_share:.0%} of the GPU time of a "
                                f"profiled call ({names}); the candidate's own kernels {self.own_share:.0%}: the "
                                "number is mostly not its kernel's")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> KernelSplit:
        """A split as `to_dict` kept it (a report card's, a profile report's)."""
        return cls(data["own_us"], data["library_us"], tuple((n, us) for n, us in data.get("library_top") or ()),
                   data.get("source") or "")

    def to_dict(self) -> dict[str, Any]:
        """The split as a report card keeps it."""
        return {"own_share": round(self.own_share, 4), "own_us": round(self.own_us, 3), "library_us": round(self.library_us, 3),
                "library_top": [[name, round(us, 3)] for name, us in self.library_top], "source": self.source}

    def line(self) -> str:
        """One line for a view: the split and whose records it comes from."""
        return (f"own kernels {self.own_share:.0%} of GPU time ({self.own_us:.1f} µs a call), library "
                f"{1 - self.own_share:.0%} ({self.library_us:.1f} µs), from {self.source}")


def short_name(name: str) -> str:
    """A record's demangled signature without its return type, template arguments and parameters:
    `void (anonymous namespace)::add_kernel<float, 4>(const float *, int)` → `add_kernel`, namespaces kept."""
    text = name.strip().replace("(anonymous namespace)::", "")
    text = text[5:] if text.startswith("void ") else text
    depth, kept = 0, []
    for ch in text:  # template arguments out, nested ones too
        depth += ch == "<"
        if depth == 0:
            kept.append(ch)
        depth -= ch == ">" and depth > 0
    text = "".join(kept)
    if text.endswith(")") and "(" in text:  # the parameter list
        text = text[:text.index("(")]
    return text.strip()


def base_name(name: str) -> str:
    """The kernel's own name, as its source spells it: `void ns::add_kernel<4>(int)` → `add_kernel`."""
    return short_name(name).rsplit("::", 1)[-1]


def is_library(name: str) -> bool:
    """A record named the way a library names its kernels."""
    return bool(LIBRARY_SPACES.search(name) or LIBRARY_PREFIXES.match(base_name(name)))


def split(kernels: Iterable[Mapping[str, Any]], own_names: Iterable[str], source: str, calls: int = 1) -> KernelSplit | None:
    """The split of records of `calls` calls ({"name", "duration_ns"} each); None where the candidate's own kernels
    are unknown or nothing but copies and fills ran."""
    own_bases = {base_name(n) for n in own_names if n}
    if not own_bases:
        return None
    own, library = 0.0, {}
    for record in kernels:
        name, ns = str(record.get("name") or "?"), number(record.get("duration_ns"))
        if ns is None or not ns >= 0 or NEUTRAL.search(name):  # records are data: no negative or NaN time
            continue
        if base_name(name) in own_bases and not is_library(name):
            own += ns
        else:
            library[name] = library.get(name, 0.0) + ns
    total_library = sum(library.values())
    if own + total_library <= 0:
        return None
    per_call = 1e3 * max(calls, 1)
    top = tuple((name, ns / per_call) for name, ns in sorted(library.items(), key=lambda kv: -kv[1])[:5])
    return KernelSplit(own / per_call, total_library / per_call, top, source)


def of_profile(profile: ProfileResult | None, own_names: Iterable[str]) -> KernelSplit | None:
    """The split of a stored profile's kernel records, whichever profiler took them (its own rows, per call)."""
    from trialtui.core.profilers import get_profiler, source_of

    if profile is None or profile.available is False:
        return None
    profiler = get_profiler(source_of(profile))
    rows = profiler.kernels(profile) if profiler is not None else []
    return split(rows, own_names, profiler.label if profiler is not None else "", 1) if rows else None


def own_kernels(validation: ValidationReport | None, source: str = "") -> set[str]:
    """The kernels the candidate defines: those its validation compiled, and every one its text declares (a
    @triton.jit function, a CUDA `__global__` one), so a kernel the CPU's trace never launched is still its own."""
    names = {str(k.get("name")) for k in (validation.kernels if validation else None) or [] if k.get("name")}
    names |= set(GLOBAL.findall(source))
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return names
    return names | {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and any("jit" in ast.unparse(d) for d in node.decorator_list)}


def of_trial(trial: Trial, store: Store) -> KernelSplit | None:
    """The split of a trial's stored profile, its own kernels read from its validation and its snapshot."""
    if trial.profile is None:
        return None
    try:
        source = store.read_source(trial)
    except OSError:
        source = ""
    return of_profile(trial.profile, own_kernels(trial.validation, source))


def flagged(result: BenchResult, found: KernelSplit | None) -> BenchResult | None:
    """The result with the split's `fallback` flag, where it has one and the bench had not raised it."""
    fallback = found.fallback() if found is not None else None
    if fallback is None or any(f.get("code") == "fallback" for f in result.flags or []):
        return None
    return dataclasses.replace(result, flags=[*(result.flags or []), fallback])
