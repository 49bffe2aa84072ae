"""A bench job's spec as a type: the engine builds it, the child reads it back from JSON, and every
default of an optional key is written here once (issue #35), never again as `spec.get(key, default)`."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from typing import Any

from trialtui.core.json_types import fits

# Keys that belong to one candidate or to this one run, not to the problem: a warm checker prepares
# everything but these (runner/prepared.py), and a job whose other keys match uses what it prepared.
CANDIDATE_KEYS = frozenset({"candidate", "candidate_as", "given_baselines", "timeout_s", "correctness_only",
                            "progress", "spec_path", "reference_source", "support_sources"})


@dataclass(frozen=True)
class BenchSpec:
    """What a bench job (runner/bench_job.py) is told: the problem, the run's settings, the candidate."""

    root: str  # the problem directory
    reference: str  # the reference file
    form: str  # the problem's form (kernelbench, gpumode, ...): how the reference and candidate are called
    entry_point: str  # the name the candidate defines (ModelNew, custom_kernel, ...)
    dtype: str  # the problem's dtype, a key of runner/loader.DTYPES
    atol: float  # absolute tolerance: the config's, else the dtype's default
    rtol: float  # relative tolerance, as atol
    allow_tf32: bool  # TF32 matmuls allowed, in the reference and the candidate alike
    explicit_tolerance: bool  # the user set atol or rtol: they apply even where the problem judges values itself
    test_cases: list[dict[str, Any]]  # sizes checked on every device (small, odd shapes)
    bench_cases: list[dict[str, Any]]  # sizes checked and timed on a GPU; the first is the timed one
    support_files: list[str]  # the reference's own modules (GPU MODE's files:, siblings it imports)
    device: str  # "cuda" or "cpu"
    seeds: int = 5  # every case is checked under seeds 0 .. seeds-1
    baselines: list[str] = field(default_factory=lambda: ["eager"])  # what the candidate is timed against
    cuda_graph: bool = False  # time the candidate and the baselines as CUDA graph replays
    timeout_s: float = 120.0  # the whole job's wall-clock limit
    candidate: str | None = None  # the candidate's file; None in the part a warm checker prepares
    given_baselines: dict[str, dict[str, Any]] = field(default_factory=dict)  # baselines known already, not timed
    candidate_as: str | None = None  # the path a snapshot runs under: the name the user knows
    heldout: list[dict[str, Any]] | None = None  # held-out cases (core/heldout.py), checked each on its own
    heldout_budget_s: float = 30.0  # the held-out check's time budget
    correctness_only: bool = False  # check, time nothing (a held-out check, a replay)
    reference_source: str | None = None  # the engine's known-good text of the reference (engine/guard.py)
    support_sources: dict[str, str] | None = None  # the same for the support files, by path
    progress: str | None = None  # where the job writes progress lines (the supervisor adds it)
    spec_path: str | None = None  # the spec's copy on disk (runner/child.py adds it)

    def to_wire(self) -> dict[str, Any]:
        """The JSON the child receives, key for key as the dicts before this type were: the candidate's
        three keys only with a candidate, the optional ones only when set."""
        wire = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in _WITH_CANDIDATE and self.candidate is None:
                continue
            if f.name == "heldout_budget_s" and self.heldout is None:
                continue
            if f.name in _WHEN_SET and (value is None or value is False):
                continue
            wire[f.name] = value
        return wire

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> BenchSpec:
        """The spec a child received; an unknown key or a value of the wrong type is a ValueError naming it."""
        if not isinstance(data, dict):
            raise ValueError(f"a bench spec is a JSON object, not {type(data).__name__}")
        unknown = sorted(set(data) - set(_TYPES))
        if unknown:
            raise ValueError(f"unknown key(s) in the bench spec: {', '.join(unknown)}")
        missing = sorted(name for name in _REQUIRED if name not in data)
        if missing:
            raise ValueError(f"the bench spec lacks {', '.join(missing)}")
        for name, value in data.items():
            if not fits(value, _TYPES[name]):
                raise ValueError(f"bench spec key {name!r}: {repr(value)[:80]} is not {_TYPES[name]}")
        return cls(**data)

    def problem_part(self) -> BenchSpec:
        """Without the candidate's keys: what a warm checker prepares, and what a job must match to use it."""
        fields = dataclasses.fields(self)
        return dataclasses.replace(self, **{f.name: _default(f) for f in fields if f.name in CANDIDATE_KEYS})


_WITH_CANDIDATE = ("candidate", "given_baselines", "candidate_as")
_WHEN_SET = ("heldout", "correctness_only", "reference_source", "support_sources", "progress", "spec_path")
_TYPES = typing.get_type_hints(BenchSpec)
_REQUIRED = [f.name for f in dataclasses.fields(BenchSpec)
             if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]


def _default(f: dataclasses.Field) -> Any:
    return f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
