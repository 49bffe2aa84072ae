"""A profile as a type (issue 35): what `profile_file` gives the engine (a profiler job's JSON and what the
engine adds to it), what a trial keeps and what the front ends show, one commented field per key the
package reads; each profiler's own keys (ncu's kernels and metrics, CUPTI's records) stay in its JSON,
read by that profiler (core/profilers/) through the record's mapping view."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trialtui.core.json_record import JsonRecord
from trialtui.core.result import ResultError


@dataclass(frozen=True)
class ProfileResult(JsonRecord):
    """One profile of one candidate: the profiler that gave it, or why none could."""

    source: str | None = None  # the profiler's name (core/profilers): "ncu", "activity", "analytic", a plug-in's
    label: str | None = None  # how the front ends name it: "Nsight Compute counters"
    available: bool | None = None  # it read what it needs; else `reason` says why not
    reason: str | None = None  # why it gave nothing (no permission, no records)
    message: str | None = None  # how the job failed, where it did (a timeout, a crash)
    state: str | None = None  # the job's state ("ok", or how it failed); none for a profiler that runs no job
    skipped: list[dict[str, Any]] | None = None  # better profilers that gave nothing here: {"source", "reason"}
    blocked: bool | None = None  # its reason holds for the whole machine: not tried again in this process
    report: str | None = None  # a file worth keeping (an .ncu-rep for the GUI), under .trialtui/profiles/
    wall_s: float | None = None  # the profile's wall-clock seconds
    extra: dict[str, Any] = field(default_factory=dict)  # the profiler's own keys, kept whole
    _keys: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @classmethod
    def from_json(cls, data: Any) -> ProfileResult:
        """A profile read from JSON (a job's, a far side's, the store's); ResultError says what is wrong."""
        if not isinstance(data, dict):
            raise ResultError(f"a profile is a JSON object, not {type(data).__name__}")
        return cls._read(data, ResultError)

    @classmethod
    def read(cls, data: Any, **engine: Any) -> ProfileResult:
        """A profile job's JSON with what the engine adds to it (`engine`: source, label, skipped, wall_s); a
        malformed one is a profile that read nothing, saying why."""
        try:
            return cls.from_json({**data, **engine} if isinstance(data, dict) else data)
        except ResultError as exc:
            return cls.unavailable(f"malformed result from the profile job: {exc}", source=engine.get("source"))

    @classmethod
    def unavailable(cls, reason: str, **fields: Any) -> ProfileResult:
        """The one constructor for a profile that read nothing, for a reason of the engine's own."""
        return cls(available=False, reason=reason, skipped=[], **fields,
                   _keys=("available", "reason", "skipped", *fields))
