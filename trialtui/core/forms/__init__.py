"""Problem forms by name: the built-ins (KernelBench, GPU MODE) and plug-ins of `trialtui.forms`.

Nothing outside a form's own modules asks which form a problem has; it asks the form.
"""

from __future__ import annotations

import ast
from pathlib import Path

from trialtui.core import plugins
from trialtui.core.forms import gpumode, kernelbench  # noqa: F401 - importing them registers them
from trialtui.core.forms.base import ProblemForm
from trialtui.core.problem import ProblemError, top_level_names

GROUP = "trialtui.forms"


def all_forms() -> dict[str, ProblemForm]:
    """Every usable form, built-ins first; a plug-in that is not a ProblemForm is reported and skipped."""
    return plugins.of_type(GROUP, ProblemForm)


def get_form(name: str) -> ProblemForm:
    forms = all_forms()
    if name not in forms:
        raise ValueError(f"unknown problem form {name!r}; expected one of {', '.join(forms)}")
    return forms[name]


def detect(reference: Path, root: Path | None = None) -> ProblemForm:
    """The form whose marking names the reference defines (read from its syntax tree only); with
    `root`, the form also checks the rest of the directory. Else a ProblemError naming what is missing."""
    try:
        tree = ast.parse(reference.read_bytes(), filename=str(reference))
    except SyntaxError as exc:
        raise ProblemError(f"{reference.name} line {exc.lineno}: syntax error: {exc.msg}") from exc
    except ValueError as exc:  # null bytes
        raise ProblemError(f"{reference.name}: not Python source ({exc})") from exc
    names = top_level_names(tree)
    missing = {form: [n for n in form.reference_names if n not in names] for form in all_forms().values()}
    for form, lacks in missing.items():
        if not lacks:
            if root is not None:
                form.accept(root, reference)
            return form
    ranked = sorted(missing, key=lambda f: len(missing[f]))  # stable: built-ins win ties
    best, others = ranked[0], ranked[1:]
    alternatives = "; ".join(f"for {f.label} form, {', '.join(missing[f])}" for f in others)
    raise ProblemError(
        f"{reference.name} is not a {best.label} problem: missing {', '.join(missing[best])}"
        + (f" (or, {alternatives})" if alternatives else "")
    )


def describe_all() -> str:
    """What a reference defines in each form, for the message when there is no reference.py."""
    return "; ".join(f"{f.label}: {f.describe_reference}" for f in all_forms().values())
