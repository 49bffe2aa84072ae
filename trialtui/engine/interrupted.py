"""Trials a dead session left `interrupted`, sorted out when an engine starts: those whose file still
holds their source run again, newest save first; the others follow the busy policy (under `queue` every
save is measured, so they run after; under `latest`/`restart` a newer save of their file exists, so they
are superseded)."""

from __future__ import annotations

from pathlib import Path

from trialtui.core import tree
from trialtui.core.model import Trial, TrialState
from trialtui.core.store import sha256_of


def newest_first(trials: list[Trial]) -> list[Trial]:
    """The interrupted ones among `trials`, newest save first."""
    found = [t for t in trials if t.state_enum == TrialState.INTERRUPTED]
    return sorted(found, key=lambda t: tree.id_number(t.id), reverse=True)


def sort_out(found: list[Trial], root: Path, busy: str) -> tuple[list[Trial], list[Trial]]:
    """(to run again, in this order; to supersede) of the interrupted trials `found`, newest first."""
    current = {}
    for trial in found:
        if trial.file not in current:
            try:
                current[trial.file] = sha256_of((root / trial.file).read_bytes())
            except OSError:
                current[trial.file] = None
    fresh = [t for t in found if current[t.file] == t.sha256]
    stale = [t for t in found if current[t.file] != t.sha256]
    if busy != "queue":
        return fresh, stale
    return [*fresh, *stale], []
