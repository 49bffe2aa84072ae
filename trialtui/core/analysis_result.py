"""The reference's analysis as a type (issue 35): the analyze job's JSON (runner/analyze_job.py) read once,
cached per reference and sizes, and what the verdicts and `trialtui analyze` read by field."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trialtui.core.json_record import JsonRecord
from trialtui.core.result import ResultError


@dataclass(frozen=True)
class AnalysisResult(JsonRecord):
    """The reference's FLOPs and least traffic at the bench sizes, its ops and the fusions they allow."""

    state: str  # "ok", or how the job failed (error, timeout...): then only `message` says more
    version: int | None = None  # the job's result schema
    message: str | None = None  # what went wrong
    dtype: str | None = None  # the problem's dtype, which the floor's peak follows
    device: str | None = None  # where the reference was traced: "meta" (no memory) or "cpu"
    flops: float | None = None  # FLOPs of one call (torch's FlopCounterMode)
    input_bytes: float | None = None  # its inputs and weights
    output_bytes: float | None = None  # its outputs
    min_bytes: float | None = None  # each input read once, each output written once: the floor's traffic
    eager_bytes: float | None = None  # what its eager ops move between them
    matmul_like: bool | None = None  # a matmul among its ops: the tensor-core verdicts apply
    fusion: list[dict[str, Any]] | None = None  # chances to fuse ops: {"pattern", "ops", "saves_bytes", "message"}
    ops: list[dict[str, Any]] | None = None  # the first ops: {"op", "kind", "inputs", "outputs", "dtype", "flops", "bytes"}
    ops_total: int | None = None  # how many ops it ran
    case: dict[str, Any] | None = None  # the sizes it was traced at
    scaled: dict[str, Any] | None = None  # test-size figures scaled to the bench's: {"from", "to", "factor", "note"}
    fallback: list[str] | None = None  # why the meta trace failed, where the CPU traced it
    roofline: dict[str, Any] | None = None  # at the GPU the job was asked for (core/roofline.py's dict)
    extra: dict[str, Any] = field(default_factory=dict)  # keys this type does not name, kept whole
    _keys: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @property
    def ok(self) -> bool:
        return self.state == "ok"

    @classmethod
    def from_json(cls, data: Any) -> AnalysisResult:
        """An analysis read from JSON (a job's, a far side's, the cache's); ResultError says what is wrong."""
        if not isinstance(data, dict) or not isinstance(data.get("state"), str):
            raise ResultError(f"an analysis is a JSON object with a state, not {repr(data)[:80]}")
        return cls._read(data, ResultError)

    @classmethod
    def failure(cls, message: str, state: str = "error") -> AnalysisResult:
        """The one constructor for an analysis that could not be made."""
        return cls(state=state, message=message, _keys=("state", "message"))

    @classmethod
    def read(cls, data: Any) -> AnalysisResult:
        """`from_json`, a malformed one an error analysis rather than an exception (the job's, a far side's)."""
        try:
            return cls.from_json(data)
        except ResultError as exc:
            return cls.failure(f"malformed analysis: {exc}")
