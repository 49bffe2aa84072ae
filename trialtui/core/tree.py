"""The tree rules, as pure functions over Trials: where a save goes, which trial is best, what is spent.

The store, the engine, the CLI and the TUI all apply these, so they cannot disagree.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from trialtui.core.flags import disqualifications
from trialtui.core.model import FAILED_STATES, Trial, TrialState
from trialtui.core.provenance import measured_here, short

UNCHANGED, CHECKOUT, NEW = "unchanged", "checkout", "new"
_STRATEGY = re.compile(r"^[ \t]*#[ \t]*strategy[ \t]*:[ \t]*(.*?)[ \t]*$", re.IGNORECASE | re.MULTILINE)
_IN_FLIGHT = {
    TrialState.DETECTED,
    TrialState.VALIDATING,
    TrialState.QUEUED,
    TrialState.BENCHMARKING,
    TrialState.PROFILING,
}
LABEL_WIDTH = 60  # trial_manager's strategy column


@dataclass(frozen=True)
class Save:
    """What one save of a file does to the tree.

    UNCHANGED and CHECKOUT create nothing and leave `head` as the file's head; NEW creates a trial
    whose parent is `parent` (None: a new root).
    """

    kind: str
    head: str | None = None
    parent: str | None = None


def id_number(trial_id: str) -> int:
    return int(trial_id.lstrip("t"))


def _first(trials: Iterable[Trial]) -> Trial | None:
    return min(trials, key=lambda t: id_number(t.id), default=None)


def on_save(trials: list[Trial], heads: Mapping[str, str], file: str, sha: str) -> Save:
    """The save rule.

    Content equal to the head: nothing. Equal to another trial of the same file: move the head there
    (a checkout). Otherwise a new child of the head. A file with no head yet descends from a trial
    of any file whose source it equals (it was copied from it), else it starts a new root. Where
    several trials have the content, the first one wins: it is the one that introduced it.
    """
    by_id = {t.id: t for t in trials}
    head = by_id.get(heads.get(file, ""))
    if head is not None and head.sha256 == sha:
        return Save(UNCHANGED, head=head.id)
    same = _first(t for t in trials if t.file == file and t.sha256 == sha)
    if same is not None:
        return Save(CHECKOUT, head=same.id)
    if head is not None:
        return Save(NEW, parent=head.id)
    origin = _first(t for t in trials if t.sha256 == sha)
    return Save(NEW, parent=origin.id if origin else None)


def disqualified(trial: Trial) -> list[str]:
    """Why a correct trial can never be best or finalized (trialtui.core.flags); empty when it can."""
    if trial.state != TrialState.CORRECT.value:
        return []
    return disqualifications(trial.result, trial.sol)


def correct_on_cpu(trial: Trial) -> bool:
    """Correct, but not timed on a GPU: its own category, never best and no budget spent."""
    return trial.state == TrialState.CORRECT.value and trial.gpu_timing is None


def rank(trial: Trial, baseline: str = "eager") -> tuple[bool, float] | None:
    """How a trial ranks for best: (measured here, speedup), higher is better; None when it cannot be best.

    `Trial.speedup` is None for anything not correct, so an incorrect, invalid or errored trial
    (or a CPU run, which has no speedup) never ranks; nor does a trial whose flags disqualify it.
    A number replayed from a recording or imported from another tool ranks below every number
    measured here, whatever its size: it is best only where nothing measured here is.
    """
    speedup = trial.speedup(baseline)
    if speedup is None or disqualified(trial):
        return None
    return measured_here(trial.result), speedup


def best(trials: Iterable[Trial], baseline: str = "eager") -> Trial | None:
    """The trial of highest `rank` against `baseline`; a tie goes to the earlier."""
    found, top = None, None
    for trial in sorted(trials, key=lambda t: id_number(t.id)):
        key = rank(trial, baseline)
        if key is not None and (top is None or key > top):
            found, top = trial, key
    return found


def no_best_reason(trials: Iterable[Trial], baseline: str = "eager") -> str:
    """Why there is no best: nothing correct, only CPU-correct trials, or only flagged ones."""
    trials = sorted(trials, key=lambda t: id_number(t.id))
    on_cpu = [t.id for t in trials if correct_on_cpu(t)]
    flagged = [t for t in trials if disqualified(t)]
    parts = []
    if flagged:
        parts.append("; ".join(f"{t.id} is flagged ({disqualified(t)[0]})" for t in flagged[:3])
                     + (f" and {len(flagged) - 3} more" if len(flagged) > 3 else ""))
    if on_cpu:
        parts.append(f"{', '.join(on_cpu)} {'is' if len(on_cpu) == 1 else 'are'} correct on CPU, not timed: "
                     "a best needs a GPU timing (trialtui bench FILE --device cuda, or trialtui on a GPU machine)")
    if not parts:
        timed = [t for t in trials if t.speedup(baseline) is not None]
        return "no correct trial yet" if not timed else f"no correct trial has a speedup against {baseline}"
    return "no trial can be best: " + "; ".join(parts)


def counts_against_budget(trial: Trial) -> bool:
    """A trial whose job produced a result on a GPU (TrialState.reached_gpu, not a CPU run).

    Invalid trials never reached the GPU. Interrupted ones do not count either: they produced no
    number, and the engine may run them again, which then counts once. Cancelled and superseded
    trials were dropped before their result, so they are free too; so is a job still running, until
    its result says where it ran. CPU runs (the Triton interpreter) spend no GPU time.
    """
    if not trial.state_enum.reached_gpu or not trial.result:
        return False
    return (trial.result.env or {}).get("device") != "cpu"


def budget_used(trials: Iterable[Trial]) -> int:
    """GPU trials spent (counts_against_budget): the CLI, the TUI and decide all count with this."""
    return sum(1 for t in trials if counts_against_budget(t))


@dataclass(frozen=True)
class Budget:
    """`max_trials` against GPU trials used; `spent` is what the decide step reads."""

    used: int
    limit: int

    @property
    def left(self) -> int:
        return max(0, self.limit - self.used)

    @property
    def spent(self) -> bool:
        return self.used >= self.limit


def budget(trials: Iterable[Trial], limit: int) -> Budget:
    return Budget(budget_used(trials), limit)


def parse_strategy(source: str | bytes) -> str | None:
    """The label from a `# strategy: tile 128, 8 warps` comment line, if the source has one."""
    text = source.decode("utf-8", errors="replace") if isinstance(source, bytes) else source
    match = _STRATEGY.search(text)
    return (match.group(1) or None) if match else None


def label(trial: Trial) -> str:
    """What a trial is called in lists: the user's note (`trials note`) wins over the file's comment."""
    return trial.note or trial.strategy or ""


def icon(state: TrialState) -> str:
    """trial_manager's icons: + correct, X failed, ~ in flight; - for dropped or interrupted."""
    if state == TrialState.CORRECT:
        return "+"
    if state in FAILED_STATES:
        return "X"
    return "~" if state in _IN_FLIGHT else "-"


def summary(trial: Trial, baseline: str = "eager") -> str:
    """The measurement in a few characters: speedup and times when correct, else the state.

    A CPU-correct trial says so; a flagged one names its disqualifying flags; a number not
    measured here says where it came from, "2.63x (replayed)".
    """
    if correct_on_cpu(trial):
        return "correct on CPU, not timed"
    speedup = trial.speedup(baseline)
    if speedup is None:
        return trial.state
    text = f"{speedup:.2f}x"
    origin = short(trial.result)
    if origin:
        text += f" ({origin})"
    base = trial.baseline(baseline)
    if base.get("median_us") is not None and trial.median_us is not None:
        text += f" (bl={base['median_us']:.0f}us, tr={trial.median_us:.0f}us)"
    if trial.sol is not None:
        text += f" SoL {trial.sol:.0%}"
    reasons = disqualified(trial)
    if reasons:
        text += " FLAGGED, never best: " + ", ".join(r.split(":")[0] for r in reasons)
    return text


@dataclass(frozen=True)
class Row:
    """One line of the drawn tree: the trial, the graph before it, and whether it starts a root."""

    trial: Trial
    prefix: str
    root: bool
    show_file: bool


def layout(
    trials: Iterable[Trial],
    *,
    branch: str = "├── ",
    column: str = "│   ",
    last: str = "└── ",
    blank: str = "    ",
) -> list[Row]:
    """Depth-first rows in id order: a lone child continues its parent's column; where a trial has
    several children, each hangs under it as a branch (the last one with `last`).

    A long run of saves stays a straight line instead of indenting once per save, and a line of
    work started again from an older trial is drawn under that trial, not after the newest one
    (`trials status` and the TUI draw the same layout).
    """
    ordered = sorted(trials, key=lambda t: id_number(t.id))
    by_id = {t.id: t for t in ordered}
    children: dict[str | None, list[Trial]] = defaultdict(list)
    for trial in ordered:
        children[trial.parent if trial.parent in by_id else None].append(trial)
    below = {branch: column, last: blank, "": ""}
    rows: list[Row] = []
    stack = [(root, "", "") for root in reversed(children[None])]
    while stack:
        trial, prefix, connector = stack.pop()
        parent = by_id.get(trial.parent or "")
        rows.append(Row(trial, prefix + connector, parent is None, parent is None or parent.file != trial.file))
        kids = children.get(trial.id) or []
        under = prefix + below[connector]
        if len(kids) == 1:
            stack.append((kids[0], under, ""))
        elif kids:
            stack.append((kids[-1], under, last))
            stack.extend((kid, under, branch) for kid in reversed(kids[:-1]))
    return rows


def render_tree(
    trials: list[Trial],
    *,
    best_id: str | None = None,
    heads: Mapping[str, str] | None = None,
    baseline: str = "eager",
) -> str:
    """An ASCII tree like trial_manager's: `[+] t3: 1.42x (bl=…, tr=…) | strategy ▸ head <<< BEST`.

    Roots are separated by a blank line; a trial names its file when it differs from its parent's.
    """
    head_ids = set((heads or {}).values())
    lines: list[str] = []
    for row in layout(trials):
        trial = row.trial
        if row.root and lines:
            lines.append("")
        line = f"{row.prefix}[{icon(trial.state_enum)}] {trial.id}"
        if row.show_file:
            line += f" {trial.file}"
        line += f": {summary(trial, baseline)}"
        if label(trial):
            line += f" | {label(trial)[:LABEL_WIDTH]}"
        if trial.id in head_ids:
            line += " ▸ head"
        if trial.id == best_id:
            line += " <<< BEST"
        lines.append(line)
    return "\n".join(lines)
