"""Which trials were measured against another reference.py than the one on disk: stale until measured again.

A result names the hash of the reference it was judged against, so staleness is that hash against the file's: an
edit made while no engine watched is found when the next one starts, and an edit undone makes its trials current.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trialtui.core.model import Trial
from trialtui.core.problem_dir import ProblemError, load_problem
from trialtui.engine.scan import reference_sha


def is_stale(trial: Trial, sha: str | None) -> bool:
    """Whether `trial` was judged against another reference than the one of hash `sha`; its stored mark where its
    result names no hash or the reference cannot be read."""
    judged_against = trial.result.reference_sha if trial.result is not None else None
    return trial.stale if judged_against is None or sha is None else judged_against != sha


def stale_now(root: Path, trials: list[Trial]) -> list[str]:
    """The ids of `trials` stale against the problem's reference.py as it is on disk: what a read-only command shows
    without an engine to mark them."""
    try:
        sha = reference_sha(load_problem(root))
    except ProblemError:
        sha = None
    return [t.id for t in trials if is_stale(t, sha)]


def mark(store: Any, sha: str | None, *, edited: bool) -> int:
    """Each measured trial's `stale` set to whether its reference differs from `sha` (the file's hash now); how many
    became stale. A result that names no hash (imported, or kept from before hashes were) is stale only when the
    reference was `edited` under a running engine."""
    became = 0
    for trial in store.trials():
        if trial.result is None or sha is None:
            continue
        stale = (edited or trial.stale) if trial.result.reference_sha is None else is_stale(trial, sha)
        if stale != trial.stale:
            store.update(trial.id, stale=stale)
            became += stale
    return became
