"""Every child job is named once, in core/job_kinds.py: each name there is a module of the runner, and no
other file outside the runner spells one (a string naming a runner module gets past the layer test's
import check, so a renamed job module would fail only when a user's save started it). The one other
kind of name allowed is a form's runner half (`runner = "module:FORM"` in core/forms/), the plug-in
point a third-party form uses too; each must resolve."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

from trialtui.core import job_kinds

PACKAGE = Path(__file__).parents[1] / "trialtui"
REGISTRY = PACKAGE / "core" / "job_kinds.py"


def test_every_job_kind_names_a_runner_module():
    names = [kind.module for kind in job_kinds.KINDS] + [job_kinds.SUPERVISOR, job_kinds.FORKSERVER,
                                                         job_kinds.CUDA_LAUNCH_COUNTER.split(":")[0]]
    for name in names:
        assert name.startswith("trialtui.runner."), name
        assert importlib.util.find_spec(name) is not None, f"{name} is not a module"
    assert len({kind.module for kind in job_kinds.KINDS}) == len(job_kinds.KINDS)


def test_no_other_file_outside_the_runner_names_a_runner_module_in_a_string():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == REGISTRY or (PACKAGE / "runner") in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "trialtui.runner." in node.value:
                if " " in node.value.strip():
                    continue  # prose that mentions a module, not a name of one
                if path.parent == PACKAGE / "core" / "forms" and ":" in node.value:
                    module = node.value.split(":")[0]
                    assert importlib.util.find_spec(module) is not None, f"{path.name}: {module} is not a module"
                    continue
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {node.value!r}")
    assert not found, "\n".join(found)
