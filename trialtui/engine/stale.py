"""Which trials were measured against another reference.py than the one on disk: stale until measured again.

A result names the hash of the reference it was judged against, so staleness is that hash against the file's: an
edit made while no engine watched is found when the next one starts, and an edit undone makes its trials current.
"""

from __future__ import annotations

from typing import Any


def mark(store: Any, sha: str | None, *, edited: bool) -> int:
    """Each measured trial's `stale` set to whether its reference differs from `sha` (the file's hash now); how many
    became stale. A result that names no hash (imported, or kept from before hashes were) is stale only when the
    reference was `edited` under a running engine."""
    became = 0
    for trial in store.trials():
        if trial.result is None or sha is None:
            continue
        judged_against = trial.result.reference_sha
        stale = edited or trial.stale if judged_against is None else judged_against != sha
        if stale != trial.stale:
            store.update(trial.id, stale=stale)
            became += stale
    return became
