"""GPU MODE form: `ref_kernel`, `generate_input`, `check_implementation` with `task.yml`;
candidates define `custom_kernel`, and the problem's own `check_implementation` judges values.

A case is the keyword arguments of `generate_input`, from task.yml's `tests:` and `benchmarks:`.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from trialtui.core import plugins
from trialtui.core.forms.base import ProblemForm
from trialtui.core.problem import REFERENCE_NAME, Problem, ProblemError

TASK_NAME = "task.yml"


def _read_task(task_path: Path) -> dict[str, Any]:
    import yaml  # only GPU MODE problems need it

    try:
        task = yaml.safe_load(task_path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ProblemError(f"{TASK_NAME}: {exc}") from exc
    if not isinstance(task, dict):
        raise ProblemError(f"{TASK_NAME} must be a mapping with tests: and benchmarks:")
    return task


def _task_cases(task: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    tests = task.get("tests") or []
    benches = task.get("benchmarks") or []
    for key, cases in (("tests", tests), ("benchmarks", benches)):
        if not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases):
            raise ProblemError(f"{TASK_NAME}: {key}: must be a list of argument mappings")
    if not tests:
        raise ProblemError(f"{TASK_NAME} has no tests: entries")
    return tests, benches or tests


SUBMISSION_SOURCE = "@SUBMISSION@"


def _imported(tree: ast.Module) -> set[str]:
    """Top-level module names the reference imports."""
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    return names | {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and not n.level}


def _task_files(task: dict[str, Any], root: Path, imported: set[str] = frozenset()) -> tuple[list[Path], set[str]]:
    """GPU MODE's `files:` (support modules such as `../utils.py`, which the reference and the
    candidate import) and the names beside the reference that are not candidates (those files,
    `templates:`). The submission entry is the candidate itself."""
    files = task.get("files") or []
    templates = task.get("templates") or {}
    if not isinstance(files, list) or not all(isinstance(f, dict) for f in files):
        raise ProblemError(f"{TASK_NAME}: files: must be a list of {{name, source}} mappings")
    if not isinstance(templates, dict):
        raise ProblemError(f"{TASK_NAME}: templates: must map a language to a file")
    support: list[Path] = []
    not_candidates: set[str] = set()
    for entry in files:
        name, source = entry.get("name"), entry.get("source")
        if not isinstance(name, str) or not isinstance(source, str):
            raise ProblemError(f"{TASK_NAME}: files: each entry needs a name and a source, got {entry}")
        if source == SUBMISSION_SOURCE:
            continue
        path = (root / source).resolve()
        if not path.is_file() and (root / path.name).is_file():  # a task folder copied alone, its utils.py put beside
            path = root / path.name
        not_candidates.update({name, path.name} if path.parent == root else {name})
        if path.suffix == ".py" and path.name != REFERENCE_NAME and path.is_file():
            support.append(path)
        elif path.suffix == ".py" and path.stem in imported:
            raise ProblemError(f"{TASK_NAME} lists {source} (the reference imports it as {path.stem}), "
                               f"but there is no {path}: copy {path.name} to {path}, where {TASK_NAME}'s "
                               f"files: names it ({source}), or beside {REFERENCE_NAME}")
    for source in templates.values():
        if isinstance(source, str) and (root / source).resolve().parent == root:
            not_candidates.add(Path(source).name)
    return support, not_candidates



class GpuMode(ProblemForm):
    name = "gpumode"
    label = "GPU MODE"
    entry_point = "custom_kernel"
    entry_hint = "def custom_kernel(data) that returns the output"
    reference_names = ("ref_kernel", "generate_input", "check_implementation")
    problem_modules = frozenset({"task"})  # task.py holds the input_t/output_t types submissions import
    runner = "trialtui.runner.forms.gpumode:FORM"
    judge = "check_implementation"
    keeps_input_dtypes = True

    @property
    def describe_reference(self) -> str:
        return f"{', '.join(self.reference_names)} with {TASK_NAME}"

    def accept(self, root: Path, reference: Path) -> None:
        if not (root / TASK_NAME).exists():
            raise ProblemError(
                f"{reference.name} is in GPU MODE form but {TASK_NAME} is missing "
                "(it lists the tests: and benchmarks: argument sets)"
            )

    def load(self, problem: Problem, tree: ast.Module) -> None:
        spec = _read_task(problem.root / TASK_NAME)
        tests, benches = _task_cases(spec)
        problem.support_files, listed = _task_files(spec, problem.root, _imported(tree))
        problem.not_candidates |= listed
        problem.test_cases = problem.config.test_sizes or tests
        problem.bench_cases = problem.config.bench_sizes or benches

    def held_out_sizes(self, problem: Problem, case: dict[str, Any]) -> dict[str, int]:
        """`generate_input`'s whole-number arguments but its seed, which the run's fresh seed joins."""
        return {key: value for key, value in super().held_out_sizes(problem, case).items() if key != "seed"}


FORM = GpuMode()
plugins.register("trialtui.forms", FORM.name, FORM)
