"""`trialtui calibrate`'s result as a type (issue 35): the calibrate job's JSON (runner/calibrate_job.py) read
once, its ceilings a `Ceilings` (core/gpus.py) for the CLI to show beside the datasheet."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trialtui.core.gpus import Ceilings
from trialtui.core.json_record import JsonRecord
from trialtui.core.result import ResultError


@dataclass(frozen=True)
class CalibrationResult(JsonRecord):
    """This GPU's measured copy bandwidth and matmul rates, or why they could not be measured."""

    state: str  # "ok", or how the job failed
    version: int | None = None  # the job's result schema
    message: str | None = None  # what went wrong
    ceilings: dict[str, Any] | None = None  # the measured ceilings as `Ceilings.to_dict` writes them
    cache: str | None = None  # the file rooflines on this GPU and driver read them from
    extra: dict[str, Any] = field(default_factory=dict)  # keys this type does not name (a failed job's envelope)
    _keys: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @property
    def ok(self) -> bool:
        return self.state == "ok" and self.measured is not None

    @property
    def measured(self) -> Ceilings | None:
        """The ceilings as the roofline reads them; None where the job measured none."""
        try:
            return Ceilings.from_dict(self.ceilings) if self.ceilings else None
        except (KeyError, TypeError, ValueError):
            return None

    @classmethod
    def read(cls, data: Any) -> CalibrationResult:
        """The job's JSON (run_child checked its envelope); a malformed one is an error result."""
        try:
            if not isinstance(data, dict) or not isinstance(data.get("state"), str):
                raise ResultError(f"not a result: {repr(data)[:80]}")
            return cls._read(data, ResultError)
        except ResultError as exc:
            return cls(state="error", message=f"malformed result from the calibrate job: {exc}", _keys=("state", "message"))
