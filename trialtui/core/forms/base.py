"""`ProblemForm`: what a problem format (KernelBench, GPU MODE, a plug-in's) must say about itself.

This half is pure Python and reads files only: detection, cases, the entry point, what the static
checks need, scaffolding. The half that imports torch and runs the reference lives in a child
process; `runner` names it ("module:attribute"), resolved only by `trialtui.runner.forms`.
"""

from __future__ import annotations

import ast
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trialtui.core.problem import Problem


class ProblemForm(ABC):
    """One problem format; an instance is registered under `name` in the `trialtui.forms` group."""

    name: str  # the registry key; job specs, results and `Problem.form` carry it
    label: str  # as people write it, in messages: "KernelBench"
    entry_point: str  # what a candidate defines and the harness calls
    entry_hint: str  # how to define it, for the static check's hint
    reference_names: tuple[str, ...]  # top-level names of reference.py that mark this form
    problem_modules: frozenset[str] = frozenset()  # problem files a candidate may import (GPU MODE's task.py)
    runner: str  # "module:attribute" of the child-process half, a `trialtui.runner.forms.RunnerForm`
    judge: str | None = None  # the problem's own check of values (GPU MODE's), where trialtui.toml sets no tolerance
    keeps_input_dtypes: bool = False  # inputs keep the dtypes the problem makes them in (else: trialtui.toml's dtype)

    @property
    def describe_reference(self) -> str:
        """What reference.py defines in this form, for messages."""
        return ", ".join(self.reference_names)

    @property
    def start_hint(self) -> str:
        """How to start a candidate, said to someone who ran the reference as one."""
        return f"start a candidate in a new .py file beside it that defines {self.entry_hint}"

    def accept(self, root: Path, reference: Path) -> None:
        """Raise ProblemError when the reference has this form's names but the directory lacks
        something else the form needs (GPU MODE's task.yml)."""

    @abstractmethod
    def load(self, problem: Problem, tree: ast.Module) -> None:
        """Fill the problem's cases, size defaults, support files and non-candidate names."""

    def held_out_sizes(self, problem: Problem, case: dict[str, Any]) -> dict[str, int]:
        """The sizes a held-out case may change (core/heldout.py), at their values in `case`: its whole
        numbers by default."""
        return {key: value for key, value in case.items() if isinstance(value, int) and not isinstance(value, bool)}

    def scaffold_candidate(self, reference_source: str) -> tuple[str, dict[str, object]] | None:
        """A first candidate written from a reference file of this form, and the sizes the config
        should list; None when `trialtui init --from` does not support this form."""
        return None
