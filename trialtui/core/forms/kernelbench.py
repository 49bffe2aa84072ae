"""KernelBench form: `Model`, `get_inputs`, `get_init_inputs`; candidates define `ModelNew`.

A case overrides module-level size constants of reference.py; derived constants follow them.
"""

from __future__ import annotations

import ast
import io
import tokenize
from typing import Any

from trialtui.core import plugins
from trialtui.core.config import Config
from trialtui.core.forms.base import ProblemForm
from trialtui.core.problem import REFERENCE_NAME, Problem, ProblemError, literal_sizes, size_constants, top_level_names


def _check_sizes(config: Config, tree: ast.Module, defaults: dict[str, Any]) -> None:
    """Overrides must name size constants of the reference and give values of their kind."""
    defined = top_level_names(tree)
    for case in config.test_sizes + config.bench_sizes:
        for key, value in case.items():
            if key not in defaults:
                if key in defined:
                    raise ProblemError(
                        f"test/bench sizes name {key}, which {REFERENCE_NAME} defines but not as a size "
                        "constant (a number or a tuple of numbers at module level), so it cannot be overridden"
                    )
                raise ProblemError(
                    f"test/bench sizes name {key}, which {REFERENCE_NAME} does not define at module level "
                    f"(it defines {', '.join(sorted(defaults)) or 'none'})"
                )
            default = defaults[key]
            numbers = value if isinstance(default, tuple) else [value]
            shape_ok = isinstance(value, list) if isinstance(default, tuple) else not isinstance(value, list)
            if not shape_ok or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in numbers):
                want = f"a list of {len(default)} numbers" if isinstance(default, tuple) else "a number"
                raise ProblemError(f"test/bench sizes: {key} = {value!r}, but {key} is {want} in {REFERENCE_NAME}")


def rename_model(source: str) -> str:
    """`Model` → `ModelNew` wherever the name is used (`class Model(`, `super(Model, self)`), not in
    strings, comments or attribute names, so the candidate runs as written."""
    lines = source.splitlines(keepends=True)
    previous = None
    spots = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.NAME and token.string == "Model" and previous != ".":
            spots.append(token.start)
        if token.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
            previous = token.string
    for row, col in reversed(spots):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + "ModelNew" + line[col + len("Model"):]
    return "".join(lines)


class KernelBench(ProblemForm):
    name = "kernelbench"
    label = "KernelBench"
    entry_point = "ModelNew"
    entry_hint = "class ModelNew(nn.Module) with the same constructor arguments as Model"
    start_hint = ("start a candidate as a copy of it (cp reference.py my_kernel.py) with Model renamed ModelNew "
                  "(class ModelNew, super(ModelNew, self)); then put your kernel in its forward")
    reference_names = ("Model", "get_inputs", "get_init_inputs")
    runner = "trialtui.runner.forms.kernelbench:FORM"

    def load(self, problem: Problem, tree: ast.Module) -> None:
        problem.defaults = size_constants(tree)
        _check_sizes(problem.config, tree, problem.defaults)
        problem.test_cases = problem.config.test_sizes or [{}]
        problem.bench_cases = problem.config.bench_sizes or [{}]

    def held_out_sizes(self, problem: Problem, case: dict[str, Any]) -> dict[str, int]:
        """The reference's literal whole-number sizes (`dim = 4096`; derived ones follow them), as `case` sets them."""
        tree = ast.parse(problem.reference.read_text(encoding="utf-8"))
        return super().held_out_sizes(problem, {**literal_sizes(tree), **case})

    def scaffold_candidate(self, reference_source: str) -> tuple[str, dict[str, object]]:
        candidate = (
            "# strategy: first version\n# Define ModelNew with the same constructor arguments as Model.\n"
            + rename_model(reference_source)
        )
        return candidate, literal_sizes(ast.parse(reference_source))


FORM = KernelBench()
plugins.register("trialtui.forms", FORM.name, FORM)
