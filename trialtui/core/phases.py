"""A result's `phases_s` as lines a person reads: where a save's seconds went, step by step.

The job records whole phases (`load`, `correctness`, `timing`), the steps inside them
(`correctness.compare`, `timing.loop`), the candidate's process's own time per request
(`candidate.run`, a claim it reports, shown for diagnosis only) and the tensor exchange
(`exchange.send`, `exchange.recv`, `exchange.mb`), which overlaps the steps it happened in.
"""

from __future__ import annotations

from typing import Any

ORDER = ("queued", "spawn", "load", "correctness", "timing")


def breakdown_lines(phases: dict[str, Any] | None) -> list[str]:
    if not phases:
        return []
    numbers = {k: float(v) for k, v in phases.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    tops = [k for k in ORDER if k in numbers] + sorted(k for k in numbers if "." not in k and k not in ORDER)
    lines = []
    total = sum(numbers[k] for k in tops)
    if tops:
        lines.append(f"job {total:.2f} s: " + ", ".join(f"{k} {numbers[k]:.2f}" for k in tops))
    for top in tops:
        steps = [(k.split(".", 1)[1], v) for k, v in numbers.items() if k.startswith(top + ".")]
        if steps:
            lines.append(f"  {top}: " + ", ".join(f"{name.replace('_', ' ')} {v:.2f}" for name, v in steps))
    cand = [(k.split(".", 1)[1], v) for k, v in numbers.items() if k.startswith("candidate.")]
    if cand:
        lines.append("  candidate's process (its own clock): " + ", ".join(f"{op} {v:.2f}" for op, v in cand))
    if "exchange.mb" in numbers:
        lines.append(f"  tensors exchanged: {numbers['exchange.mb']:.0f} MB, sending {numbers.get('exchange.send', 0):.2f} s, "
                     f"receiving {numbers.get('exchange.recv', 0):.2f} s")
    return lines
