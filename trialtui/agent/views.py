"""What the MCP tools answer, built from trials and the problem as plain data: the fields docs/AGENTS.md lists.

Pure functions, so the answer an agent reads is exactly what the store holds: numbers only where a
result has them, each with the label that says where and when it was measured (or replayed from,
or imported from: core.provenance).
"""

from __future__ import annotations

from typing import Any

from trialtui.core import provenance, tree
from trialtui.core.bench_result import BenchResult
from trialtui.core.flags import DISQUALIFYING, KINDS
from trialtui.core.forms import get_form
from trialtui.core.generalization import Generalization
from trialtui.core.model import Trial
from trialtui.core.problem import Problem
from trialtui.core.text import label, trial_summary
from trialtui.demo.replay import recorded_label

RULES = (
    "Only write kernel files: submit(name, source, strategy) saves a candidate *.py in the problem directory; "
    "the reference, support files and .trialtui/ are never written.",
    "Never time or check a kernel yourself: every number comes from the frozen harness, through result().",
    "A failing tool is reported, not bypassed: read its message and fix the candidate, or stop and report.",
    "A flagged result is never best and never finalized; a plateau is a reason to change approach, not to stop.",
)


def machine_view(device: str, missing_runner: str | None) -> dict[str, Any]:
    """What the machine that runs the jobs can do, and when that alone means stop: without a GPU nothing is
    timed, so the budget never moves and budget_spent, best and finalize never come (docs/AGENTS.md)."""
    if missing_runner:
        return {"runs_jobs": False, "gpu": False, "stop_when": "now: nothing can be checked here; report "
                f"this to the user ({missing_runner})"}
    if device == "cpu":
        return {"runs_jobs": True, "gpu": False, "stop_when": (
            "a candidate is correct on CPU (or only a GPU can run it): no GPU here, so nothing is timed, the budget "
            "stays at 0 and best and finalize refuse; report that trial and the command that times it on a GPU "
            "machine (trialtui bench FILE --device cuda)")}
    return {"runs_jobs": True, "gpu": True, "stop_when": None}


def stop_now(trial: Trial, machine: dict[str, Any]) -> bool:
    """Whether this result is where the machine alone says stop (the budget rule cannot fire here)."""
    if not machine["runs_jobs"]:
        return True
    return not machine["gpu"] and (tree.correct_on_cpu(trial) or bool(trial.result and trial.result.needs_gpu))


def budget(problem: Problem, trials: list[Trial]) -> dict[str, int]:
    spent = tree.budget(trials, problem.config.max_trials)
    return {"used": spent.used, "limit": spent.limit, "left": spent.left}


def problem_view(problem: Problem, trials: list[Trial], device: str, machine: dict[str, Any]) -> dict[str, Any]:
    cfg = problem.config
    form = get_form(problem.form)
    atol, rtol = cfg.tolerance
    return {
        "name": problem.name,
        "form": form.label,
        "reference": problem.reference.read_text(encoding="utf-8"),
        "dtype": _dtype(problem, trials),
        "seeds": cfg.seeds,
        "test_sizes": problem.test_cases,
        "bench_sizes": problem.bench_cases,
        "tolerances": ({"judged_by": f"reference.py's {form.judge}"} if form.judge and cfg.atol is None and cfg.rtol is None
                       else {"atol": atol, "rtol": rtol}),
        "baselines": cfg.baselines,
        "targets": {"speedup": cfg.target_speedup, "speed_of_light": cfg.sol_target},
        "budget": budget(problem, trials),
        "must_define": {"entry_point": problem.entry_point, "how": form.entry_hint},
        "candidates": [p.name for p in problem.candidates()],
        "not_candidates": sorted({"reference.py", *problem.not_candidates}),
        "device": device,
        "machine": machine,
        "rules": list(RULES),
    }


def _dtype(problem: Problem, trials: list[Trial]) -> str:
    """trialtui.toml's, which the form casts inputs to; where its inputs keep their own (GPU MODE), the dtype a result
    named them by, else what makes them."""
    if not get_form(problem.form).keeps_input_dtypes:
        return problem.config.dtype
    named = next((t.result.dtype for t in reversed(trials) if t.result and t.result.dtype), None)
    return named or "as generate_input makes the inputs"


def _flags(result: BenchResult | None) -> list[dict[str, Any]]:
    out = []
    for item in (result.flags if result else None) or []:
        if isinstance(item, dict):
            code = item.get("code")
            out.append({"code": code, "message": item.get("message") or (KINDS[code].meaning if code in KINDS else ""),
                        "disqualifies": code in DISQUALIFYING})
    return out


def numbers(trial: Trial, baseline: str) -> dict[str, Any] | None:
    """The confirmed numbers of a result, with the label that every number needs; None before a result."""
    result = trial.result
    if not result:
        return None
    timing = result.timing or {}
    base = trial.baseline(baseline)
    env = result.env or {}
    origin = provenance.of_result(result)
    return {
        "label": label(result),
        "gpu": env.get("gpu"),
        "device": env.get("device"),
        "dtype": result.dtype,
        "shape": result.sizes,
        "date": result.measured_at or (result.recorded or {}).get("date"),
        "replayed": recorded_label(result),  # not measured here: a recording of the same source, on its GPU
        "measured_here": origin is None or origin.measured_here,
        "origin": origin.label() if origin else None,  # replayed, imported from hf, or measured here
        provenance.KEY: origin.to_dict() if origin else None,
        "median_us": timing.get("median_us"),
        "timing_label": timing.get("label"),
        "baseline": baseline,
        "baseline_us": base.get("median_us"),
        "speedup": result.speedup,
        "speed_of_light": trial.sol,
        "correctness": result.correctness,
    }


def what_happened(trial: Trial) -> str:
    """The result's message, else the first validation error with its line: a failure as the harness said it."""
    message = (trial.result.message if trial.result else None) or ""
    errors = trial.validation.errors if trial.validation else []
    if not message and errors:
        first = errors[0]
        message = f"line {first.get('line')}: {first.get('message')}" if first.get("line") else first.get("message", "")
    return message


def result_view(problem: Problem, trial: Trial, trials: list[Trial], machine: dict[str, Any], *,
                done: bool) -> dict[str, Any]:
    baseline = problem.config.primary_baseline
    decision = trial.decision
    message = what_happened(trial)
    return {
        "trial_id": trial.id,
        "file": trial.file,
        "parent": trial.parent,
        "strategy": tree.label(trial) or None,
        "state": trial.state,
        "done": done,
        "message": message,
        "summary": trial_summary(trial, baseline) if trial.state_enum.is_final else None,
        "numbers": numbers(trial, baseline),
        "flags": _flags(trial.result),
        "disqualified": tree.disqualified(trial),
        "verdicts": [v.to_dict() for v in trial.verdicts],
        "validation_errors": [{k: e.get(k) for k in ("code", "message", "line", "hint")}
                              for e in (trial.validation.errors if trial.validation else [])],
        "next_action": ({"action": decision.action, "reason": decision.reason,
                         "evidence": decision.evidence, "hints": decision.hints}
                        if decision is not None else None),
        "budget": budget(problem, trials),
        "machine": machine,
        "stop": done and stop_now(trial, machine),
    }


def row(trial: Trial, baseline: str) -> dict[str, Any]:
    return {"trial_id": trial.id, "parent": trial.parent, "file": trial.file, "state": trial.state,
            "strategy": tree.label(trial) or None, "speedup": trial.speedup(baseline),
            "summary": trial_summary(trial, baseline) if trial.state_enum.is_final else trial.state}


def tree_view(problem: Problem, trials: list[Trial], heads: dict[str, str]) -> dict[str, Any]:
    baseline = problem.config.primary_baseline
    best = tree.best(trials, baseline)
    return {
        "text": tree.render_tree(trials, best_id=best.id if best else None, heads=heads, baseline=baseline),
        "trials": [row(t, baseline) for t in trials],
        "heads": heads,
        "best": best.id if best else None,
        "budget": budget(problem, trials),
    }


def best_view(problem: Problem, trials: list[Trial], machine: dict[str, Any]) -> dict[str, Any]:
    baseline = problem.config.primary_baseline
    best = tree.best(trials, baseline)
    if best is None:
        return {"trial_id": None, "reason": tree.no_best_reason(trials, baseline), "budget": budget(problem, trials),
                "machine": machine}
    return {**row(best, baseline), "numbers": numbers(best, baseline), "budget": budget(problem, trials)}


def generalization_view(trial: Trial, found: Generalization) -> dict[str, Any]:
    """The on-demand held-out check of a trial: the card's line, each case, and what running it gave away."""
    return {
        "trial_id": trial.id,
        "generalizes": found.line(),
        "fails": found.fails,
        "cases": [{k: case[k] for k in ("label", "why", "seed", "outcome", "message")} for case in found.to_dict()["cases"]],
        "message": (f"these cases are now known for {trial.id}'s source: finalize still runs them (with fresh "
                    "seeds), and its card says they were not held out"),
    }
