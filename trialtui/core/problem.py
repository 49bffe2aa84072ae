"""A problem directory: its reference in KernelBench or GPU MODE form, its cases and candidates.

Detection reads the reference's syntax tree only; nothing of the user's is executed here.
"""

from __future__ import annotations

import ast
import fnmatch
import operator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trialtui.core.config import Config, ConfigError, load_config

REFERENCE_NAME = "reference.py"
TASK_NAME = "task.yml"
KERNELBENCH = "kernelbench"
GPUMODE = "gpumode"
ENTRY_POINTS = {KERNELBENCH: "ModelNew", GPUMODE: "custom_kernel"}
_KB_NAMES = ("Model", "get_inputs", "get_init_inputs")
_GM_NAMES = ("ref_kernel", "generate_input", "check_implementation")


class ProblemError(ValueError):
    """A directory that is not a usable problem; the message says what is missing."""


def top_level_names(tree: ast.Module) -> dict[str, ast.AST]:
    """Names a module defines at top level (functions, classes, simple assignments)."""
    names: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names[(alias.asname or alias.name).split(".")[0]] = node
    return names


_ARITH = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
    ast.Div: operator.truediv, ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.Mod: operator.mod,
}


def _number(node: ast.AST, known: dict[str, Any]) -> int | float:
    """Evaluate `4096`, `1 << 26`, `2 * dim` without executing anything."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name) and node.id in known:
        return known[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_number(node.operand, known)
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
        left, right = _number(node.left, known), _number(node.right, known)
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise ValueError("exponent too large")
        return _ARITH[type(node.op)](left, right)
    raise ValueError("not a constant size")


def size_constants(tree: ast.Module) -> dict[str, Any]:
    """Module-level numeric constants (`batch_size = 16`, `n = 1 << 20`): the sizes a config may override."""
    sizes: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                sizes[node.targets[0].id] = _number(node.value, sizes)
            except (ValueError, ZeroDivisionError, OverflowError):
                continue
    return sizes


def detect_form(reference: Path, has_task: bool) -> str:
    """KernelBench or GPU MODE, from the names the reference defines; else a ProblemError."""
    try:
        tree = ast.parse(reference.read_bytes(), filename=str(reference))
    except SyntaxError as exc:
        raise ProblemError(f"{reference.name} line {exc.lineno}: syntax error: {exc.msg}") from exc
    except ValueError as exc:  # null bytes
        raise ProblemError(f"{reference.name}: not Python source ({exc})") from exc
    names = top_level_names(tree)
    kb_missing = [n for n in _KB_NAMES if n not in names]
    gm_missing = [n for n in _GM_NAMES if n not in names]
    if not kb_missing:
        return KERNELBENCH
    if not gm_missing:
        if not has_task:
            raise ProblemError(
                f"{reference.name} is in GPU MODE form but {TASK_NAME} is missing "
                "(it lists the tests: and benchmarks: argument sets)"
            )
        return GPUMODE
    if len(kb_missing) <= len(gm_missing):
        raise ProblemError(
            f"{reference.name} is not a KernelBench problem: missing {', '.join(kb_missing)} "
            f"(or, for GPU MODE form, {', '.join(gm_missing)})"
        )
    raise ProblemError(
        f"{reference.name} is not a GPU MODE problem: missing {', '.join(gm_missing)} "
        f"(or, for KernelBench form, {', '.join(kb_missing)})"
    )


def _task_cases(task_path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    import yaml  # only GPU MODE problems need it

    try:
        task = yaml.safe_load(task_path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ProblemError(f"{TASK_NAME}: {exc}") from exc
    if not isinstance(task, dict):
        raise ProblemError(f"{TASK_NAME} must be a mapping with tests: and benchmarks:")
    tests = task.get("tests") or []
    benches = task.get("benchmarks") or []
    for key, cases in (("tests", tests), ("benchmarks", benches)):
        if not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases):
            raise ProblemError(f"{TASK_NAME}: {key}: must be a list of argument mappings")
    if not tests:
        raise ProblemError(f"{TASK_NAME} has no tests: entries")
    return tests, benches or tests


@dataclass
class Problem:
    """What the runner needs to know to check and time a candidate, and nothing it must execute."""

    root: Path
    form: str
    config: Config
    defaults: dict[str, Any] = field(default_factory=dict)
    test_cases: list[dict[str, Any]] = field(default_factory=list)
    bench_cases: list[dict[str, Any]] = field(default_factory=list)

    @property
    def reference(self) -> Path:
        return self.root / REFERENCE_NAME

    @property
    def entry_point(self) -> str:
        return ENTRY_POINTS[self.form]

    @property
    def name(self) -> str:
        return self.root.name

    @property
    def state_dir(self) -> Path:
        return self.root / ".trialtui"

    def is_candidate(self, path: Path) -> bool:
        """Candidate files: top-level `*.py` except the reference, private names and excludes."""
        path = Path(path)
        try:
            rel = path.resolve().relative_to(self.root.resolve())
        except ValueError:
            return False
        if len(rel.parts) != 1 or path.suffix != ".py":
            return False
        name = rel.name
        if name == REFERENCE_NAME or name.startswith(("_", ".")):
            return False
        return not any(fnmatch.fnmatch(name, pattern) for pattern in self.config.exclude)

    def candidates(self) -> list[Path]:
        return sorted(p for p in self.root.glob("*.py") if self.is_candidate(p))

    def job_spec(self, **extra: Any) -> dict[str, Any]:
        """The JSON-able description of this problem that child processes receive."""
        atol, rtol = self.config.tolerance
        return {
            "root": str(self.root),
            "reference": str(self.reference),
            "form": self.form,
            "entry_point": self.entry_point,
            "dtype": self.config.dtype,
            "atol": atol,
            "rtol": rtol,
            "allow_tf32": self.config.allow_tf32,
            "test_cases": self.test_cases,
            "bench_cases": self.bench_cases,
            **extra,
        }


def load_problem(root: Path | str) -> Problem:
    """Read a problem directory; a ProblemError says what is missing or wrong."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise ProblemError(f"{root} is not a directory")
    reference = root / REFERENCE_NAME
    if not reference.exists():
        raise ProblemError(
            f"no {REFERENCE_NAME} in {root}: a problem directory holds the PyTorch reference "
            "(KernelBench: Model, get_inputs, get_init_inputs; GPU MODE: ref_kernel, "
            "generate_input, check_implementation with task.yml). `trialtui init DIR` makes one."
        )
    try:
        config = load_config(root)
    except ConfigError as exc:
        raise ProblemError(str(exc)) from exc
    task = root / TASK_NAME
    form = detect_form(reference, task.exists())
    problem = Problem(root=root, form=form, config=config)
    if form == KERNELBENCH:
        problem.defaults = size_constants(ast.parse(reference.read_bytes()))
        unknown = {k for case in config.test_sizes + config.bench_sizes for k in case} - set(problem.defaults)
        if unknown:
            raise ProblemError(
                f"test/bench sizes name {', '.join(sorted(unknown))}, which {REFERENCE_NAME} does not "
                f"define at module level (it defines {', '.join(sorted(problem.defaults)) or 'none'})"
            )
        problem.test_cases = config.test_sizes or [{}]
        problem.bench_cases = config.bench_sizes or [{}]
    else:
        tests, benches = _task_cases(task)
        problem.test_cases = config.test_sizes or tests
        problem.bench_cases = config.bench_sizes or benches
    return problem
