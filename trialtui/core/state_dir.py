"""Where trialtui keeps a problem's state, and how its folders are made without re-making the problem.

A background writer (a job's log, the analysis cache) that outlives the removal of the problem
directory once re-created it with `mkdir -p`; the engine then saw its root back and watched on.
Folders below the state directory are made one level at a time, the state directory itself last
of all never its parent, so a removed problem stays removed and the late writer gets ENOENT.
"""

from __future__ import annotations

from pathlib import Path

STATE_DIR = ".trialtui"


def make_dirs(directory: Path | str) -> None:
    """`mkdir -p`, except that a missing parent of a `.trialtui` folder is never created."""
    directory = Path(directory)
    parts = directory.parts
    if STATE_DIR not in parts:
        directory.mkdir(parents=True, exist_ok=True)
        return
    for depth in range(parts.index(STATE_DIR) + 1, len(parts) + 1):
        Path(*parts[:depth]).mkdir(exist_ok=True)
