"""A language plug-in in one module: candidates that set KERNEL_LANGUAGE = "testlang" at top level.

Its kernels are the top-level `kernel_*` functions; its compile job (language_job.py, run in a
child process like every job) reports one fact per kernel. It never runs on the CPU, so a
benchmark without a GPU says it needs one.
"""

from __future__ import annotations

import ast
from pathlib import Path

from trialtui.core.languages.base import Language
from trialtui.core.model import Finding


def kernels(tree: ast.Module) -> list[ast.FunctionDef]:
    return [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("kernel_")]


class TestLang(Language):
    name = "testlang"
    label = "TestLang"
    priority = 20
    compile_job = "trialtui_testplugin.language_job"
    runs_on_cpu = False
    no_launch = ("no kernel_* function in a TestLang candidate ({entry} is only the wrapper)", "define kernel_<name>")

    def detect(self, tree: ast.Module) -> bool:
        return any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "KERNEL_LANGUAGE"
                                                     for t in n.targets)
                   and isinstance(n.value, ast.Constant) and n.value.value == "testlang" for n in tree.body)

    def static_checks(self, tree: ast.Module, folder: Path | None) -> list[Finding]:
        return [Finding("warning", "testlang-args", f"kernel {k.name} takes no arguments", k.lineno, None,
                        "pass the tensors in") for k in kernels(tree) if not k.args.args]


LANGUAGE = TestLang()
