"""The checker of one bench job as an object: what it judges with, held by name, and its phases as methods.

The spec, the reference, the link to the candidate's process, the job's deadline, what the candidate's
replies reported on the side (`Facts`) and what a warm checker made ahead (`Prepared`) are the checker's
state; correctness and timing read them from it instead of from ten parameters each. The candidate's
process sees none of it: everything it hands back is data the checker judges (docs/SECURITY.md).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from trialtui.core.job_spec import BenchSpec
from trialtui.core.result import flag
from trialtui.runner.candidate_errors import describe
from trialtui.runner.candidate_requests import CandidateLink, Deadline
from trialtui.runner.job_progress import Splits
from trialtui.runner.judging import ReferenceFailed, TimedNorm, first_look, higher_precision, judge, tolerance
from trialtui.runner.tensors import nbytes


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


def _key(case: Any) -> str:
    """A case (sizes by name, or None for the problem's defaults) as a key."""
    return json.dumps(case, sort_keys=True, default=str)


def _quiet(**_: Any) -> None:
    """No progress lines (a held-out case's own check)."""


@dataclass
class Checker:
    """One job's judge of one candidate."""

    spec: BenchSpec
    reference: Any  # runner/loader.Reference, or a held-out layout of it (runner/heldout.LaidOut)
    link: CandidateLink  # the candidate's process
    deadline: Deadline
    facts: Facts = field(default_factory=Facts)  # every reply is shown to it
    progress: Callable[..., None] = _quiet
    splits: Splits = field(default_factory=lambda: Splits(sync=False))  # where the phases' seconds go
    prepared: Any = None  # a runner/prepared.Prepared: inputs, outputs and truths a warm checker made for these cases
    norms: dict[str, TimedNorm] = field(default_factory=dict)  # per case: the normwise rule its timed calls keep

    def timed_norm(self, case: Any) -> TimedNorm | None:
        """The normwise rule the untimed calls at `case` were held to, for its timed calls; None where they had none."""
        return self.norms.get(_key(case))

    def on(self, reference: Any, deadline: Deadline) -> Checker:
        """The same checker (its link, what it has seen) on another reference (a held-out layout) and
        deadline, with nothing prepared and its seconds apart."""
        return replace(self, reference=reference, deadline=deadline, progress=_quiet, prepared=None,
                       splits=Splits(sync=False), norms={})

    def release_cases(self) -> None:
        """Correctness is done: the prepared cases' tensors go before timing needs the memory (what a warm
        checker made for timing stays)."""
        if self.prepared is not None:
            self.prepared.cases.clear()

    def first_look(self, case: Any, seed: int) -> str:
        """judging.first_look at the first case, as the warm checker saw it when it prepared this problem."""
        looked = self.prepared.first_look if self.prepared is not None else None
        if looked is None:
            return first_look(self.reference, self.spec, case, seed)
        dtype, failure = looked
        if failure:
            raise ReferenceFailed(failure)
        return dtype

    def correctness(self, cases: list[Any], seeds: list[int]) -> dict[str, Any]:
        """Every case under every seed: inputs made here, the candidate's outputs received as data and judged here.

        A (case, seed) the warm checker prepared comes with its inputs, outputs and truth made ahead; the
        others are made here, the truth after the candidate's run so that the device holds one copy of the
        inputs at a time. The report ends at the first failure, its message naming the case and seed.
        """
        report: dict[str, Any] = {
            "seeds": len(seeds), "cases": len(cases), "passed": True, "max_abs_err": 0.0, "max_rel_err": 0.0,
            "mismatch_frac": 0.0, "first_mismatch": None, "message": "", "warnings": [], "launches": 0,
            "normwise_err": None, "normwise_bound": None, "case_bytes": 0, "prepared": 0,
            "rounding_floor": [],  # (case, seed)s accepted at the dtype's rounding floor (compare.within_rounding_floor)
        }
        trivial = True
        for ci, case in enumerate(cases):
            for si, seed in enumerate(seeds):
                self.progress(phase="correctness", i=ci * len(seeds) + si + 1, n=len(cases) * len(seeds))
                failed, constant = self._one(report, ci, case, seed)
                trivial = trivial and constant
                if failed:
                    report["passed"], report["message"] = False, failed
                    return report
        if trivial:
            report["warnings"].append(
                "the reference output is constant on these inputs: the check cannot tell a right kernel from a trivial one"
            )
        return report

    def _one(self, report: dict[str, Any], ci: int, case: Any, seed: int) -> tuple[str | None, bool]:
        """One (case, seed) into the report: its failure's message (else None), and whether the reference's
        output was constant there."""
        import torch

        from trialtui.runner.compare import is_trivial, looks_like_tf32, normwise
        from trialtui.runner.loader import DTYPES, unshared_note
        from trialtui.runner.tensors import clone

        spec, reference, splits = self.spec, self.reference, self.splits
        where = f"case {ci + 1} {case or '(defaults)'} seed {seed}"
        ready = self.prepared.get(ci, seed) if self.prepared is not None else None
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
        reply, output = self.link.request(
            "run", payload, timeout_s=self.deadline.left(), into=reference.device.type, max_bytes=64 * out_bytes + 2**20,
            check_inputs=reference.kind.checks_input_mutation, case=case,
        )
        del payload
        splits.mark("correctness.candidate_and_transfer")
        self.facts.see(reply)
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
        constant = is_trivial(expected)
        if reply.get("input_changed"):
            return f"{where}: the candidate modified its input {reply['input_changed']}", constant
        declared = DTYPES[spec.dtype] if reference.emulated else None  # bf16 run as fp32 on the CPU
        result = judge(spec, reference, expected, output, inputs, truth, report["rounding_floor"], where)
        on_gpu = reference.device.type == "cuda"  # TF32 exists there only: on the CPU it excuses nothing
        norm = normwise(expected, output, truth, spec.allow_tf32 and on_gpu, declared) if truth is not None and result.passed else None
        if norm is not None:
            report["normwise_err"] = max(report["normwise_err"] or 0.0, norm.err)
            report["normwise_bound"] = norm.bound if report["normwise_bound"] is None else min(report["normwise_bound"], norm.bound)
            if not norm.passed:
                result.fail(norm.message())
            key = _key(case)
            held = self.norms.get(key)
            self.norms[key] = held.merged(norm.bounds, norm.err) if held else TimedNorm(norm.bounds, norm.err)
        splits.mark("correctness.compare")
        for key in ("max_abs_err", "max_rel_err", "mismatch_frac"):
            report[key] = max(report[key], getattr(result, key))
        atol, _ = tolerance(spec, reference.kind)
        tf32 = on_gpu and atol is not None and looks_like_tf32(result, expected, spec.allow_tf32, declared)
        del inputs, expected, output, truth
        if result.passed:
            return None, constant
        message = f"{where}: {result.message}{unshared_note(reply.get('unshared'))}"
        if tf32:
            message += (f" (relative error {result.max_rel_err:.1e} looks like TF32 rounding: "
                        "set allow_tf32 = true in trialtui.toml if TF32 is acceptable)")
        report["first_mismatch"] = result.first_mismatch
        return message, constant
