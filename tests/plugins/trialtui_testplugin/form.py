"""A third problem form in one module: `reference.py` defines `reference(x)`, `make_input(n, seed)`
and `SIZES`; a candidate defines `solution(x)`. Both halves live here; neither imports torch
(the reference's own `make_input` does), so the engine's process can import this module."""

from __future__ import annotations

import ast

from trialtui.core.forms import ProblemForm
from trialtui.core.problem import ProblemError, top_level_names
from trialtui.runner.forms import ReferenceCall, RunnerForm


class ScalarFn(ProblemForm):
    name = "scalarfn"
    label = "ScalarFn"
    entry_point = "solution"
    entry_hint = "def solution(x) that returns what reference(x) returns"
    reference_names = ("reference", "make_input", "SIZES")
    runner = "trialtui_testplugin.form:RUNNER"

    def load(self, problem, tree: ast.Module) -> None:
        node = top_level_names(tree)["SIZES"]
        try:
            sizes = ast.literal_eval(node.value)
        except (ValueError, AttributeError) as exc:
            raise ProblemError("SIZES must be a literal list of lengths") from exc
        problem.test_cases = [{"n": n} for n in sizes]
        problem.bench_cases = [{"n": max(sizes)}]


class ScalarFnRunner(RunnerForm):
    def make_inputs(self, ref, case, seed):
        return ref.module.make_input(case["n"], seed).to(device=ref.device, dtype=ref.dtype)

    def reference_call(self, ref, case, seed):
        return ReferenceCall(ref.module.reference)


FORM = ScalarFn()
RUNNER = ScalarFnRunner()
