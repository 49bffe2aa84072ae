"""What a remote job carries beside its files, one type per kind (issue #35): the engine's side builds it
(engine/executors/remote.py), the far side reads it back (engine/executors/host.py), and every default
is written here once, never again as `options.get(key, default)`.

`from_wire()` refuses an unknown key, a missing one or a value of the wrong type by name, as a job spec's
does (core/job_spec.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from trialtui.core.job_spec import WireRecord

PROFILE_TIMEOUT_S = 1800.0  # a profile job's limit there: profilers replay kernels many times
ANALYZE_TIMEOUT_S = 120.0  # an analyze job's limit there: it traces the reference once


@dataclass(frozen=True, kw_only=True)
class JobOptions(WireRecord):
    """What every remote job is told: its limit there, and whether it runs sandboxed."""

    timeout_s: float  # the job's wall-clock limit on the far side (this side's backstop is twice that)
    sandbox: bool = False  # run the job under bubblewrap there (`--sandbox` holds off this machine too)

    kind: ClassVar[str]  # the job's kind: the options' type says it


@dataclass(frozen=True, kw_only=True)
class BenchOptions(JobOptions):
    """A bench job's: `bench_file`'s settings, as the engine gave them."""

    device: str  # "cuda" or "cpu"
    log: str  # the job's log, relative to the problem's .trialtui/ (it comes back from there)
    seeds: int | None = None  # correctness seeds; None: the problem's config
    baseline_us: float | None = None  # a baseline time given, not measured
    use_cache: bool = True  # reuse baselines measured before (the cache travels with the job)
    cuda_graph: bool = False  # time as CUDA graph replays
    env: dict[str, str] = field(default_factory=dict)  # extra environment of the job (its lane's CUDA_VISIBLE_DEVICES)
    name: str | None = None  # the candidate's name as the user knows it (a snapshot's file name)
    model: str | None = None  # the GPU model it must run on (Ray, `models = "every"`); None: any
    heldout: list[dict[str, Any]] | None = None  # held-out cases (core/heldout.py): check those, time nothing

    kind: ClassVar[str] = "bench"
    what: ClassVar[str] = "bench job's options"
    sent_when_set: ClassVar[tuple[str, ...]] = ("model", "heldout")


@dataclass(frozen=True, kw_only=True)
class ValidateOptions(JobOptions):
    """A validate job's: the compile stage there (the static stage runs on this machine)."""

    arch: str | list[str] | None = None  # the archs to build for; None: the config's, or the candidate's own
    name: str | None = None  # the candidate's name as the user knows it

    kind: ClassVar[str] = "validate"
    what: ClassVar[str] = "validate job's options"


@dataclass(frozen=True, kw_only=True)
class ProfileOptions(JobOptions):
    """A profile job's: the best profiler that runs there, over the candidate."""

    name: str  # the report's name under .trialtui/profiles/ (the trial's id)
    device: str = "cuda"  # where the profilers look for counters
    env: dict[str, str] = field(default_factory=dict)  # extra environment of the job (its lane's GPU)
    timeout_s: float = PROFILE_TIMEOUT_S

    kind: ClassVar[str] = "profile"
    what: ClassVar[str] = "profile job's options"


@dataclass(frozen=True, kw_only=True)
class AnalyzeOptions(JobOptions):
    """An analyze job's: the reference's FLOPs and bytes, and a roofline at a GPU's ceilings."""

    gpu: str | None = None  # the GPU whose ceilings the roofline uses; None: no roofline
    driver: str | None = None  # its driver, for calibrated ceilings
    timeout_s: float = ANALYZE_TIMEOUT_S

    kind: ClassVar[str] = "analyze"
    what: ClassVar[str] = "analyze job's options"


OPTIONS: dict[str, type[JobOptions]] = {kind.kind: kind for kind in (BenchOptions, ValidateOptions, ProfileOptions,
                                                                     AnalyzeOptions)}
