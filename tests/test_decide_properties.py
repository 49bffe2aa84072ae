"""Invariants of decide() over generated trees (hypothesis)."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import as_result, as_validation

from trialtui.core import tree as tree_rules
from trialtui.core.config import Config
from trialtui.core.decide import decide
from trialtui.core.model import Trial, TrialState, Verdict
from trialtui.core.strategies import BY_NAME, CATALOG

EAGER_US = 184.0
STATES = [s.value for s in TrialState]
FAILING = [s.value for s in TrialState if s.is_failure]
LABELS = [s.name for s in CATALOG] + ["vec4 loads + fused bias", "tweak num_warps", "rewrite", None]
VERDICT_IDS = ["at_sol", "memory_low_bw", "extra_dram", "uncoalesced", "compute_bound", "tensor_cores_idle",
               "low_occupancy", "small_grid", "launch_bound", "spills", "l2_thrash"]
SOURCES = [None, "@triton.jit\ndef k(x): tl.load(x)", "tl.make_tensor_descriptor(x)",
           "load_inline(name='k', cuda_sources=[s])", "tl.inline_asm_elementwise('mov.b32 $0, $1;')"]
settings.register_profile("decide", max_examples=150, deadline=None)
settings.load_profile("decide")


def make(n: int, parent: str | None, state: str, us: float = 100.0, rse: float = 0.005,
         strategy: str | None = None, sol: float | None = None) -> Trial:
    result: dict[str, Any] | None = None
    validation = None
    if state == "correct":
        result = {"state": state, "correctness": {"passed": True, "message": ""},
                  "timing": {"median_us": us, "rse": rse, "p20_us": us * 0.99, "p80_us": us * 1.01},
                  "speedup": {"eager": EAGER_US / us}}
    elif state == "incorrect":
        result = {"state": state, "correctness": {"passed": False, "message": "output: 3% of elements differ",
                                                  "max_abs_err": 0.2}, "timing": None, "speedup": None}
    elif state in ("error", "timeout"):
        result = {"state": state, "message": "benchmark: RuntimeError: an illegal memory access"}
    elif state == "invalid":
        validation = {"ok": False, "errors": [{"code": "syntax", "message": "invalid syntax", "line": 4}]}
    return Trial(id=f"t{n}", file="k.py", sha256=f"s{n}", created=float(n), state=state, parent=parent,
                 strategy=strategy, result=as_result(result) if result else None, validation=as_validation(validation), sol=sol)


def verdict(id: str) -> Verdict:
    return Verdict(id, "warning", id, f"{id} evidence", f"{id} hint", "ncu")


verdict_lists = st.lists(st.sampled_from(VERDICT_IDS), max_size=4, unique=True).map(
    lambda ids: [verdict(i) for i in ids])


@st.composite
def trees(draw: st.DrawFn, states: list[str] = STATES, start: int = 1, roots: list[str] | None = None) -> list[Trial]:
    count = draw(st.integers(1, 12))
    trials: list[Trial] = []
    for n in range(start, start + count):
        ids = (roots or []) + [t.id for t in trials]
        parent = draw(st.none() | st.sampled_from(ids)) if ids else None
        trials.append(make(
            n, parent, draw(st.sampled_from(states)),
            us=draw(st.floats(20.0, 400.0)), rse=draw(st.sampled_from([0.0, 0.002, 0.005, 0.03])),
            strategy=draw(st.sampled_from(LABELS)), sol=draw(st.none() | st.floats(0.05, 1.0)),
        ))
    return trials


configs = st.builds(
    Config,
    max_trials=st.integers(1, 15),
    target_speedup=st.floats(1.0, 4.0),
    sol_target=st.floats(0.5, 0.95),
    plateau_trials=st.integers(1, 4),
    profile_when=st.sampled_from(["auto", "always", "never"]),
)


def clears_the_bar(trial: Trial, verdicts: list[Verdict], config: Config) -> bool:
    s, sol = trial.speedup("eager"), trial.sol
    if trial.state != "correct" or s is None:
        return False
    if sol is None:
        return s >= config.target_speedup and any(v.id == "at_sol" for v in verdicts)
    return sol >= config.sol_target and (s >= config.target_speedup or s / sol < config.target_speedup)


@given(trees(), st.data(), verdict_lists, configs, st.sampled_from(SOURCES))
def test_a_failed_trial_is_never_finalized_or_continued(tree, data, verdicts, config, source) -> None:
    failing = make(len(tree) + 1, data.draw(st.sampled_from([t.id for t in tree])), data.draw(st.sampled_from(FAILING)))
    decision = decide(tree + [failing], failing, verdicts, config, source=source)
    assert decision.action in ("fix", "budget_spent")
    if decision.action == "fix":
        assert "×" not in decision.reason and "µs" not in decision.reason
        assert not any("×" in e or "µs" in e for e in decision.evidence)


@given(trees(), st.data(), verdict_lists, configs, st.sampled_from(SOURCES))
def test_finalize_only_names_a_correct_trial_that_clears_the_bar(tree, data, verdicts, config, source) -> None:
    trial = data.draw(st.sampled_from(tree))
    decision = decide(tree, trial, verdicts, config, source=source)
    if decision.action == "finalize":
        assert clears_the_bar(trial, verdicts, config), decision.reason
    if decision.action in ("finalize", "continue", "branch_back", "switch_approach"):
        assert trial.state == "correct"
    named = finalized(decision, trial, tree)
    if named is not None:
        correct = [t for t in tree if t.state == "correct"]
        assert named in correct
        assert named.speedup("eager") == max(t.speedup("eager") for t in correct)


def finalized(decision, trial: Trial, tree: list[Trial]) -> Trial | None:
    """The trial a finalize or budget_spent decision tells the user to finalize [F]."""
    if decision.key != "F":
        return None
    found = re.search(r"best is (t\d+)|finalize (t\d+)", decision.reason)
    name = next(g for g in found.groups() if g) if found else trial.id
    return next(t for t in tree if t.id == name)


@st.composite
def plateaus(draw: st.DrawFn) -> tuple[list[Trial], Config]:
    """A root, then at least plateau_trials correct saves that each land within noise of the last
    (rse 0.5%, so the noise band is ±1.4%), with failed saves mixed in and budget to spare."""
    plateau_trials = draw(st.integers(1, 4))
    us = draw(st.floats(50.0, 300.0))
    trials = [make(1, None, "correct", us=us * 1.3), make(2, "t1", "correct", us=us)]
    for _ in range(plateau_trials + draw(st.integers(0, 2))):
        if draw(st.booleans()):
            trials.append(make(len(trials) + 1, trials[-1].id, draw(st.sampled_from(FAILING))))
        us *= 1 + draw(st.floats(-0.004, 0.004))
        trials.append(make(len(trials) + 1, trials[-1].id, "correct", us=us, strategy=draw(st.sampled_from(LABELS)),
                           sol=draw(st.none() | st.floats(0.05, 0.49))))
    used = tree_rules.budget_used(trials)
    config = Config(max_trials=used + draw(st.integers(1, 20)), target_speedup=10.0, sol_target=0.5,
                    plateau_trials=plateau_trials, profile_when=draw(st.sampled_from(["auto", "always", "never"])))
    return trials, config


@given(plateaus(), verdict_lists, st.sampled_from(SOURCES))
def test_a_plateau_never_stops_while_budget_remains(plateau, verdicts, source) -> None:
    trials, config = plateau
    decision = decide(trials, trials[-1], verdicts, config, source=source)
    if verdicts or config.profile_when == "never":
        assert decision.action == "switch_approach", decision.reason
        assert "trials left, switch approach:" in decision.reason
        assert decision.hints or "rethink the algorithm" in decision.reason
    else:
        assert decision.action == "profile", decision.reason


@st.composite
def twice_regressed(draw: st.DrawFn) -> tuple[list[Trial], str]:
    """Best t1, and two saves of one strategy from it that each came out 20% slower."""
    banned = draw(st.sampled_from([s.name for s in CATALOG]))
    trials = [make(1, None, "correct", us=100.0),
              make(2, "t1", "correct", us=125.0, strategy=banned),
              make(3, "t1", "correct", us=125.0, strategy=banned)]
    trials += draw(trees(start=4, roots=["t1", "t2", "t3"]))
    return trials, banned


@given(twice_regressed(), st.data(), verdict_lists, configs, st.sampled_from(SOURCES))
def test_a_strategy_that_regressed_twice_is_never_suggested(case, data, verdicts, config, source) -> None:
    trials, banned = case
    trial = data.draw(st.sampled_from(trials))
    decision = decide(trials, trial, verdicts, config, source=source)
    assert not any(hint.startswith(f"{banned}:") for hint in decision.hints), decision.hints
    assert BY_NAME[banned].advice not in decision.reason
    assert f"to {banned} (rung" not in decision.reason
    if decision.action in ("continue", "branch_back", "switch_approach", "budget_spent"):
        assert any(hint.startswith("Already tried:") and f"'{banned}'" in hint for hint in decision.hints)


@given(trees(states=[s for s in STATES if s != "invalid"]), st.data(), verdict_lists, st.sampled_from(SOURCES))
def test_an_invalid_trial_never_consumes_budget(tree, data, verdicts, source) -> None:
    used = tree_rules.budget_used(tree)
    invalids = [make(len(tree) + 1 + i, data.draw(st.sampled_from([t.id for t in tree])), "invalid")
                for i in range(data.draw(st.integers(1, 20)))]
    trials = tree + invalids
    config = Config(max_trials=used + 1, target_speedup=100.0)
    for trial in trials:
        assert decide(trials, trial, verdicts, config, source=source).action != "budget_spent"
    for trial in invalids:
        decision = decide(trials, trial, verdicts, config, source=source)
        assert decision.action == "fix"
        assert f"{used} of {used + 1} GPU trials used" in decision.reason
    if used:
        spent = Config(max_trials=used, target_speedup=100.0)
        for trial in invalids:
            assert decide(trials, trial, verdicts, spent, source=source).action == "budget_spent"
