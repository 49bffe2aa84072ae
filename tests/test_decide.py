"""decide(): one table row per branch of the loop, on trees a kernel engineer would recognise.

The running problem: row softmax over 4096×4096 fp32 on an H200, eager at 184 µs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from conftest import as_profile, as_result, as_validation

from trialtui.core.config import Config
from trialtui.core.decide import decide, naming_current_best
from trialtui.core.model import Decision, Trial, Verdict
from trialtui.core.spread import MEDIAN_EFFICIENCY, P20_P80_SIGMAS

EAGER_US = 184.0
TRITON_SRC = "import triton\nimport triton.language as tl\n@triton.jit\ndef softmax(x_ptr):\n    x = tl.load(x_ptr)\n"
TMA_SRC = TRITON_SRC + "    d = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[64, 64])\n"
CUDA_SRC = "from torch.utils.cpp_extension import load_inline\nmod = load_inline('softmax', cuda_sources=[SRC])\n"
PTX_SRC = CUDA_SRC + 'SRC = """asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global [%0], [%1];");"""\n'


def ok(id: str, parent: str | None = None, us: float = 100.0, rse: float = 0.004, *, band: float | None = None,
       n: int | None = 100, strategy: str | None = None, sol: float | None = None, profile: dict | None = None) -> Trial:
    """A correct trial timed at `us` median over `n` samples, with its rse and the ±band p20–p80 spread that
    gives that rse (core/spread.py reads the median's error from the band), or the band given."""
    if band is None:
        band = rse * P20_P80_SIGMAS * (n or 100) ** 0.5 / (2 * MEDIAN_EFFICIENCY) if rse else 0.01
    timing = {"median_us": us, "rse": rse, "p20_us": us * (1 - band), "p80_us": us * (1 + band),
              **({"n": n} if n else {})}
    result = {
        "state": "correct",
        "correctness": {"passed": True, "message": "", "max_abs_err": 2e-7, "seeds": 5},
        "timing": timing,
        "speedup": {"eager": EAGER_US / us},
        "flags": [],
        "env": {"gpu": "NVIDIA H200", "sm_count": 132},
    }
    return _trial(id, parent, "correct", result=result, strategy=strategy, sol=sol, profile=as_profile(profile))


def wrong(id: str, parent: str | None, message: str, max_abs_err: float = 3.1e-2, strategy: str | None = None) -> Trial:
    result = {
        "state": "incorrect",
        "correctness": {"passed": False, "message": message, "max_abs_err": max_abs_err,
                        "max_rel_err": 0.9, "mismatch_frac": 0.004, "first_mismatch": [3, 17], "seeds": 5},
        "timing": None,
        "speedup": None,
        "message": message,
    }
    return _trial(id, parent, "incorrect", result=result, strategy=strategy)


def failed(id: str, parent: str | None, state: str, message: str) -> Trial:
    return _trial(id, parent, state, result={"state": state, "message": message, "timing": None, "speedup": None})


def invalid(id: str, parent: str | None, *errors: dict[str, Any]) -> Trial:
    return _trial(id, parent, "invalid", validation=as_validation({"ok": False, "errors": list(errors), "warnings": []}))


def _trial(id: str, parent: str | None, state: str, **fields: Any) -> Trial:
    if isinstance(fields.get("result"), dict):
        fields["result"] = as_result(fields["result"])
    return Trial(id=id, file="softmax.py", sha256=f"sha-{id}", created=float(id[1:]), state=state, parent=parent,
                 **fields)


def x(speedup: float) -> float:
    """The median that gives `speedup` against eager."""
    return EAGER_US / speedup


def verdict(id: str, evidence: str, severity: str = "warning", source: str = "ncu", hint: str = "") -> Verdict:
    return Verdict(id, severity, id.replace("_", " "), evidence, hint, source)


EXTRA_DRAM = verdict("extra_dram", "DRAM traffic is 2.3× the minimum")
LOW_BW = verdict("memory_low_bw", "DRAM throughput is 41% of peak at 1.9 TB/s")
LOW_OCC = verdict("low_occupancy", "achieved occupancy 18% (theoretical 25%, limited by registers)")
TC_IDLE = verdict("tensor_cores_idle", "tensor pipe 0.2% busy while FMA is 78% on a matmul-like kernel")
SPILLS = verdict("spills", "412 bytes spilled per thread", severity="error", source="analytic")
AT_SOL = verdict("at_sol", "DRAM throughput 91% of peak", severity="info")
COUNTERS_OFF = verdict("counters_unavailable", "ERR_NVGPUCTRPERM", severity="info", source="analytic",
                       hint="profile where ncu may read counters")
LAUNCH = verdict("launch_bound", "3 launches of 2.1 µs each, GPU busy 41% of the wall time")
UNKNOWN = verdict("l2_thrash", "L2 hit rate 12%", hint="reorder programs so neighbours share L2 lines")


@dataclass
class Case:
    trials: list[Trial]
    verdicts: list[Verdict] = field(default_factory=list)
    config: dict[str, Any] = field(default_factory=dict)
    source: str | None = None
    action: str = ""
    key: str = ""
    says: tuple[str, ...] = ()  # substrings of the reason
    hints: tuple[str, ...] = ()  # substrings that some hint must contain
    never: tuple[str, ...] = ()  # substrings that neither the reason nor any hint may contain
    evident: tuple[str, ...] = ()  # substrings that some evidence line must contain
    best_id: str | None = None


CASES: dict[str, Case] = {
    "a trial still benchmarking waits": Case(
        [ok("t1", us=x(1.2)), _trial("t2", "t1", "benchmarking")],
        action="wait", says=("t2 is benchmarking",),
    ),
    "a superseded save waits for the next": Case(
        [ok("t1", us=x(1.2)), _trial("t2", "t1", "superseded")],
        action="wait", says=("superseded",),
    ),
    "a decisive win at speed-of-light finalizes": Case(
        [ok("t1", us=x(1.2)), ok("t2", "t1", us=x(1.84), sol=0.86)],
        action="finalize", key="F", says=("1.84×", "86% of speed-of-light (target 80%)", "target 1.50×", "[F]"),
    ),
    "speed-of-light with no headroom to the target finalizes": Case(
        [ok("t1", us=x(1.1)), ok("t2", "t1", us=x(1.30), sol=0.90)],
        action="finalize", key="F", says=("90% of speed-of-light", "1.44×", "1.50× target"),
    ),
    "an at_sol verdict stands in for an unknown SoL": Case(
        [ok("t1", us=x(1.2)), ok("t2", "t1", us=x(1.7))], verdicts=[AT_SOL],
        action="finalize", key="F", says=("1.70×", "speed-of-light by the profile (DRAM throughput 91% of peak)"),
    ),
    "a win that the best beats finalizes the best": Case(
        [ok("t1", us=x(1.2)), ok("t2", "t1", us=x(2.1)), ok("t3", "t1", us=x(1.7), sol=0.82)],
        action="finalize", key="F", says=("best t2 is faster still at 2.10×", "finalize t2"),
    ),
    "SoL reached with headroom left to the target continues": Case(
        [ok("t1", us=x(1.1)), ok("t2", "t1", us=x(1.30), sol=0.82)], verdicts=[LOW_BW],
        action="continue", says=("Improved",),
    ),
    "a gain beyond noise continues on the branch with the verdict's advice": Case(
        [ok("t1", us=x(1.52)), ok("t2", "t1", us=x(1.66), strategy="vectorize loads")], verdicts=[LOW_BW],
        config={"target_speedup": 3.0},
        action="continue", says=("Improved: t2 is 9.2% faster than t1", "1.52× → 1.66×", "noise ±1.1%",
                                 "DRAM throughput is 41% of peak"),
        hints=("coalesce accesses:", "Already tried: 'vectorize loads' (t2 improved)"),
    ),
    "the first correct trial with verdicts continues": Case(
        [ok("t1", us=x(1.21))], verdicts=[TC_IDLE], config={"target_speedup": 3.0},
        action="continue", says=("Correct: t1 runs at 1.21× eager", "target 3.00×"),
        hints=("tl.dot", "multiples of 16", "wgmma"),
    ),
    "a tie short of the plateau tries the next optimization": Case(
        [ok("t1", us=x(1.2)), ok("t2", "t1", us=100.0), ok("t3", "t2", us=99.6)], verdicts=[LOW_OCC],
        config={"target_speedup": 3.0},
        action="continue", says=("Tie: t3 is within noise of t2", "1 of 2 trials toward a plateau"),
        hints=("fewer registers:",), never=("larger tiles:", "trim shared memory:"),  # limited by registers
    ),
    "a regression goes back to the best with a different strategy": Case(
        [ok("t1", us=x(1.2)), ok("t2", "t1", us=x(1.84), strategy="fuse passes"),
         ok("t3", "t2", us=x(1.62), strategy="vectorize loads")],
        verdicts=[EXTRA_DRAM], config={"target_speedup": 3.0},
        action="branch_back", key="b",
        says=("Regressed: t3 is 12% slower than best t2 (1.84× → 1.62×", "go back to t2 [b]",
              "different strategy than 'vectorize loads'", "DRAM traffic is 2.3× the minimum — fuse the passes"),
        hints=("Already tried: 'fuse passes' (t2 improved), 'vectorize loads' (t3 regressed)",),
        never=("vectorize loads:",),
    ),
    "a regression after a tie ends a plateau: back to best and switch approach": Case(
        [ok("t1", us=x(1.2)), ok("t2", "t1", us=x(1.96)), ok("t3", "t2", us=x(1.95)), ok("t4", "t3", us=x(1.86))],
        verdicts=[EXTRA_DRAM], config={"target_speedup": 3.0},
        action="switch_approach", key="b",
        says=("Plateau: 2 trials on this branch (t3, t4) gained nothing beyond noise over t2",
              "the last 4.6% slower than t3", "go back to best t2 [b] and switch approach"),
    ),
    "two regressions in a row are bad tweaks, not a plateau": Case(
        [ok("t1", us=x(2.0)), ok("t2", "t1", us=x(1.5)), ok("t3", "t2", us=x(1.0))],
        config={"target_speedup": 3.0},
        action="branch_back", key="b", says=("Regressed: t3", "go back to best t1 at 2.00× eager [b]"),
    ),
    "a regression on a side branch goes back to the best elsewhere": Case(
        [ok("t1", us=x(1.2)), ok("t2", "t1", us=x(2.0)), ok("t3", "t1", us=x(1.5)), ok("t4", "t3", us=x(1.3))],
        config={"target_speedup": 3.0},
        action="branch_back", key="b", says=("than its parent t3", "go back to best t2 at 2.00× eager [b]"),
    ),
    "a strategy that regressed before is not offered again": Case(
        [ok("t1", us=x(1.5)), ok("t2", "t1", us=x(1.3), strategy="coalesce accesses"),
         ok("t3", "t1", us=x(1.7), strategy="fuse"), ok("t4", "t3", us=x(1.9))],
        verdicts=[LOW_BW], config={"target_speedup": 3.0},
        action="continue", says=("16 bytes per thread",),
        hints=("vectorize loads:", "'coalesce accesses' (t2 regressed)"),
        never=("coalesce accesses:", "fastest-varying offset"),
    ),
    "an incorrect trial is fixed on its branch, naming the check": Case(
        [ok("t1", us=x(1.6)), wrong("t2", "t1", "seed 2, case 0: output: 0.4% of elements differ, max abs err "
                                    "3.1e-02 at (3, 17)")],
        action="fix", says=("Incorrect: t2 fails the correctness check", "0.4% of elements differ", "from t1"),
        never=("×", "µs", "speedup"),
    ),
    "a near miss in tolerance points at the accumulation": Case(
        [ok("t1", us=x(1.6)), wrong("t2", "t1", "output: values differ", max_abs_err=4e-4)],
        action="fix", says=("max_abs_err 4.00e-04 vs atol 1e-04",), hints=("keep intermediates and sums in fp32",),
        never=("×", "µs"),
    ),
    "a crash is fixed with the exception named": Case(
        [ok("t1", us=x(1.6)), failed("t2", "t1", "error", "benchmark: RuntimeError: Triton Error [CUDA]: an illegal "
                                     "memory access was encountered")],
        action="fix", says=("Error: t2 crashed", "illegal memory access"), hints=("masks",),
        never=("×", "µs"),
    ),
    "a timeout is fixed as a hang": Case(
        [ok("t1", us=x(1.6)), failed("t2", "t1", "timeout", "timed out after 120 s; the child was killed")],
        action="fix", says=("Timeout: t2 did not finish", "120 s"), hints=("loop bounds",),
        never=("×", "µs"),
    ),
    "an invalid save names its first validation error and costs nothing": Case(
        [ok("t1", us=x(1.2)), ok("t2", "t1", us=x(1.4)),
         invalid("t3", "t2",
                 {"severity": "error", "code": "triton-block-pow2", "message": "BLOCK_D must be a power of 2, got 96",
                  "line": 12, "hint": "use triton.next_power_of_2(D) and mask the tail"},
                 {"severity": "error", "code": "no-entry-point", "message": "ModelNew is not defined"})],
        action="fix",
        says=("line 12: BLOCK_D must be a power of 2, got 96 [triton-block-pow2]", "cost no budget", "2 of 30"),
        hints=("next_power_of_2", "also: ModelNew is not defined"), never=("×",),
    ),
    "three failures in a row mention the way back": Case(
        [ok("t1", us=x(1.6)), wrong("t2", "t1", "output: values differ"), failed("t3", "t2", "error", "X"),
         wrong("t4", "t3", "output: values differ")],
        action="fix", hints=("3 failed saves in a row", "best t1 [b]"),
    ),
    "the first correct trial without counters is profiled": Case(
        [ok("t1", us=x(1.21))], action="profile", key="p", says=("t1 is correct at 1.21× eager", "[p]"),
    ),
    "the never policy continues instead of profiling": Case(
        [ok("t1", us=x(1.21))], config={"profile_when": "never"}, action="continue", key="",
        hints=("autotune configs:",),
    ),
    "the always policy profiles an improvement that lacks counters": Case(
        [ok("t1", us=x(1.2), profile={"ok": True}), ok("t2", "t1", us=x(1.4))],
        config={"profile_when": "always", "target_speedup": 3.0}, action="profile", key="p",
    ),
    "a met target with unknown SoL is profiled before finalizing": Case(
        [ok("t1", us=x(1.2), profile={"ok": True}), ok("t2", "t1", us=x(1.9))],
        action="profile", key="p", says=("meets the 1.50× target at 1.90×", "speed-of-light is unknown"),
    ),
    "a plateau without counters is profiled first": Case(
        [ok("t1", us=x(1.2)), ok("t2", "t1", us=100.0), ok("t3", "t2", us=100.3), ok("t4", "t3", us=99.8)],
        config={"target_speedup": 3.0}, action="profile", key="p",
        says=("2 trials on this branch (t3, t4) gained nothing beyond noise over t2",),
    ),
    "a plateau on Triton switches approach or climbs to TMA": Case(
        [ok("t1", us=x(1.2)), ok("t2", "t1", us=100.0), ok("t3", "t2", us=100.3, strategy="autotune"),
         ok("t4", "t3", us=99.8)],
        verdicts=[LOW_BW], config={"target_speedup": 3.0}, source=TRITON_SRC,
        action="switch_approach", key="",
        says=("Plateau: 2 trials on this branch (t3, t4)", "26 of 30 trials left",
              "DRAM throughput is 41% of peak", "one-pass algorithm",
              "from Triton (rung 1) to Triton with TMA descriptors or warp specialization (rung 2)", "unlocks"),
        hints=("one-pass algorithm:", "Already tried: 'autotune' (t3 tie)"),
    ),
    "a plateau on TMA names CUDA C++ as the next rung": Case(
        [ok("t1", us=x(1.2)), ok("t2", "t1", us=100.0), ok("t3", "t2", us=100.3), ok("t4", "t3", us=99.8)],
        verdicts=[TC_IDLE], config={"target_speedup": 3.0}, source=TMA_SRC,
        action="switch_approach", says=("rung 2", "CUDA C++ with CUTLASS/CuTe (rung 3)", "use tensor cores"),
    ),
    "a plateau in CUDA C++ names inline PTX": Case(
        [ok("t1", us=x(1.2)), ok("t2", "t1", us=100.0), ok("t3", "t2", us=100.3), ok("t4", "t3", us=99.8)],
        verdicts=[LOW_OCC], config={"target_speedup": 3.0}, source=CUDA_SRC,
        action="switch_approach", says=("CUDA C++ with CUTLASS/CuTe (rung 3) to inline PTX (rung 4)",),
    ),
    "a plateau in PTX changes the algorithm": Case(
        [ok("t1", us=x(1.2)), ok("t2", "t1", us=100.0), ok("t3", "t2", us=100.3),
         ok("t4", "t3", us=99.8, profile={"available": False, "reason": "ERR_NVGPUCTRPERM"})],
        verdicts=[COUNTERS_OFF, SPILLS], config={"target_speedup": 3.0}, source=PTX_SRC,
        action="switch_approach", says=("inline PTX is the top rung", "smaller tiles", "412 bytes spilled"),
        never=("ERR_NVGPUCTRPERM", "counters_unavailable"), evident=("counters unavailable: ERR_NVGPUCTRPERM",),
    ),
    "analytic verdicts alone still ask for counters on a plateau": Case(
        [ok("t1", us=x(1.2)), ok("t2", "t1", us=100.0), ok("t3", "t2", us=100.3), ok("t4", "t3", us=99.8)],
        verdicts=[SPILLS], config={"target_speedup": 3.0},
        action="profile", key="p", says=("gained nothing beyond noise", "needs counters"),
    ),
    "a new best without counters is profiled": Case(
        [ok("t1", us=x(1.2), profile={"available": True}), ok("t2", "t1", us=x(1.4))],
        config={"target_speedup": 3.0}, action="profile", key="p", says=("t2 is the new best at 1.40×",),
    ),
    "an improvement short of the best continues without a profile": Case(
        [ok("t1", us=x(2.0), profile={"available": True}), ok("t2", "t1", us=x(1.2)), ok("t3", "t2", us=x(1.4))],
        config={"target_speedup": 3.0}, action="continue", says=("Improved: t3 is 17% faster than t2",),
        hints=("autotune configs:",),
    ),
    "a plateau in plain PyTorch names Triton as the next rung": Case(
        [ok("t1", us=x(1.2)), ok("t2", "t1", us=100.0), ok("t3", "t2", us=100.3), ok("t4", "t3", us=99.8)],
        verdicts=[LAUNCH], config={"target_speedup": 3.0},
        source="class ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.softmax(x, -1)\n",
        action="switch_approach", says=("from PyTorch (rung 0) to Triton (rung 1)", "CUDA graph"),
    ),
    "a plateau with no source still names the ladder": Case(
        [ok("t1", us=x(1.2)), ok("t2", "t1", us=100.0), ok("t3", "t2", us=100.3), ok("t4", "t3", us=99.8)],
        verdicts=[EXTRA_DRAM], config={"target_speedup": 3.0},
        action="switch_approach", says=("pass the source", "inline PTX"),
    ),
    "a plateau skips approaches that regressed and rungs that regressed": Case(
        [ok("t1", us=x(1.2)), ok("t2", "t1", us=100.0), ok("t5", "t2", us=120.0, strategy="one-pass (online softmax)"),
         ok("t6", "t2", us=125.0, strategy="triton + TMA descriptors"),
         ok("t3", "t2", us=100.3), ok("t4", "t3", us=99.8)],
        verdicts=[LOW_BW], config={"target_speedup": 3.0}, source=TRITON_SRC,
        action="switch_approach", says=("fuse passes", "to CUDA C++ with CUTLASS/CuTe (rung 3)"),
        hints=("'one-pass (online softmax)' (t5 regressed)",),
        never=("one-pass algorithm:", "Welford", "(rung 2)"),
    ),
    "a bigger plateau setting keeps going": Case(
        [ok("t1", us=x(1.2)), ok("t2", "t1", us=100.0), ok("t3", "t2", us=100.3), ok("t4", "t3", us=99.8)],
        verdicts=[EXTRA_DRAM], config={"target_speedup": 3.0, "plateau_trials": 3},
        action="continue", says=("2 of 3 trials toward a plateau",),
    ),
    "a spent budget recommends finalizing the best": Case(
        [ok("t1", us=x(1.2)), ok("t2", "t1", us=x(1.45), sol=0.7), ok("t3", "t2", us=x(1.3)),
         wrong("t4", "t2", "output: values differ")],
        config={"max_trials": 4}, action="budget_spent", key="F",
        says=("4 of 4 GPU trials used (3 correct, 1 failed)", "best is t2 at 1.45× eager", "70% of speed-of-light"),
    ),
    "a spent budget with nothing correct has nothing to finalize": Case(
        [wrong("t1", None, "output: values differ"), failed("t2", "t1", "error", "RuntimeError: boom")],
        config={"max_trials": 2}, action="budget_spent", key="", says=("none is correct",),
    ),
    "a tie for best goes to the earlier trial": Case(
        [ok("t1", us=x(1.2)), ok("t2", "t1", us=x(1.45)), ok("t3", "t1", us=x(1.45)), ok("t4", "t3", us=x(1.3))],
        config={"max_trials": 4}, action="budget_spent", key="F", says=("best is t2",),
    ),
    "the caller's best is used when given": Case(
        [ok("t1", us=x(1.2)), ok("t2", "t1", us=x(1.45)), ok("t3", "t1", us=x(1.45)), ok("t4", "t3", us=x(1.3))],
        config={"max_trials": 4}, best_id="t3", action="budget_spent", key="F", says=("best is t3",),
    ),
    "invalid saves do not spend the budget": Case(
        [ok("t1", us=x(1.2)), invalid("t2", "t1", {"message": "SyntaxError: invalid syntax", "line": 3}),
         invalid("t3", "t1", {"severity": "error", "code": "no-entry-point", "message": "ModelNew is not defined"}), ok("t4", "t1", us=x(1.4))],
        verdicts=[LOW_BW], config={"max_trials": 3, "target_speedup": 3.0},
        action="continue", says=("Improved",), never=("Budget",),
    ),
    "an unknown verdict passes its hint through": Case(
        [ok("t1", us=x(1.2)), ok("t2", "t1", us=x(1.4))], verdicts=[UNKNOWN], config={"target_speedup": 3.0},
        action="continue", says=("L2 hit rate 12% — reorder programs",),
        hints=("l2_thrash: reorder programs so neighbours share L2 lines",),
    ),
    "a machine without the runner is told what to install, not to fix the kernel": Case(
        [ok("t1", us=x(1.2)), _trial("t2", "t1", "error", result={
            "state": "error", "needs_runner": True, "message": "jobs cannot run on this machine: torch and triton are "
            "not installed here. Install the runner (pip install -e '/src/trialtui[runner]'), or run jobs where it is: "
            "--executor ssh://user@host or ray://ADDRESS (docs/SCALING.md)"})],
        action="install", key="r", says=("t2 was not judged — jobs cannot run on this machine: torch and triton are "
                                          "not installed here;", "nothing is wrong with the candidate", "re-run it [r]"),
        evident=("ray://ADDRESS (docs/SCALING.md)",), never=("crashed", "fix it"),
    ),
    "a reference that fails to load is the problem's to fix, not the candidate's": Case(
        [ok("t1", us=x(1.2)), _trial("t2", "t1", "error", result={
            "state": "error", "reference_failed": True,
            "message": "loading the reference: RuntimeError: reference boom"})],
        action="fix_reference", says=("t2 was not judged — loading the reference: RuntimeError: reference boom",
                                      "fix reference.py and the trial re-runs by itself"),
        never=("crashed", "fix it in place"),
    ),
    "verdicts are ranked by severity": Case(
        [ok("t1", us=x(1.2)), ok("t2", "t1", us=x(1.4))], verdicts=[LOW_OCC, SPILLS], config={"target_speedup": 3.0},
        action="continue", says=("the roofline says 412 bytes spilled per thread — cut live values",),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_decision_table(name: str) -> None:
    case = CASES[name]
    decision = decide(case.trials, case.trials[-1], case.verdicts, Config(**case.config), case.best_id, case.source)
    assert decision.action == case.action, decision.reason
    assert decision.key == case.key, decision.reason
    for text in case.says:
        assert text in decision.reason, f"{text!r} not in {decision.reason!r}"
    for text in case.hints:
        assert any(text in hint for hint in decision.hints), f"{text!r} not in {decision.hints!r}"
    for text in case.evident:
        assert any(text in line for line in decision.evidence), f"{text!r} not in {decision.evidence!r}"
    for text in case.never:
        assert text not in decision.reason and not any(text in hint for hint in decision.hints), text
    assert_one_sentence(decision.reason)


def assert_one_sentence(reason: str) -> None:
    assert reason.endswith("."), reason
    assert not re.search(r"[.!?]\s+[A-Z]", reason[:-1]), f"more than one sentence: {reason!r}"


def test_every_action_has_a_row() -> None:
    from trialtui.core.model import Action

    assert {c.action for c in CASES.values()} == {a.value for a in Action}


def test_beyond_noise_follows_the_measured_spread_not_a_fixed_percentage() -> None:
    """The same 3% gain is an improvement with tight timings and a tie with noisy ones."""
    cfg = Config(target_speedup=3.0)
    tight = [ok("t1", us=x(1.2)), ok("t2", "t1", us=103.0, rse=0.004), ok("t3", "t2", us=100.0, rse=0.004)]
    noisy = [ok("t1", us=x(1.2)), ok("t2", "t1", us=103.0, rse=0.02), ok("t3", "t2", us=100.0, rse=0.02)]
    assert decide(tight, tight[-1], [LOW_BW], cfg).reason.startswith("Improved")
    assert decide(noisy, noisy[-1], [LOW_BW], cfg).reason.startswith("Tie")


def test_the_p20_p80_band_decides_when_no_rse_was_recorded() -> None:
    cfg = Config(target_speedup=3.0)

    def pair(band: float) -> list[Trial]:
        return [ok("t1", us=x(1.2), rse=0.0, n=None), ok("t2", "t1", us=103.0, rse=0.0, band=band, n=None),
                ok("t3", "t2", us=100.0, rse=0.0, band=band, n=None)]

    separate, overlapping = pair(0.01), pair(0.05)
    assert decide(separate, separate[-1], [LOW_BW], cfg).reason.startswith("Improved")
    tie = decide(overlapping, overlapping[-1], [LOW_BW], cfg)
    assert tie.reason.startswith("Tie")
    assert any("p20-p80" in e for e in tie.evidence)


def test_a_regression_inside_the_noise_is_a_tie_not_a_branch_back() -> None:
    cfg = Config(target_speedup=3.0)
    trials = [ok("t1", us=x(1.2)), ok("t2", "t1", us=100.0, rse=0.02), ok("t3", "t2", us=103.0, rse=0.02)]
    assert decide(trials, trials[-1], [LOW_BW], cfg).action == "continue"
    tight = [ok("t1", us=x(1.2)), ok("t2", "t1", us=100.0), ok("t3", "t2", us=103.0)]
    assert decide(tight, tight[-1], [LOW_BW], cfg).action == "branch_back"


def test_a_change_smaller_than_one_kernels_run_to_run_spread_is_a_tie_however_tight_each_run() -> None:
    """The bias + GELU story live on the H200: v5 0.3 % slower than v3 with each run's rse 0.05 % was called a
    regression, so v6's 4.7 % loss read as a lone regression (branch back) where the story, and the
    recording of the same kernels, had a tie then a regression: a plateau (switch approach)."""
    cfg = Config(target_speedup=3.0, plateau_trials=2)
    v3 = ok("t1", us=x(1.95), rse=0.0005)
    v5 = ok("t2", "t1", us=x(1.95) * 1.003, rse=0.0005)
    v6 = ok("t3", "t2", us=x(1.95) * 1.05, rse=0.0005)
    assert decide([v3, v5], v5, [LOW_BW], cfg).reason.startswith("Tie")
    assert decide([v3, v5, v6], v6, [LOW_BW], cfg).action == "switch_approach"
    clear = ok("t2", "t1", us=x(1.95) * 1.02, rse=0.0005)  # 2 %: beyond the run-to-run spread
    assert decide([v3, clear], clear, [LOW_BW], cfg).action == "branch_back"


def test_a_fix_after_a_failure_is_measured_against_the_last_correct_ancestor() -> None:
    cfg = Config(target_speedup=3.0)
    trials = [ok("t1", us=x(1.5)), wrong("t2", "t1", "output: values differ"), ok("t3", "t2", us=x(1.3))]
    decision = decide(trials, trials[-1], [LOW_BW], cfg)
    assert decision.action == "branch_back"
    assert "than best t1" in decision.reason


def test_the_trial_need_not_be_in_the_list() -> None:
    cfg = Config(target_speedup=3.0)
    tree = [ok("t1", us=x(1.52))]
    decision = decide(tree, ok("t2", "t1", us=x(1.66)), [LOW_BW], cfg)
    assert decision.action == "continue" and "t2 is 9.2% faster than t1" in decision.reason


def test_the_decision_round_trips_as_a_plain_dict() -> None:
    case = CASES["a regression goes back to the best with a different strategy"]
    decision = decide(case.trials, case.trials[-1], case.verdicts, Config(**case.config))
    stored = decision.to_dict()
    assert set(stored) == {"action", "reason", "evidence", "hints", "key"}
    assert all(isinstance(e, str) for e in stored["evidence"] + stored["hints"])


@pytest.mark.parametrize(
    ("label", "names"),
    [
        ("vec4 loads", {"vectorize loads"}),
        ("fused bias + relu", {"fuse passes"}),
        ("split-K=4", {"split the work"}),
        ("online softmax", {"one-pass algorithm"}),
        ("triton + TMA descriptors", {"Triton with TMA descriptors or warp specialization"}),
        ("port to CUTLASS", {"CUDA C++ with CUTLASS/CuTe"}),
        ("bigger BLOCK_N, fewer regs", {"larger tiles", "fewer registers"}),
    ],
)
def test_free_text_strategy_labels_are_recognised(label: str, names: set[str]) -> None:
    from trialtui.core.strategies import recognise

    assert {s.name for s in recognise(label)} == names


def test_every_catalog_strategy_recognises_its_own_name_and_no_other() -> None:
    from trialtui.core.strategies import CATALOG, recognise

    for strategy in CATALOG:
        assert [s.name for s in recognise(strategy.name)] == [strategy.name]


def test_the_worked_examples_in_the_docs_are_what_decide_says() -> None:
    from pathlib import Path

    doc = Path(__file__).resolve().parents[1] / "docs" / "decide.md"
    quoted = [line[2:] for line in doc.read_text(encoding="utf-8").splitlines() if line.startswith("> ")]
    said = {
        decide(c.trials, c.trials[-1], c.verdicts, Config(**c.config), c.best_id, c.source).reason
        for c in CASES.values()
    }
    assert len(quoted) >= 9
    assert [q for q in quoted if q not in said] == []


def _fixture(name: str) -> dict:
    import json
    from pathlib import Path

    return json.loads((Path(__file__).parent / "fixtures" / "gpu" / name).read_text())


def test_the_side_stream_fixture_never_finalizes_and_never_becomes_best() -> None:
    """Issue 13.5: the repo's own side-stream result (49x eager) read as 'finalize … 2595% of speed-of-light'."""
    from trialtui.core import tree

    good = ok("t1", us=x(1.5), sol=0.5)
    for sol in (None, 25.95):
        bad = _trial("t2", "t1", "correct", result=_fixture("bad_side_stream.json"), sol=sol)
        assert tree.best([good, bad]).id == "t1"
        decision = decide([good, bad], bad, [], Config(target_speedup=1.2, sol_target=0.8))
        assert decision.action == "fix" and decision.key == ""
        assert "Flagged: t2" in decision.reason and "side-stream" in decision.reason
        assert "never best and never finalized; best stays t1" in decision.reason
        assert "finalize it" not in decision.reason
        assert any("current stream" in hint for hint in decision.hints)
        assert_one_sentence(decision.reason)
    # a caller that names the flagged trial as best is not believed
    assert "best t2" not in " ".join(decide([good, bad], good, [], Config(), best_id="t2").evidence)


@pytest.mark.parametrize("code", ["side-stream", "no-custom-kernel", "no-kernel", "timing-patched",
                                  "timing-mismatch", "fallback", "sol-implausible"])
def test_every_disqualifying_flag_blocks_finalize_even_at_speed_of_light(code: str) -> None:
    trial = ok("t1", us=x(3.0), sol=0.95)
    trial.result = replace(trial.result, flags=[{"code": code, "message": f"{code} seen"}])
    decision = decide([trial], trial, [], Config(target_speedup=1.5, sol_target=0.8))
    assert decision.action == "fix" and f"{code}: {code} seen" in decision.reason


def test_a_suspicious_speedup_without_a_speed_of_light_asks_for_a_profile_and_with_one_can_finalize() -> None:
    trial = ok("t1", us=x(12.9))
    trial.result = replace(trial.result,
                           flags=[{"code": "suspicious", "message": "vs eager: 12.9× is above 10×: suspicious, verify"}])
    decision = decide([trial], trial, [], Config(target_speedup=1.5, sol_target=0.8))
    assert decision.action == "profile" and decision.key == "p" and "never finalized" in decision.reason
    trial.sol = 0.83
    assert decide([trial], trial, [], Config(target_speedup=1.5, sol_target=0.8)).action == "finalize"


@pytest.mark.parametrize("code", ["tie", "bf16-emulated"])
def test_an_informative_flag_still_finalizes(code: str) -> None:
    trial = ok("t1", us=x(3.0), sol=0.95)
    trial.result = replace(trial.result, flags=[{"code": code, "message": "noted"}])
    assert decide([trial], trial, [], Config(target_speedup=1.5, sol_target=0.8)).action == "finalize"


def test_a_trial_is_measured_against_its_last_unflagged_ancestor() -> None:
    flagged = ok("t2", "t1", us=x(40.0))
    flagged.result = replace(flagged.result, flags=[{"code": "side-stream", "message": "escaped"}])
    trials = [ok("t1", us=x(1.2)), flagged, ok("t3", "t2", us=x(1.5))]
    decision = decide(trials, trials[-1], [], Config(target_speedup=3.0, profile_when="never"))
    assert decision.action == "continue" and "than t1" in decision.reason


def test_a_cpu_correct_trial_is_its_own_category_not_a_bare_wait() -> None:
    """Issue 18.2: on a CPU-only machine every correct save ended with 'next: wait'."""
    cpu = _trial("t2", "t1", "correct", result={
        "state": "correct", "correctness": {"passed": True, "seeds": 5},
        "timing": {"median_us": 900.0, "label": "CPU, interpreted — not a GPU timing"},
        "speedup": None, "flags": [], "env": {"device": "cpu"}})
    first = _trial("t1", None, "incorrect", result={"state": "incorrect", "env": {"device": "cpu"}})
    decision = decide([first, cpu], cpu, [], Config(max_trials=30))
    assert decision.action == "continue"
    assert decision.reason.startswith("Correct on CPU, not timed: t2 passes on 5 seeds")
    assert "best and finalize need a GPU timing" in decision.reason
    assert "trialtui bench softmax.py --device cuda" in decision.reason
    assert "budget 0/30 GPU trials, unchanged by CPU runs" in decision.evidence
    assert_one_sentence(decision.reason)
    spaced = replace(cpu, file="my kernel.py")  # a command to copy, quoted as a shell takes it
    said = decide([first, spaced], spaced, [], Config(max_trials=30))
    assert "trialtui bench 'my kernel.py' --device cuda" in said.reason + " ".join(said.hints)


def test_a_stored_decision_names_the_current_best_that_b_goes_to():
    """Issue 36, point 9: every phrase that sends the reader to `b` names the best of now."""
    stored = Decision("fix", "Regressed: t5 is slower; go back to best t3 at 1.96× eager [b] and try a different "
                      "strategy.",
                      hints=["4 failed saves in a row on this branch: if the fix keeps slipping, go back to best t3 [b]",
                             "go back to t3 [b]", "autotune BLOCK sizes"])
    now = naming_current_best(stored, "t7")
    assert "go back to best t7 [b] (t3 was best then) and try" in now.reason
    assert now.hints == ["4 failed saves in a row on this branch: if the fix keeps slipping, go back to best t7 "
                            "[b] (t3 was best then)", "go back to best t7 [b] (t3 was best then)", "autotune BLOCK sizes"]
    assert naming_current_best(stored, "t3") == stored and naming_current_best(stored, None) == stored
    assert naming_current_best(None, "t7") is None  # no decision yet stays none



def test_a_long_failure_is_cut_in_the_reason_with_a_mark_that_it_was():
    """decide's reason quotes the failure's first line up to 200 characters; past that it ends in "…" (an agent
    reading the reason knows the log holds more), and a short one is quoted whole."""
    from trialtui.core.decide_evidence import first_line

    long = "checking correctness: " + "x" * 300 + "\nsecond line"
    assert first_line(long) == long[:199] + "…" and len(first_line(long)) == 200
    assert first_line("\n  raises ValueError at line 3.\nmore") == "raises ValueError at line 3"
