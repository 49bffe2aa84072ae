"""Parent side of the held-out check (core/heldout.py): cases planned with seeds drawn now, run by the bench
job as a correctness-only job, summed up as the card's "generalizes:" line.

Finalize runs it after the clean re-benchmark; `trialtui bench FILE --generalize` and the agent's tool run
it on demand, and then record that the source has seen its cases (core/revealed.py).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from trialtui.core import heldout, revealed
from trialtui.core.bench_result import BenchResult
from trialtui.core.generalization import Generalization
from trialtui.core.problem import Problem
from trialtui.core.store import sha256_of
from trialtui.engine.bench import bench_file, detect_device

_SEEDS = random.SystemRandom()  # drawn when a check runs: nothing the candidate could read before holds them


def check_file(problem: Problem, path: Path | str, *, device: str | None = None,
               bench: Callable[..., BenchResult] | None = None, env: dict[str, str] | None = None,
               log_path: Path | None = None, on_demand: bool = False) -> Generalization:
    """The held-out check of one source file; `bench` is where jobs run (an executor's, else bench_file)."""
    device = device or detect_device()
    sha = sha256_of(Path(path).read_bytes())
    cases = heldout.plan(problem, on_gpu=device == "cuda", draw=lambda: _SEEDS.getrandbits(31))
    if not cases:
        return Generalization(off=True)
    seen = revealed.was_revealed(problem.state_dir, sha)
    try:
        result = (bench or bench_file)(problem, path, device=device, use_cache=False, env=env, log_path=log_path,
                                       heldout=[case.to_dict() for case in cases])
    except Exception as exc:  # noqa: BLE001 - the card says the check did not run; finalize's measurement stands
        return Generalization(revealed=seen, error=f"trialtui failed: {type(exc).__name__}: {exc}")
    found = Generalization.of_result(cases, result, revealed=seen)
    if on_demand and not found.error:
        revealed.record(problem.state_dir, sha, [case.label for case in cases])
    return found
