"""The checker's held-out run (a bench job with `heldout` cases and `correctness_only`): each case on its own,
through the bench job's own correctness check, so one failure does not hide the others.

A case's layout reaches the reference through `LaidOut` and the candidate through the run's payload
(runner/layouts.py on both sides); a case whose inputs the reference cannot make or run is skipped,
since there is nothing to hold the candidate to there.
"""

from __future__ import annotations

import time
from typing import Any

from trialtui.core.generalization import Outcome
from trialtui.core.heldout import HeldOutCase, Layout
from trialtui.runner.candidate_errors import describe
from trialtui.runner.candidate_requests import CandidateFailed, Deadline
from trialtui.runner.forms import ReferenceCall
from trialtui.runner.layouts import arrange

MIN_CASE_S = 10.0  # a case begun just inside the budget still gets this long before it counts as hung


class NotApplicable(Exception):
    """The reference itself failed on a held-out case's inputs."""


class LaidOut:
    """The loaded reference as one held-out case sees it: its inputs laid out, its failures `NotApplicable`."""

    def __init__(self, reference: Any, layout: Layout) -> None:
        self._reference = reference
        self._layout = layout

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reference, name)

    def make_inputs(self, case: dict[str, Any], seed: int) -> Any:
        try:
            return self._reference.make_inputs(case, seed)
        except Exception as exc:  # noqa: BLE001 - the reference's get_inputs/generate_input at a size it does not allow
            raise NotApplicable(f"the reference makes no inputs here ({describe(exc)})") from exc

    def call(self, case: dict[str, Any], seed: int) -> ReferenceCall:
        try:
            call = self._reference.call(case, seed)
        except Exception as exc:  # noqa: BLE001
            raise NotApplicable(f"the reference cannot be built here ({describe(exc)})") from exc
        layout, fn = self._layout, call.fn

        def laid_out(inputs: Any) -> Any:
            try:
                return fn(arrange(layout.value, inputs))
            except Exception as exc:  # noqa: BLE001 - e.g. a .view() of a non-contiguous input
                raise NotApplicable(f"the reference does not accept {layout.says} ({describe(exc)})") from exc

        return ReferenceCall(laid_out, {**call.payload, "layout": layout.value}, call.model)


def check_each(checker: Any) -> dict[str, Any]:
    """Every held-out case through the job's checker (a runner/checker.Checker: its `correctness`), within the spec's
    `heldout_budget_s`.

    Returns a correctness report as the checker makes one (passed only if no case failed; the first
    failure's message), with `heldout`: one {outcome, message} per case, in the spec's order.
    """
    spec, link = checker.spec, checker.link
    cases = [HeldOutCase.from_dict(c) for c in spec.heldout or []]
    ends = time.monotonic() + spec.heldout_budget_s
    report: dict[str, Any] = {"seeds": 1, "cases": 0, "passed": True, "max_abs_err": 0.0, "max_rel_err": 0.0,
                              "mismatch_frac": 0.0, "first_mismatch": None, "message": "", "warnings": [],
                              "launches": 0, "case_bytes": 0, "heldout": []}
    stop = ""
    for case in cases:
        left = ends - time.monotonic()
        if not stop and left <= 0:
            stop = f"the {spec.heldout_budget_s:g} s budget ran out"
        if stop:
            report["heldout"].append({"outcome": Outcome.NOT_RUN.value, "message": stop})
            continue
        outcome, message = Outcome.PASSED, ""
        try:
            on_case = checker.on(LaidOut(checker.reference, case.layout),
                                 Deadline(min(checker.deadline.left(), max(left, MIN_CASE_S)), margin_s=0.0))
            found = on_case.correctness([case.sizes], [case.seed])
        except NotApplicable as exc:
            outcome, message = Outcome.SKIPPED, str(exc)
        except CandidateFailed as exc:
            if exc.state == "timeout":  # slow is not wrong, and a loaded machine is slow: the budget ran out here
                outcome = Outcome.NOT_RUN
                message = stop = f"the candidate did not finish {case.label} within the budget"
            else:
                outcome, message = Outcome.FAILED, str(exc)
            if not stop and link.process.poll() is not None:
                stop = f"the candidate's process ended at {case.label}"
        else:
            report["cases"] += 1
            for key in ("max_abs_err", "max_rel_err", "mismatch_frac", "case_bytes"):
                report[key] = max(report[key], found.get(key) or 0)
            report["launches"] += int(found.get("launches") or 0)
            if not found["passed"]:
                outcome = Outcome.FAILED
                message = found["message"].removeprefix(f"case 1 {case.sizes or '(defaults)'} seed {case.seed}: ")
                report["first_mismatch"] = report["first_mismatch"] or found.get("first_mismatch")
        if outcome is Outcome.FAILED and report["passed"]:
            report["passed"] = False
            report["message"] = f"held-out case {case.label}: {message}"
        report["heldout"].append({"outcome": outcome.value, "message": message})
    return report
