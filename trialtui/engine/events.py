"""The engine's typed event stream: the headless printer and the TUI both consume these.

Events carry ids and small facts; subscribers read whole trials from the store when they need them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, ClassVar


@dataclass(frozen=True)
class Event:
    kind: ClassVar[str] = "event"

    def to_dict(self) -> dict[str, Any]:
        return {"event": self.kind, **asdict(self)}


@dataclass(frozen=True)
class TrialCreated(Event):
    kind: ClassVar[str] = "trial_created"
    trial_id: str
    file: str
    parent: str | None
    strategy: str | None


@dataclass(frozen=True)
class SaveIgnored(Event):
    """A save that creates no trial: same content as the head, or a checkout of an older trial."""

    kind: ClassVar[str] = "save_ignored"
    file: str
    how: str  # "unchanged" | "checkout"
    head: str | None


@dataclass(frozen=True)
class StateChanged(Event):
    kind: ClassVar[str] = "state_changed"
    trial_id: str
    state: str
    message: str = ""


@dataclass(frozen=True)
class Progress(Event):
    """Seed i/n during correctness, timing runs done, profile passes; bursts coalesce in the TUI."""

    kind: ClassVar[str] = "progress"
    trial_id: str
    phase: str
    i: int | None = None
    n: int | None = None
    runs: int | None = None


@dataclass(frozen=True)
class Preliminary(Event):
    """The checker's first median, after a short timing window: shown as preliminary, never stored or decided on."""

    kind: ClassVar[str] = "preliminary"
    trial_id: str
    median_us: float
    p20_us: float
    p80_us: float
    n: int
    speedup: dict[str, float] = field(default_factory=dict)

    @property
    def spread(self) -> float:
        """Half the p20–p80 spread relative to the median, as the final result's noise band reads it."""
        return (self.p80_us - self.p20_us) / 2 / self.median_us if self.median_us else 0.0

    @classmethod
    def of(cls, trial_id: str, data: dict[str, Any]) -> "Preliminary":
        """From the checker's progress line, every number checked (it crossed a process boundary)."""
        def number(value: Any) -> float:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0 or value == float("inf"):
                raise ValueError(f"not a time: {value!r}")
            return float(value)

        speedup = data.get("speedup") or {}
        if not isinstance(speedup, dict):
            raise ValueError("speedup is not a mapping")
        return cls(trial_id, number(data["median_us"]), number(data["p20_us"]), number(data["p80_us"]),
                   int(number(data["n"])), {str(k)[:40]: number(v) for k, v in list(speedup.items())[:8]})


@dataclass(frozen=True)
class ResultReady(Event):
    kind: ClassVar[str] = "result"
    trial_id: str
    state: str
    summary: str


@dataclass(frozen=True)
class NewBest(Event):
    kind: ClassVar[str] = "new_best"
    trial_id: str
    speedup: float
    previous: str | None = None
    previous_speedup: float | None = None
    origin: str = ""  # core.provenance's short word when the number was not measured here: "replayed"


@dataclass(frozen=True)
class DecisionMade(Event):
    kind: ClassVar[str] = "decision"
    trial_id: str
    action: str
    reason: str
    key: str = ""


@dataclass(frozen=True)
class QueueChanged(Event):
    kind: ClassVar[str] = "queue"
    lanes: dict[str, str | None] = field(default_factory=dict)  # lane name -> running trial id
    queued: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Notice(Event):
    """Things the user should know that are not a trial's state: a deleted file, an edited reference."""

    kind: ClassVar[str] = "notice"
    message: str
    level: str = "info"


@dataclass(frozen=True)
class EngineError(Event):
    kind: ClassVar[str] = "engine_error"
    message: str


def from_dict(data: dict[str, Any]) -> Event | None:
    """An event read back from the control channel's stream (`to_dict`'s output); None for a kind or
    fields this version does not know, so a newer engine's event is skipped rather than fatal."""
    kinds = {cls.kind: cls for cls in _subclasses(Event)}
    cls = kinds.get(data.get("event"))  # type: ignore[arg-type]
    if cls is None:
        return None
    names = {f.name for f in fields(cls)}
    try:
        return cls(**{k: v for k, v in data.items() if k in names})
    except TypeError:
        return None


def _subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found
