"""`Language`: what a candidate's kernel language (Triton, CUDA C++, a plug-in's) says about itself.

This half is pure Python and reads source only: detection from a candidate's syntax tree, the
static checks the language adds, and the child job (a `trialtui.runner` module, or a third
party's, run like every job) that compiles its kernels for a GPU architecture without a GPU.
A language whose kernels cannot run on the CPU (`runs_on_cpu = False`) is never run there:
validation compiles it, and a benchmark on a machine without a GPU says it needs one.
"""

from __future__ import annotations

import ast
from abc import ABC, abstractmethod
from pathlib import Path

from trialtui.core.model import Finding

GROUP = "trialtui.languages"


class Language(ABC):
    """One candidate language; an instance is registered under `name` in `trialtui.languages`."""

    name: str  # the registry key; validation results carry it as `language`
    label: str  # as people write it, in messages: "CUDA C++"
    priority: int = 0  # detection order, higher first: the more specific language claims a file first
    compile_job: str  # `python -m <compile_job> SPEC RESULT`: returns {"trace": ..., "compile": ...}
    compile_env: dict[str, str] = {}  # environment of the compile job beyond CUDA_VISIBLE_DEVICES=""
    runs_on_cpu: bool = True  # False: never run on the CPU to judge it; correctness and timing need a GPU
    no_launch: tuple[str, str]  # (message, hint) when the compile job found no kernel; {entry} is the entry point
    compile_hints: tuple[tuple[str, str], ...] = ()  # (words in its compiler's message, what to do about them)
    compile_hint: str = "the validate log has the compiler's full message"  # for any other compile error
    # what to do when a kernel's compile facts will fail or hurt on the GPU, by finding code
    fact_hints: dict[str, str] = {"shared-memory": "use less shared memory per block",
                                  "spills": "fewer live values per thread, so that they fit in registers"}
    # "module:function" the candidate's process calls with its launch counter before importing the
    # candidate, for launches the Triton JIT does not see; None when those are all there are
    launch_counter: str | None = None

    @abstractmethod
    def detect(self, tree: ast.Module) -> bool:
        """Whether a candidate with this syntax tree is written in this language."""

    def static_checks(self, tree: ast.Module, folder: Path | None) -> list[Finding]:
        """Findings of this language's own, from the syntax tree alone (`folder`: the problem
        directory, for files a candidate names beside it; None when only the text is checked)."""
        return []
