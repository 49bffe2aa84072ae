"""What the headless demo prints: every event with the problem's name and where its numbers come
from, the final table, and summary.json.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from trialtui.core.bench_result import BenchResult
from trialtui.core.store import atomic_write
from trialtui.demo.replay import numbers_label
from trialtui.demo.story import ProblemRun
from trialtui.engine import events as ev
from trialtui.engine.front import EngineFront
from trialtui.engine.headless import HeadlessPrinter


class DemoPrinter(HeadlessPrinter):
    """HeadlessPrinter's lines with the problem's name, beats and demo notes as they are (no `!!`),
    and where each number comes from after every result and new best."""

    def __init__(self, engine: EngineFront, out: TextIO, *, prefix: str = "", progress: bool = False):
        super().__init__(out, as_json=False, progress=progress)
        self.engine = engine
        self.prefix = prefix

    def text(self, event: ev.Event) -> str:  # type: ignore[override]
        if isinstance(event, ev.Notice) and event.message.startswith(("beat: ", "demo: ")):
            line = event.message
        else:
            line = HeadlessPrinter.text(event)
            if isinstance(event, ev.NewBest) or (isinstance(event, ev.ResultReady) and event.state == "correct"):
                line += _unsaid(line, numbers_label(self._result(event.trial_id)))
        return f"{self.prefix}{line}"

    def _result(self, trial_id: str) -> BenchResult | None:
        try:
            return self.engine.store.get(trial_id).result
        except Exception:  # noqa: BLE001 - a line is never worth a crash
            return None


def _unsaid(line: str, label: str) -> str:
    """` — ` and the parts of `label` the line does not say yet: a result's own label already says
    "replayed from a recording on …", which once a line is enough."""
    parts = [part for part in label.split("; ") if part not in line]
    return f" — {'; '.join(parts)}" if parts else ""


def final_table(runs: list[ProblemRun], baselines: tuple[str, ...] = ("eager", "compile")) -> str:
    """One row per problem: its best trial (or, unranked, where the story ends), speedups, and where
    the numbers come from."""
    rows = [("problem", "best", *(f"vs {b}" for b in baselines), "story", "time", "numbers")]
    for run in runs:
        result = run.best_result
        speed = (result.speedup if result else None) or {}
        if run.error:
            where = f"FAILED: {run.error}"
        elif result and result.speedup:
            where = f"{_where(result)} · {numbers_label(result)}"
        else:
            where = "CPU: no GPU timing" + (" (no recording for any correct version)"
                                            if run.mode == "replay" and not run.unreplayed else "")
        if run.unreplayed:
            where += f"; not replayed, so no best ranked: {', '.join(run.unreplayed)}"
        if run.best:
            best = f"{run.best} ({run.best_version})"
        else:
            best = f"none ranked (ends at {run.best_version})" if run.best_version else "—"
        story = f"{len(run.outcomes) - len(run.mismatches) - len(run.unjudged)}/{len(run.outcomes)} as expected"
        if run.unjudged:
            story += f", {len(run.unjudged)} not judged"
        rows.append((run.problem, best, *(f"{speed[b]:.2f}×" if speed.get(b) is not None else "—" for b in baselines),
                     story, f"{run.wall_s:.0f} s", where))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r[:-1], widths)) + "  " + r[-1] for r in rows]
    return "\n".join(line.rstrip() for line in lines)


def next_steps(roots: list[Path], *, played_all: bool, shown: Callable[[Path], str] = str) -> list[str]:
    """The commands to try after a headless demo: read the tree, open the TUI, play the other stories."""
    first = shown(roots[0])
    lines = [f"next: trialtui trials status --dir {first}   (the tree of trials, as text)",
             f"      trialtui {first}   (the same trials in the TUI; q quits)"]
    if not played_all:
        lines.append("      trialtui demo --headless --all   (every sample's story, a few minutes on a CPU)")
    return lines


def _where(result: BenchResult) -> str:
    env = result.env or {}
    case = (result.sizes or [{}])[0] or {}
    shape = ", ".join(f"{k}={v}" for k, v in case.items() if k != "seed") or "default sizes"
    return f"{env.get('gpu') or '?'} · {result.dtype or '?'} · {shape}"



def run_summary(run: ProblemRun) -> dict[str, Any]:
    result = run.best_result.to_json() if run.best_result else {}  # summary.json quotes the result's own JSON
    return {
        "problem": run.problem,
        "mode": run.mode,
        "best": run.best,
        "best_version": run.best_version,
        "speedup": result.get("speedup"),
        "time_us": (result.get("timing") or {}).get("median_us"),
        "baselines_us": {k: v.get("median_us") for k, v in (result.get("baselines") or {}).items()},
        "gpu": (result.get("env") or {}).get("gpu"),
        "dtype": result.get("dtype"),
        "sizes": result.get("sizes"),
        "recorded": result.get("recorded"),
        "provenance": result.get("provenance"),
        "report": str(run.report) if run.report else None,
        "story": [{"version": o.version.file, "beat": o.version.beat, "trial": o.trial_id, "parent": o.parent,
                   "state": o.state, "expected": o.version.expected, "expected_parent": o.expected_parent,
                   "speedup": o.speedup, "beat_held": o.judgement.held, "beat_judged": o.judgement.text}
                  for o in run.outcomes],
        "branched_to": run.branched_to,
        "unreplayed": run.unreplayed,
        "wall_s": round(run.wall_s, 1),
        "error": run.error,
    }


def write_summary(directory: Path, runs: list[ProblemRun], *, merge: bool = False) -> Path:
    """`summary.json`: one entry per problem (merged with what is there when several write in turn)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "summary.json"
    data: dict[str, Any] = {}
    if merge and path.exists():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            data = {}
    for run in runs:
        data[run.problem] = run_summary(run)
    atomic_write(path, (json.dumps(data, indent=1, default=str) + "\n").encode())
    return path
