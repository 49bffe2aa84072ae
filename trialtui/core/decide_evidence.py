"""What the coach weighs: the tree's ancestry and plateaus, measured change against its noise, the
strategies to suggest and the ones already tried, and the wording of numbers.

Split from decide.py so that module holds only the rules that pick an action.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from trialtui.core import bottleneck
from trialtui.core.config import Config
from trialtui.core import tree as tree_rules
from trialtui.core.model import Trial, TrialState, Verdict
from trialtui.core.spread import timing_rse
from trialtui.core.strategies import BY_NAME, GENERIC, recognise
from trialtui.core.verdict_registry import ABOUT_THE_PROFILE, REMEDIES

# A change counts when it exceeds two combined standard errors (about 95%, two-sided), and the spread one
# kernel's number has between runs, which no run's own samples show: the same unchanged softmax saved 15
# times into a watching engine read 131.58-132.11 µs on the H200 (2026-12-02), its runs' own standard
# errors 0.05 %; a bias + GELU tweak 0.3 % slower than its parent was called a regression live and a tie
# in the recording of the same story.
NOISE_Z = 2.0
RUN_TO_RUN = 0.01


# --- the tree, as much of it as a decision needs ------------------------------------------------


class Tree:
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
    """Combined relative standard errors of the medians when both trials have one (core/spread.py: from
    the p20–p80 band and n, so one outlier is no noise); else the p20–p80 bands; never under RUN_TO_RUN.

    rse is 0 when a timing has a single sample, so a zero is no measurement of spread.
    """
    ra, rb = timing_rse(a), timing_rse(b)
    if ra and rb:
        return _at_least_run_to_run(NOISE_Z * math.hypot(ra, rb), "rse")
    widths = [_band(t) for t in (a, b)]
    if all(w is not None for w in widths) and any(widths):
        return _at_least_run_to_run((widths[0] + widths[1]) / 2, "p20-p80")
    return None, ""


def _at_least_run_to_run(noise: float, basis: str) -> tuple[float, str]:
    return (noise, basis) if noise >= RUN_TO_RUN else (RUN_TO_RUN, f"{basis}, at least the run-to-run {_pct(RUN_TO_RUN)}")


def _band(timing: dict[str, Any]) -> float | None:
    """The p20–p80 band's width relative to the median."""
    p20, p80, median = timing.get("p20_us"), timing.get("p80_us"), timing.get("median_us")
    if p20 is None or p80 is None or not median:
        return None
    return (p80 - p20) / median


# --- what to suggest --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Suggestion:
    name: str  # a catalog strategy, or the id of a verdict passed through as is
    advice: str
    because: str  # "the profile says DRAM traffic is 2.3× the minimum", or ""

    def hint(self) -> str:
        return f"{self.name}: {self.advice}" + (f" ({self.because})" if self.because else "")

    def clause(self) -> str:
        return f"{self.because} — {self.advice}" if self.because else self.advice


def lead_clause(tips: list[Suggestion]) -> str:
    return tips[0].clause() if tips else "pick a change that has not regressed here before"


def _because(verdict: Verdict) -> str:
    said = verdict.evidence or verdict.title
    if not said:
        return ""
    lead = {"ncu": "the profile says", "activity": "the kernel records say", "analytic": "the roofline says"}.get(verdict.source, "the verdicts say")
    return f"{lead} {said}"


def suggest(verdicts: list[Verdict], pick: str, excluded: set[str]) -> list[Suggestion]:
    """Ranked suggestions for one bottleneck (core.bottleneck): the remedies of known verdicts, the
    limiter's first, none that a better-ranked one pulls against, then unknown verdicts' own hints,
    then (only when no known verdict spoke) the generic steps. Catalog strategies in `excluded` are
    never offered."""
    known: list[Suggestion] = []
    passed: list[Suggestion] = []
    seen: set[str] = set(excluded)
    for verdict in bottleneck.focus(verdicts):
        vid = verdict.id or "verdict"
        if vid in ABOUT_THE_PROFILE or vid in seen:
            continue
        remedy = REMEDIES.get(vid)
        if remedy is None:
            text = verdict.hint or verdict.title
            if text:
                seen.add(vid)
                passed.append(Suggestion(vid, text, _because(verdict)))
            continue
        for name in bottleneck.remedy(verdict, getattr(remedy, pick)):
            if name not in seen and not bottleneck.opposed(name, {tip.name for tip in known}):
                seen.add(name)
                known.append(Suggestion(name, BY_NAME[name].advice, _because(verdict)))
    generic = [] if known else [Suggestion(n, BY_NAME[n].advice, "") for n in getattr(GENERIC, pick) if n not in seen]
    return known + passed + generic


@dataclass(frozen=True)
class _Tried:
    label: str
    trial_id: str
    outcome: str  # improved | tie | regressed | failed | first


class Memory:
    """Strategies already tried on this problem, and the catalog strategies that regressed."""

    def __init__(self, tree: Tree) -> None:
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


# --- wording ----------------------------------------------------------------------------------------


def times(speedup: float) -> str:
    return f"{speedup:.2f}×"


def _pct(fraction: float) -> str:
    value = abs(fraction) * 100
    return f"{value:.0f}%" if value >= 10 else f"{value:.1f}%"


def speed_text(tree: Tree, trial: Trial, short: bool = False) -> str:
    """Like '1.84× eager' ('1.84×' when short); the median where no speedup was recorded."""
    s = tree.speedup(trial)
    if s is not None:
        return times(s) if short else f"{times(s)} {tree.baseline}"
    median = _timing(trial).get("median_us")
    return f"{median:.1f} µs" if median else "no measured speed"


def timing_text(trial: Trial) -> str:
    timing = _timing(trial)
    if not timing.get("median_us"):
        return ""
    rse = timing_rse(timing)
    spread = f", rse {rse:.1%}" if rse else ""
    return f" ({timing['median_us']:.1f} µs median{spread})"


def first_line(text: str | None, limit: int = 200) -> str:
    """A message's first line for a reason, cut with "…" past `limit` so a reader knows there was more."""
    for line in (text or "").splitlines():
        if line.strip():
            line = line.strip().rstrip(".")
            return line if len(line) <= limit else line[:limit - 1] + "…"
    return ""


def finding(error: Any) -> str:
    """A validation error (a Finding dict or a plain string) as "line 12: message [code]"."""
    if not isinstance(error, dict):
        return first_line(str(error))
    text = first_line(error.get("message")) or error.get("code") or "unnamed error"
    if error.get("line"):
        text = f"line {error['line']}: {text}"
    return f"{text} [{error['code']}]" if error.get("code") else text


def error_numbers(correctness: dict[str, Any], config: Config) -> list[str]:
    atol, rtol = config.tolerance
    numbers = []
    if correctness.get("max_abs_err"):  # 0 when no value was compared (a wrong shape) or none differed
        numbers.append(f"max_abs_err {correctness['max_abs_err']:.2e} vs atol {atol:.0e}")
    if correctness.get("max_rel_err"):
        numbers.append(f"max_rel_err {correctness['max_rel_err']:.2e} vs rtol {rtol:.0e}")
    if correctness.get("mismatch_frac"):
        numbers.append(f"{correctness['mismatch_frac']:.1%} of elements mismatch")
    if correctness.get("first_mismatch") is not None:
        numbers.append(f"first mismatch at {tuple(correctness['first_mismatch'])}")
    return numbers
