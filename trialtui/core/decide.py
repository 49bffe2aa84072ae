"""The coach: after every trial, one next action, the numbers behind it and the key that acts.

`decide` is a pure function of the tree, the trial, its verdicts and the config; the engine stores
the Decision on the trial and every view shows it. The rules, with a worked example for each
action, are in docs/decide.md.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import replace

from trialtui.core import bottleneck
from trialtui.core.config import Config
from trialtui.core.install import install_command
from trialtui.core import tree as tree_rules
from trialtui.core.decide_evidence import (
    Memory,
    Suggestion,
    Tree,
    error_numbers,
    finding,
    first_line,
    lead_clause,
    speed_text,
    suggest,
    times,
    timing_text,
)
from trialtui.core.model import NEEDS_RUNNER, Action, Decision, Trial, TrialState, Verdict
from trialtui.core.strategies import BY_NAME, LADDER, detect_rung, next_rung, recognise
from trialtui.core.verdict_registry import ABOUT_THE_PROFILE, VerdictId

# "go back to best t3 at 1.96× eager [b]", "go back to t3 [b]": how a decision names the best that `b`
# branches to.
_GO_BEST = re.compile(r"go back to (?:best )?(t\d+)(?: at [^\[]+?)? \[b\]")
# After this many failed saves in a row on a branch, the fix hints mention going back to best.
FIX_STREAK = 3
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
    verdicts: list[Verdict],
    config: Config,
    best_id: str | None = None,
    source: str | None = None,
) -> Decision:
    """The next action after `trial`.

    `trials` is the whole tree (with or without `trial`), `verdicts` the trial's verdicts,
    `best_id` the best trial when the caller knows it, `source` the candidate's source (it places
    the candidate on the access ladder when a plateau calls for a change of approach).
    """
    tree = Tree(trials, trial, config.primary_baseline)
    state = trial.state_enum
    if not state.is_final:
        return _wait(trial, f"{trial.id} is {state.value}; the next step comes with its result")
    best = tree.by_id.get(best_id) if best_id else None
    if best is None or tree_rules.disqualified(best):
        best = tree.best()
    used = tree.budget_used()
    missing = _missing_runner(trial)
    if missing:
        return _install(trial, missing, used, config)
    if trial.result and trial.result.reference_failed:
        return _fix_reference(trial, used, config)
    if state is TrialState.CORRECT and trial.gpu_timing is None:
        return _cpu_only(trial, best, used, config)
    if trial.result and trial.result.needs_gpu:
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


def naming_current_best(decision: Decision | None, best_id: str | None) -> Decision | None:
    """A stored decision whose "go back to best tN [b]" names the best of now.

    A decision is kept as it was made, but `b` always branches to the current best: an old trial's
    decision that names a former best would send the reader to one trial and `b` to another.
    """
    if not best_id or decision is None:
        return decision

    def now(match: re.Match[str]) -> str:
        return match[0] if match[1] == best_id else f"{_go_best(best_id)} ({match[1]} was best then)"

    return replace(decision, reason=_GO_BEST.sub(now, decision.reason),
                   hints=[_GO_BEST.sub(now, str(hint)) for hint in decision.hints])


def _go_best(best_id: str, speed: str = "") -> str:
    return f"go back to best {best_id}{f' at {speed}' if speed else ''} [b]"


# --- the actions ------------------------------------------------------------------------------------


def _wait(trial: Trial, why: str) -> Decision:
    return Decision(Action.WAIT.value, f"Waiting: {why}.", [f"{trial.id}: {trial.state}"], [], "")


def _cpu_only(trial: Trial, best: Trial | None, used: int, config: Config) -> Decision:
    """Correct on the CPU interpreter: its own category, with the way to a GPU timing, never a bare wait."""
    seeds = ((trial.result.correctness if trial.result else None) or {}).get("seeds")
    passed = f" on {seeds} seeds" if seeds else ""
    best_text = (f"; best stays {best.id}, timed on a GPU" if best is not None
                 else "; best and finalize need a GPU timing")
    reason = (f"Correct on CPU, not timed: {trial.id} passes{passed} at the test sizes through Triton's interpreter"
              f"{best_text}, so continue on this branch here and time it on a GPU machine "
              f"(trialtui bench {shlex.quote(trial.file)} --device cuda).")
    evidence = [f"{trial.id}: correct on CPU, not timed",
                f"budget {used}/{config.max_trials} GPU trials, unchanged by CPU runs"]
    hints = [f"on a GPU machine: trialtui bench {shlex.quote(trial.file)} --device cuda, or run trialtui there to time every "
             "correct trial"]
    return Decision(Action.CONTINUE.value, reason, evidence, hints, "")


def _missing_runner(trial: Trial) -> str | None:
    """Why this machine could not run the trial's jobs (no torch or triton here), or None."""
    result = trial.result
    if result and result.needs_runner:
        return result.message or "jobs cannot run on this machine"
    errors = trial.validation.errors if trial.validation else []
    return next((e.get("message") for e in errors if isinstance(e, dict) and e.get("code") == NEEDS_RUNNER), None)


def _install(trial: Trial, why: str, used: int, config: Config) -> Decision:
    """The machine, not the kernel: nothing to fix, nothing spent; what to install, then re-run."""
    first = why.split(". ", 1)[0].rstrip(".")
    reason = (f"Cannot run here: {trial.id} was not judged — {first}; nothing is wrong with the candidate, so install "
              f"the runner ({install_command('runner')}) or run jobs elsewhere (--executor), then re-run it [r].")
    evidence = [f"{trial.id}: not run — {why}", f"budget {used}/{config.max_trials} GPU trials, unchanged"]
    return Decision(Action.INSTALL.value, reason, evidence, [], "r")


def _fix_reference(trial: Trial, used: int, config: Config) -> Decision:
    """The problem, not the kernel: reference.py failed before the candidate was judged."""
    why = first_line(trial.result.message if trial.result else None) or "reference.py failed"
    reason = (f"Reference failed: {trial.id} was not judged — {why}; nothing is wrong with the candidate, so fix "
              "reference.py and the trial re-runs by itself.")
    evidence = [f"{trial.id}: not judged (reference.py)", f"budget {used}/{config.max_trials} GPU trials, unchanged"]
    return Decision(Action.FIX_REFERENCE.value, reason, evidence, [], "")


def _needs_gpu(trial: Trial, best: Trial | None, used: int, config: Config) -> Decision:
    """A candidate only a GPU can run (CUDA C++) on a machine without one: not a failure to fix."""
    best_text = f"; best stays {best.id}" if best is not None else ""
    reason = (f"Needs a GPU: {trial.id} was validated and compiled here but only a GPU can run it{best_text}; "
              f"time it on a GPU machine (trialtui bench {shlex.quote(trial.file)} --device cuda).")
    evidence = [f"{trial.id}: not run on the CPU", f"budget {used}/{config.max_trials} GPU trials, unchanged"]
    hints = [f"on a GPU machine: trialtui bench {shlex.quote(trial.file)} --device cuda, or run trialtui there"]
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
    "impossible": "no kernel reads and writes that much, or does that many FLOPs, that fast on this GPU: make every "
                  "timed call do the whole work on the current stream",
    "noisy": "something else used the GPU while it was timed (nvidia-smi lists it): save again when it is quiet",
    "speed-of-light": "a speed above the hardware's limit means work escapes the timing: check streams and caching",
}


def _flagged(tree: Tree, trial: Trial, reasons: list[str], best: Trial | None, config: Config) -> Decision:
    """A correct result whose numbers cannot be trusted: never best, never finalized; say which flag and how
    to clear it."""
    codes = [r.split(":")[0].split(" ")[0] for r in reasons]
    speed = tree.speedup(trial)
    measured = f" at {times(speed)} {config.primary_baseline}" if speed is not None else ""
    kept = f"; best stays {best.id}" if best is not None else ""
    suspicious_only = codes == ["suspicious"] and trial.sol is None
    reason = (f"Flagged: {trial.id} is correct{measured} but its numbers cannot be trusted — "
              f"{first_line(reasons[0])} — so it is never best and never finalized{kept}; "
              + ("profile it to confirm the speed against the roofline [p]." if suspicious_only
                 else "fix it on this branch and save again."))
    hints = [_FLAG_HINTS[c] for c in dict.fromkeys(codes) if c in _FLAG_HINTS]
    evidence = [f"flag {r}" for r in reasons]
    if suspicious_only:
        return Decision(Action.PROFILE.value, reason, evidence, hints, "p")
    return Decision(Action.FIX.value, reason, evidence, hints, "")


def _finalize(tree: Tree, trial: Trial, best: Trial | None, verdicts: list[Verdict],
              config: Config) -> Decision | None:
    """A decisive win at speed-of-light, or speed-of-light with no headroom left to the target."""
    s = tree.speedup(trial)
    sol = trial.sol
    said = next((v for v in verdicts if v.id == VerdictId.AT_SOL), None)
    if s is None:
        return None
    if sol is not None and sol >= config.sol_target:
        sol_text = f"{sol:.0%} of speed-of-light (target {config.sol_target:.0%})"
    elif sol is None and said is not None:
        sol_text = f"speed-of-light by the profile ({said.evidence or said.title})"
    else:
        return None
    target, baseline = config.target_speedup, config.primary_baseline
    if s >= target:
        why = f"{trial.id} runs at {times(s)} {baseline} (target {times(target)}) at {sol_text}"
    elif sol is not None and s / sol < target:
        why = (f"{trial.id} is at {sol_text}, so even a kernel at the roof would reach only "
               f"{times(s / sol)} {baseline} against the {times(target)} target")
    else:
        return None
    evidence = [f"{trial.id}: {times(s)} {baseline}, {sol_text}", f"target {times(target)}"]
    chosen = best if best is not None and best.id != trial.id and (tree.speedup(best) or 0) >= s else trial
    if chosen is trial:
        reason = f"Done: {why}; finalize it [F]."
    else:
        reason = (f"Done: {why}, and best {chosen.id} is faster still at {times(tree.speedup(chosen))}; "
                  f"finalize {chosen.id} [F].")
        evidence.append(f"best {chosen.id}: {times(tree.speedup(chosen))} {baseline}")
    return Decision(Action.FINALIZE.value, reason, evidence, [], "F")


def _budget_spent(tree: Tree, best: Trial | None, used: int, config: Config) -> Decision:
    states = [t.state_enum for t in tree.trials if tree_rules.counts_against_budget(t)]
    correct = sum(1 for s in states if s is TrialState.CORRECT)
    failed = sum(1 for s in states if s.is_failure)
    counted = f"{used} of {config.max_trials} GPU trials used ({correct} correct, {failed} failed)"
    evidence = [f"budget {used}/{config.max_trials}", f"{correct} correct, {failed} failed"]
    hints = ["raise max_trials in trialtui.toml to keep exploring"]
    memory = Memory(tree).hint()
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
    evidence.append(f"best {best.id}: {times(s)} {config.primary_baseline}{sol}")
    return Decision(
        Action.BUDGET_SPENT.value,
        f"Budget spent: {counted}; best is {best.id} at {times(s)} {config.primary_baseline}{sol}; finalize it [F].",
        evidence, hints, "F",
    )


def _fix(tree: Tree, trial: Trial, best: Trial | None, used: int, config: Config) -> Decision:
    """Fix on the same branch, naming the failing check; never a speed number."""
    state = trial.state_enum
    parent = tree.by_id.get(trial.parent) if trial.parent else None
    where = f"on this branch (from {parent.id})" if parent else "in place"
    hints: list[str] = []
    if state is TrialState.INVALID:
        errors = trial.validation.errors if trial.validation else []
        first = finding(errors[0]) if errors else "no error was recorded"
        if errors and isinstance(errors[0], dict) and errors[0].get("hint"):
            hints.append(errors[0]["hint"])
        hints += [f"also: {finding(e)}" for e in errors[1:3]]
        reason = (f"Invalid: {trial.id} fails validation — {first}; fix it and save again "
                  f"(invalid saves cost no budget: {used} of {config.max_trials} GPU trials used).")
        evidence = [f"{len(errors)} validation error(s)", f"budget {used}/{config.max_trials}, unchanged"]
    else:
        message = trial.result.message if trial.result else None
        correctness = (trial.result.correctness if trial.result else None) or {}
        if state is TrialState.INCORRECT:
            check = (first_line(correctness.get("message") or message)
                     or "outputs differ from the reference")
            numbers = error_numbers(correctness, config)
            if numbers and not re.search(r"\d", check):
                check += f" ({numbers[0]})"
            reason = (f"Incorrect: {trial.id} fails the correctness check — {check}; "
                      f"fix it {where} before timing it again.")
            evidence = numbers
            err, atol = correctness.get("max_abs_err"), config.tolerance[0]
            if err is not None and atol < err <= 10 * atol:
                hints.append(f"max_abs_err {err:.2e} is within ten times atol {atol:.0e}, a rounding-sized error: "
                             "keep intermediates and sums in fp32 and check the order of operations (and of a reduction's)")
        else:
            check = first_line(message) or "no message was recorded (see the trial's log)"
            word = "crashed" if state is TrialState.ERROR else "did not finish"
            reason = f"{state.value.capitalize()}: {trial.id} {word} — {check}; fix it {where}."
            evidence = [f"state {state.value}"]
        hints += [hint for pattern, hint in _FIX_HINTS if re.search(pattern, check, re.IGNORECASE)]
    streak = tree.failure_streak(trial)
    if streak >= FIX_STREAK and best is not None:
        hints.append(f"{streak} failed saves in a row on this branch: if the fix keeps slipping, "
                     f"{_go_best(best.id)}")
    evidence.append(f"failed saves in a row on this branch: {streak}")
    return Decision(Action.FIX.value, reason, evidence, hints, "")


def _next_step(tree: Tree, trial: Trial, best: Trial | None, verdicts: list[Verdict],
               config: Config, used: int, source: str | None) -> Decision:
    """A correct trial short of the finish: continue, branch back, switch approach or profile."""
    memory = Memory(tree)
    evidence = [f"{trial.id}: {speed_text(tree, trial)}" + timing_text(trial),
                f"budget {used}/{config.max_trials}"]
    if best is not None and best.id != trial.id:
        evidence.append(f"best {best.id}: {speed_text(tree, best)}")
    evidence += [f"{v.title or v.id}: {v.evidence}" for v in verdicts if v.id in _ABOUT_THE_PROFILE]
    prev = tree.prev_correct(trial)
    change = tree.compare(trial, prev) if prev is not None else None
    if change is not None and change.ratio is None:  # nothing timed to compare: start afresh
        prev = change = None
    flat, ref = tree.plateau(trial)
    stuck = ""
    if len(flat) >= config.plateau_trials and ref is not None:
        ids = ", ".join(t.id for t in reversed(flat))
        stuck = (f"{len(flat)} trials on this branch ({ids}) gained nothing beyond noise over {ref.id} "
                 f"at {speed_text(tree, ref)}")
        evidence.append(f"plateau: {len(flat)} trials without a gain (plateau_trials = {config.plateau_trials})")

    if change is None or change.outcome != "slower":
        why = _profile_reason(tree, trial, best, verdicts, config, stuck, prev is None)
        if why:
            return _profile(why, evidence)

    if prev is None or change is None:  # the first correct trial on its branch
        tips = suggest(verdicts, "tweaks", memory.banned)
        return _decision(Action.CONTINUE, f"Correct: {trial.id} runs at {speed_text(tree, trial)} "
                         f"(target {times(config.target_speedup)}); continue on this branch: {lead_clause(tips)}.",
                         evidence, tips, memory, "")

    evidence.append(f"vs {prev.id}: {change.text()}, {change.noise_text()}"
                    + (f" ({change.basis})" if change.basis else ""))
    versus = f"({speed_text(tree, prev, short=True)} → {speed_text(tree, trial, short=True)}, {change.noise_text()})"

    if change.outcome == "slower" and stuck and _tied_before(tree, flat):
        back = best if best is not None and best.id != trial.id else prev
        return _switch(verdicts, memory, flat, f"{stuck}, the last {change.text()} than {prev.id} {versus}",
                       config.max_trials - used, config, source, evidence, back=back)

    if change.outcome == "slower":
        back = best if best is not None and best.id != trial.id else prev
        tips = suggest(verdicts, "tweaks", memory.banned)
        if best is not None and prev.id == best.id:
            than = f"best {prev.id}"
        else:
            than = f"its parent {prev.id}" if prev.id == trial.parent else f"its last correct ancestor {prev.id}"
        go = f"go back to {back.id} [b]" if back is prev else _go_best(back.id, speed_text(tree, back))
        loser = f" than '{trial.strategy.strip()}'" if trial.strategy and trial.strategy.strip() else ""
        reason = (f"Regressed: {trial.id} is {change.text()} than {than} {versus}; {go} and try a "
                  f"different strategy{loser}: {lead_clause(tips)}.")
        return _decision(Action.BRANCH_BACK, reason, evidence, tips, memory, "b")

    if change.outcome == "faster":
        tips = suggest(verdicts, "tweaks", memory.banned)
        return _decision(Action.CONTINUE, f"Improved: {trial.id} is {change.text()} than {prev.id} {versus}; "
                         f"continue on this branch: {lead_clause(tips)}.", evidence, tips, memory, "")

    if stuck:
        return _switch(verdicts, memory, flat, stuck, config.max_trials - used, config, source, evidence)

    tips = suggest(verdicts, "tweaks", memory.banned)
    same = "within noise of" if change.noise is not None else "not measurably different from"
    reason = (f"Tie: {trial.id} is {same} {prev.id} {versus}, {len(flat)} of {config.plateau_trials} "
              f"trials toward a plateau; try the next optimization on this branch: {lead_clause(tips)}.")
    return _decision(Action.CONTINUE, reason, evidence, tips, memory, "")


def _profile_reason(tree: Tree, trial: Trial, best: Trial | None, verdicts: list[Verdict],
                    config: Config, stuck: str, first_on_branch: bool) -> str:
    """Why the next step waits on counters this trial lacks, or "" when it does not.

    The profile policy's events (auto: the first correct trial, a new best, a plateau; always:
    every correct trial; never: none), as in trialtui.core.verdicts.profile_policy. Analytic
    verdicts are not counters; a profile that ran and found none is not asked for again.
    """
    if config.profile_when == "never" or trial.profile is not None or any(v.source == "ncu" for v in verdicts):
        return ""
    s, baseline, target = tree.speedup(trial), config.primary_baseline, config.target_speedup
    first = tree.first_correct(trial)
    if stuck:
        return f"{stuck}, and choosing a different approach needs counters"
    if s is not None and s >= target and trial.sol is None:
        return (f"{trial.id} meets the {times(target)} target at {times(s)} {baseline} but its speed-of-light is "
                "unknown, so finalizing waits on counters")
    if first and first_on_branch:
        return (f"{trial.id} is correct at {speed_text(tree, trial)} (target {times(target)}) and the next "
                "optimization depends on counters it lacks")
    if best is not None and best.id == trial.id and not first:
        return f"{trial.id} is the new best at {speed_text(tree, trial)} and its counters steer the next step"
    if config.profile_when == "always":
        return f"the profile policy is always and {trial.id} has no counters yet"
    return ""


def _tied_before(tree: Tree, flat: list[Trial]) -> bool:
    """Whether a regression ends a plateau: a tie came before it on the branch, so the tweaks had
    stopped paying before this one cost time, and going back to tweak again would repeat them.
    Regressions alone are no plateau: those tweaks were bad, not exhausted."""
    return any(tree.compare(t, tree.prev_correct(t)).outcome == "tie" for t in flat[1:])


def _switch(verdicts: list[Verdict], memory: Memory, flat: list[Trial], stuck: str,
            left: int, config: Config, source: str | None, evidence: list[str],
            back: Trial | None = None) -> Decision:
    """Never stop on a plateau: a different approach from the verdicts, or the next ladder rung;
    from `back` (the best) when the plateau ended in a regression."""
    tied = {s.name for t in flat for s in recognise(t.strategy or "")}
    approaches = suggest(verdicts, "approaches", memory.banned | tied)
    rung = detect_rung(source)
    higher = next_rung(rung, memory.banned | tied) if rung is not None else None
    ladder = (Suggestion(higher.name, BY_NAME[higher.name].advice, f"the next rung after {rung.name}")
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
        if bottleneck.launch_bound(verdicts) and (higher is None or higher.level > 1):
            plan, ladder = first, None  # past Triton's fusion, no rung makes launches cheaper
    elif higher is not None:
        plan = climb
    else:
        plan = f"rethink the algorithm itself (a different decomposition, precision or fusion boundary); {climb}"
    go = f"{_go_best(back.id)} and " if back is not None else ""
    reason = f"Plateau: {stuck}; with {left} of {config.max_trials} trials left, {go}switch approach: {plan}."
    tips = approaches + ([ladder] if ladder is not None else [])
    return _decision(Action.SWITCH_APPROACH, reason, evidence, tips, memory, "b" if back is not None else "")


def _profile(why: str, evidence: list[str]) -> Decision:
    return Decision(Action.PROFILE.value, f"Profile: {why}; profile it [p].", evidence,
                    ["the verdicts name the limiter: memory, compute, occupancy or launch"], "p")


def _decision(action: Action, reason: str, evidence: list[str], tips: list[Suggestion], memory: Memory,
              key: str) -> Decision:
    hints = [tip.hint() for tip in tips]
    tried = memory.hint()
    if tried:
        hints.append(tried)
    return Decision(action.value, reason, evidence, hints, key)
