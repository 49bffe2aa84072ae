"""The landing clock's band from kept H200 runs, on the CPU: for each short honest row (gpu_exploits, gpu_tiny),
its events against the landing clock less the harness as the checker takes it now (the reference loop's
fastest landing per call less its events) and as its rhythm would give it (the median interval between its
calls' start events less its events: no batch start in it, runner/loop_rhythm.py), and what a forged claim at
the band's edge would gain over the honest events under each.

    python benches/landing_band.py tests/fixtures/gpu/h200-2026-12-04m [more run folders]

d is how far under the honest events the clock less the harness reads (positive: a forger's room beyond the
band's own slack); a negative d beyond the slack would leave an honest kernel unconfirmed. Rows from runs
made before the rhythm was kept (2026-12-04, s21) show "-" for it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trialtui.runner.timing import LANDED  # noqa: E402


def rows_of(folder: Path) -> list[tuple[str, dict]]:
    found = []
    for name in ("exploits.json", "tiny.json"):
        path = folder / name
        if path.exists():
            for row in json.loads(path.read_text()).get("rows", []):
                label = row.get("case") or f"{row.get('problem')}/{row.get('candidate')}"
                if row.get("case") or row.get("candidate") == "honest.py":
                    found.append((label, row))
    return found


def gain(events: float, seen: float) -> str:
    """A forged claim at the band's edge over the honest events: "floor" where the edge is at or under zero
    (only the physical floor holds a claim then)."""
    edge = LANDED.edge(seen)
    return f"{events / edge:6.2f}" if edge > 0 else f"{'floor':>6}"


def main(folders: list[str]) -> int:
    print(f"{'run':<6} {'row':<34} {'events':>7} {'L-H now':>8} {'d':>6} {'gain':>6} {'L-H rhythm':>11} {'d':>6} {'gain':>6}")
    for folder in map(Path, folders):
        for label, row in rows_of(folder):
            landing, ref = row.get("landing") or {}, row.get("reference_loop") or {}
            events = row.get("events_us") or row.get("claimed_us") or row.get("median_us")
            per_call, harness = landing.get("per_call_us"), ref.get("landing_harness_us")
            if not isinstance(landing, dict) or per_call is None or harness is None or not events:
                continue
            now = per_call - harness
            rhythm = ref.get("reference_rhythm_us")
            by_rhythm = per_call - (rhythm - ref["reference_events_us"]) if rhythm else None
            cells = [f"{now:8.2f}", f"{events - now:6.2f}", gain(events, now)]
            cells += ([f"{by_rhythm:11.2f}", f"{events - by_rhythm:6.2f}", gain(events, by_rhythm)]
                      if by_rhythm is not None else [f"{'-':>11}", f"{'-':>6}", f"{'-':>6}"])
            print(f"{folder.name[-6:]:<6} {label[:34]:<34} {events:7.2f} " + " ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
