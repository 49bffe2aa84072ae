"""The report card `trials finalize` writes: what was measured, on what, against what, how near the ceiling.

A pure function of the problem, the trial and the clean re-benchmark's result, so every field is
tested without a GPU. Every number carries its GPU, dtype, sizes and baseline kind; a CPU run is
labelled as such and has no speedup. Every number says whose it is: a re-benchmark that did not
measure (a replay) says so instead of "Measured on", and a trial chosen on a replayed or imported
number has that number and its origin named beside this run's. The held-out check's "generalizes:" line
(core/generalization.py) is in the card; a kernel that fails a held-out case has it at the top and no
headline win.
"""

from __future__ import annotations

from typing import Any

from trialtui.core.bench_result import BenchResult
from trialtui.core.generalization import Generalization
from trialtui.core.kernel_split import KernelSplit
from trialtui.core.model import Trial, TrialState
from trialtui.core.problem import Problem
from trialtui.core.provenance import KEY as PROVENANCE
from trialtui.core.provenance import Provenance, of_result
from trialtui.core.report_card import ReportCard
from trialtui.core.result import CPU_TIMING_LABEL
from trialtui.core.tree import label

FINAL_DIR = "final"
_TIME_KEYS = ("median_us", "min_us", "p20_us", "p80_us", "mean_us", "std_us", "n", "rse", "kernel_us")


def build_report(problem: Problem, trial: Trial, result: BenchResult, generalization: Generalization | None = None,
                 library: KernelSplit | None = None) -> tuple[str, ReportCard]:
    """(REPORT.md text, the card report.json holds) for a correct re-benchmark of `trial`, its held-out check and the
    library's share of its GPU time (core/kernel_split.py)."""
    if result.state != TrialState.CORRECT.value:
        raise ValueError(f"a report needs a correct result, got {result.state!r}")
    env = result.env or {}
    on_gpu = env.get("device") == "cuda"
    timing = result.timing or {}
    primary = problem.config.primary_baseline
    speedups = (result.speedup or {}) if on_gpu else {}
    baselines = {
        kind: {
            "median_us": base.get("median_us"),
            "p20_us": base.get("p20_us"),
            "p80_us": base.get("p80_us"),
            "cached": bool(base.get("cached")),
            "speedup": speedups.get(kind),
        }
        for kind, base in (result.baselines or {}).items()
    }
    fresh = of_result(result)
    ranked = of_result(trial.result)
    data = {
        "problem": problem.name,
        "trial": trial.id,
        "parent": trial.parent,
        "file": f"{FINAL_DIR}/{trial.file}",
        "source": trial.file,
        "sha256": trial.sha256,
        "strategy": label(trial) or None,
        "gpu_timing": on_gpu,
        "timing_label": timing.get("label") or ("GPU timing" if on_gpu else CPU_TIMING_LABEL),
        "device": env.get("device"),
        "gpu": env.get("gpu"),
        "capability": env.get("capability"),
        "sm_count": env.get("sm_count"),
        "driver": env.get("driver"),
        "torch": env.get("torch"),
        "triton": env.get("triton"),
        "host": env.get("host"),
        "executor": env.get("executor"),  # set when the re-benchmark ran off this machine (ssh, ray)
        "models": result.models,
        "dtype": result.dtype or problem.config.dtype,
        "sizes": result.sizes,
        "correctness": result.correctness,
        "tolerance": dict(zip(("atol", "rtol"), problem.config.tolerance)),
        "time_us": {key: timing.get(key) for key in _TIME_KEYS},
        "spread_pct": _spread_pct(timing),
        "primary_baseline": primary,
        "baselines": baselines,
        "speedup": speedups.get(primary),
        "sol": trial.sol if on_gpu else None,  # a fraction of a GPU's ceiling means nothing beside a CPU time
        "bound": _bound(trial, on_gpu)[0],
        "bound_source": _bound(trial, on_gpu)[1],
        "flags": result.flags or [],
        "generalizes": generalization.line() if generalization else None,
        "generalization": generalization.to_dict() if generalization else None,
        # whose numbers these are: this run's (measured here, unless the bench given replays) ...
        **_origin(fresh),
        # ... and the number the trial was chosen on, with its own origin (a replay, an import)
        "ranked_on": {"speedup": trial.speedup(primary), "time_us": trial.median_us, **_origin(ranked)},
        "library": library.to_dict() if library is not None else None,
    }
    card = ReportCard(**data, _keys=tuple(data))
    return render_markdown(card), card


def _origin(found: Provenance | None) -> dict[str, Any]:
    """A report's fields for where numbers come from (no provenance: measured here)."""
    return {
        "measured_here": found is None or found.measured_here,
        "origin": found.label() if found else None,
        "origin_short": found.short() if found else "",
        PROVENANCE: found.to_dict() if found else None,
    }


def _bound(trial: Trial, on_gpu: bool) -> tuple[str, str]:
    """Compute or bandwidth, and how that is known: the profile's word when it has one, else the
    roofline's (FLOPs and minimum bytes against the GPU's ceilings), else unknown."""
    said = trial.profile.extra.get("bound") if trial.profile is not None else None  # a profiler's own word
    if said:
        return said, f"from {trial.id}'s profile"
    roof = ((trial.result.roofline if trial.result else None) or {}) if trial.gpu_timing else {}
    if roof.get("bound"):
        word = "bandwidth" if roof["bound"] == "memory" else "compute"
        return word, (f"roofline: {roof.get('intensity', 0):.1f} FLOP/B against a ridge of "
                      f"{roof.get('ridge', 0):.1f} on {roof.get('gpu')}, {roof.get('source')} ceilings")
    if not on_gpu:  # the roofline places a GPU time, and the report's run has none
        return "unknown", "a CPU run: no GPU time to place on a roofline (trialtui analyze gives the problem's bound)"
    return "unknown", "no profile or roofline classified this kernel"


def _spread_pct(timing: dict[str, Any]) -> float | None:
    """p20–p80 width as a percentage of the median: how much the headline number can be trusted."""
    median, low, high = timing.get("median_us"), timing.get("p20_us"), timing.get("p80_us")
    if not median or low is None or high is None:
        return None
    return (high - low) / median * 100


def _library(split: dict[str, Any] | None) -> str:
    """The card's line on whose kernels did the GPU work."""
    if not split:
        return "not weighed: no kernel records here, or no kernel of its own to weigh them against (`trialtui profile`)"
    return KernelSplit.from_dict(split).line()


def _us(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f} µs"


def _err(value: float | None) -> str:
    return "?" if value is None else f"{value:.1e}"


def _sizes(sizes: Any) -> str:
    cases = sizes if isinstance(sizes, list) else [sizes]
    text = "; ".join(", ".join(f"{k}={v}" for k, v in (case or {}).items()) for case in cases if case)
    return text or "the reference's defaults"


def render_markdown(card: ReportCard) -> str:
    on_gpu = card.gpu_timing
    where = (
        f"{card.gpu} (compute capability {card.capability}, {card.sm_count} SMs, driver {card.driver})"
        if on_gpu
        else f"**{CPU_TIMING_LABEL}**"
    )
    time = card.time_us
    here = card.measured_here
    measured = (f"- Measured on: {where}" if here
                else f"- Not measured in this run: {card.origin}; {where}")
    general = card.generalization or {}
    fails = bool(general.get("fails"))
    lines = [
        f"# {card.problem}: {card.trial} ({card.file})",
        "",
        *([f"**{card.generalizes}**", "", "Not a clean win: the kernel is wrong on inputs it was never checked on.", ""]
          if fails else []),
        f"{measured}; torch {card.torch}, triton {card.triton}",
        *([f"- Ran on: {card.host or 'unknown host'} through {card.executor}"] if card.executor else []),
        f"- Timing: {card.timing_label}",
        f"- dtype {card.dtype}; sizes {_sizes(card.sizes)}",
        f"- Strategy: {card.strategy or '—'}",
        *([f"- {card.generalizes}"] if card.generalizes and not fails else []),
        "",
        "| | median | p20–p80 | speedup |",
        "|---|---|---|---|",
        f"| {card.trial} | {_us(time['median_us'])} | {_us(time['p20_us'])} – {_us(time['p80_us'])} | |",
    ]
    for kind, base in card.baselines.items():
        speedup = f"{base['speedup']:.2f}×" if base["speedup"] is not None else "—"
        cached = " (cached)" if base["cached"] else ""
        spread = f"{_us(base['p20_us'])} – {_us(base['p80_us'])}"
        lines.append(f"| {kind}{cached} | {_us(base['median_us'])} | {spread} | {speedup} |")
    lines.append("")
    if card.speedup is not None:
        origin = f" ({card.origin_short})" if card.origin_short else ""
        if fails:
            lines.append(f"{card.speedup:.2f}× faster than {card.primary_baseline}{origin} at the sizes it was "
                         "checked at only: it fails a held-out case")
        else:
            lines.append(f"**{card.speedup:.2f}× faster than {card.primary_baseline}{origin}**")
    elif not on_gpu:
        lines.append("No speedup: a CPU run in Triton's interpreter says nothing about GPU speed.")
    else:
        lines.append(f"No {card.primary_baseline} baseline was measured.")
    spread = f"{card.spread_pct:.1f}% of the median" if card.spread_pct is not None else "unknown"
    ranked = card.ranked_on
    if card.sol is not None:
        sol = f"{card.sol:.0%} of the ceiling"
        if not ranked["measured_here"]:
            sol += f" (from {card.trial}'s stored number, {ranked['origin']}; not this run's)"
    else:
        sol = "unknown (no roofline for this trial)" if on_gpu else "not applicable to a CPU run"
    bound = f"{card.bound} ({card.bound_source})"
    correctness = card.correctness or {}
    lines += [
        "",
        f"- Spread (p20–p80): {spread}; n={time['n']}" + (f", kernel time {_us(time['kernel_us'])}" if time.get("kernel_us") else ""),
        f"- Speed-of-light: {sol}",
        f"- Where the win comes from: {bound}",
        *([f"- Library work: {_library(card.library)}"] if on_gpu else []),
        f"- Correctness: passed {correctness.get('seeds', '?')} seeds on {correctness.get('cases', '?')} case(s) "
        f"(atol {card.tolerance['atol']:g}, rtol {card.tolerance['rtol']:g}); "
        f"max abs err {_err(correctness.get('max_abs_err'))}, max rel err {_err(correctness.get('max_rel_err'))}",
    ]
    for item in card.flags:
        lines.append(f"- Flag `{item.get('code')}`: {item.get('message')}")
    if not ranked["measured_here"]:
        speedup = ranked["speedup"]
        before = f"{speedup:.2f}× {card.primary_baseline}" if speedup is not None else "no speedup"
        now = ("every number above is this re-benchmark's, measured here" if here
               else "this run did not measure it either")
        lines.append(f"- {card.trial} was chosen on {before}, {ranked['origin']}: {now}")
    return "\n".join(lines) + "\n"
