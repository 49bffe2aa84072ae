"""Trials in other people's formats: a markdown table for a pull request, JSON lines, and
trial_manager's directory layout (the HF kernels skills' `state.json`), out and back in.

Every number keeps its origin (core.provenance) through all of them: JSON lines hold whole results,
the table labels what was not measured here, and a trial_manager record carries it under our key, so
an import of an export of a replay still says replayed; a record without one is "imported from hf".

The CLI's `trials export`/`import` and the TUI's export share these, so each format has one writer.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from trialtui.core import provenance, tree
from trialtui.core.bench_result import BenchResult
from trialtui.core.model import Trial, TrialState
from trialtui.core.result import ResultError
from trialtui.core.store import Store, sha256_of

HF_STATE = "state.json"
_HF_KEY = "trialtui"  # our fields inside a trial_manager record; trial_manager ignores unknown keys


class InterchangeError(ValueError):
    """A trial_manager directory that cannot be imported as it stands; the message says which trial."""


def trials_jsonl(found: list[Trial]) -> str:
    """One JSON object per trial, as stored."""
    return "".join(json.dumps(t.to_dict()) + "\n" for t in found)


def markdown_table(name: str, found: list[Trial], baseline: str) -> str:
    """The trials as a markdown table for a pull request, headed by what the numbers were measured on."""
    top = tree.best(found, baseline)
    lines = [f"## {name}: {len(found)} trials", ""]
    if top:
        result = top.result
        env = (result.env if result else None) or {}
        origin = provenance.elsewhere(result)
        lines += [
            f"Best: **{top.id}**, {top.speedup(baseline):.2f}× vs {baseline}{f', {origin}' if origin else ''} "
            f"({env.get('gpu') or env.get('device') or 'device unknown'}, {(result and result.dtype) or 'dtype unknown'}, "
            f"sizes {(result and result.sizes) or 'unknown'})",
            "",
        ]
    lines += [
        f"| trial | parent | file | state | speedup vs {baseline} | time | strategy |",
        "|---|---|---|---|---|---|---|",
    ]
    for trial in found:
        speedup = trial.speedup(baseline)
        ident = f"**{trial.id}**" if top and trial.id == top.id else trial.id
        origin = provenance.short(trial.result) if speedup is not None else ""
        lines.append(
            f"| {ident} | {trial.parent or '—'} | {trial.file} | {trial.state}{' on CPU, not timed' if tree.correct_on_cpu(trial) else ''} | "
            f"{f'{speedup:.2f}×' if speedup is not None else '—'}{f' ({origin})' if origin else ''} | "
            f"{f'{trial.median_us:.2f} µs' if trial.median_us is not None else '—'} | "
            f"{tree.label(trial).replace('|', chr(92) + '|') or '—'} |"
        )
    return "\n".join(lines) + "\n"


def _hf_status(validation: str | None, correctness: str | None, speedup: float | None) -> str:
    """trial_manager's status rule."""
    if "fail" in (validation, correctness):
        return "failed"
    if correctness == "pass" and speedup is not None:
        return "completed"
    return "partial" if validation or correctness else "saved"


def hf_state(name: str, reference: Path, found: list[Trial], baseline: str) -> dict[str, Any]:
    """trial_manager's state.json for these trials; our own fields ride along under `trialtui`."""
    top = tree.best(found, baseline)
    records = {}
    for trial in found:
        state = trial.state_enum
        validated = state.reached_gpu or state == TrialState.QUEUED
        validation = "fail" if state == TrialState.INVALID else ("pass" if validated else None)
        correctness = {TrialState.CORRECT: "pass", TrialState.INCORRECT: "fail"}.get(state)
        speedup = trial.speedup(baseline)
        base = trial.baseline(baseline)
        records[trial.id] = {
            "parent": trial.parent,
            "file": f"{trial.id}.py",
            "strategy": tree.label(trial),
            "validation": validation,
            "correctness": correctness,
            "speedup": speedup,
            "baseline_us": base.get("median_us") if correctness == "pass" else None,
            "triton_us": trial.median_us,
            "status": _hf_status(validation, correctness, speedup),
            _HF_KEY: {
                "file": trial.file,
                "state": trial.state,
                "strategy": trial.strategy,
                "note": trial.note,
                "created": trial.created,
                **_numbers_context(trial),
            },
        }
    best_base = records[top.id]["baseline_us"] if top else None
    return {
        "kernel_name": name,
        "pytorch_file": str(reference),
        "baseline_type": "pytorch",
        "trials": records,
        "best_trial": top.id if top else None,
        "next_id": max((tree.id_number(t.id) for t in found), default=0) + 1,
        "baseline_us": [best_base] if best_base is not None else None,
    }


def _numbers_context(trial: Trial) -> dict[str, Any]:
    """What trial_manager's fields cannot say about a result's numbers: their origin, device, dtype, sizes."""
    result = trial.result
    origin = provenance.of_result(result)
    if not result or origin is None:
        return {}
    env = result.env or {}
    return {
        provenance.KEY: origin.to_dict(),
        "env": {k: env.get(k) for k in ("device", "gpu") if env.get(k) is not None},
        "dtype": result.dtype,
        "sizes": result.sizes,
    }


def _state_from_hf(record: dict[str, Any], ours: str | None) -> TrialState:
    """trial_manager's pass/fail fields decide; our exported state fills in what they cannot say."""
    if record.get("validation") == "fail":
        return TrialState.INVALID
    if record.get("correctness") == "fail":
        return TrialState.INCORRECT
    if record.get("correctness") == "pass":
        return TrialState.CORRECT
    kept = {TrialState.ERROR, TrialState.TIMEOUT, TrialState.CANCELLED, TrialState.SUPERSEDED}
    if ours in {s.value for s in kept}:
        return TrialState(ours)
    return TrialState.INTERRUPTED  # saved but never measured: nothing is running it any more


def _hf_result(record: dict[str, Any], kind: str, ours: dict[str, Any],
               origin: provenance.Provenance) -> BenchResult:
    """The numbers trial_manager kept, in the bench-result shape, with the origin they came with.

    trial_manager itself knew no GPU, dtype or sizes; a trialtui export adds them under its own key.
    """
    mine = record.get("triton_us", record.get("kernel_us"))  # cpu-kernels calls it kernel_us
    base, speedup = record.get("baseline_us"), record.get("speedup")
    result: dict[str, Any] = {
        "version": 1,
        "state": TrialState.CORRECT.value,
        "timing": {"median_us": mine} if mine is not None else None,
        "baselines": {kind: {"median_us": base}} if base is not None else {},
        "speedup": {kind: speedup} if speedup is not None else None,
        "env": dict(ours.get("env") or {}),
        "flags": [],
        "message": provenance.HF_IMPORT_MESSAGE,
        provenance.KEY: origin.to_dict(),
    }
    for key in ("dtype", "sizes"):
        if ours.get(key) is not None:
            result[key] = ours[key]
    try:
        return BenchResult.from_json(result)
    except ResultError as exc:
        raise InterchangeError(f"{record.get('file') or 'a trial'}: its numbers do not make a result: {exc}") from None


def _origin_from_hf(ours: dict[str, Any], directory: Path) -> provenance.Provenance:
    """The origin a record had (a trialtui export says it), one import further; none said: another tool's."""
    had = provenance.Provenance.from_dict(ours.get(provenance.KEY)) or provenance.foreign()
    return had.imported("hf", str(directory.resolve()))


def import_hf(store: Store, directory: Path, state: dict[str, Any], baseline: str) -> tuple[dict[str, str], list[str]]:
    """Add trial_manager's trials, parents first; returns (its id → ours, the ids added)."""
    kernel = state.get("kernel_name") or directory.name
    kind = baseline if state.get("baseline_type", "pytorch") == "pytorch" else "triton"
    known = {(t.file, t.sha256): t.id for t in store.trials()}
    mapping: dict[str, str] = {}
    added: list[str] = []
    records = state.get("trials") or {}
    for hf_id in sorted(records, key=tree.id_number):
        record = records[hf_id]
        ours = record.get(_HF_KEY) or {}
        file = ours.get("file") or f"{kernel}.py"
        path = directory / (record.get("file") or f"{hf_id}.py")
        if "/" in file or not path.is_file():
            raise InterchangeError(f"{hf_id}: cannot import {path} as {file!r}")
        source = path.read_bytes()
        key = (file, sha256_of(source))
        if key in known:
            mapping[hf_id] = known[key]
            continue
        trial_state = _state_from_hf(record, ours.get("state"))
        trial = store.add_trial(
            file,
            source,
            parent=mapping.get(record.get("parent")),
            strategy=ours["strategy"] if "strategy" in ours else (record.get("strategy") or None),
            move_head=False,
            state=trial_state,
            note=ours.get("note"),
            created=ours.get("created") or time.time(),
            result=(_hf_result(record, kind, ours, _origin_from_hf(ours, directory))
                    if trial_state == TrialState.CORRECT else None),
        )
        mapping[hf_id] = known[key] = trial.id
        added.append(trial.id)
    return mapping, added
