"""Where a number came from: measured here, replayed from a recording, or imported from another tool.

A bench result carries its origin under `result["provenance"]` (`Provenance.to_dict`), written where
the result is made: the engine's bench (measured), replay (replayed), `trials import` (the origin the
data had, with the import added). A result stored before that has one read from what it holds
(`of_result`). Best, the report and every view ask this module; none compares strings of its own.
"""

from __future__ import annotations

import datetime as _dt
import enum
import socket
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from trialtui.core.bench_result import BenchResult

KEY = "provenance"  # where a result keeps its Provenance.to_dict()
HF_IMPORT_MESSAGE = "imported from trial_manager's state.json"  # what older hf imports left instead


class Origin(str, enum.Enum):
    MEASURED = "measured"  # timed by trialtui's own checker
    REPLAYED = "replayed"  # a recording of the byte-identical source, timed on another machine
    FOREIGN = "foreign"  # another tool's figure: where, when and how it was timed is unknown


@dataclass(frozen=True)
class Import:
    """One pass through `trials import`: the format and the directory it was read from."""

    format: str
    source: str
    at: str | None = None


@dataclass(frozen=True)
class Provenance:
    """The origin of a result's numbers and every import they went through since (oldest first)."""

    origin: Origin
    host: str | None = None  # the machine that timed it, when known
    gpu: str | None = None  # the GPU (or device) that timed it
    date: str | None = None  # when it was timed, ISO 8601 (replayed: when it was recorded)
    recording: str | None = None  # replayed: the recording file
    imports: tuple[Import, ...] = ()

    @property
    def measured_here(self) -> bool:
        """Timed by this store's own engine: the only numbers that rank above every other."""
        return self.origin is Origin.MEASURED and not self.imports

    def imported(self, format: str, source: str, at: str | None = None) -> Provenance:
        """The same origin, one import further."""
        return replace(self, imports=(*self.imports, Import(format, source, at or now())))

    def short(self) -> str:
        """A few words beside a number: '' when measured here, 'replayed', 'imported from hf'."""
        if self.measured_here:
            return ""
        if self.origin is Origin.REPLAYED:
            return "replayed"
        return f"imported from {self.imports[0].format}" if self.imports else "not measured here"

    def label(self) -> str:
        """The sentence a number carries: 'replayed from a recording on NVIDIA H200, 2025-11-29'."""
        if self.origin is Origin.REPLAYED:
            text = (f"replayed from a recording on {self.gpu or 'an unknown GPU'}, "
                    f"{day(self.date) or 'an unknown date'}")
        elif self.origin is Origin.MEASURED:
            host = f" (host {self.host})" if self.host else ""
            when = f", {day(self.date)}" if self.date else ""
            text = f"measured {'here ' if self.measured_here else ''}on {self.gpu or 'an unknown device'}{host}{when}"
        elif self.imports:
            return (f"imported from {self.imports[0].format}; where, when and how it was timed is unknown"
                    + self._hops(self.imports[1:], "; then "))
        else:
            return "not measured here: its origin is unknown"
        if not self.imports:
            return text
        if self.origin is Origin.MEASURED:
            return f"imported from {self.imports[0].format}; {text}"
        return text + self._hops(self.imports, "; ")

    @staticmethod
    def _hops(hops: tuple[Import, ...], lead: str) -> str:
        """'; imported from hf', '; imported from hf (2 times)': what the imports add to the origin."""
        if not hops:
            return ""
        formats = list(dict.fromkeys(h.format for h in hops))
        times = f" ({len(hops)} times)" if len(hops) > 1 else ""
        return f"{lead}imported from {' then '.join(formats)}{times}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "origin": self.origin.value, "host": self.host, "gpu": self.gpu, "date": self.date,
            "recording": self.recording,
            "imports": [{"format": h.format, "source": h.source, "at": h.at} for h in self.imports],
        }

    @classmethod
    def from_dict(cls, data: Any) -> Provenance | None:
        """A stored provenance; an origin this version does not know reads as foreign, never as measured."""
        if not isinstance(data, Mapping):
            return None
        try:
            origin = Origin(data.get("origin"))
        except ValueError:
            origin = Origin.FOREIGN
        imports = tuple(
            Import(str(h.get("format") or "unknown"), str(h.get("source") or "unknown"), _text(h.get("at")))
            for h in data.get("imports") or [] if isinstance(h, Mapping)
        )
        return cls(origin, _text(data.get("host")), _text(data.get("gpu")), _text(data.get("date")),
                   _text(data.get("recording")), imports)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def day(date: str | None) -> str:
    """'2025-11-29' of an ISO date or date-time."""
    return str(date)[:10] if date else ""


def measured(gpu: str | None, *, host: str | None = None, date: str | None = None) -> Provenance:
    """A number this machine's checker just timed."""
    return Provenance(Origin.MEASURED, host or socket.gethostname(), gpu, date or now())


def replayed(recording: str | None, gpu: str | None, date: str | None, host: str | None = None) -> Provenance:
    return Provenance(Origin.REPLAYED, host, gpu, date, recording)


def foreign() -> Provenance:
    """Numbers another tool made; `imported` then says which format they came in."""
    return Provenance(Origin.FOREIGN)


def of_result(result: BenchResult | None) -> Provenance | None:
    """A result's provenance: the stored one, else what an older result holds says; None without a result."""
    if not result:
        return None
    stored = Provenance.from_dict(result.provenance)
    if stored is not None:
        return stored
    recorded = result.recorded
    if recorded:
        return replayed(_text(recorded.get("path")), _text(recorded.get("gpu")),
                        _text(recorded.get("recorded_at") or recorded.get("date")))
    if result.message == HF_IMPORT_MESSAGE:
        return Provenance(Origin.FOREIGN, imports=(Import("hf", "unknown"),))
    env = result.env or {}
    return Provenance(Origin.MEASURED, _text(env.get("host")), _text(env.get("gpu") or env.get("device")),
                      _text(result.measured_at))


def measured_here(result: BenchResult | None) -> bool:
    """True unless the result's numbers were replayed or imported (no result: nothing to doubt)."""
    found = of_result(result)
    return found is None or found.measured_here


def short(result: BenchResult | None) -> str:
    """`Provenance.short` of a result: '' when measured here or when there is no result."""
    found = of_result(result)
    return found.short() if found else ""


def elsewhere(result: BenchResult | None) -> str:
    """`Provenance.label` of a result not measured here, else ''."""
    found = of_result(result)
    return "" if found is None or found.measured_here else found.label()
