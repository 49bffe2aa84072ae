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

from trialtui.core.job_spec import BenchSpec
from trialtui.core.model import REFERENCE_FAILED
from trialtui.core.prctl import seal
from trialtui.core.result import RESULT_VERSION, flag
from trialtui.runner import heldout
from trialtui.runner.candidate_errors import describe
from trialtui.runner.candidate_link import CandidateProcess
from trialtui.runner.candidate_requests import CandidateFailed, Deadline
from trialtui.runner.child import serve
from trialtui.runner.environment import environment
from trialtui.runner.job_progress import Progress, Splits
from trialtui.runner.judging import higher_precision, judge, tolerance
from trialtui.runner.prepared import Prepared, prepare, problem_key
from trialtui.runner.tensors import nbytes
from trialtui.runner.timed_phase import cpu_timing, number, overhead_at, speedups, time_all


def _case_list(spec: BenchSpec, on_gpu: bool) -> list[dict[str, Any]]:
    """CPU: the test sizes. GPU: the test sizes (small, odd shapes that expose masking bugs) and the bench sizes."""
    cases = list(spec.test_cases)
    if on_gpu:
        cases += [c for c in spec.bench_cases if c not in cases]
    return cases


def check_correctness(spec: BenchSpec, reference, link: CandidateProcess, cases, seeds, progress, deadline, facts,
                      prepared=None, splits: Splits | None = None) -> dict[str, Any]:
    """Every case under every seed: inputs made here, the candidate's outputs received as data and judged here.

    A (case, seed) the warm checker prepared (runner/prepared.py) comes with its inputs, outputs and
    truth made ahead; the others are made here, the truth after the candidate's run so that the device
    holds one copy of the inputs at a time.
    """
    import torch

    from trialtui.runner.compare import is_trivial, looks_like_tf32, normwise
    from trialtui.runner.loader import DTYPES
    from trialtui.runner.tensors import clone

    atol, rtol = tolerance(spec, reference.kind)
    declared = DTYPES[spec.dtype] if reference.emulated else None  # bf16 run as fp32 on the CPU
    device = reference.device.type
    report: dict[str, Any] = {
        "seeds": len(seeds), "cases": len(cases), "passed": True, "max_abs_err": 0.0, "max_rel_err": 0.0,
        "mismatch_frac": 0.0, "first_mismatch": None, "message": "", "warnings": [], "launches": 0,
        "normwise_err": None, "normwise_bound": None, "case_bytes": 0, "prepared": 0,
        "rounding_floor": [],  # (case, seed)s accepted at the dtype's rounding floor (compare.within_rounding_floor)
    }
    trivial = True
    total = len(cases) * len(seeds)
    splits = splits or Splits(sync=False)
    for ci, case in enumerate(cases):
        for si, seed in enumerate(seeds):
            progress(phase="correctness", i=ci * len(seeds) + si + 1, n=total)
            where = f"case {ci + 1} {case or '(defaults)'} seed {seed}"
            ready = prepared.get(ci, seed) if prepared is not None else None
            if ready is not None:
                report["prepared"] += 1
                inputs, expected, ref_model = ready.inputs, ready.expected, None
                payload: dict[str, Any] = {"inputs": inputs, "seed": seed, **ready.payload}
            else:
                inputs = reference.make_inputs(case, seed)
                call = reference.call(case, seed)
                payload = {"inputs": inputs, "seed": seed, **call.payload}
                ref_model = call.model
                with torch.no_grad():
                    expected = call.fn(clone(inputs))
                del call
            splits.mark("correctness.inputs_and_reference")
            out_bytes = nbytes(expected)
            report["case_bytes"] = max(report["case_bytes"], nbytes(inputs) + out_bytes)
            reply, output = link.request(
                "run", payload, timeout_s=deadline.left(), into=device, max_bytes=64 * out_bytes + 2**20,
                check_inputs=reference.kind.checks_input_mutation, case=case,
            )
            del payload
            splits.mark("correctness.candidate_and_transfer")
            facts.see(reply)
            report["launches"] += int(reply.get("launches") or 0)
            truth = ready.truth if ready is not None else None
            skipped = ready.skipped if ready is not None else None
            if ref_model is not None:  # a module to run again in float64 (KernelBench)
                try:
                    truth = higher_precision(reference, ref_model, inputs)
                except Exception as exc:  # noqa: BLE001 - e.g. an op with no float64 kernel
                    skipped = describe(exc)
            if skipped:
                note = f"normwise check skipped: the reference does not run in higher precision ({skipped})"
                if note not in report["warnings"]:
                    report["warnings"].append(note)
            del ref_model
            splits.mark("correctness.truth")
            trivial = trivial and is_trivial(expected)
            if reply.get("input_changed"):
                return _fail(report, f"{where}: the candidate modified its input {reply['input_changed']}")
            result = judge(spec, reference, expected, output, inputs, truth, report["rounding_floor"], where)
            norm = normwise(expected, output, truth, spec.allow_tf32, declared) if truth is not None and result.passed else None
            if norm is not None:
                report["normwise_err"] = max(report["normwise_err"] or 0.0, norm.err)
                report["normwise_bound"] = norm.bound if report["normwise_bound"] is None else min(report["normwise_bound"], norm.bound)
                if not norm.passed:
                    result.fail(norm.message())
            splits.mark("correctness.compare")
            report["max_abs_err"] = max(report["max_abs_err"], result.max_abs_err)
            report["max_rel_err"] = max(report["max_rel_err"], result.max_rel_err)
            report["mismatch_frac"] = max(report["mismatch_frac"], result.mismatch_frac)
            tf32 = atol is not None and looks_like_tf32(result, expected, spec.allow_tf32, declared)
            del inputs, expected, output, truth
            if not result.passed:
                message = f"{where}: {result.message}"
                if tf32:
                    message += (
                        f" (relative error {result.max_rel_err:.1e} looks like TF32 rounding: "
                        "set allow_tf32 = true in trialtui.toml if TF32 is acceptable)"
                    )
                report["first_mismatch"] = result.first_mismatch
                return _fail(report, message)
    if trivial:
        report["warnings"].append(
            "the reference output is constant on these inputs: the check cannot tell a right kernel from a trivial one"
        )
    return report


def _fail(report: dict[str, Any], message: str) -> dict[str, Any]:
    report["passed"] = False
    report["message"] = message
    return report


class Facts:
    """What the candidate's process reported on the side (patched timers, the reference imported): flags."""

    def __init__(self) -> None:
        self.patched: set[str] = set()
        self.imported_reference = False

    def see(self, reply: dict[str, Any]) -> None:
        patched = reply.get("patched") or []
        if isinstance(patched, list):
            self.patched.update(str(p)[:100] for p in patched[:50])
        self.imported_reference = self.imported_reference or bool(reply.get("imported_reference"))

    def flags(self) -> list[dict[str, str]]:
        flags = []
        if self.patched:
            flags.append(flag("timing-patched", f"the candidate replaced {', '.join(sorted(self.patched))}: its timing cannot be trusted"))
        if self.imported_reference:
            flags.append(flag("fallback", "the candidate imported the problem's reference.py: it may be running the reference"))
        return flags


def run(spec: BenchSpec) -> dict[str, Any]:
    """The job for its spec (runner/child.serve read it into a BenchSpec, or refused it)."""
    import torch

    from trialtui.runner.loader import BF16_NOTE, Reference

    seal()
    # first, before any CUDA call or the reference: on the CPU the candidate's process is a fork of this one
    link = _READY.pop() if _READY else CandidateProcess(CANDIDATE, fork=_JOB_PROCESS)  # a new one imports torch while the reference loads here
    progress = Progress(spec.progress)
    deadline = Deadline(float(spec.timeout_s))
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

    facts = Facts()
    splits: Splits | None = None
    ledger = MemoryLedger(device)
    prepared = _PREPARED.pop() if _PREPARED else None
    if prepared is not None and prepared.key != problem_key(spec):
        prepared = None  # another problem part, or the reference's files changed since
    result["prepared"] = len(prepared.cases) if prepared is not None else 0
    try:
        stage = "loading the reference"
        reference = prepared.reference if prepared is not None else Reference(spec.to_wire(), device_name)
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
        facts.see(reply)
        phase("load")
        stage = "checking correctness"
        splits = Splits(sync=on_gpu)
        if spec.heldout:  # cases derived at finalize or on demand (runner/heldout.py), each on its own
            correctness = heldout.check_each(spec, reference, link, deadline, facts, check_correctness)
        else:
            correctness = check_correctness(spec, reference, link, cases, seeds, progress, deadline, facts, prepared, splits)
        warm_baselines = prepared.baselines if prepared is not None else {}
        bencher = prepared.bencher if prepared is not None else None
        overhead_us = prepared.overhead_us if prepared is not None else None
        del prepared
        phase("correctness")
        result["correctness"] = correctness
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
            splits.started = time.perf_counter()
            cand, baselines, flags = time_all(spec, reference, link, spec.bench_cases[0], device, progress, deadline,
                                              facts, splits, own_kernels=correctness["launches"] > 0,
                                              warm_baselines=warm_baselines, bencher=bencher, overhead_us=overhead_us)
            result["timing"] = cand
            result["baselines"] = baselines
            result["flags"] += flags
            result["speedup"], more = speedups(cand, baselines)
            result["flags"] += more
            phase("timing")
        else:
            result["timing"] = cpu_timing(spec, reference, link, cases[0], deadline, facts)
        result["state"] = "correct"
        return result
    except CandidateFailed as exc:
        result["state"] = exc.state
        result["speedup"] = None
        result["message"] = f"{stage}: {exc}"
        if exc.state == "timeout":
            result["message"] = f"{stage}: timed out after {spec.timeout_s:g} s; {exc}"
        if exc.traceback:
            result["traceback"] = exc.traceback
        return result
    except BaseException as exc:  # noqa: BLE001 - the reference may raise anything too
        if isinstance(exc, KeyboardInterrupt):
            raise
        result["state"] = "error"
        result["speedup"] = None
        result["message"] = f"{stage}: {describe(exc)}"
        if stage == "loading the reference":  # the problem's failure, not the candidate's
            result[REFERENCE_FAILED] = True
        result["traceback"] = traceback.format_exc()[-4000:]
        print(result["traceback"], file=sys.stderr)
        return result
    finally:
        result["flags"] += facts.flags()
        if splits is not None:
            phases.update(splits.seconds)
        phases.update(link.breakdown())
        ledger.close_phase(stage, link, deadline)
        ledger.record(result)
        link.close(wait=False)


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
                       overhead=overhead_at)
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
