"""Issue 36, point 10: advice names one bottleneck and the actions that follow from it, ranked.

A table of real H200 profiles (tests/fixtures/ncu-h200: the two GEMMs and the five planted kernels,
read through the real ncu rules), the same profiles cut to 2 µs, CUPTI kernel records and the
issue's own case. Every decision that gives advice is checked: no two hints pull opposite ways, and
a kernel near the launch floor is told to fuse, batch or graph its launches, never to tune tiles.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import as_profile
from trialtui.core import ncu
from trialtui.core.bottleneck import OPPOSED
from trialtui.core.config import Config
from trialtui.core.decide import decide
from trialtui.core.gpus import Ceilings
from trialtui.core.model import Verdict
from trialtui.core.profilers import verdicts_for_profile
from trialtui.core.profilers.activity import verdicts_from_records
from trialtui.core.roofline import roofline
from trialtui.core.verdicts import Context
from trialtui.runner.profile_job import _kernel

from test_decide import ok
from test_profilers import records

NCU = Path(__file__).parent / "fixtures" / "ncu-h200"
H200 = Ceilings.from_dict(json.loads((NCU / "planted" / "ceilings.json").read_text())["NVIDIA H200|580.159.04"])
MM, COPY_N, ROWS = 4096, 2**28, 16384
# profile: (csv stem, flops, min bytes, dtype, matmul-like, measured µs), as test_planted_verdicts.py
PROFILES = {
    "mm_dot": ("mm_dot", 2 * MM**3, 3 * MM * MM * 2, "bfloat16", True, 208.1),
    "mm_nodot": ("mm_nodot", 2 * MM**3, 3 * MM * MM * 2, "bfloat16", True, 16678.1),
    "planted/copy": ("planted/copy", 0, 8 * COPY_N, "float32", False, 529.94),
    "planted/strided": ("planted/strided", 0, 8 * ROWS * ROWS, "float32", False, 1981.7),
    "planted/mm_nodot": ("planted/mm_nodot", 2 * MM**3, 3 * MM * MM * 2, "bfloat16", True, 16295.0),
    "planted/mm_dot": ("planted/mm_dot", 2 * MM**3, 3 * MM * MM * 2, "bfloat16", True, 228.7),
    "planted/reg_heavy": ("planted/reg_heavy", 0, 0, "float32", False, 232.2),
}
LAUNCH_ADVICE = {"fewer launches", "fuse passes", "persistent kernel"}
TILE_TUNING = ("larger tiles", "smaller tiles", "fewer registers", "trim shared memory", "split the work",
               "autotune configs", "deeper pipeline", "warpgroup tiles", "coalesce accesses", "vectorize loads")


def ncu_verdicts(name: str, tiny_us: float | None = None) -> list[Verdict]:
    """The verdicts of a real profile; with `tiny_us`, the same kernel as if it ran that long."""
    stem, flops, min_bytes, dtype, matmul, measured = PROFILES[name]
    raw = ncu.parse_raw((NCU / f"{stem}_raw.csv").read_text())
    details = ncu.parse_details((NCU / f"{stem}_details.csv").read_text())
    kernels = [_kernel(k) for k in ncu.merge(raw, details)]
    if tiny_us is not None:
        for kernel in kernels:
            kernel["duration_ns"] = kernel["metrics"]["gpu__time_duration.sum"] = tiny_us * 1e3
        measured = tiny_us
    roof = roofline(flops, min_bytes, dtype, H200) if min_bytes else None
    body = {"available": True, "kernels": kernels}
    return verdicts_for_profile(as_profile(body), Context(roofline=roof, measured_us=measured, matmul_like=matmul))


def made(vid: str, severity: str, title: str, source: str = "ncu") -> Verdict:
    return Verdict(vid, severity, title, title, "", source)


ISSUE = [made("launch_bound", "warning", "Tiny kernel: launch-bound (kernel time 2.10 µs)"),
         made("low_occupancy", "warning", "Low occupancy: limited by warps"),
         made("small_grid", "warning", "Small grid: SMs left idle"),
         made("spills", "warning", "Register spills"),
         made("latency_bound", "info", "Latency-bound: both units under-used")]

# case: (verdicts, launch-bound?)
CASES = {
    **{name: (lambda name=name: ncu_verdicts(name), False) for name in PROFILES},
    **{f"{name} at 2 µs": (lambda name=name: ncu_verdicts(name, tiny_us=2.0), True) for name in PROFILES},
    "CUPTI: eight 2 µs launches per call": (
        lambda: verdicts_from_records(records(("add", 4, 2.0), ("mul", 4, 2.0), wall_us=80.0), Context()), True),
    "the issue's 2 µs kernel": (lambda: ISSUE, True),
    "a small grid with spills": (lambda: ISSUE[2:4], False),
    "occupancy limited by registers": (lambda: [made("low_occupancy", "warning",
                                                     "Low occupancy: limited by registers")], False),
}


def decisions(verdicts: list[Verdict]) -> dict[str, object]:
    """The decisions that give advice: a first correct trial, a gain, a tie, a regression, a plateau."""
    cfg = Config(target_speedup=50.0, profile_when="never")
    first = [ok("t1", us=100.0)]
    gain = first + [ok("t2", "t1", us=80.0)]
    tie = gain + [ok("t3", "t2", us=80.1)]
    regressed = gain + [ok("t3", "t2", us=95.0)]
    plateau = tie + [ok("t4", "t3", us=80.05)]
    return {name: decide(trials, trials[-1], verdicts, cfg, source="import triton\n@triton.jit\n")
            for name, trials in (("first", first), ("gain", gain), ("tie", tie), ("regressed", regressed),
                                 ("plateau", plateau))}


@pytest.mark.parametrize("case", CASES)
def test_advice_names_one_bottleneck_and_never_pulls_two_ways(case):
    make, launch_bound = CASES[case]
    verdicts = make()
    assert any(v.id == "launch_bound" for v in verdicts) == launch_bound, [v.id for v in verdicts]
    for step, decision in decisions(verdicts).items():
        assert decision.action in ("continue", "branch_back", "switch_approach"), (step, decision.reason)
        advised = {hint.split(":")[0] for hint in decision.hints if not hint.startswith("Already tried")}
        for pair in OPPOSED:
            assert not pair <= advised, (step, sorted(pair), decision.hints)
        if launch_bound:
            assert advised and advised <= LAUNCH_ADVICE, (step, decision.hints)
            assert not any(name in decision.reason for name in TILE_TUNING), (step, decision.reason)
            assert "launch" in decision.reason.lower(), (step, decision.reason)


def test_occupancy_limited_by_registers_frees_registers_not_larger_tiles():
    tie = decisions(CASES["occupancy limited by registers"][0]())["tie"]
    advised = [hint.split(":")[0] for hint in tie.hints]
    assert advised[0] == "fewer registers" and "larger tiles" not in advised, tie.hints
    assert "trim shared memory" not in advised, tie.hints
