"""Sources whose held-out cases were shown before finalize (`bench --generalize`, the agent's tool).

The cases are derived from the problem alone, so once a check ran on demand for a source, its author
has seen them: finalize's card says they were not held out for that source. One JSON file in the
state directory, keyed by the source's sha256.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from trialtui.core.state_dir import make_dirs
from trialtui.core.store_journal import atomic_write

NAME = "revealed.json"


def _path(state_dir: Path) -> Path:
    return Path(state_dir) / NAME


def _read(state_dir: Path) -> dict[str, dict]:
    try:
        data = json.loads(_path(state_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def record(state_dir: Path, sha256: str, labels: list[str]) -> None:
    """Note that `labels` (the cases' labels) were checked on demand for the source `sha256`."""
    data = _read(state_dir)
    data[sha256] = {"at": time.strftime("%Y-%m-%d %H:%M"), "cases": labels}
    make_dirs(state_dir)
    atomic_write(_path(state_dir), (json.dumps(data, indent=1) + "\n").encode())


def was_revealed(state_dir: Path, sha256: str) -> bool:
    return sha256 in _read(state_dir)
