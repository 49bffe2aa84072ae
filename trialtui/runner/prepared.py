"""What a warm checker makes ready before the save arrives: nothing in it depends on the candidate.

While the user edits, the engine hands the lane's waiting checker the problem part of the next job.
The checker then creates its CUDA context and its candidate process's, loads the reference, and
computes per (case, seed) the inputs, the reference's outputs and their higher-precision truth,
within a memory budget. The job that follows uses them only if its problem part and the reference's
files are byte-for-byte what was prepared; anything else (or anything over the budget) is computed
in the job as before. The candidate's process stays fresh for each job.
"""

from __future__ import annotations

import hashlib
import json
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trialtui.core.job_spec import BenchSpec

BUDGET_BYTES = 2 << 30  # device memory a waiting checker may hold for inputs, outputs and truths
BUDGET_FRACTION = 0.25  # ... and never more than this share of the GPU's memory


def problem_key(spec: BenchSpec) -> str | None:
    """The problem part of a spec and the bytes of the reference's files (the known-good texts are left out
    of the part and hashed here); None if one cannot be read."""
    digest = hashlib.sha256(json.dumps(spec.problem_part().to_wire(), sort_keys=True, default=str).encode())
    source = spec.reference_source
    if source is not None:  # the engine's known-good text of the reference, which is what the job loads
        digest.update(source.encode("utf-8"))
    for path in [*([] if source is not None else [spec.reference]), *spec.support_files]:
        try:
            digest.update(Path(path).read_bytes())
        except (OSError, TypeError):
            return None
    return digest.hexdigest()


@dataclass
class Expected:
    """One (case, seed) on the reference's side; `truth` is None when the reference has no module to
    run in higher precision (GPU MODE) or it could not run (`skipped` says why)."""

    inputs: Any
    payload: dict[str, Any]  # what the candidate's process needs besides the inputs (e.g. the weights)
    expected: Any
    truth: Any = None
    skipped: str | None = None


@dataclass
class Prepared:
    key: str
    reference: Any  # a loaded trialtui.runner.loader.Reference
    cases: dict[tuple[int, int], Expected] = field(default_factory=dict)
    held_bytes: int = 0
    baselines: dict[str, Any] = field(default_factory=dict)  # kind -> the timed case's baseline, compiled and run
    bencher: Any = None  # a runner/timing.Bencher: its flush buffer made, its GPU wait compiled and captured
    harness: Any = None  # the harness's own cost per timed call, on both clocks (timed_batch.HarnessCost)
    first_look: tuple[str, str] | None = None  # judging.first_look at the first case: (dtype, why the reference fails)

    def get(self, case_index: int, seed: int) -> Expected | None:
        return self.cases.get((case_index, seed))

    def warm_baselines(self, spec: BenchSpec) -> None:
        """`torch.compile` of the reference at the timed case, traced, compiled and run now: 3.9-6.9 s of
        every job's timing phase on the H200 (2026-12-02) that depends on nothing of the candidate's. The
        job times exactly this callable (the same reference, case and seed it would bind itself)."""
        import torch

        if "compile" not in spec.baselines or not spec.bench_cases:
            return
        case = spec.bench_cases[0]
        fn = torch.compile(self.reference.call(case, 0).fn)
        inputs = self.reference.make_inputs(case, 0)
        with torch.no_grad():  # as the job calls it (timed_phase._bind), so its first timed call finds this trace
            fn(inputs)
            fn(inputs)
        if self.reference.device.type == "cuda":
            torch.cuda.synchronize()
        self.baselines["compile"] = fn

    def measure_overhead(self, spec: BenchSpec, measure) -> None:
        """The harness's cost per timed call at the timed case (`measure(reference, case, bencher)`,
        timed_phase.overhead_at): 0.35 s of every job's timing phase on the H200 (2026-12-02, softmax fp32
        8192²) that depends on nothing of the candidate's."""
        if self.bencher is not None and spec.bench_cases:
            self.harness = measure(self.reference, spec.bench_cases[0], self.bencher)


def budget(device) -> int:
    import torch

    if device.type != "cuda":
        return BUDGET_BYTES
    total = torch.cuda.get_device_properties(device).total_memory
    return int(min(BUDGET_BYTES, BUDGET_FRACTION * total))


def prepare(spec: BenchSpec, cases: list[dict[str, Any]], seeds: list[int], higher, sizeof, link=None,
            idle=None, overhead=None, look=None) -> Prepared | None:
    """Load the reference and fill the cache in the job's order until the budget is reached.

    `higher(reference, model, inputs)` is the checker's higher-precision run, `sizeof` its byte
    count; `link` (the checker's candidate process) gets its CUDA context made too; `look(reference, spec, case,
    seed)` is the checker's first look at the reference (judging.first_look), kept with what it raised. Then, only while
    `idle()` says no job waits for this checker, the harness's cost per timed call is measured (with
    `overhead`, see Prepared.measure_overhead) and the
    `compile` baseline warmed (a save that came meanwhile does them itself rather than wait). Failures
    are printed and leave the job to do the work itself.
    """
    import torch

    from trialtui.runner.loader import Reference

    key = problem_key(spec)
    if key is None:
        return None
    try:
        device = torch.device(spec.device)
        if device.type == "cuda":
            torch.empty(1, device=device)  # the context, made now rather than in the job
            if link is not None:
                link.request("ready", timeout_s=60.0, device="cuda")  # its context and a Triton launch
        prepared = Prepared(key, Reference(spec.to_wire(), device.type))
        if device.type == "cuda" and spec.bench_cases:
            from trialtui.runner.timing import Bencher

            prepared.bencher = Bencher.for_device(device)  # part of every job's timing phase, none of it the candidate's
        if look is not None and cases:
            prepared.first_look = _looked(look, prepared.reference, spec, cases[0], seeds[0] if seeds else 0)
        _fill(prepared, cases, seeds, higher, sizeof, budget(device))
    except Exception:  # noqa: BLE001 - the reference may raise anything; the job will say it properly
        print(f"trialtui: preparing the problem failed; the job computes it itself\n{traceback.format_exc()}",
              file=sys.stderr)
        return None
    steps = [(lambda: prepared.measure_overhead(spec, overhead), "measuring the harness's overhead")] if overhead else []
    for step, what in [*steps, (lambda: prepared.warm_baselines(spec), "warming the baselines")]:
        if device.type != "cuda" or not (idle is None or idle()):
            break
        try:
            step()
        except Exception:  # noqa: BLE001 - the job does it itself, and says what fails
            prepared.harness = None
            prepared.baselines.clear()
            print(f"trialtui: {what} failed; the job does it\n{traceback.format_exc()}", file=sys.stderr)
    return prepared


def _looked(look, reference, spec: BenchSpec, case: dict[str, Any], seed: int) -> tuple[str, str]:
    from trialtui.runner.judging import ReferenceFailed

    try:
        return look(reference, spec, case, seed), ""
    except ReferenceFailed as failed:
        return "", str(failed)


def _fill(prepared: Prepared, cases: list[dict[str, Any]], seeds: list[int], higher, sizeof, limit: int) -> None:
    for ci, case in enumerate(cases):
        for seed in seeds:
            entry = expected_for(prepared.reference, case, seed, higher)
            size = sizeof([entry.inputs, entry.expected, entry.truth])
            if prepared.held_bytes + size > limit:
                return
            prepared.cases[(ci, seed)] = entry
            prepared.held_bytes += size


def expected_for(reference, case: dict[str, Any], seed: int, higher) -> Expected:
    import torch

    from trialtui.runner.candidate_errors import describe
    from trialtui.runner.tensors import clone

    inputs = reference.make_inputs(case, seed)
    call = reference.call(case, seed)
    with torch.no_grad():
        expected = call.fn(clone(inputs))
    entry = Expected(inputs, dict(call.payload), expected)
    if call.model is not None:  # a module to run again in higher precision (KernelBench)
        try:
            entry.truth = higher(reference, call.model, list(inputs))
        except Exception as exc:  # noqa: BLE001 - e.g. an op with no float64 kernel
            entry.skipped = describe(exc)
    if reference.device.type == "cuda":
        torch.cuda.synchronize()
    return entry
