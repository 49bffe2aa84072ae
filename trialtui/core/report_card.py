"""The report card `trials finalize` writes, as a type (issue 35): what core/report.py builds from the clean
re-benchmark, what final/report.json holds key for key, and what finalize hands the front ends (the TUI, the
agent session, the control channel and the attached engine that reads it back)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from trialtui.core.json_record import JsonRecord


class ReportCardError(ValueError):
    """A report card's JSON that does not have the card's keys and types."""


@dataclass(frozen=True)
class ReportCard(JsonRecord):
    """One trial's clean re-benchmark, on what it ran, against what, how near the ceiling, whose numbers."""

    problem: str  # the problem directory's name
    trial: str  # the trial finalized ("t7")
    parent: str | None  # the trial it branched from
    file: str  # the kernel as written under final/
    source: str  # the candidate file's name in the problem directory
    sha256: str  # the snapshot's hash
    strategy: str | None  # the trial's strategy label
    gpu_timing: bool  # timed on a GPU; a CPU run has no speedup
    timing_label: str  # how the headline was measured
    device: str | None  # "cuda" or "cpu"
    gpu: str | None  # the GPU's name
    capability: Any  # its compute capability, as the bench's env gave it
    sm_count: int | None  # its SMs
    driver: str | None  # the driver's version
    torch: str | None  # torch's version
    triton: str | None  # triton's version
    host: str | None  # the machine it ran on
    executor: str | None  # set where the re-benchmark ran off this machine (ssh, ray)
    models: Any  # the form's models, as the result has them
    dtype: str | None  # the problem's dtype
    sizes: Any  # the timed sizes
    correctness: dict[str, Any] | None  # seeds, cases and the largest errors
    tolerance: dict[str, float]  # atol and rtol
    time_us: dict[str, Any]  # median, min, p20, p80, mean, std, n, rse, kernel time
    spread_pct: float | None  # p20-p80 as a percentage of the median
    primary_baseline: str  # the baseline the headline speedup is against
    baselines: dict[str, dict[str, Any]]  # each baseline's median, spread, cached or not, speedup
    speedup: float | None  # against the primary baseline; None on the CPU
    sol: float | None  # the fraction of speed-of-light; None on the CPU
    bound: str  # "bandwidth", "compute" or "unknown"
    bound_source: str  # how the bound is known
    flags: list[dict[str, Any]]  # the result's flags
    generalizes: str | None  # the held-out check's line
    generalization: dict[str, Any] | None  # the held-out check in full
    measured_here: bool  # this run measured its numbers (not a replay)
    origin: str | None  # where the numbers come from, where not measured here
    origin_short: str  # the same, short
    provenance: dict[str, Any] | None  # the Provenance in full
    ranked_on: dict[str, Any]  # the number the trial was chosen on, and its origin
    library: dict[str, Any] | None = None  # its own kernels' share of the GPU time, from kernel records (KernelSplit)
    extra: dict[str, Any] = field(default_factory=dict)  # keys a caller adds (the demo's recorded run)
    _keys: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @classmethod
    def from_json(cls, data: Any) -> ReportCard:
        """A card from its JSON (report.json, the control channel's reply); ReportCardError says what is wrong."""
        if not isinstance(data, dict):
            raise ReportCardError(f"a report card is a JSON object, not {type(data).__name__}")
        try:
            return cls._read(data, ReportCardError)
        except TypeError as exc:  # a named key missing
            raise ReportCardError(f"a report card lacks a key: {exc}") from None

    def adding(self, more: dict[str, Any]) -> ReportCard:
        """The card with a caller's keys after its own (a key it names is set; any other is kept in `extra`)."""
        named = {k: v for k, v in more.items() if k in self.__dataclass_fields__ and k not in ("extra", "_keys")}
        return replace(self, **named, extra={**self.extra, **{k: v for k, v in more.items() if k not in named}},
                       _keys=(*self._keys, *(k for k in more if k not in self._keys)))


@dataclass(frozen=True)
class Finalized:
    """What finalize made: the card's text (final/REPORT.md), the card (final/report.json), where they are."""

    text: str
    card: ReportCard
    out_dir: Path

    def to_wire(self) -> dict[str, Any]:
        """The control channel's reply, key for key as it was before this type."""
        return {"text": self.text, "report": self.card.to_json(), "out_dir": str(self.out_dir)}

    @classmethod
    def from_wire(cls, reply: dict[str, Any]) -> Finalized:
        """An engine's reply read back (engine/attach.py); ReportCardError says what is wrong."""
        if not isinstance(reply.get("text"), str) or not isinstance(reply.get("out_dir"), str):
            raise ReportCardError("a finalize reply without its text or directory")
        return cls(reply["text"], ReportCard.from_json(reply.get("report")), Path(reply["out_dir"]))
