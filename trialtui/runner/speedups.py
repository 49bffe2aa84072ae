"""The candidate's speedup over each baseline, and the flags its size earns: a tie inside the measured
noise, a win too large to take on trust."""

from __future__ import annotations

from typing import Any

from trialtui.core.result import flag

SUSPICIOUS_SPEEDUP = 10.0


def speedups(cand: dict[str, Any], baselines: dict[str, dict[str, Any]]) -> tuple[dict[str, float], list[dict]]:
    """Speedup per baseline; a tie inside the measured noise band and a >10x win are flagged."""
    result: dict[str, float] = {}
    flags = []
    for kind, base in baselines.items():
        ratio = base["median_us"] / cand["median_us"]
        result[kind] = ratio
        noise = 2 * ((cand.get("rse") or 0) ** 2 + (base.get("rse") or 0) ** 2) ** 0.5
        band = max(noise, _iqr_band(cand), _iqr_band(base))
        if abs(ratio - 1) <= band:
            flags.append(flag("tie", f"vs {kind}: {ratio:.3f}× is inside the noise band ±{band:.1%}: a tie"))
        if ratio > SUSPICIOUS_SPEEDUP:
            flags.append(flag("suspicious", f"vs {kind}: {ratio:.1f}× is above {SUSPICIOUS_SPEEDUP:g}×: suspicious, verify"))
    return result, flags


def _iqr_band(stats: dict[str, Any]) -> float:
    """Half the p20–p80 spread relative to the median."""
    median = stats.get("median_us") or 0
    if not median or stats.get("p20_us") is None:
        return 0.0
    return (stats["p80_us"] - stats["p20_us"]) / 2 / median


