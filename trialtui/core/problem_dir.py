"""Reading a problem directory into a `Problem`: its config, the registered form its reference has
(read from the syntax tree only), and that form's cases. Apart from `problem.py` because the forms
build on `Problem` and this module asks the forms.
"""

from __future__ import annotations

import ast
from pathlib import Path

from trialtui.core.config import ConfigError, load_config
from trialtui.core.forms import describe_all, detect
from trialtui.core.problem import REFERENCE_NAME, Problem, ProblemError


def _imported_files(tree: ast.Module, root: Path) -> set[str]:
    """Files beside the reference that it imports (`from task import input_t`): support, not candidates."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return {f"{name}.py" for name in names if (root / f"{name}.py").is_file()}


def load_problem(root: Path | str) -> Problem:
    """Read a problem directory; a ProblemError says what is missing or wrong."""
    root = Path(root).resolve()
    if not root.is_dir():
        raise ProblemError(f"{root} is not a directory")
    reference = root / REFERENCE_NAME
    if not reference.exists():
        raise ProblemError(
            f"no {REFERENCE_NAME} in {root}: a problem directory holds the PyTorch reference "
            f"({describe_all()}). `trialtui init DIR` makes one."
        )
    try:
        config = load_config(root)
    except ConfigError as exc:
        raise ProblemError(str(exc)) from exc
    form = detect(reference, root)
    problem = Problem(root=root, form=form.name, entry_point=form.entry_point, config=config)
    tree = ast.parse(reference.read_bytes())
    problem.not_candidates = _imported_files(tree, root)
    form.load(problem, tree)
    return problem
