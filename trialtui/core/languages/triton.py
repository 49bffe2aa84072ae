"""Triton candidates (and plain PyTorch ones, which have no kernel language of their own).

Validation traces the candidate under Triton's interpreter on CPU tensors (the launches and a
correctness preview) and compiles each traced launch with `triton.compile` for the target
architecture: `trialtui.runner.compile_job`, with `trialtui.runner.trace_job` forked inside it.
"""

from __future__ import annotations

import ast

from trialtui.core import plugins
from trialtui.core.languages.base import GROUP, Language


class Triton(Language):
    name = "triton"
    label = "Triton"
    priority = 0  # the default: any candidate no other language claims
    compile_job = "trialtui.runner.compile_job"
    compile_env = {"TRITON_INTERPRET": "0"}  # the compile side builds for real; the trace sets its own
    runs_on_cpu = True  # Triton's interpreter runs kernels on CPU tensors
    no_launch = ("{entry} ran once at the first test case without launching a Triton kernel",
                 "trialtui scores your kernel: move the work into a @triton.jit function and launch it")

    def detect(self, tree: ast.Module) -> bool:
        """Imports triton. Also the fallback for files no language claims (plain PyTorch)."""
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "triton" for a in node.names):
                return True
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "triton":
                return True
        return False


plugins.register(GROUP, Triton.name, Triton())
