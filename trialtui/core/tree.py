"""The tree rules, as pure functions over Trials: where a save goes, which trial is best, what is spent.

The store, the engine, the CLI and the TUI all apply these, so they cannot disagree.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from trialtui.core.model import FAILED_STATES, Trial, TrialState

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


def best(trials: Iterable[Trial], baseline: str = "eager") -> Trial | None:
    """Highest speedup against `baseline` among correct trials; a tie goes to the earlier trial.

    `Trial.speedup` is None for anything not correct, so an incorrect, invalid or errored trial
    (or a CPU run, which has no speedup) is never best.
    """
    found, top = None, None
    for trial in sorted(trials, key=lambda t: id_number(t.id)):
        speedup = trial.speedup(baseline)
        if speedup is not None and (top is None or speedup > top):
            found, top = trial, speedup
    return found


def budget_used(trials: Iterable[Trial]) -> int:
    """Trials that spent a GPU job (TrialState.reached_gpu).

    Invalid trials never reached the GPU. Interrupted ones do not count either: they produced no
    number, and the engine may run them again, which then counts once. Cancelled and superseded
    trials were dropped before their result, so they are free too.
    """
    return sum(1 for t in trials if t.state_enum.reached_gpu)


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
    """The measurement in a few characters: speedup and times when correct, else the state."""
    speedup = trial.speedup(baseline)
    if speedup is None:
        return trial.state
    text = f"{speedup:.2f}x"
    base = ((trial.result or {}).get("baselines") or {}).get(baseline) or {}
    if base.get("median_us") is not None and trial.median_us is not None:
        text += f" (bl={base['median_us']:.0f}us, tr={trial.median_us:.0f}us)"
    if trial.sol is not None:
        text += f" SoL {trial.sol:.0%}"
    return text


@dataclass(frozen=True)
class Row:
    """One line of the drawn tree: the trial, the graph before it, and whether it starts a root."""

    trial: Trial
    prefix: str
    root: bool
    show_file: bool


def layout(trials: Iterable[Trial], *, branch: str = "├── ", column: str = "│   ") -> list[Row]:
    """Depth-first rows: a trial, its earlier children as branches, then its newest child below it.

    The newest child continues its parent's column, so a long run of saves stays a straight line
    instead of indenting once per save (`trials status` and the TUI draw the same layout).
    """
    ordered = sorted(trials, key=lambda t: id_number(t.id))
    by_id = {t.id: t for t in ordered}
    children: dict[str | None, list[Trial]] = defaultdict(list)
    for trial in ordered:
        children[trial.parent if trial.parent in by_id else None].append(trial)
    rows: list[Row] = []
    stack = [(root, "", "") for root in reversed(children[None])]
    while stack:
        trial, prefix, connector = stack.pop()
        parent = by_id.get(trial.parent or "")
        rows.append(Row(trial, prefix + connector, parent is None, parent is None or parent.file != trial.file))
        kids = children.get(trial.id)
        if kids:
            below = prefix + (column if connector else "")
            stack.append((kids[-1], below, ""))
            stack.extend((kid, below, branch) for kid in reversed(kids[:-1]))
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
