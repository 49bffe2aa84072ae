"""A compile job's result as a type (issue 35): the interpreter's trace of the candidate and the build of
each kernel it launched, read once from the child's JSON (runner/compile_job.py for Triton,
runner/cuda_compile_job.py for CUDA C++); engine/validate.py reads its fields, never its keys."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trialtui.core.json_types import fits


@dataclass(frozen=True)
class CompileResult:
    """What the compile job found; a job that failed (timed out, died, was cancelled) is `failed`."""

    state: str  # "ok", or how the job failed: error | timeout | cancelled (engine/jobs.py)
    trace: dict[str, Any]  # the interpreter run: state, message, line, launches, skipped, preview
    compile: dict[str, Any] = field(default_factory=dict)  # the build: state, kernels, errors, skipped, message
    findings: list[dict[str, Any]] = field(default_factory=list)  # the language's own (CUDA C++'s nvcc checks)
    log_tail: str = ""  # the job log's last lines

    @property
    def failed(self) -> bool:
        """The job itself failed: its trace is the failure, nothing was built."""
        return self.state != "ok"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CompileResult:
        """The job's JSON (run_child checked its envelope). A failed job's envelope stands as its trace,
        with no launches: where it stopped is what the findings say; a key of the wrong type fails it."""
        tail = data.get("log_tail") if isinstance(data.get("log_tail"), str) else ""
        if data.get("state") != "ok":  # its envelope says how (needs_runner, containment...): kept whole
            return cls(str(data.get("state")), {**data, "launches": []}, log_tail=tail)
        for name, kind in (("trace", dict[str, Any]), ("compile", dict[str, Any]), ("findings", list[dict[str, Any]])):
            if name in data and not fits(data[name], kind):
                return cls.failure("error", f"malformed result from the compile job: {name} is {repr(data[name])[:80]}",
                                   tail)
        if not isinstance(data.get("trace"), dict):
            return cls.failure("error", "malformed result from the compile job: no trace", tail)
        return cls("ok", data["trace"], data.get("compile") or {}, data.get("findings") or [], tail)

    @classmethod
    def failure(cls, state: str, message: str, log_tail: str = "") -> CompileResult:
        """A job that traced and built nothing, for a reason of the engine's own."""
        return cls(state, {"state": state, "message": message, "launches": []}, log_tail=log_tail)
