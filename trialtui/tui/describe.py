"""How the TUI words a trial: its glyph, its one-line outcome, and the label every number carries.

Honesty rules live here so every pane applies them alike: a CPU-interpreter run is "correct (CPU
interpreter)" and never a speed; a number says which GPU, dtype and sizes it came from; a number
not measured here says so beside it, "3.45× (replayed)", "(imported from hf)" (core.provenance).
"""

from __future__ import annotations

import time

from trialtui.core import provenance
from trialtui.core.bench_result import BenchResult
from trialtui.core.model import Trial, TrialState
from trialtui.core.result import CPU_TIMING_LABEL
from trialtui.core.text import fmt_us, label, wrong_output
from trialtui.tui.cut import cut

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
CPU_CORRECT = "correct (CPU interpreter) — GPU timing needs a GPU"

# state → (glyph, theme variable naming its colour)
GLYPHS: dict[TrialState, tuple[str, str]] = {
    TrialState.DETECTED: ("…", "trial-muted"),
    TrialState.VALIDATING: ("…", "trial-running"),
    TrialState.INVALID: ("!", "trial-invalid"),
    TrialState.QUEUED: ("◌", "trial-muted"),
    TrialState.BENCHMARKING: ("⠋", "trial-running"),
    TrialState.PROFILING: ("⠋", "trial-running"),
    TrialState.CORRECT: ("●", "success"),
    TrialState.INCORRECT: ("✗", "trial-failure"),
    TrialState.ERROR: ("✗", "trial-failure"),
    TrialState.TIMEOUT: ("✗", "trial-failure"),
    TrialState.CANCELLED: ("–", "trial-muted"),
    TrialState.SUPERSEDED: ("–", "trial-muted"),
    TrialState.INTERRUPTED: ("–", "trial-muted"),
}
RUNNING = frozenset({TrialState.BENCHMARKING, TrialState.PROFILING})


def glyph(state: TrialState, frame: int = 0) -> tuple[str, str]:
    mark, var = GLYPHS.get(state, ("?", "trial-muted"))
    if state in RUNNING:
        mark = SPINNER[frame % len(SPINNER)]
    return mark, var


def cpu_run(trial: Trial) -> bool:
    """A correct result from Triton's CPU interpreter: correct, but it measures nothing about speed."""
    result = trial.result
    if trial.state_enum is not TrialState.CORRECT or result is None:
        return False
    return (result.env or {}).get("device") == "cpu" or (result.timing or {}).get("label") == CPU_TIMING_LABEL


def elsewhere(result: BenchResult | None) -> str:
    """`replayed from a recording on NVIDIA H200, 2026-03-02`, `imported from hf; …` for a number
    not measured here, else ""."""
    return provenance.elsewhere(result)


def origin_word(result: BenchResult | None) -> str:
    """What the metrics pane calls a result's source: measured on, replayed or imported."""
    found = provenance.of_result(result)
    if found is None or found.measured_here:
        return "measured on"
    return "replayed" if found.origin is provenance.Origin.REPLAYED else "imported"


def measured_on(result: BenchResult | None) -> str:
    """The label every number of this result carries: GPU (or CPU), dtype, sizes, and where else it came from."""
    return label(result) if result else ""


def first_line(text: str | None, width: int = 80) -> str:
    line = next((part.strip() for part in (text or "").splitlines() if part.strip()), "")
    return cut(line, width)


def failing_check(trial: Trial) -> str:
    """What failed, in a few words: the validation error, the correctness numbers, the crash or the time
    limit; never the state's own word, which every pane that shows this shows beside it."""
    state = trial.state_enum
    message = trial.result.message if trial.result else None
    if state is TrialState.INVALID:
        errors = trial.validation.errors if trial.validation else []
        if not errors:
            return "invalid"
        first = errors[0]
        where = f"line {first['line']}: " if first.get("line") else ""
        return f"{where}{first_line(first.get('message'))}"
    if state is TrialState.INCORRECT:
        return first_line(wrong_output((trial.result.correctness if trial.result else None) or {}, message))
    if state is TrialState.TIMEOUT:
        return first_line(message) or "no result within the time limit"
    if state is TrialState.ERROR:
        return first_line(message) or "crashed"
    return state.value


def brief(trial: Trial) -> str | None:
    """A failure in a word or two, for a row too narrow for `failing_check`'s details; None otherwise."""
    state = trial.state_enum
    if state is TrialState.INCORRECT:
        return "wrong shape" if failing_check(trial).startswith("wrong shape") else "wrong"
    return {TrialState.INVALID: "invalid", TrialState.ERROR: "error", TrialState.TIMEOUT: "timed out"}.get(state)


def outcome(trial: Trial, baseline: str) -> tuple[str, str]:
    """The short text at the end of a tree row, and the theme variable for its colour."""
    state = trial.state_enum
    if state is TrialState.CORRECT:
        if cpu_run(trial):
            return "correct (CPU)", "success"
        speed = trial.speedup(baseline)
        if speed is None:
            return "correct", "success"
        origin = provenance.short(trial.result)
        return f"{speed:.2f}×{f' ({origin})' if origin else ''}", "success" if speed >= 1.0 else "warning"
    if state.is_failure:
        text = {TrialState.ERROR: f"error: {failing_check(trial)}", TrialState.TIMEOUT: "timed out"}.get(state)
        return text or failing_check(trial), "trial-invalid" if state is TrialState.INVALID else "trial-failure"
    if state is TrialState.QUEUED:
        return "queued", "trial-muted"
    if state in RUNNING or state is TrialState.VALIDATING:
        return state.value, "trial-running"
    return state.value, "trial-muted"


def speed_text(trial: Trial, baseline: str) -> str:
    """A sentence for the speed of a finished trial, labelled; a CPU run gets no speed at all."""
    if cpu_run(trial):
        return CPU_CORRECT
    speed = trial.speedup(baseline)
    if speed is None:
        return trial.state
    origin = provenance.short(trial.result)
    return (f"{speed:.2f}× vs {baseline}{f' ({origin})' if origin else ''} · {fmt_us(trial.median_us)} "
            f"[{measured_on(trial.result)}]")


def progress_text(phase: str, i: int | None, n: int | None, runs: int | None) -> str:
    """`seeds 3/5`, `timing 120 runs`: a job's progress in a few characters."""
    name = {"correctness": "seeds"}.get(phase, phase.replace("_", " "))
    if i is not None and n:
        return f"{name} {i}/{n}"
    if runs is not None:
        return f"{name} {runs} runs"
    return name


def preliminary_text(event, baseline: str) -> str:
    """`≈135.2 µs ±1.3% 1.84× eager, preliminary`: a first median, never mistaken for the final one."""
    ratio = event.speedup.get(baseline)
    versus = f" {ratio:.2f}× {baseline}" if ratio is not None else ""
    return f"≈{fmt_us(event.median_us)} ±{event.spread:.1%}{versus}, preliminary"


def clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}" if seconds < 3600 else f"{seconds // 3600}h{seconds // 60 % 60:02d}"


def saved_at(trial: Trial) -> str:
    return time.strftime("%H:%M:%S", time.localtime(trial.created))


def bar(fraction: float, width: int) -> str:
    """A smooth horizontal bar in eighths of a cell."""
    fraction = min(max(fraction, 0.0), 1.0)
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + ("" if part == 0 else " ▏▎▍▌▋▊▉"[part])
    return text.ljust(width)
