"""Finalize: the trial's source into final/, a clean re-benchmark (no cached baseline), the held-out check
(engine/generalize.py), the report card.

One function for `trialtui trials finalize`, the TUI's `F` and the demo; each caller holds the store
and keeps the GPU lanes idle meanwhile.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from trialtui.core import kernel_split, provenance
from trialtui.core.bench_result import BenchResult
from trialtui.core.kernel_split import KernelSplit
from trialtui.core.model import Trial, TrialState
from trialtui.core.problem import Problem
from trialtui.core.profile_result import ProfileResult
from trialtui.core.report import FINAL_DIR, build_report
from trialtui.core.report_card import Finalized
from trialtui.core.store import Store, atomic_write
from trialtui.engine import bench as engine_bench
from trialtui.engine import profile as engine_profile
from trialtui.engine.generalize import check_file


class FinalizeError(RuntimeError):
    """The clean re-benchmark was not correct, so nothing was finalized."""


def finalize(
    problem: Problem,
    store: Store,
    trial: Trial,
    *,
    device: str | None = None,
    bench: Callable[..., BenchResult] | None = None,
    env: dict[str, str] | None = None,
    extra: Callable[[Trial], tuple[str, dict[str, Any]]] | None = None,
    profile: Callable[..., ProfileResult] | None = None,
) -> Finalized:
    """The card written under final/ (REPORT.md, report.json) beside the kernel; raises FinalizeError.
    `extra`: a caller's section of the text and keys of the card (the demo's recorded run); `profile`: where the
    kernel records that weigh library work are taken (an executor's; this machine's by default)."""
    out_dir = problem.root / FINAL_DIR
    out_dir.mkdir(exist_ok=True)
    kernel = out_dir / trial.file
    atomic_write(kernel, store.snapshot_path(trial.sha256).read_bytes())
    bench = bench or engine_bench.bench_file
    result = bench(problem, kernel, device=device, use_cache=False, env=env,
                   log_path=problem.state_dir / "logs" / f"finalize-{trial.id}.log")
    if result.state != TrialState.CORRECT.value:
        kernel.unlink(missing_ok=True)
        raise FinalizeError(f"{trial.id} is {result.state} on the clean re-benchmark, so nothing was "
                            f"finalized: {result.message or 'no message'}")
    weighed = library_weighed(problem, store, trial, kernel, result, profile, env)
    fallback = weighed.fallback() if weighed is not None else None
    if fallback is not None:
        kernel.unlink(missing_ok=True)
        flagged = kernel_split.flagged(trial.result, weighed) if trial.result is not None else None
        if flagged is not None and store.writer:  # never best again, as a profile in the loop would have left it
            store.update(trial.id, result=flagged)
        raise FinalizeError(f"{trial.id} is not finalized: {fallback['message']}")
    # where the re-benchmark ran; a replayed one ran nowhere, so this machine's device, whose sizes it can run
    ran_on = (result.env or {}).get("device") if provenance.measured_here(result) else None
    generalization = check_file(problem, kernel, device=ran_on or device, bench=bench, env=env,
                                log_path=problem.state_dir / "logs" / f"finalize-{trial.id}-heldout.log")
    text, card = build_report(problem, trial, result, generalization, weighed)
    if extra is not None:
        section, more = extra(trial)
        text += section
        card = card.adding(more)
    atomic_write(out_dir / "REPORT.md", text.encode())
    atomic_write(out_dir / "report.json", (json.dumps(card.to_json(), indent=2) + "\n").encode())
    return Finalized(text, card, out_dir)


def library_weighed(problem: Problem, store: Store, trial: Trial, kernel: Path, result: BenchResult,
                    profile: Callable[..., ProfileResult] | None, env: dict[str, str] | None) -> KernelSplit | None:
    """The final kernel's own share of the GPU time, from kernel records its process has no part in: the trial's
    stored profile's, else a profile taken now, whatever `[profile] when` says (the bench's recorder sees only torch's
    functions, and a library reached around them would otherwise pass for the candidate's own in the final number),
    kept with a trial that had none. None off a GPU, for a number not measured here, or where no profiler could
    read records."""
    found = kernel_split.of_trial(trial, store)
    if found is not None or (result.env or {}).get("device") != "cuda" or not provenance.measured_here(result):
        return found
    taken = (profile or engine_profile.profile_file)(problem, kernel, name=f"finalize-{trial.id}", env=env)
    found = kernel_split.of_trial(replace(trial, profile=taken), store)  # as the loop weighs a profile it took
    if found is not None and store.writer and (trial.profile is None or not trial.profile.available):
        store.update(trial.id, profile=taken.without("log_tail", "command"))  # kept, as the loop's own profile is
    return found
