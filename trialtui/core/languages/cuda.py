"""CUDA C++ candidates: kernels built by `torch.utils.cpp_extension.load_inline` (KernelBench's own
style) or `load` with a `.cu` file beside the candidate.

They are never run on the CPU: a CUDA kernel handed CPU tensors fails for reasons that say
nothing about the kernel. Validation compiles their device code for the target architecture
with nvcc (the `nvidia-cuda-nvcc` wheel, `pip install -e '.[cuda]'`) and reads registers,
spills and shared memory from `ptxas -v`; correctness and timing run on the GPU.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from trialtui.core import job_kinds, plugins
from trialtui.core.check_ast import dotted_name
from trialtui.core.languages.cuda_text import code_only
from trialtui.core.languages.base import GROUP, Language
from trialtui.core.model import Finding, Severity

LOADERS = {"torch.utils.cpp_extension.load_inline": "load_inline", "torch.utils.cpp_extension.load": "load"}
CUDA_SUFFIXES = (".cu", ".cuh")


@dataclass(frozen=True)
class CudaSource:
    """CUDA source text and where it came from: `file` the .cu file it was read from, if any, and
    `line` the line (of the candidate, or 1 of that file) its first line is on; None when computed."""

    text: str
    origin: str
    line: int | None = None
    file: str | None = None
    flags: tuple[str, ...] = ()
    call: int | None = None  # the candidate line of the load_inline/load call
    includes: tuple[str, ...] = ()  # extra_include_paths of the call

    def file_line(self, line: int) -> int | None:
        """The candidate line of the source's `line` (None for a .cu file's or a computed source's)."""
        return None if self.file or self.line is None else self.line + line - 1


@dataclass(frozen=True)
class LoaderCall:
    """One `load_inline`/`load` call found in the syntax tree."""

    kind: str  # load_inline | load
    node: ast.Call


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name → the dotted module path it stands for, from every import in the file."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    aliases[head] = head
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def loader_calls(tree: ast.Module) -> list[LoaderCall]:
    """Every call of `load_inline` or `load` from torch.utils.cpp_extension, however imported."""
    aliases = _aliases(tree)
    calls = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = dotted_name(node.func)
        if name is None:
            continue
        head, _, rest = name.partition(".")
        resolved = aliases.get(head, head) + (f".{rest}" if rest else "")
        if resolved in LOADERS:
            calls.append(LoaderCall(LOADERS[resolved], node))
    return sorted(calls, key=lambda c: (c.node.lineno, c.node.col_offset))


def _argument(call: ast.Call, keyword: str, position: int) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    return call.args[position] if len(call.args) > position else None


def _module_strings(tree: ast.Module) -> dict[str, ast.Constant]:
    """Module-level names bound once to a string constant (`cuda_src = \"\"\"...\"\"\"`)."""
    bound: dict[str, ast.Constant] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            if isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                bound[stmt.targets[0].id] = stmt.value
    return bound


def _strings(node: ast.expr | None, bound: dict[str, ast.Constant]) -> list[ast.Constant] | None:
    """The string constants an argument is made of; None when any part is computed."""
    if node is None:
        return []
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node]
    if isinstance(node, ast.Name) and node.id in bound:
        return [bound[node.id]]
    if isinstance(node, (ast.List, ast.Tuple)):
        parts = [_strings(e, bound) for e in node.elts]
        return None if any(p is None for p in parts) else [c for p in parts for c in p]
    return None


def _flags(call: LoaderCall, bound: dict[str, ast.Constant]) -> tuple[str, ...]:
    """extra_cuda_cflags when spelled out (positional: 6th of load_inline, 4th of load)."""
    found = _strings(_argument(call.node, "extra_cuda_cflags", 5 if call.kind == "load_inline" else 3), bound)
    return tuple(c.value for c in found or [])


def named_cu_files(call: LoaderCall) -> list[str]:
    """The .cu/.cuh file names a `load(sources=...)` call spells out (paths are taken as beside the candidate)."""
    if call.kind != "load":
        return []
    sources = _argument(call.node, "sources", 1)
    if sources is None:
        return []
    return [n.value for n in ast.walk(sources)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.endswith(CUDA_SUFFIXES)]


def static_sources(tree: ast.Module, folder: Path) -> tuple[list[CudaSource], list[tuple[int, str]]]:
    """CUDA sources readable from the syntax tree alone, and (call line, what) for the calls whose
    sources are computed or missing."""
    bound = _module_strings(tree)
    sources: list[CudaSource] = []
    unread: list[tuple[int, str]] = []
    for call in loader_calls(tree):
        line = call.node.lineno
        where = f"{call.kind} at line {line}"
        flags = _flags(call, bound)
        if call.kind == "load_inline":
            found = _strings(_argument(call.node, "cuda_sources", 2), bound)
            if found is None:
                unread.append((line, where))
            for const in found or []:
                sources.append(CudaSource(const.value, f"cuda_sources of {where}", const.lineno, None, flags, line))
            continue
        names = named_cu_files(call)
        if not names:
            unread.append((line, where))
        for name in names:
            path = folder / Path(name).name
            try:
                sources.append(CudaSource(path.read_text(errors="replace"), path.name, 1, str(path), flags, line))
            except OSError:
                unread.append((line, f"{where} ({name} not found beside the candidate)"))
    return sources, unread


# The runtime's and the driver's names for L2 set aside for persisting lines, and an access-policy window that puts
# lines there: they outlive the kernel that touched them and the L2 flush before every timed call (pygpubench PR 49).
PERSISTING_L2 = re.compile(r"\b(accessPolicyWindow|cudaLimitPersistingL2CacheSize|cudaAccessPropertyPersisting|"
                           r"CU_LIMIT_PERSISTING_L2_CACHE_SIZE|CU_ACCESS_PROPERTY_PERSISTING|"
                           r"CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW|cudaLaunchAttributeAccessPolicyWindow)\b")


HOST_SUFFIXES = CUDA_SUFFIXES + (".cpp", ".cc", ".cxx", ".h", ".hpp")


def persisting_l2(tree: ast.Module, folder: Path | None) -> list[Finding]:
    """Host code that keeps lines in L2 across kernels: a call's inputs would be read warm where the harness flushed
    L2 before it, as it does before every candidate's. Looked for in every string of the candidate (`cuda_sources`,
    `cpp_sources`, whatever builds them) and every file a `load` call names. Cache hints within a kernel (`__ldg`,
    `L2::evict_last`) are not refused: they are how a kernel keeps its data within a call (whether a line so marked
    outlives the flush is not yet measured)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append(_persisting(node.value, "the candidate", node.lineno))
    for call in loader_calls(tree) if folder is not None else []:
        sources = _argument(call.node, "sources", 1) if call.kind == "load" else None
        for name in ([n.value for n in ast.walk(sources) if isinstance(n, ast.Constant) and isinstance(n.value, str)
                      and n.value.endswith(HOST_SUFFIXES)] if sources is not None else []):
            try:
                text = (folder / Path(name).name).read_text(errors="replace")
            except OSError:
                continue
            found.append(_persisting(text, Path(name).name, None, call.node.lineno))
    return [f for f in found if f is not None]


def _persisting(text: str, origin: str, first_line: int | None, call_line: int | None = None) -> Finding | None:
    code = code_only(text)
    found = PERSISTING_L2.search(code)
    if found is None:
        return None
    line = code.count("\n", 0, found.start()) + 1
    where = f"line {line} of {origin}" if first_line is None else "the candidate"
    return Finding(Severity.ERROR.value, "l2-persisting",
                   f"{where} sets L2 aside for persisting lines ({found[1]}): they outlive the L2 flush before each "
                   "timed call, so its inputs would be read warm where every candidate's are read cold",
                   first_line + line - 1 if first_line is not None else call_line, None,
                   "drop the access-policy window and the persisting-L2 limit; cache hints inside a kernel "
                   "(__ldg, ld.global.L2::evict_last) are not refused")


class Cuda(Language):
    name = "cuda"
    label = "CUDA C++"
    priority = 10  # a CUDA candidate may import triton too; its load_inline call decides
    compile_job = job_kinds.CUDA_COMPILE.module
    runs_on_cpu = False
    launch_counter = job_kinds.CUDA_LAUNCH_COUNTER  # a call into the built extension is a launch
    compile_hints = (
        ("uses too much shared data", "static __shared__ arrays over 48 KB need dynamic shared memory and "
                                      "cudaFuncSetAttribute(..., cudaFuncAttributeMaxDynamicSharedMemorySize, ...)"),
        ("__half", "torch builds with __CUDA_NO_HALF_OPERATORS__: convert with __half2float/__float2half, "
                   "or use the __hadd/__hmul intrinsics"),
        ("__nv_bfloat16", "torch builds with __CUDA_NO_BFLOAT16_CONVERSIONS__: convert with __bfloat162float/"
                          "__float2bfloat16"),
    )
    compile_hint = ("nvcc's message, at the line it names; torch's build passes nvcc the same flags, so the GPU "
                    "build fails the same way")
    fact_hints = {"shared-memory": "smaller tiles in shared memory, or fewer stages of them",
                  "spills": "fewer live values per thread (smaller per-thread arrays, less unrolling), or a higher "
                            "-maxrregcount / __launch_bounds__ that leaves each thread more registers"}
    no_launch = ("no CUDA kernel to compile: {entry} is not run on the CPU, and no __global__ function was found "
                 "in the sources of its load_inline(cuda_sources=...) or load(sources=[...'.cu']) calls",
                 "host code that calls a library (cuBLAS) is legal but times the library; a __global__ kernel of "
                 "your own gets its registers here")

    def detect(self, tree: ast.Module) -> bool:
        return bool(loader_calls(tree))

    def static_checks(self, tree: ast.Module, folder: Path | None) -> list[Finding]:
        """A .cu file that a load() call names and that is not in the problem directory; L2 set aside for
        persisting lines (`persisting_l2`)."""
        findings = persisting_l2(tree, folder)
        for call in loader_calls(tree) if folder is not None else []:
            for name in named_cu_files(call):
                if not (folder / Path(name).name).is_file():
                    findings.append(Finding(Severity.ERROR.value, "cuda-source-missing",
                                            f"load() names {name}, which is not in the problem directory",
                                            call.node.lineno, call.node.col_offset + 1,
                                            "put the .cu file in the problem directory beside the candidate"))
        return findings


plugins.register(GROUP, Cuda.name, Cuda())
