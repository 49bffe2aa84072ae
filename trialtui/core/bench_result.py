"""A bench job's result as a type (issue 35): what the engine reads from the child's JSON, stores with
its trial and hands to the front ends, one commented field per key, in place of a dict read by key.

`from_json` checks the envelope as `core/result.check_result` does and each named key's type;
`to_json` gives back exactly the JSON it was read from (the same keys, nulls and order), so `--json`,
the MCP answers and the store's file stay as they were (tests/test_golden_fa11b31.py holds them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trialtui.core.json_record import JsonRecord
from trialtui.core.result import RESULT_VERSION, ResultError, check_result


@dataclass(frozen=True)
class BenchResult(JsonRecord):
    """One bench job's outcome: the checker's (runner/bench_job.py), then what the engine adds to it.

    A key the result did not carry is None here; the nested values are the checker's JSON objects. Its
    read-only Mapping view (core/json_record.py) is for the scripts that read a result by key (benches/,
    the GPU box's): the package itself reads the fields (tests/test_contract_types.py holds it to that).
    """

    state: str  # ok | correct | incorrect | error | timeout | cancelled | invalid | interrupted (core/result.py)
    version: int = RESULT_VERSION  # the schema's version; a result of another is refused
    correctness: dict[str, Any] | None = None  # the check: seeds, cases, passed, errors, first mismatch, launches
    timing: dict[str, Any] | None = None  # the candidate's timing (median_us, rse, label...); only when correct
    baselines: dict[str, dict[str, Any]] | None = None  # each baseline's timing, by name (eager, compile...)
    speedup: dict[str, Any] | None = None  # the candidate against each baseline, by name; only when correct
    flags: list[dict[str, Any]] | None = None  # {"code", "message"}s; core/flags.py says which disqualify
    env: dict[str, Any] | None = None  # where it ran: device, GPU, versions; a remote one's host and executor
    sizes: list[dict[str, Any]] | None = None  # the case the timing ran at: the label's sizes
    checked_sizes: list[dict[str, Any]] | None = None  # every case the check ran
    dtype: str | None = None  # the problem's dtype
    message: str | None = None  # what went wrong, as the job said it; "" when nothing did
    measured_at: str | None = None  # the checker's local time, minutes: "2026-12-03 10:10"
    phases_s: dict[str, Any] | None = None  # seconds per phase and step (core/phases.py reads them)
    prepared: int | None = None  # how many (case, seed)s a warm checker had made ready
    traceback: str | None = None  # the end of the traceback of what raised
    reference_failed: bool | None = None  # the reference, not the candidate, failed to load (core/model.py)
    memory: dict[str, Any] | None = None  # peak GPU memory per phase, checker and candidate
    peak_mem_bytes: int | None = None  # the largest phase's sum of the two
    log_tail: str | None = None  # the job log's last lines (the engine drops it once the trial has its log)
    containment: dict[str, Any] | None = None  # what the supervisor swept, cut or killed
    wall_s: float | None = None  # the job's wall-clock seconds
    log: str | None = None  # the job log's path
    reference_sha: str | None = None  # the reference's hash: `trialtui profile` reuses a verdict only for it
    provenance: dict[str, Any] | None = None  # where the numbers came from (core/provenance.py)
    validation: dict[str, Any] | None = None  # the static stage's report, for a result that never ran (invalid)
    needs_gpu: bool | None = None  # only a GPU can run this candidate, and there was none
    needs_runner: bool | None = None  # this machine cannot run jobs (no torch here): nothing judged
    language: str | None = None  # the candidate's language, where it decided the outcome (needs_gpu)
    roofline: dict[str, Any] | None = None  # the speed-of-light reading the engine adds to a correct GPU trial
    recorded: dict[str, Any] | None = None  # the demo's replay: the recording the GPU numbers came from
    models: dict[str, Any] | None = None  # a Ray run on every GPU model at once: each model's outcome
    extra: dict[str, Any] = field(default_factory=dict)  # keys this type does not name (a plug-in's), kept whole
    # The keys in the order the JSON had them, nulls included: what makes to_json exact (never compared).
    _keys: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @classmethod
    def from_json(cls, data: Any) -> BenchResult:
        """A result read from JSON (a child's, a far side's, the store's); ResultError says what is wrong."""
        check_result(data)
        return cls._read(data, ResultError)

    @classmethod
    def failure(cls, state: str, message: str, **fields: Any) -> BenchResult:
        """A result for a job that judged nothing: no correctness, timing or speedup, no flags."""
        return cls(state=state, message=message, **fields, flags=[], correctness=None, timing=None, speedup=None,
                   _keys=("version", "state", "message", *fields, "flags", "correctness", "timing", "speedup"))
