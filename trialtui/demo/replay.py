"""Replay: GPU numbers from a recording of the very same source, merged into a live CPU check.

Recordings (written by `trialtui demo --record DIR` on a GPU, one file per story version,
`DIR/<problem>/<version stem>.json`, to be copied into `sample_kernels/<problem>/recorded/`)::

    {"problem": "softmax", "version": "v3", "file": "v3.py", "sha256": "<source sha256>",
     "recorded_at": "2025-11-29T10:00:00+00:00", "trial": "t3", "state": "correct",
     "result": {<the trial's whole bench result, as the engine stored it>},
     "sol": 0.81, "verdicts": [...], "profile": null}

Replay indexes every recording of a problem by sha256, so only byte-identical source ever gets
numbers, whatever its file is called. Every replayed result carries a replayed `Provenance` (its
recording, GPU and date; core.provenance) and says "replayed from a recording on
<GPU>, <date>"; nothing replayed is ever called measured.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from trialtui.core import provenance
from trialtui.core.bench_result import BenchResult
from trialtui.core.model import Trial, TrialState
from trialtui.core.problem import Problem
from trialtui.core.result import ResultError
from trialtui.core.store import sha256_of
from trialtui.demo.story import Version
from trialtui.engine.bench import bench_file

NO_SPEED_FLAGS = frozenset({"no-recording", "recording-not-correct"})


def load_recordings(directory: Path | None) -> dict[str, dict[str, Any]]:
    """sha256 → recording, from every *.json in `directory` (absent: none). Unreadable files are skipped."""
    found: dict[str, dict[str, Any]] = {}
    if directory is None or not directory.is_dir():
        return found
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or not data.get("sha256"):
            continue
        try:
            result = BenchResult.from_json(data.get("result"))
        except ResultError:
            continue
        found[data["sha256"]] = {**data, "result": result, "path": str(path)}
    return found


def recorded_date(recording: dict[str, Any]) -> str:
    return str(recording.get("recorded_at") or "an unknown date")[:10]


def recorded_label(result: BenchResult | None) -> str | None:
    """'replayed from a recording on NVIDIA H200, 2025-11-29' for a replayed result, else None."""
    origin = provenance.of_result(result)
    if origin is None or origin.origin is not provenance.Origin.REPLAYED:
        return None
    return origin.label()


def merge_recording(cpu: BenchResult, recording: dict[str, Any]) -> BenchResult:
    """The live CPU result with the recording's GPU numbers in place of the CPU timing."""
    gpu: BenchResult = recording["result"]
    env = gpu.env or {}
    flags = list(cpu.flags or []) + [
        {**f, "message": f"{f.get('message', '')} (in the recording)"} for f in gpu.flags or []
    ]
    timed = provenance.of_result(gpu)  # a recording made by this version names the host that timed it
    replayed = provenance.replayed(
        recording.get("path"), env.get("gpu"), recording.get("recorded_at"),
        host=timed.host if timed is not None else None,
    ).to_dict()
    recorded = {
        "gpu": env.get("gpu"),
        "date": recorded_date(recording),
        "source": "replay",
        "path": recording.get("path"),
        "recorded_at": recording.get("recorded_at"),
        "version": recording.get("version"),
        "sha256": recording.get("sha256"),
        "trial": recording.get("trial"),
        "correctness": gpu.correctness,  # the check at bench sizes on that GPU
        "cpu": {"timing": cpu.timing, "env": cpu.env, "sizes": cpu.sizes},
    }
    return replace(cpu, timing=gpu.timing, baselines=gpu.baselines, speedup=gpu.speedup, env=gpu.env, sizes=gpu.sizes,
                   dtype=gpu.dtype, flags=flags, provenance=replayed, recorded=recorded)


class ReplayBench:
    """The engine's `bench` without a GPU: the real CPU check, then recorded GPU numbers if any.

    Correctness always comes from the CPU run; a recording only ever adds speed to a trial that is
    correct here, and only a recording of the same source bytes (sha256) counts.
    """

    def __init__(self, recordings: dict[str, dict[str, Any]], inner: Callable[..., BenchResult] = bench_file):
        self.recordings = recordings
        self.inner = inner
        self.uses_warm_children = inner is bench_file  # the engine's warm checkers and compile stages serve it too

    def __call__(self, problem: Problem, path: Path | str, **kwargs: Any) -> BenchResult:
        kwargs["device"] = "cpu"
        sha = sha256_of(Path(path).read_bytes())
        recording = self.recordings.get(sha)
        if recording is not None and _speaks(recording):
            kwargs["correctness_only"] = True  # its numbers replace the CPU's: no interpreted timed calls for nothing
        result = self.inner(problem, path, **kwargs)
        if result.state != TrialState.CORRECT.value:
            return result
        if recording is None:
            return replace(result, flags=[*(result.flags or []), {
                "code": "no-recording",
                "message": f"no GPU recording for this source (sha256 {sha[:12]}): correct on the CPU, no speed",
            }])
        gpu = recording["result"]
        if not _speaks(recording):
            return replace(result, flags=[*(result.flags or []), {
                "code": "recording-not-correct",
                "message": f"the recorded GPU run of this source ({recording.get('file')}) was "
                           f"{gpu.state}: {gpu.message or 'no timing'}; no speed",
            }])
        return merge_recording(result, recording)


def _speaks(recording: dict[str, Any]) -> bool:
    """A recording with GPU numbers to give: its run was correct and timed."""
    gpu = recording["result"]
    return gpu.state == TrialState.CORRECT.value and bool(gpu.speedup)


def recording_for(problem: str, version: Version, trial: Trial) -> dict[str, Any]:
    """What `--record` writes for one played version."""
    return {
        "problem": problem,
        "version": version.stem,
        "file": version.file,
        "sha256": trial.sha256,
        "recorded_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "trial": trial.id,
        "state": trial.state,
        "result": trial.result.to_json() if trial.result else None,
        "sol": trial.sol,
        "verdicts": [v.to_dict() for v in trial.verdicts],
        "profile": trial.profile.to_json() if trial.profile else None,
        "decision": trial.decision.to_dict() if trial.decision is not None else None,
    }



def not_replayed(result: BenchResult | None) -> bool:
    """A result checked correct here that got no GPU numbers: no recording of its source, or a bad one."""
    return any(f.get("code") in NO_SPEED_FLAGS for f in (result.flags if result else None) or [])


def numbers_label(result: BenchResult | None) -> str:
    """Where a trial's numbers come from, for every line that shows one."""
    recorded = recorded_label(result)
    if recorded:
        return f"{recorded}; correctness checked live on this CPU"
    elsewhere = provenance.elsewhere(result)
    if elsewhere:
        return elsewhere
    env = (result.env if result else None) or {}
    if env.get("device") == "cuda":
        return f"measured live on {env.get('gpu') or 'the GPU'}"
    if any(f.get("code") == "no-recording" for f in (result.flags if result else None) or []):
        return "no GPU recording for this source: no speed"
    return "CPU: no GPU timing"


def recorded_extra(trial: Trial, baselines: list[str]) -> tuple[str, dict[str, Any]]:
    section, recorded = recorded_section(trial, baselines)
    return section, {"recorded": recorded}


def recorded_section(trial: Trial, baselines: list[str]) -> tuple[str, dict[str, Any]]:
    """REPORT.md's part for replayed GPU numbers: which GPU, when, against what; never 'measured'."""
    result = trial.result
    if result is None or not result.recorded:
        return "", {}
    recorded = result.recorded
    origin = provenance.of_result(result)
    timing = result.timing or {}
    lines = [
        "",
        f"## GPU numbers {recorded_label(result)} (not measured in this run)",
        "",
        f"- The same source (sha256 {str(recorded.get('sha256'))[:12]}) timed on {recorded.get('gpu')}; "
        f"dtype {result.dtype}; sizes "
        + "; ".join(", ".join(f"{k}={v}" for k, v in (c or {}).items()) for c in (result.sizes or [])),
        f"- Correctness in this run: the CPU check above; on the GPU at those sizes: "
        f"{'passed' if (recorded.get('correctness') or {}).get('passed') else 'not recorded'}",
        "",
        "| | median | speedup |",
        "|---|---|---|",
        f"| {trial.id} | {_us(timing.get('median_us'))} | |",
    ]
    for kind in baselines:
        base = (result.baselines or {}).get(kind) or {}
        speed = (result.speedup or {}).get(kind)
        lines.append(f"| {kind} | {_us(base.get('median_us'))} | {f'{speed:.2f}×' if speed is not None else '—'} |")
    data = {
        **{k: recorded.get(k) for k in ("gpu", "date", "source", "recorded_at", "sha256")},
        provenance.KEY: origin.to_dict() if origin else None,
        "time_us": timing.get("median_us"),
        "baselines_us": {k: ((result.baselines or {}).get(k) or {}).get("median_us") for k in baselines},
        "speedup": {k: (result.speedup or {}).get(k) for k in baselines},
        "dtype": result.dtype,
        "sizes": result.sizes,
    }
    return "\n".join(lines) + "\n", data


def _us(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f} µs"

