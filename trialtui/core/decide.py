"""The coach: after every trial, one next action, the numbers behind it and the key that acts.

`decide` is a pure function of the tree, the trial, its verdicts and the config; the engine stores
the Decision on the trial and every view shows it. The rules, with a worked example for each
action, are in docs/decide.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from trialtui.core.config import Config
from trialtui.core import tree as tree_rules
from trialtui.core.model import Action, Decision, Trial, TrialState
from trialtui.core.strategies import BY_NAME, GENERIC, LADDER, detect_rung, next_rung, recognise
from trialtui.core.verdict_registry import ABOUT_THE_PROFILE, REMEDIES, VerdictId

# A change counts when it exceeds two combined standard errors (about 95%, two-sided).
NOISE_Z = 2.0
# After this many failed saves in a row on a branch, the fix hints mention going back to best.
FIX_STREAK = 3
_SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}
_UNMEASURED = (TrialState.CANCELLED, TrialState.SUPERSEDED, TrialState.INTERRUPTED)
# Verdicts about the profile itself rather than the kernel: evidence, never advice.
_ABOUT_THE_PROFILE = ABOUT_THE_PROFILE

_FIX_HINTS: tuple[tuple[str, str], ...] = (
    (r"\bnan\b|\binf\b", "NaN/Inf in the output: mask out-of-bounds lanes (tl.load mask= and other=) "
     "and guard divisions and exp overflow"),
    (r"shape", "the output shape differs: check that the grid covers the whole output and that the "
     "output is allocated with the reference's shape"),
    (r"dtype", "the output dtype differs: cast the result to the reference's dtype"),
    (r"modified its input", "the candidate writes into its input: write to a fresh output tensor"),
    (r"out of resource|shared memory", "shared memory exceeded: fewer num_stages or smaller BLOCK sizes"),
    (r"illegal memory access|out of bounds", "an out-of-bounds access: check the masks and the "
     "pointer offsets of the last, partial block"),
    (r"out of memory", "GPU memory exhausted: free intermediates or shrink the workspace"),
    (r"compil", "a compile error: the message names the construct the compiler rejected"),
    (r"timed out", "a hang: check loop bounds, the grid size and any spin-wait on a flag"),
)


def decide(
    trials: list[Trial],
    trial: Trial,
    verdicts: list[dict[str, Any]],
    config: Config,
    best_id: str | None = None,
    source: str | None = None,
) -> Decision:
    """The next action after `trial`.

    `trials` is the whole tree (with or without `trial`), `verdicts` the trial's verdict dicts,
    `best_id` the best trial when the caller knows it, `source` the candidate's source (it places
    the candidate on the access ladder when a plateau calls for a change of approach).
    """
    tree = _Tree(trials, trial, config.primary_baseline)
    state = trial.state_enum
    if not state.is_final:
        return _wait(trial, f"{trial.id} is {state.value}; the next step comes with its result")
    best = tree.by_id.get(best_id) if best_id else None
    if best is None or tree_rules.disqualified(best):
        best = tree.best()
    used = tree.budget_used()
    if state is TrialState.CORRECT and trial.gpu_timing is None:
        return _cpu_only(trial, best, used, config)
    if (trial.result or {}).get("needs_gpu"):
        return _needs_gpu(trial, best, used, config)
    reasons = tree_rules.disqualified(trial)
    if reasons:
        return _flagged(tree, trial, reasons, best, config)
    if state is TrialState.CORRECT:
        finished = _finalize(tree, trial, best, verdicts, config)
        if finished:
            return finished
    if used >= config.max_trials:
        return _budget_spent(tree, best, used, config)
    if state.is_failure:
        return _fix(tree, trial, best, used, config)
    if state in _UNMEASURED:
        return _wait(trial, f"{trial.id} was {state.value} before a result; save again or rerun it")
    return _next_step(tree, trial, best, verdicts, config, used, source)


# --- the tree, as much of it as a decision needs ------------------------------------------------


class _Tree:
    """Ancestry, plateaus and comparisons over a plain list of trials; best and budget are the
    shared rules of trialtui.core.tree."""

    def __init__(self, trials: list[Trial], trial: Trial, baseline: str) -> None:
        self.baseline = baseline
        others = [t for t in trials if t.id != trial.id]
        position = next((i for i, t in enumerate(trials) if t.id == trial.id), len(others))
        self.trials = others[:position] + [trial] + others[position:]
        self.by_id = {t.id: t for t in self.trials}

    def speedup(self, trial: Trial) -> float | None:
        return trial.speedup(self.baseline)

    def best(self) -> Trial | None:
        return tree_rules.best(self.trials, self.baseline)

    def budget_used(self) -> int:
        return tree_rules.budget_used(self.trials)

    def ancestors(self, trial: Trial) -> Iterator[Trial]:
        seen = {trial.id}
        parent = self.by_id.get(trial.parent) if trial.parent else None
        while parent is not None and parent.id not in seen:
            yield parent
            seen.add(parent.id)
            parent = self.by_id.get(parent.parent) if parent.parent else None

    def prev_correct(self, trial: Trial) -> Trial | None:
        """The nearest correct, unflagged ancestor: what this trial is measured against."""
        return next((t for t in self.ancestors(trial)
                     if t.state_enum is TrialState.CORRECT and not tree_rules.disqualified(t)), None)

    def first_correct(self, trial: Trial) -> bool:
        return not any(
            t.state_enum is TrialState.CORRECT and t.id != trial.id and t.created <= trial.created
            for t in self.trials
        )

    def failure_streak(self, trial: Trial) -> int:
        streak = 0
        for t in [trial, *self.ancestors(trial)]:
            if not t.state_enum.is_failure:
                break
            streak += 1
        return streak

    def compare(self, new: Trial, ref: Trial) -> _Change:
        return _compare(new, ref, self.baseline)

    def plateau(self, trial: Trial) -> tuple[list[Trial], Trial | None]:
        """The trailing correct trials on this branch that gained nothing beyond noise over the
        correct trial before them (newest first), and the trial they failed to beat."""
        flat: list[Trial] = []
        current = trial
        while (prev := self.prev_correct(current)) is not None:
            change = self.compare(current, prev)
            if change.ratio is None or change.outcome == "faster":
                break
            flat.append(current)
            current = prev
        return flat, (current if flat else None)


# --- measured change and its noise ----------------------------------------------------------------


@dataclass(frozen=True)
class _Change:
    """How `new` compares with `ref`: ratio of speeds (1.09 = 9% faster) and the tie band."""

    ratio: float | None
    noise: float | None  # relative half-width of the band inside which a change is a tie
    basis: str

    @property
    def outcome(self) -> str:
        if self.ratio is None or self.noise is None:
            return "tie"
        if self.ratio - 1 > self.noise:
            return "faster"
        if self.ratio - 1 < -self.noise:
            return "slower"
        return "tie"

    def text(self) -> str:
        """Like '12% slower' or '0.3% faster'."""
        if self.ratio is None:
            return "not comparable"
        word = "faster" if self.ratio >= 1 else "slower"
        return f"{_pct(self.ratio - 1)} {word}"

    def noise_text(self) -> str:
        return f"noise ±{_pct(self.noise)}" if self.noise is not None else "no spread measured"


def _timing(trial: Trial) -> dict[str, Any]:
    return trial.gpu_timing or {}


def _compare(new: Trial, ref: Trial, baseline: str) -> _Change:
    """Medians when both have one, else speedups against the same baseline."""
    tn, tr = _timing(new), _timing(ref)
    if tn.get("median_us") and tr.get("median_us"):
        ratio: float | None = tr["median_us"] / tn["median_us"]
    else:
        sn, sr = new.speedup(baseline), ref.speedup(baseline)
        ratio = sn / sr if sn and sr else None
    noise, basis = _noise(tn, tr)
    return _Change(ratio, noise, basis)


def _noise(a: dict[str, Any], b: dict[str, Any]) -> tuple[float | None, str]:
    """Combined relative standard errors when both trials have one; else the p20–p80 bands.

    rse is 0 when a timing has a single sample, so a zero is no measurement of spread.
    """
    ra, rb = a.get("rse"), b.get("rse")
    if ra and rb:
        return NOISE_Z * math.hypot(ra, rb), "rse"
    widths = [_band(t) for t in (a, b)]
    if all(w is not None for w in widths) and any(widths):
        return (widths[0] + widths[1]) / 2, "p20-p80"
    return None, ""


def _band(timing: dict[str, Any]) -> float | None:
    """The p20–p80 band's width relative to the median."""
    p20, p80, median = timing.get("p20_us"), timing.get("p80_us"), timing.get("median_us")
    if p20 is None or p80 is None or not median:
        return None
    return (p80 - p20) / median


# --- what to suggest --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Suggestion:
    name: str  # a catalog strategy, or the id of a verdict passed through as is
    advice: str
    because: str  # "the profile says DRAM traffic is 2.3× the minimum", or ""

    def hint(self) -> str:
        return f"{self.name}: {self.advice}" + (f" ({self.because})" if self.because else "")

    def clause(self) -> str:
        return f"{self.because} — {self.advice}" if self.because else self.advice


def _lead(tips: list[_Suggestion]) -> str:
    return tips[0].clause() if tips else "pick a change that has not regressed here before"


def _because(verdict: dict[str, Any]) -> str:
    said = verdict.get("evidence") or verdict.get("title") or ""
    if not said:
        return ""
    lead = {"ncu": "the profile says", "activity": "the kernel records say", "analytic": "the roofline says"}.get(verdict.get("source"), "the verdicts say")
    return f"{lead} {said}"


def _suggest(verdicts: list[dict[str, Any]], pick: str, excluded: set[str]) -> list[_Suggestion]:
    """Ranked suggestions: the remedies of known verdicts, most severe first, then unknown
    verdicts' own hints, then (only when no known verdict spoke) the generic steps. Catalog
    strategies in `excluded` are never offered."""
    ranked = sorted(verdicts, key=lambda v: _SEVERITY_RANK.get(v.get("severity", ""), len(_SEVERITY_RANK)))
    known: list[_Suggestion] = []
    passed: list[_Suggestion] = []
    seen: set[str] = set(excluded)
    for verdict in ranked:
        vid = verdict.get("id") or "verdict"
        if vid in _ABOUT_THE_PROFILE or vid in seen:
            continue
        remedy = REMEDIES.get(vid)
        if remedy is None:
            text = verdict.get("hint") or verdict.get("title")
            if text:
                seen.add(vid)
                passed.append(_Suggestion(vid, text, _because(verdict)))
            continue
        for name in getattr(remedy, pick):
            if name not in seen:
                seen.add(name)
                known.append(_Suggestion(name, BY_NAME[name].advice, _because(verdict)))
    generic = [] if known else [_Suggestion(n, BY_NAME[n].advice, "") for n in getattr(GENERIC, pick) if n not in seen]
    return known + passed + generic


@dataclass(frozen=True)
class _Tried:
    label: str
    trial_id: str
    outcome: str  # improved | tie | regressed | failed | first


class _Memory:
    """Strategies already tried on this problem, and the catalog strategies that regressed."""

    def __init__(self, tree: _Tree) -> None:
        self.tried: list[_Tried] = []
        for t in tree.trials:
            if not t.strategy or not t.strategy.strip():
                continue
            if t.state_enum.is_failure and t.state_enum is not TrialState.INVALID:
                self.tried.append(_Tried(t.strategy.strip(), t.id, "failed"))
            elif t.state_enum is TrialState.CORRECT:
                prev = tree.prev_correct(t)
                outcome = "first" if prev is None else {
                    "faster": "improved", "slower": "regressed", "tie": "tie"
                }[tree.compare(t, prev).outcome]
                self.tried.append(_Tried(t.strategy.strip(), t.id, outcome))
        self.banned = {
            s.name for tried in self.tried if tried.outcome == "regressed" for s in recognise(tried.label)
        }

    def hint(self) -> str | None:
        if not self.tried:
            return None
        by_label: dict[str, list[str]] = {}
        for tried in self.tried:
            by_label.setdefault(tried.label, []).append(f"{tried.trial_id} {tried.outcome}")
        listed = ", ".join(f"'{label}' ({'; '.join(results)})" for label, results in by_label.items())
        return f"Already tried: {listed}"


# --- the actions ------------------------------------------------------------------------------------


def _wait(trial: Trial, why: str) -> Decision:
    return Decision(Action.WAIT.value, f"Waiting: {why}.", [f"{trial.id}: {trial.state}"], [], "")


def _cpu_only(trial: Trial, best: Trial | None, used: int, config: Config) -> Decision:
    """Correct on the CPU interpreter: its own category, with the way to a GPU timing, never a bare wait."""
    seeds = ((trial.result or {}).get("correctness") or {}).get("seeds")
    passed = f" on {seeds} seeds" if seeds else ""
    best_text = (f"; best stays {best.id}, timed on a GPU" if best is not None
                 else "; best and finalize need a GPU timing")
    reason = (f"Correct on CPU, not timed: {trial.id} passes{passed} at the test sizes through Triton's interpreter"
              f"{best_text}, so continue on this branch here and time it on a GPU machine "
              f"(trialtui bench {trial.file} --device cuda).")
    evidence = [f"{trial.id}: correct on CPU, not timed",
                f"budget {used}/{config.max_trials} GPU trials, unchanged by CPU runs"]
    hints = [f"on a GPU machine: trialtui bench {trial.file} --device cuda, or run trialtui there to time every "
             "correct trial"]
    return Decision(Action.CONTINUE.value, reason, evidence, hints, "")


def _needs_gpu(trial: Trial, best: Trial | None, used: int, config: Config) -> Decision:
    """A candidate only a GPU can run (CUDA C++) on a machine without one: not a failure to fix."""
    best_text = f"; best stays {best.id}" if best is not None else ""
    reason = (f"Needs a GPU: {trial.id} was validated and compiled here but only a GPU can run it{best_text}; "
              f"time it on a GPU machine (trialtui bench {trial.file} --device cuda).")
    evidence = [f"{trial.id}: not run on the CPU", f"budget {used}/{config.max_trials} GPU trials, unchanged"]
    hints = [f"on a GPU machine: trialtui bench {trial.file} --device cuda, or run trialtui there"]
    return Decision(Action.CONTINUE.value, reason, evidence, hints, "")


_FLAG_HINTS = {
    "side-stream": "launch every kernel on the current stream (no new streams, threads or async copies the "
                   "caller does not wait for)",
    "suspicious": "a roofline or Nsight Compute profile gives the speed-of-light that confirms or refutes the "
                  "speedup: profile it [p]",
    "no-custom-kernel": "move the work into a @triton.jit kernel and launch it: trialtui scores your kernel",
    "no-kernel": "launch the kernel inside the entry point on every call, not once at import",
    "timing-patched": "leave torch.cuda's events, synchronize and the timer alone",
    "timing-mismatch": "the events, the kernel time and the wall clock disagree: wait for all work before returning",
    "fallback": "compute the result in your own kernel; calling the reference (or torch's op) is not a candidate",
    "sol-implausible": "a speed above the hardware's limit means work escapes the timing: check streams and caching",
    "speed-of-light": "a speed above the hardware's limit means work escapes the timing: check streams and caching",
}


def _flagged(tree: _Tree, trial: Trial, reasons: list[str], best: Trial | None, config: Config) -> Decision:
    """A correct result whose numbers cannot be trusted: never best, never finalized; say which flag and how
    to clear it."""
    codes = [r.split(":")[0].split(" ")[0] for r in reasons]
    speed = tree.speedup(trial)
    measured = f" at {_x(speed)} {config.primary_baseline}" if speed is not None else ""
    kept = f"; best stays {best.id}" if best is not None else ""
    suspicious_only = codes == ["suspicious"] and trial.sol is None
    reason = (f"Flagged: {trial.id} is correct{measured} but its numbers cannot be trusted — "
              f"{_first_line(reasons[0])} — so it is never best and never finalized{kept}; "
              + ("profile it to confirm the speed against the roofline [p]." if suspicious_only
                 else "fix it on this branch and save again."))
    hints = [_FLAG_HINTS[c] for c in dict.fromkeys(codes) if c in _FLAG_HINTS]
    evidence = [f"flag {r}" for r in reasons]
    if suspicious_only:
        return Decision(Action.PROFILE.value, reason, evidence, hints, "p")
    return Decision(Action.FIX.value, reason, evidence, hints, "")


def _finalize(tree: _Tree, trial: Trial, best: Trial | None, verdicts: list[dict[str, Any]],
              config: Config) -> Decision | None:
    """A decisive win at speed-of-light, or speed-of-light with no headroom left to the target."""
    s = tree.speedup(trial)
    sol = trial.sol
    said = next((v for v in verdicts if v.get("id") == VerdictId.AT_SOL), None)
    if s is None:
        return None
    if sol is not None and sol >= config.sol_target:
        sol_text = f"{sol:.0%} of speed-of-light (target {config.sol_target:.0%})"
    elif sol is None and said is not None:
        sol_text = f"speed-of-light by the profile ({said.get('evidence') or said.get('title')})"
    else:
        return None
    target, baseline = config.target_speedup, config.primary_baseline
    if s >= target:
        why = f"{trial.id} runs at {_x(s)} {baseline} (target {_x(target)}) at {sol_text}"
    elif sol is not None and s / sol < target:
        why = (f"{trial.id} is at {sol_text}, so even a kernel at the roof would reach only "
               f"{_x(s / sol)} {baseline} against the {_x(target)} target")
    else:
        return None
    evidence = [f"{trial.id}: {_x(s)} {baseline}, {sol_text}", f"target {_x(target)}"]
    chosen = best if best is not None and best.id != trial.id and (tree.speedup(best) or 0) >= s else trial
    if chosen is trial:
        reason = f"Done: {why}; finalize it [F]."
    else:
        reason = (f"Done: {why}, and best {chosen.id} is faster still at {_x(tree.speedup(chosen))}; "
                  f"finalize {chosen.id} [F].")
        evidence.append(f"best {chosen.id}: {_x(tree.speedup(chosen))} {baseline}")
    return Decision(Action.FINALIZE.value, reason, evidence, [], "F")


def _budget_spent(tree: _Tree, best: Trial | None, used: int, config: Config) -> Decision:
    states = [t.state_enum for t in tree.trials if tree_rules.counts_against_budget(t)]
    correct = sum(1 for s in states if s is TrialState.CORRECT)
    failed = sum(1 for s in states if s.is_failure)
    counted = f"{used} of {config.max_trials} GPU trials used ({correct} correct, {failed} failed)"
    evidence = [f"budget {used}/{config.max_trials}", f"{correct} correct, {failed} failed"]
    hints = ["raise max_trials in trialtui.toml to keep exploring"]
    memory = _Memory(tree).hint()
    if memory:
        hints.append(memory)
    if best is None:
        return Decision(
            Action.BUDGET_SPENT.value,
            f"Budget spent: {counted} and none is correct, so there is nothing to finalize; "
            "raise max_trials to keep going.",
            evidence, hints, "",
        )
    s = tree.speedup(best)
    sol = f", {best.sol:.0%} of speed-of-light" if best.sol is not None else ""
    evidence.append(f"best {best.id}: {_x(s)} {config.primary_baseline}{sol}")
    return Decision(
        Action.BUDGET_SPENT.value,
        f"Budget spent: {counted}; best is {best.id} at {_x(s)} {config.primary_baseline}{sol}; finalize it [F].",
        evidence, hints, "F",
    )


def _fix(tree: _Tree, trial: Trial, best: Trial | None, used: int, config: Config) -> Decision:
    """Fix on the same branch, naming the failing check; never a speed number."""
    state = trial.state_enum
    parent = tree.by_id.get(trial.parent) if trial.parent else None
    where = f"on this branch (from {parent.id})" if parent else "in place"
    hints: list[str] = []
    if state is TrialState.INVALID:
        errors = (trial.validation or {}).get("errors") or []
        first = _finding(errors[0]) if errors else "no error was recorded"
        if errors and isinstance(errors[0], dict) and errors[0].get("hint"):
            hints.append(errors[0]["hint"])
        hints += [f"also: {_finding(e)}" for e in errors[1:3]]
        reason = (f"Invalid: {trial.id} fails validation — {first}; fix it and save again "
                  f"(invalid saves cost no budget: {used} of {config.max_trials} GPU trials used).")
        evidence = [f"{len(errors)} validation error(s)", f"budget {used}/{config.max_trials}, unchanged"]
    else:
        result = trial.result or {}
        correctness = result.get("correctness") or {}
        if state is TrialState.INCORRECT:
            check = (_first_line(correctness.get("message") or result.get("message"))
                     or "outputs differ from the reference")
            numbers = _error_numbers(correctness, config)
            if numbers and not re.search(r"\d", check):
                check += f" ({numbers[0]})"
            reason = (f"Incorrect: {trial.id} fails the correctness check — {check}; "
                      f"fix it {where} before timing it again.")
            evidence = numbers
            err, atol = correctness.get("max_abs_err"), config.tolerance[0]
            if err is not None and atol < err <= 10 * atol:
                hints.append(f"max_abs_err {err:.2e} is within ten times atol {atol:.0e}: accumulate in fp32 "
                             "and check the reduction order")
        else:
            check = _first_line(result.get("message")) or "no message was recorded (see the trial's log)"
            word = "crashed" if state is TrialState.ERROR else "did not finish"
            reason = f"{state.value.capitalize()}: {trial.id} {word} — {check}; fix it {where}."
            evidence = [f"state {state.value}"]
        hints += [hint for pattern, hint in _FIX_HINTS if re.search(pattern, check, re.IGNORECASE)]
    streak = tree.failure_streak(trial)
    if streak >= FIX_STREAK and best is not None:
        hints.append(f"{streak} failed saves in a row on this branch: if the fix keeps slipping, "
                     f"go back to best {best.id} [b]")
    evidence.append(f"failed saves in a row on this branch: {streak}")
    return Decision(Action.FIX.value, reason, evidence, hints, "")


def _next_step(tree: _Tree, trial: Trial, best: Trial | None, verdicts: list[dict[str, Any]],
               config: Config, used: int, source: str | None) -> Decision:
    """A correct trial short of the finish: continue, branch back, switch approach or profile."""
    memory = _Memory(tree)
    evidence = [f"{trial.id}: {_speed(tree, trial)}" + _timing_text(trial),
                f"budget {used}/{config.max_trials}"]
    if best is not None and best.id != trial.id:
        evidence.append(f"best {best.id}: {_speed(tree, best)}")
    evidence += [f"{v.get('title') or v.get('id')}: {v.get('evidence', '')}" for v in verdicts
                 if v.get("id") in _ABOUT_THE_PROFILE]
    prev = tree.prev_correct(trial)
    change = tree.compare(trial, prev) if prev is not None else None
    if change is not None and change.ratio is None:  # nothing timed to compare: start afresh
        prev = change = None
    flat, ref = tree.plateau(trial)
    stuck = ""
    if len(flat) >= config.plateau_trials and ref is not None:
        ids = ", ".join(t.id for t in reversed(flat))
        stuck = (f"{len(flat)} trials on this branch ({ids}) gained nothing beyond noise over {ref.id} "
                 f"at {_speed(tree, ref)}")
        evidence.append(f"plateau: {len(flat)} trials without a gain (plateau_trials = {config.plateau_trials})")

    if change is None or change.outcome != "slower":
        why = _profile_reason(tree, trial, best, verdicts, config, stuck, prev is None)
        if why:
            return _profile(why, evidence)

    if prev is None or change is None:  # the first correct trial on its branch
        tips = _suggest(verdicts, "tweaks", memory.banned)
        return _decision(Action.CONTINUE, f"Correct: {trial.id} runs at {_speed(tree, trial)} "
                         f"(target {_x(config.target_speedup)}); continue on this branch: {_lead(tips)}.",
                         evidence, tips, memory, "")

    evidence.append(f"vs {prev.id}: {change.text()}, {change.noise_text()}"
                    + (f" ({change.basis})" if change.basis else ""))
    versus = f"({_speed(tree, prev, short=True)} → {_speed(tree, trial, short=True)}, {change.noise_text()})"

    if change.outcome == "slower":
        back = best if best is not None and best.id != trial.id else prev
        tips = _suggest(verdicts, "tweaks", memory.banned)
        if best is not None and prev.id == best.id:
            than = f"best {prev.id}"
        else:
            than = f"its parent {prev.id}" if prev.id == trial.parent else f"its last correct ancestor {prev.id}"
        go = f"go back to {back.id} [b]" if back is prev else f"go back to best {back.id} at {_speed(tree, back)} [b]"
        loser = f" than '{trial.strategy.strip()}'" if trial.strategy and trial.strategy.strip() else ""
        reason = (f"Regressed: {trial.id} is {change.text()} than {than} {versus}; {go} and try a "
                  f"different strategy{loser}: {_lead(tips)}.")
        return _decision(Action.BRANCH_BACK, reason, evidence, tips, memory, "b")

    if change.outcome == "faster":
        tips = _suggest(verdicts, "tweaks", memory.banned)
        return _decision(Action.CONTINUE, f"Improved: {trial.id} is {change.text()} than {prev.id} {versus}; "
                         f"continue on this branch: {_lead(tips)}.", evidence, tips, memory, "")

    if stuck:
        return _switch(verdicts, memory, flat, stuck, config.max_trials - used, config, source, evidence)

    tips = _suggest(verdicts, "tweaks", memory.banned)
    same = "within noise of" if change.noise is not None else "not measurably different from"
    reason = (f"Tie: {trial.id} is {same} {prev.id} {versus}, {len(flat)} of {config.plateau_trials} "
              f"trials toward a plateau; try the next optimization on this branch: {_lead(tips)}.")
    return _decision(Action.CONTINUE, reason, evidence, tips, memory, "")


def _profile_reason(tree: _Tree, trial: Trial, best: Trial | None, verdicts: list[dict[str, Any]],
                    config: Config, stuck: str, first_on_branch: bool) -> str:
    """Why the next step waits on counters this trial lacks, or "" when it does not.

    The profile policy's events (auto: the first correct trial, a new best, a plateau; always:
    every correct trial; never: none), as in trialtui.core.verdicts.profile_policy. Analytic
    verdicts are not counters; a profile that ran and found none is not asked for again.
    """
    if config.profile_when == "never" or trial.profile or any(v.get("source") == "ncu" for v in verdicts):
        return ""
    s, baseline, target = tree.speedup(trial), config.primary_baseline, config.target_speedup
    first = tree.first_correct(trial)
    if stuck:
        return f"{stuck}, and choosing a different approach needs counters"
    if s is not None and s >= target and trial.sol is None:
        return (f"{trial.id} meets the {_x(target)} target at {_x(s)} {baseline} but its speed-of-light is "
                "unknown, so finalizing waits on counters")
    if first and first_on_branch:
        return (f"{trial.id} is correct at {_speed(tree, trial)} (target {_x(target)}) and the next "
                "optimization depends on counters it lacks")
    if best is not None and best.id == trial.id and not first:
        return f"{trial.id} is the new best at {_speed(tree, trial)} and its counters steer the next step"
    if config.profile_when == "always":
        return f"the profile policy is always and {trial.id} has no counters yet"
    return ""


def _switch(verdicts: list[dict[str, Any]], memory: _Memory, flat: list[Trial], stuck: str,
            left: int, config: Config, source: str | None, evidence: list[str]) -> Decision:
    """Never stop on a plateau: a different approach from the verdicts, or the next ladder rung."""
    tied = {s.name for t in flat for s in recognise(t.strategy or "")}
    approaches = _suggest(verdicts, "approaches", memory.banned | tied)
    rung = detect_rung(source)
    higher = next_rung(rung, memory.banned | tied) if rung is not None else None
    ladder = (_Suggestion(higher.name, BY_NAME[higher.name].advice, f"the next rung after {rung.name}")
              if higher is not None else None)
    if rung is None:
        climb = ("step up the access ladder (" + " → ".join(r.name for r in LADDER[1:])
                 + "; pass the source to place this candidate on it)")
    elif higher is None:
        climb = f"{rung.name} is the top rung of the access ladder open here, so the gain must come from the algorithm"
    else:
        climb = (f"climb the access ladder from {rung.name} (rung {rung.level}) to {higher.name} "
                 f"(rung {higher.level}), which unlocks {higher.unlocks}")
    if rung is not None:
        evidence.append(f"access ladder: {rung.name} (rung {rung.level})")
    if approaches:
        top = approaches[0]
        first = (f"{top.because}, so try '{top.name}': {top.advice}" if top.because
                 else f"try '{top.name}': {top.advice}")
        plan = f"{first}, or {climb}" if higher is not None else f"{first}; {climb}"
    elif higher is not None:
        plan = climb
    else:
        plan = f"rethink the algorithm itself (a different decomposition, precision or fusion boundary); {climb}"
    reason = f"Plateau: {stuck}; with {left} of {config.max_trials} trials left, switch approach: {plan}."
    tips = approaches + ([ladder] if ladder is not None else [])
    return _decision(Action.SWITCH_APPROACH, reason, evidence, tips, memory, "")


def _profile(why: str, evidence: list[str]) -> Decision:
    return Decision(Action.PROFILE.value, f"Profile: {why}; profile it [p].", evidence,
                    ["the verdicts name the limiter: memory, compute, occupancy or launch"], "p")


def _decision(action: Action, reason: str, evidence: list[str], tips: list[_Suggestion], memory: _Memory,
              key: str) -> Decision:
    hints = [tip.hint() for tip in tips]
    tried = memory.hint()
    if tried:
        hints.append(tried)
    return Decision(action.value, reason, evidence, hints, key)


# --- wording ----------------------------------------------------------------------------------------


def _x(speedup: float) -> str:
    return f"{speedup:.2f}×"


def _pct(fraction: float) -> str:
    value = abs(fraction) * 100
    return f"{value:.0f}%" if value >= 10 else f"{value:.1f}%"


def _speed(tree: _Tree, trial: Trial, short: bool = False) -> str:
    """Like '1.84× eager' ('1.84×' when short); the median where no speedup was recorded."""
    s = tree.speedup(trial)
    if s is not None:
        return _x(s) if short else f"{_x(s)} {tree.baseline}"
    median = _timing(trial).get("median_us")
    return f"{median:.1f} µs" if median else "no measured speed"


def _timing_text(trial: Trial) -> str:
    timing = _timing(trial)
    if not timing.get("median_us"):
        return ""
    spread = f", rse {timing['rse']:.1%}" if timing.get("rse") else ""
    return f" ({timing['median_us']:.1f} µs median{spread})"


def _first_line(text: str | None) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip().rstrip(".")[:200]
    return ""


def _finding(error: Any) -> str:
    """A validation error (a Finding dict or a plain string) as "line 12: message [code]"."""
    if not isinstance(error, dict):
        return _first_line(str(error))
    text = _first_line(error.get("message")) or error.get("code") or "unnamed error"
    if error.get("line"):
        text = f"line {error['line']}: {text}"
    return f"{text} [{error['code']}]" if error.get("code") else text


def _error_numbers(correctness: dict[str, Any], config: Config) -> list[str]:
    atol, rtol = config.tolerance
    numbers = []
    if correctness.get("max_abs_err") is not None:
        numbers.append(f"max_abs_err {correctness['max_abs_err']:.2e} vs atol {atol:.0e}")
    if correctness.get("max_rel_err") is not None:
        numbers.append(f"max_rel_err {correctness['max_rel_err']:.2e} vs rtol {rtol:.0e}")
    if correctness.get("mismatch_frac"):
        numbers.append(f"{correctness['mismatch_frac']:.1%} of elements mismatch")
    if correctness.get("first_mismatch") is not None:
        numbers.append(f"first mismatch at {tuple(correctness['first_mismatch'])}")
    return numbers
