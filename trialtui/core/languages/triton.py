"""Triton candidates (and plain PyTorch ones, which have no kernel language of their own).

Validation traces the candidate under Triton's interpreter on CPU tensors (the launches and a
correctness preview) and compiles each traced launch with `triton.compile` for the target
architecture: `trialtui.runner.compile_job`, with its trace (`trialtui.runner.triton_trace`) forked inside it.
"""

from __future__ import annotations

import ast

from pathlib import Path

from trialtui.core import job_kinds, plugins
from trialtui.core.check_ast import dotted_name
from trialtui.core.languages.base import GROUP, Language
from trialtui.core.languages.triton_checks import KERNEL_DECORATORS
from trialtui.core.model import Finding, Severity



def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name → what it imports (`tl` → triton.language, `jit` → triton.jit)."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return aliases


def has_kernel(tree: ast.Module) -> bool:
    """Whether any function is decorated @triton.jit, @triton.autotune or @triton.heuristics (however imported)."""
    aliases = _aliases(tree)
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for decorator in node.decorator_list:
            name = dotted_name(decorator.func if isinstance(decorator, ast.Call) else decorator)
            if name is None:
                continue
            head, _, rest = name.partition(".")
            if aliases.get(head, head) + (f".{rest}" if rest else "") in KERNEL_DECORATORS:
                return True
    return False


class Triton(Language):
    name = "triton"
    label = "Triton"
    priority = 0  # the default: any candidate no other language claims
    compile_job = job_kinds.TRITON_COMPILE.module
    compile_env = {"TRITON_INTERPRET": "0"}  # the compile side builds for real; the trace sets its own
    runs_on_cpu = True  # Triton's interpreter runs kernels on CPU tensors
    no_launch = ("{entry} ran once at the first test case without launching a Triton kernel",
                 "trialtui scores your kernel: move the work into a @triton.jit function and launch it")
    compile_hints = (
        ("reduction dimension", "tl.dot(a, b) needs a's last dimension equal to b's first: [M, K] @ [K, N]"),
        ("is not defined", "a kernel sees only its arguments, names it defines, tl.constexpr globals and other "
                           "@triton.jit functions: pass the value in, or make it a tl.constexpr global"),
        ("power of 2", "tl.arange and block shapes need powers of two: round up with triton.next_power_of_2 and mask"),
        ("out of resource", "lower num_stages or the BLOCK sizes"),
        ("ptxas", "ptxas rejected the generated code: try another num_warps/num_stages, or simplify the kernel"),
    )
    compile_hint = "the line is where Triton stopped; the validate log has its full message"
    fact_hints = {"shared-memory": "lower num_stages or the BLOCK sizes",
                  "spills": "smaller tiles, fewer num_stages, or more num_warps to spread the registers"}

    def static_checks(self, tree: ast.Module, folder: Path | None) -> list[Finding]:
        """A candidate without a Triton kernel is legal but times PyTorch."""
        if has_kernel(tree):
            return []
        return [Finding(Severity.WARNING.value, "no-triton-kernel", "no @triton.jit function: this candidate is pure "
                        "PyTorch", None, None, "legal, but it times PyTorch rather than a custom kernel; "
                        "write the hot loop as a @triton.jit kernel")]

    def detect(self, tree: ast.Module) -> bool:
        """Imports triton. Also the fallback for files no language claims (plain PyTorch)."""
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "triton" for a in node.names):
                return True
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "triton":
                return True
        return False


plugins.register(GROUP, Triton.name, Triton())
