"""A save's validation as a type (issue 35): the static checks and the compile stage's report
(engine/validate.py), what a trial keeps, the views and `trialtui validate` read by field."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trialtui.core.json_record import JsonRecord
from trialtui.core.result import ResultError


@dataclass(frozen=True)
class ValidationReport(JsonRecord):
    """What the CPU found before the GPU: findings, the compiled kernels' facts, the interpreter's preview."""

    ok: bool  # no error
    invalid: bool | None = None  # an error says the file is malformed (an error of running it on the CPU does not)
    file: str | None = None  # the file validated (a snapshot's path where the engine validated one)
    form: str | None = None  # the problem's form
    language: str | None = None  # the candidate's language (triton, cuda)
    arch: list[str] | None = None  # the targets it was compiled for: ["sm_90"]
    errors: list[dict[str, Any]] = field(default_factory=list)  # Finding dicts: severity, code, message, line, col, hint
    warnings: list[dict[str, Any]] = field(default_factory=list)  # the same, not errors
    kernels: list[dict[str, Any]] | None = None  # per launch and arch: registers, spills, shared bytes, tensor cores...
    preview: dict[str, Any] | None = None  # the interpreter's run on the CPU: correct, max_abs_err, message, case
    elapsed_ms: float | None = None  # the whole validation
    static_ms: float | None = None  # the static checks
    compile_ms: float | None = None  # the compile stage; None where it was skipped
    log: str | None = None  # the compile stage's log
    extra: dict[str, Any] = field(default_factory=dict)  # keys this type does not name, kept whole
    _keys: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @property
    def rejects_file(self) -> bool:
        """An error says the file itself is malformed: invalid, no benchmark job (a report that does not say,
        a fake's, is taken at its `ok`). An error of running it on the CPU leaves that to the bench job."""
        return self.invalid if self.invalid is not None else not self.ok

    @classmethod
    def from_json(cls, data: Any) -> ValidationReport:
        """A report read from JSON (validate_file's, a far side's, the store's); ResultError says what is wrong."""
        if not isinstance(data, dict) or not isinstance(data.get("ok"), bool):
            raise ResultError(f"a validation report is a JSON object with `ok`, not {repr(data)[:80]}")
        return cls._read(data, ResultError)
