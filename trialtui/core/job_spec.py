"""Every job's spec as a type: the engine builds it, the child reads it back from JSON, and every
default of an optional key is written here once (issue #35), never again as `spec.get(key, default)`.

`to_wire()` is the JSON the child receives, key for key as the dicts before these types were; `from_wire()`
refuses an unknown key, a missing one or a value of the wrong type by name."""

from __future__ import annotations

import dataclasses
import functools
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar

from trialtui.core.json_types import fits

# Keys that belong to one candidate or to this one run, not to the problem: a warm checker prepares
# everything but these (runner/prepared.py), and a job whose other keys match uses what it prepared.
CANDIDATE_KEYS = frozenset({"candidate", "candidate_as", "given_baselines", "timeout_s", "correctness_only",
                            "progress", "spec_path", "deadline", "reference_source", "support_sources"})
NCU_TIMEOUT_S = 300.0  # ncu's own limit inside the profile job (the job's is this plus its set-up)


@dataclass(frozen=True, kw_only=True)
class WireRecord:
    """A record that crosses a process or a host as JSON: what a job spec and a remote job's options share."""

    what: ClassVar[str] = "record"  # how a refusal names it
    sent_when_set: ClassVar[tuple[str, ...]] = ()  # on the wire only when not None or False

    def unsent(self) -> set[str]:
        """The fields the wire leaves out: before these types, the dicts had no key for them."""
        return {name for name in self.sent_when_set if getattr(self, name) is None or getattr(self, name) is False}

    def to_wire(self) -> dict[str, Any]:
        """The JSON the other side receives."""
        unsent = self.unsent()
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in unsent}

    @classmethod
    def from_wire(cls, data: Any) -> typing.Self:
        """The record as received; an unknown key, a missing one or a value of the wrong type is a ValueError naming it."""
        if not isinstance(data, dict):
            raise ValueError(f"a {cls.what} is a JSON object, not {type(data).__name__}")
        types, required = _wire_types(cls)
        unknown = sorted(set(data) - set(types))
        if unknown:
            raise ValueError(f"unknown key(s) in the {cls.what}: {', '.join(unknown)}")
        missing = sorted(name for name in required if name not in data)
        if missing:
            raise ValueError(f"the {cls.what} lacks {', '.join(missing)}")
        for name, value in data.items():
            if not fits(value, types[name]):
                raise ValueError(f"{cls.what} key {name!r}: {repr(value)[:80]} is not {types[name]}")
        return cls(**data)


@dataclass(frozen=True, kw_only=True)
class JobSpec(WireRecord):
    """What every job is told beside its own keys: the channels its run adds on the way to it."""

    progress: str | None = None  # where the job writes progress lines (the supervisor adds it)
    spec_path: str | None = None  # the spec's copy on disk (runner/child.py adds it)
    deadline: float | None = None  # time.monotonic() of the supervisor's kill (it adds it): the job's deadlines end before it

    what: ClassVar[str] = "job spec"
    sent_when_set: ClassVar[tuple[str, ...]] = ("progress", "spec_path", "deadline")


@functools.cache
def _wire_types(cls: type[WireRecord]) -> tuple[dict[str, Any], frozenset[str]]:
    """Each field's declared type, and the fields without a default (the keys every wire has)."""
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    return ({f.name: hints[f.name] for f in fields},
            frozenset(f.name for f in fields if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING))


@dataclass(frozen=True, kw_only=True)
class ProblemSpec(JobSpec):
    """What a job that loads the problem is told of it (`Problem.job_spec`), and the known-good texts
    the engine adds (engine/guard.py)."""

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
    reference_source: str | None = None  # the engine's known-good text of the reference (engine/guard.py)
    support_sources: dict[str, str] | None = None  # the same for the support files, by path

    sent_when_set: ClassVar[tuple[str, ...]] = (*JobSpec.sent_when_set, "reference_source", "support_sources")


@dataclass(frozen=True, kw_only=True)
class BenchSpec(ProblemSpec):
    """What a bench job (runner/bench_job.py) is told: the problem, the run's settings, the candidate."""

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

    what: ClassVar[str] = "bench spec"
    sent_when_set: ClassVar[tuple[str, ...]] = (*ProblemSpec.sent_when_set, "heldout", "correctness_only")

    def unsent(self) -> set[str]:
        """As every spec's, and the candidate's three keys only with a candidate, the budget only with held-out cases."""
        unsent = super().unsent()
        if self.candidate is None:
            unsent |= {"candidate", "given_baselines", "candidate_as"}
        if self.heldout is None:
            unsent.add("heldout_budget_s")
        return unsent

    def problem_part(self) -> BenchSpec:
        """Without the candidate's keys: what a warm checker prepares, and what a job must match to use it."""
        fields = dataclasses.fields(self)
        return dataclasses.replace(self, **{f.name: _default(f) for f in fields if f.name in CANDIDATE_KEYS})


def _default(f: dataclasses.Field) -> Any:
    return f.default if f.default_factory is dataclasses.MISSING else f.default_factory()


@dataclass(frozen=True, kw_only=True)
class TraceSpec(ProblemSpec):
    """What the Triton trace (runner/triton_trace.py) is told: run the candidate once under the interpreter."""

    candidate: str  # the candidate's file
    launches: str | None = None  # where the launches are published as soon as the candidate returns (the compile job's file)

    what: ClassVar[str] = "trace spec"
    sent_when_set: ClassVar[tuple[str, ...]] = (*ProblemSpec.sent_when_set, "launches")


@dataclass(frozen=True, kw_only=True)
class CompileSpec(ProblemSpec):
    """What a language's compile job (Triton's runner/compile_job.py, CUDA C++'s cuda_compile_job.py, a
    plug-in's) is told: the candidate and the archs to build it for."""

    candidate: str  # the candidate's file
    arch: list[str]  # the target archs (the config's, or the candidate's own), e.g. ["sm_90"]

    what: ClassVar[str] = "compile spec"

    def trace(self, launches: str) -> TraceSpec:
        """The trace the Triton compile job forks, publishing its launches to `launches`."""
        shared = {f.name: getattr(self, f.name) for f in dataclasses.fields(TraceSpec) if hasattr(self, f.name)}
        return TraceSpec(**shared, launches=launches)


@dataclass(frozen=True, kw_only=True)
class ProfileSpec(ProblemSpec):
    """What a profiler's job is told: the candidate and the bench case it runs (runner/profile_target.py)."""

    candidate: str  # the candidate's file
    case: int = 0  # the bench case's index


@dataclass(frozen=True, kw_only=True)
class NcuSpec(ProfileSpec):
    """Nsight Compute's profile job (runner/profile_job.py)."""

    report: str  # the path stem of the .ncu-rep kept for the Nsight Compute GUI
    ncu_timeout_s: float = NCU_TIMEOUT_S  # ncu's own limit

    what: ClassVar[str] = "ncu profile spec"


@dataclass(frozen=True, kw_only=True)
class ActivitySpec(ProfileSpec):
    """The CUPTI kernel records job (runner/activity_job.py)."""

    calls: int = 20  # the candidate's calls recorded (and timed back to back, unprofiled)

    what: ClassVar[str] = "activity spec"


@dataclass(frozen=True, kw_only=True)
class AnalyzeSpec(ProblemSpec):
    """The analyze job (runner/analyze_job.py): the reference's FLOPs and bytes, and a roofline at a GPU's ceilings."""

    gpu: str | None = None  # the GPU whose ceilings the roofline uses; None: no roofline
    driver: str | None = None  # its driver, for calibrated ceilings
    case: int = 0  # the bench case's index

    what: ClassVar[str] = "analyze spec"


@dataclass(frozen=True, kw_only=True)
class CalibrateSpec(JobSpec):
    """The calibrate job (runner/calibrate_job.py): this GPU's ceilings, measured; it loads no problem."""

    version: int = 1  # the spec's format, as the engine has always sent it

    what: ClassVar[str] = "calibrate spec"
