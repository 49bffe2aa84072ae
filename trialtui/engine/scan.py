"""What the engine reads of its problem directory besides the watcher's events: each candidate's bytes at
the first scan and once more when the watcher watches (watchfiles starts on its first poll, so a save
between the two would be lost), and the reference's hash, which says whether an edit changed it."""

from __future__ import annotations

from pathlib import Path

from trialtui.core.baselines import reference_hash
from trialtui.core.problem import Problem
from trialtui.core.store import sha256_of

WATCH_START_S = 1.0  # after which the watcher watches: the catch-up scan looks then


def digest(path: Path) -> str | None:
    try:
        return sha256_of(path.read_bytes())
    except OSError:
        return None


def scan(problem: Problem) -> dict[Path, str | None]:
    """Every candidate and the hash of its bytes now (None: unreadable)."""
    return {path: digest(path) for path in problem.candidates()}


def changed_since(problem: Problem, scanned: dict[Path, str | None]) -> list[Path]:
    """The candidates whose bytes differ from what `scan` read, new ones included."""
    return [path for path in problem.candidates() if digest(path) != scanned.get(path)]


def reference_sha(problem: Problem) -> str | None:
    try:
        return reference_hash(problem.reference)
    except OSError:
        return None
