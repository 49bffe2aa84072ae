"""Child job, the checker: judge a candidate against the reference on every case and seed, then time it if correct.

`python -m trialtui.runner.bench_job SPEC.json RESULT.json`. The reference, its outputs and the
verdict live here; the candidate runs in a process of its own (runner/candidate.py) that receives
inputs and hands back outputs and timings as data. Correctness comes first and a speed number
exists only for a correct candidate. Every failure becomes a result, not a crash.
"""

from __future__ import annotations

import os
import select
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from trialtui.core.forms import get_form
from trialtui.core.job_spec import BenchSpec
from trialtui.core.json_types import number
from trialtui.core.model import REFERENCE_FAILED
from trialtui.core.prctl import seal
from trialtui.core.result import RESULT_VERSION, flag
from trialtui.core.text import HANG_HINTS
from trialtui.runner import heldout
from trialtui.runner.candidate_errors import describe
from trialtui.runner.candidate_link import CandidateProcess
from trialtui.runner.candidate_requests import CandidateFailed, Deadline
from trialtui.runner.checker import Checker
from trialtui.runner.child import serve
from trialtui.runner.environment import environment
from trialtui.runner.job_progress import Progress, Splits
from trialtui.runner.judging import ReferenceFailed, first_look, higher_precision, tolerance
from trialtui.runner.prepared import Prepared, prepare, problem_key
from trialtui.runner.tensors import nbytes
from trialtui.runner.cpu_timing import cpu_timing
from trialtui.runner.speedups import speedups
from trialtui.runner.timed_phase import TimedPhase, overhead_at


def _case_list(spec: BenchSpec, on_gpu: bool) -> list[dict[str, Any]]:
    """CPU: the test sizes. GPU: the test sizes (small, odd shapes that expose masking bugs) and the bench sizes."""
    cases = list(spec.test_cases)
    if on_gpu:
        cases += [c for c in spec.bench_cases if c not in cases]
    return cases


def run(spec: BenchSpec) -> dict[str, Any]:
    """The job for its spec (runner/child.serve read it into a BenchSpec, or refused it)."""
    import torch

    from trialtui.runner.loader import BF16_NOTE, Reference

    seal()
    # first, before any CUDA call or the reference: on the CPU the candidate's process is a fork of this one
    link = _READY.pop() if _READY else CandidateProcess(CANDIDATE, fork=_JOB_PROCESS)  # a new one imports torch while the reference loads here
    progress = Progress(spec.progress)
    deadline = Deadline(float(spec.timeout_s), until=spec.deadline)
    device_name = spec.device
    if device_name == "cuda" and not torch.cuda.is_available():
        link.close()
        return {"version": RESULT_VERSION, "state": "error", "message": "--device cuda asked for, but CUDA is not available"}
    device = torch.device(device_name)
    if device.type == "cuda":
        link.warm_up()  # this job holds the lane: the candidate's context is made while the reference loads
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = spec.allow_tf32
    on_gpu = device.type == "cuda"
    cases = _case_list(spec, on_gpu)
    seeds = list(range(spec.seeds))
    result: dict[str, Any] = {
        "version": RESULT_VERSION,
        "state": "error",
        "correctness": None,
        "timing": None,
        "baselines": {},
        "speedup": None,
        "flags": [],
        "env": environment(device),
        "sizes": spec.bench_cases[:1] if on_gpu else cases[:1],  # what the timing ran at: the label's sizes
        "checked_sizes": cases,
        "dtype": spec.dtype,
        "message": "",
        "measured_at": time.strftime("%Y-%m-%d %H:%M"),
    }
    stage = "starting the candidate's process"
    phases = result["phases_s"] = {}
    mark = time.perf_counter()

    def phase(name: str) -> None:
        nonlocal mark
        now = time.perf_counter()
        phases[name] = round(now - mark, 3)
        mark = now

    checker: Checker | None = None
    ledger = MemoryLedger(device)
    prepared = _PREPARED.pop() if _PREPARED else None
    if prepared is not None and prepared.key != problem_key(spec):
        prepared = None  # another problem part, or the reference's files changed since
    result["prepared"] = len(prepared.cases) if prepared is not None else 0
    try:
        stage = "loading the reference"
        reference = prepared.reference if prepared is not None else Reference(spec.to_wire(), device_name)
        checker = Checker(spec, reference, link, deadline, progress=progress, splits=Splits(sync=on_gpu), prepared=prepared)
        del prepared  # the checker's now: its cases go once correctness is done
        if reference.emulated:
            result["flags"].append(flag("bf16-emulated", BF16_NOTE))
        stage = "importing the candidate"
        reply, _ = link.request(
            "load", timeout_s=deadline.left(), candidate=spec.candidate, candidate_as=spec.candidate_as,
            entry_point=spec.entry_point,
            form=reference.form, device=device_name, dtype=str(reference.dtype).removeprefix("torch."),
            allow_tf32=spec.allow_tf32, reference=str(Path(spec.reference).resolve()),
            support_files=spec.support_files,
        )
        checker.facts.see(reply)
        phase("load")
        stage = "checking correctness"
        checker.splits.started = time.perf_counter()
        if cases and not spec.heldout:  # held-out cases follow a bench that looked already
            result["dtype"] = checker.first_look(cases[0], seeds[0] if seeds else 0)
        if reference.cast_from:
            result["flags"].append(flag("inputs-cast", f"get_inputs makes {', '.join(reference.cast_from)} tensors, which "
                                        f"trialtui.toml's dtype = \"{spec.dtype}\" casts for every run: set dtype there to "
                                        "keep the problem's own"))
        if spec.heldout:  # cases derived at finalize or on demand (runner/heldout.py), each on its own
            correctness = heldout.check_each(checker)
        else:
            correctness = checker.correctness(cases, seeds)
        checker.release_cases()
        phase("correctness")
        result["correctness"] = correctness
        if tolerance(spec, reference.kind)[0] is None:  # views say who judged the values, not tolerances unused
            correctness["judged_by"] = get_form(reference.form).judge
        for warning in correctness.pop("warnings", []):
            code = "trivial-reference" if "constant" in warning else "normwise-skipped"
            result["flags"].append(flag(code, warning))
        if not correctness["passed"]:
            result["state"] = "incorrect"
            result["message"] = correctness["message"]
            return result
        if correctness["launches"] == 0:
            result["flags"].append(
                flag("no-custom-kernel", "no kernel of the candidate's own was launched (no Triton kernel, no call "
                     "into a CUDA extension that defines a __global__ kernel): it runs PyTorch or a library only")
            )
        if spec.correctness_only:
            result["state"] = "correct"
            return result
        ledger.close_phase(stage, link, deadline)
        stage = "timing"
        if on_gpu:
            checker.splits.started = time.perf_counter()
            timed = TimedPhase.of(checker, device, own_kernels=correctness["launches"] > 0)
            cand, baselines, flags = timed.run(spec.bench_cases[0])
            result["timing"] = cand
            result["baselines"] = baselines
            result["flags"] += flags
            result["speedup"], more = speedups(cand, baselines)
            result["flags"] += more
            phase("timing")
        else:
            result["timing"] = cpu_timing(spec, reference, link, cases[0], deadline, checker.facts, checker.timed_norm(cases[0]))
        result["state"] = "correct"
        return result
    except CandidateFailed as exc:
        result["state"] = exc.state
        result["speedup"] = None
        result["message"] = f"{stage}: {exc}"
        if exc.state == "timeout":
            result["message"] = timed_out(stage, spec.timeout_s, exc, on_gpu)
        if exc.traceback:
            result["traceback"] = exc.traceback
        return result
    except BaseException as exc:  # noqa: BLE001 - the reference may raise anything too
        if isinstance(exc, KeyboardInterrupt):
            raise
        result["state"] = "error"
        result["speedup"] = None
        result["message"] = f"{stage}: {exc if isinstance(exc, ReferenceFailed) else describe(exc)}"
        if stage == "loading the reference" or isinstance(exc, ReferenceFailed):  # the problem's failure, not the candidate's
            result[REFERENCE_FAILED] = True
        result["traceback"] = traceback.format_exc()[-4000:]
        print(result["traceback"], file=sys.stderr)
        return result
    finally:
        if checker is not None:
            result["flags"] += checker.facts.flags()
            phases.update(checker.splits.seconds)
        phases.update(link.breakdown())
        ledger.close_phase(stage, link, deadline)
        ledger.record(result)
        link.close(wait=False)


def timed_out(stage: str, timeout_s: float, exc: CandidateFailed, on_gpu: bool) -> str:
    """A hang's message: the step, the limit and the key that sets it, and what usually hangs there, as
    `trialtui validate` says it."""
    hint = HANG_HINTS["import"] if stage == "importing the candidate" else HANG_HINTS["gpu run" if on_gpu else "run"]
    return f"{stage}: timed out after {timeout_s:g} s (bench_timeout_s in trialtui.toml); {exc} — {hint}"


class MemoryLedger:
    """Peak GPU memory per phase, this process's plus the candidate's, beside one case's inputs and outputs.

    Phases are separated by resetting both processes' peak counters, so a phase's sum is a true upper
    bound of what the job held at once during it; the job's peak is the largest phase sum.
    """

    def __init__(self, device) -> None:
        self.device = device
        self.phases: dict[str, dict[str, Any]] = {}

    def close_phase(self, name: str, link: CandidateProcess, deadline: Deadline) -> None:
        import torch

        if self.device.type != "cuda":
            return
        checker = torch.cuda.max_memory_allocated(self.device)
        torch.cuda.reset_peak_memory_stats(self.device)
        candidate = None
        if link.process.poll() is None:
            try:
                reply, _ = link.request("peak", timeout_s=min(5.0, deadline.left()))
                candidate = number(reply.get("peak_mem_bytes"))
            except CandidateFailed:
                candidate = None
        self.phases[name] = {"checker_bytes": checker, "candidate_bytes": candidate, "total_bytes": checker + int(candidate or 0)}

    def record(self, result: dict[str, Any]) -> None:
        if not self.phases:
            return
        case_bytes = (result.get("correctness") or {}).get("case_bytes")
        peak = max(p["total_bytes"] for p in self.phases.values())
        result["memory"] = {"phases": self.phases, "case_bytes": case_bytes,
                            "peak_over_case": round(peak / case_bytes, 2) if case_bytes else None}
        result["peak_mem_bytes"] = peak


# what a warm checker imports before it waits; a GPU's also torch._dynamo (2.3 s on the H200), which a
# `compile` baseline needs, and the FLOP counter (the CPU's checkers time nothing on a GPU)
WARM_IMPORTS = ("torch", "triton", "triton.language") + (
    ("torch._dynamo", "torch.utils.flop_counter") if os.environ.get("TRITON_INTERPRET") != "1" else ())
CANDIDATE = "trialtui.runner.candidate"  # the candidate's process: what its link (runner/candidate_link.py) starts
_READY: list[CandidateProcess] = []
_PREPARED: list[Prepared] = []
_JOB_PROCESS = False  # True in `python -m trialtui.runner.bench_job`: nothing but imports has run before the job


def prewarm() -> None:
    """A warm checker starts its job's candidate process at once (before any CUDA call or reference:
    on the CPU it is a fork of this process), so that process's imports are done too. Nothing touches
    the GPU here: a warm checker starts while another job may be timing on it; its CUDA contexts, Triton
    launch and CUPTI wait for the engine's `prepare`, sent only while it holds the lane."""
    if not _READY:
        _READY.append(CandidateProcess(CANDIDATE, fork=_JOB_PROCESS))


def _gpu_job() -> bool:
    """Decided before the spec is read: jobs for the interpreter (the CPU) carry TRITON_INTERPRET=1."""
    return os.environ.get("TRITON_INTERPRET") != "1"


def prepare_problem(message: dict[str, Any]) -> None:
    """The engine's `prepare` line (the lane is idle): everything of the next job that is not the candidate's.

    Ends with a `prepared` progress line: the engine holds the lane until it comes.
    """
    import torch

    started = time.perf_counter()
    spec = BenchSpec.from_wire(message["prepare"])
    on_gpu = spec.device == "cuda"
    done = None
    if not on_gpu or torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = spec.allow_tf32
        done = prepare(spec, _case_list(spec, on_gpu), list(range(spec.seeds)), higher_precision, nbytes, _READY[0] if _READY else None,
                       idle=lambda: not select.select([sys.stdin], [], [], 0)[0],  # no spec waits yet
                       overhead=overhead_at, look=first_look)
    _PREPARED[:] = [done] if done is not None else []
    if _READY and _READY[0].process.poll() is not None:  # the candidate's process died making its context
        _READY.pop().close()  # the job starts a fresh one
    progress = Progress(message.get("progress"))
    progress(phase="prepared", cases=len(done.cases) if done else 0, held_bytes=done.held_bytes if done else 0,
             seconds=round(time.perf_counter() - started, 3))
    if progress.fh is not None:
        progress.fh.close()


def main(argv: list[str]) -> None:
    global _JOB_PROCESS
    _JOB_PROCESS = True
    seal()  # before any process of the job exists
    if _gpu_job():  # the candidate's interpreter imports torch beside this one's: 3 s off a cold GPU job
        _READY.append(CandidateProcess(CANDIDATE, fork=False))
    serve(run, argv, prewarm=prewarm, prepare=prepare_problem, warm_imports=WARM_IMPORTS, spec_type=BenchSpec)


if __name__ == "__main__":
    main(sys.argv)
