"""The domain words every layer shares: trial states, findings, verdicts, decisions, trials.

Records are plain dicts on disk (TinyDB) and across process boundaries (JSON); these dataclasses
give them names and one place for their defaults, and `to_dict`/`from_dict` are where they become JSON.
"""

from __future__ import annotations

import copy
import enum
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from trialtui.core.bench_result import BenchResult
from trialtui.core.profile_result import ProfileResult
from trialtui.core.validation_report import ValidationReport


class TrialState(str, enum.Enum):
    """One enum for the TUI, the CLI, the store and the engine."""

    DETECTED = "detected"
    VALIDATING = "validating"
    INVALID = "invalid"
    QUEUED = "queued"
    BENCHMARKING = "benchmarking"
    PROFILING = "profiling"
    CORRECT = "correct"
    INCORRECT = "incorrect"
    ERROR = "error"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    SUPERSEDED = "superseded"
    INTERRUPTED = "interrupted"

    @property
    def is_final(self) -> bool:
        return self in FINAL_STATES

    @property
    def is_failure(self) -> bool:
        return self in FAILED_STATES

    @property
    def reached_gpu(self) -> bool:
        """States that spent a GPU job: these count against the trial budget."""
        return self in GPU_STATES


FINAL_STATES = frozenset(
    {
        TrialState.INVALID,
        TrialState.CORRECT,
        TrialState.INCORRECT,
        TrialState.ERROR,
        TrialState.TIMEOUT,
        TrialState.CANCELLED,
        TrialState.SUPERSEDED,
        TrialState.INTERRUPTED,
    }
)
FAILED_STATES = frozenset(
    {TrialState.INVALID, TrialState.INCORRECT, TrialState.ERROR, TrialState.TIMEOUT}
)
GPU_STATES = frozenset(
    {
        TrialState.BENCHMARKING,
        TrialState.PROFILING,
        TrialState.CORRECT,
        TrialState.INCORRECT,
        TrialState.ERROR,
        TrialState.TIMEOUT,
    }
)


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class Finding:
    """One validation result, anchored to a line of the candidate."""

    severity: str
    code: str
    message: str
    line: int | None = None
    col: int | None = None
    hint: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Verdict:
    """A counter (or roofline) reading turned into advice; `evidence` carries the numbers."""

    id: str
    severity: str
    title: str
    evidence: str
    hint: str
    source: str  # the profiler whose numbers these are: "ncu" | "activity" | "analytic" | a plug-in's name

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        """A stored verdict: a key it lacks reads as "" (as the dict readers' `.get` did), one it has extra is dropped."""
        return cls(**{name: data.get(name, "") for name in cls.__dataclass_fields__})


class Action(str, enum.Enum):
    FINALIZE = "finalize"
    CONTINUE = "continue"
    BRANCH_BACK = "branch_back"
    FIX = "fix"
    PROFILE = "profile"
    SWITCH_APPROACH = "switch_approach"
    BUDGET_SPENT = "budget_spent"
    WAIT = "wait"
    INSTALL = "install"  # the machine cannot run jobs: nothing to fix in the candidate
    FIX_REFERENCE = "fix_reference"  # reference.py failed: nothing to fix in the candidate


# The largest candidate read, validated or recorded: a kernel file is a few hundred lines.
MAX_SOURCE_BYTES = 1_000_000

# The result key of a job whose reference.py failed to load: the trial re-runs when reference.py changes.
REFERENCE_FAILED = "reference_failed"

# The validation finding (and result key, `needs_runner`) of a job this machine cannot start: no torch here.
NEEDS_RUNNER = "needs-runner"


@dataclass(frozen=True)
class Decision:
    """What to do next, why (the numbers) and the key that acts on it."""

    action: str
    reason: str
    evidence: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    key: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Decision:
        """A stored decision; a list or key it lacks reads as empty (as the dict readers' `.get` did)."""
        return cls(data.get("action", ""), data.get("reason", ""), list(data.get("evidence") or []),
                   list(data.get("hints") or []), data.get("key") or "")


SCHEMA_VERSION = 1


def correct_result_stands(state: str, result_state: str | None) -> bool:
    """A trial whose correct result stands: it is correct, or it is profiling after that result (its counters
    run now, or a writer that died cut them off): the number is settled, only the profile is not."""
    return result_state == "correct" and state in (TrialState.CORRECT.value, TrialState.PROFILING.value)


@dataclass
class Trial:
    """One save of one candidate file: a node of the trial tree.

    `result` is the benchmark job's result (core/bench_result.py), kept whole so nothing measured is
    lost; the accessors below read the fields the tree needs.
    """

    id: str
    file: str
    sha256: str
    created: float
    state: str = TrialState.DETECTED.value
    parent: str | None = None
    strategy: str | None = None
    note: str | None = None
    validation: ValidationReport | None = None
    result: BenchResult | None = None
    profile: ProfileResult | None = None
    verdicts: list[Verdict] = field(default_factory=list)
    decision: Decision | None = None
    sol: float | None = None
    log: str | None = None
    stale: bool = False
    schema: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        """The trial as JSON, as the store writes it: its validation, result and profile as their JSON
        (asdict writes its verdicts and decision as their dicts)."""
        data = asdict(replace(self, result=None, profile=None, validation=None))  # copies, as the records' are
        for name in ("validation", "result", "profile"):  # each where asdict put it: the store's key order
            record = getattr(self, name)
            data[name] = copy.deepcopy(record.to_json()) if record is not None else None
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trial:
        """A trial from its JSON; a result that does not follow the schema is a ResultError."""
        known = {f for f in cls.__dataclass_fields__}
        typed = ("result", "profile", "validation", "verdicts", "decision")
        trial = cls(**{k: v for k, v in data.items() if k in known and k not in typed})
        result, profile, validation = data.get("result"), data.get("profile"), data.get("validation")
        decision = data.get("decision")
        return replace(trial, result=BenchResult.from_json(result) if result is not None else None,
                       profile=ProfileResult.from_json(profile) if profile is not None else None,
                       validation=ValidationReport.from_json(validation) if validation is not None else None,
                       verdicts=[Verdict.from_dict(v) for v in data.get("verdicts") or []],
                       decision=Decision.from_dict(decision) if decision is not None else None)

    @property
    def state_enum(self) -> TrialState:
        return TrialState(self.state)

    def speedup(self, baseline: str = "eager") -> float | None:
        """Speedup against `baseline`, only ever for a correct trial."""
        if self.state != TrialState.CORRECT.value or not self.result:
            return None
        return (self.result.speedup or {}).get(baseline)

    @property
    def gpu_timing(self) -> dict[str, Any] | None:
        """The timing of a correct trial measured on a GPU; CPU-interpreter timings are not speeds."""
        if self.state != TrialState.CORRECT.value or not self.result:
            return None
        timing = self.result.timing or None
        if timing is None or (self.result.env or {}).get("device") == "cpu":
            return None
        return timing

    @property
    def median_us(self) -> float | None:
        return (self.gpu_timing or {}).get("median_us")

    def baseline(self, name: str) -> dict[str, Any]:
        """Baseline `name`'s timing in this trial's result, whatever its state; {} when it has none."""
        return ((self.result.baselines if self.result else None) or {}).get(name) or {}

    @property
    def rse(self) -> float | None:
        if not self.result:
            return None
        return (self.result.timing or {}).get("rse")
