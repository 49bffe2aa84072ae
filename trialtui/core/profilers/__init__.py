"""Profilers by name: the built-ins (ncu, CUPTI activity records, analytic) and plug-ins of
`trialtui.profilers`, and the verdicts of a stored profile, whichever profiler made it.

Nothing outside a profiler's own modules knows what its body holds; it asks the profiler.
"""

from __future__ import annotations

from typing import Any

from trialtui.core import plugins
from trialtui.core.model import Severity, Verdict
from trialtui.core.profile_result import ProfileResult
from trialtui.core.profilers import activity, analytic, ncu  # noqa: F401 - importing them registers them
from trialtui.core.profilers.base import GROUP, Profiler
from trialtui.core.verdict_registry import VerdictId, kind
from trialtui.core.verdicts import Context, make_verdict

ANALYTIC = "analytic"
LEGACY_SOURCE = "ncu"  # profiles stored before profilers were plug-ins came from ncu
NO_GPU_ADVICE = ("This machine has no GPU for a GPU profiler to run on: run trialtui profile on a machine with an "
                 "NVIDIA GPU for counter verdicts. The roofline here is the least time the problem's FLOPs and bytes "
                 "take at that GPU's ceilings: a floor no kernel beats, not a measurement of this one.")


def all_profilers() -> dict[str, Profiler]:
    """Every usable profiler, best first; a plug-in that is not a Profiler is reported and skipped."""
    found = plugins.of_type(GROUP, Profiler)
    return dict(sorted(found.items(), key=lambda item: -item[1].rank))


def get_profiler(name: str) -> Profiler | None:
    return all_profilers().get(name)


def source_of(body: ProfileResult) -> str:
    return body.source or LEGACY_SOURCE


def candidates(device: str, skip: dict[str, str] | None = None) -> tuple[list[Profiler], list[dict[str, str]]]:
    """The profilers that can run here, best first, and why each other one cannot (`skip`: reasons
    already known this session, such as ERR_NVGPUCTRPERM from an earlier ncu run)."""
    usable, passed = [], []
    for name, profiler in all_profilers().items():
        why = (skip or {}).get(name) or profiler.unavailable(device)
        if why:  # `needs_gpu`: the machine's lack, which no permission or install here mends
            passed.append({"source": name, "reason": why, **({"needs_gpu": True} if device != "cuda" else {})})
        else:
            usable.append(profiler)
    return usable, passed


def verdicts_for_profile(profile: ProfileResult | None, context: Context,
                         facts: dict[str, Any] | None = None) -> list[Verdict]:
    """The verdicts for a trial: from its profile's own profiler when that profile is available,
    else the analytic ones; led by one verdict saying why better profilers gave nothing."""
    fallback = all_profilers()[ANALYTIC]
    if profile is None:
        return fallback.verdicts(ProfileResult(), context, facts)
    why = [f"{p['source']}: {p['reason']}" for p in profile.skipped or [] if p.get("reason")]
    source = source_of(profile)
    profiler = get_profiler(source)
    if profile.available and profiler is not None:
        used, verdicts = profiler, profiler.verdicts(profile, context, facts)
    else:
        reason = profile.reason or profile.message or "no records in the profile"
        if profiler is None:
            reason = f"profiler {source!r} is not installed"
        why.append(f"{source}: {reason}")
        used, verdicts = fallback, fallback.verdicts(profile, context, facts)
    if not why:
        return verdicts
    no_gpu = profile.available and all(p.get("needs_gpu") for p in profile.skipped or [])
    advice = NO_GPU_ADVICE if no_gpu else kind(VerdictId.COUNTERS_UNAVAILABLE).advice
    note = make_verdict(VerdictId.COUNTERS_UNAVAILABLE, Severity.INFO, f"Counters unavailable: {used.label}", why,
                        f"Verdicts here come from {used.label}. " + advice, used.name)
    return [note] + verdicts
