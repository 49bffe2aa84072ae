"""The short texts every layer shows: a time, the context a number needs, one trial's outcome.

Here rather than in `render` so that the engine and the TUI use them without importing the CLI's
renderings.
"""

from __future__ import annotations

import re
from typing import Any

from trialtui.core.bench_result import BenchResult
from trialtui.core.provenance import of_result, short
from trialtui.core.result import CPU_TIMING_LABEL
from trialtui.core.validation_report import ValidationReport

# What usually keeps a step of the candidate's from finishing: `trialtui validate` and the bench job say the same.
HANG_HINTS = {
    "import": "an infinite loop or a long computation at module top level? Move work into the entry point",
    "run": "an endless loop, or test sizes too large for the interpreter: set small [test_sizes] in trialtui.toml",
    "gpu run": "an endless loop, or a kernel that never finishes (a loop bound, a wait on a flag no one sets)",
}


def fmt_us(us: float | None) -> str:
    if us is None:
        return "—"
    if us >= 1000:
        return f"{us / 1000:.3f} ms"
    return f"{us:.2f} µs"


def sizes_label(sizes: Any) -> str:
    if not sizes:
        return "default sizes"
    case = sizes[0] if isinstance(sizes, list) else sizes
    if not case:
        return "default sizes"
    return ", ".join(f"{k}={v}" for k, v in case.items() if k != "seed")


def label(result: BenchResult) -> str:
    """`H200 · bfloat16 · batch=4096, dim=8192 · 2026-11-29 14:02`: the context every number needs;
    a number not measured here ends with where it came from (`· replayed from a recording on …`)."""
    env = result.env or {}
    origin = of_result(result)
    here = origin is None or origin.measured_here
    launched = (result.correctness or {}).get("launches") != 0  # a pure-PyTorch candidate ran no interpreter
    cpu = "CPU (Triton interpreter)" if launched else "CPU"
    if env.get("gpu"):
        where = env["gpu"]
    elif env.get("device") == "cuda":  # a GPU job that never reached one (no CUDA here, or it failed first)
        where = "no GPU reached (--device cuda)"
    else:
        where = cpu if here or env.get("device") == "cpu" else "device unknown"
    when = f" · {result.measured_at}" if result.measured_at and here else ""
    elsewhere = f" · {origin.label()}" if origin is not None and not here else ""
    return f"{where} · {result.dtype or '?'} · {sizes_label(result.sizes)}{when}{elsewhere}"


def trial_summary(trial, baseline: str = "eager") -> str:
    """One line for a finished trial: its speedup with its label, or what failed."""
    result = trial.result
    if trial.state == "correct" and result is not None:
        timing = result.timing or {}
        if timing.get("label") == CPU_TIMING_LABEL:
            return f"correct on the CPU interpreter ({label(result)}); GPU timing needs a GPU"
        speed = trial.speedup(baseline)
        speed_text = f"{speed:.2f}× vs {baseline}" if speed is not None else "no baseline"
        origin = short(result)
        if origin:
            speed_text += f" ({origin})"
        sol = f", {trial.sol:.0%} of speed-of-light" if trial.sol is not None else ""
        return f"{speed_text}, {fmt_us(timing.get('median_us'))}{sol} [{label(result)}]"
    return (result.message if result is not None else None) or trial.state


# runner/compare.py's words for a wrong shape, and bench_job's "case … seed …: " before every check's message.
_SHAPES = re.compile(r"shape expected (\([^)]*\)), got (\([^)]*\))")
_WHERE = re.compile(r"^case \d+ .*? seed \d+: ")


def wrong_output(correctness: dict[str, Any], message: str | None = None) -> str:
    """An incorrect result in a few words. A wrong shape says both shapes: no value was compared, so an
    error of 0 would read as a near miss; the largest error only where values differed."""
    text = next((line.strip() for line in (correctness.get("message") or message or "").splitlines()
                 if line.strip()), "")
    shapes = _SHAPES.search(text)
    if shapes:
        return f"wrong shape: expected {shapes[1]}, got {shapes[2]}"
    if correctness.get("max_abs_err"):
        return f"wrong (err {correctness['max_abs_err']:.1e})"
    return "wrong: " + (_WHERE.sub("", text) or "outputs differ")


def compile_summary(report: ValidationReport) -> str:
    """The compile stage's facts in one line: kernels, registers, spills, warnings."""
    kernels = report.kernels or []
    parts = [f"{len(kernels)} kernel(s)" if kernels else "no kernel compiled"]
    if kernels:
        regs = max(int(k.get("registers") or 0) for k in kernels)
        spills = sum(int(k.get("spills") or 0) for k in kernels)
        parts.append(f"≤{regs} registers")
        parts.append(f"{spills} spills" if spills else "no spills")
    warnings = len(report.warnings)
    if warnings:
        parts.append(f"{warnings} warning(s)")
    return ", ".join(parts)
