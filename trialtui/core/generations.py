"""Earlier checkpoints of `trials.json`, each kept with the journal that followed it.

A checkpoint replaces trials.json atomically, so a crash never tears it; what can still break it is
the world outside (a disk error, a sync tool, a hand edit, `> trials.json`). Before a checkpoint
replaces generation G, G's file and its journal are hard-linked here (no copy), so a store whose
trials.json is unreadable rebuilds from generation G plus every journal written since: nothing is
lost while the chain is whole.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

GENERATIONS = "generations"
KEEP = 3  # generations kept: one is enough while the chain is whole; more survive a bad disk block
_NAME = re.compile(r"^(\d+)\.(json|jsonl)$")


def folder(state_dir: Path) -> Path:
    return state_dir / GENERATIONS


def checkpoint_path(state_dir: Path, generation: int) -> Path:
    return folder(state_dir) / f"{generation}.json"


def journal_path(state_dir: Path, generation: int) -> Path:
    """The journal that followed checkpoint `generation`."""
    return folder(state_dir) / f"{generation}.jsonl"


def listed(state_dir: Path) -> list[int]:
    """Generations kept (with a checkpoint or a journal), newest first."""
    if not folder(state_dir).is_dir():
        return []
    found = {int(m.group(1)) for p in folder(state_dir).iterdir() if (m := _NAME.match(p.name))}
    return sorted(found, reverse=True)


def keep(state_dir: Path, generation: int, checkpoint: Path, journal: Path) -> None:
    """Keep generation `generation` (the files about to be replaced), then drop all but the newest KEEP."""
    target = folder(state_dir)
    target.mkdir(exist_ok=True)
    for source, kept in ((checkpoint, checkpoint_path(state_dir, generation)),
                         (journal, journal_path(state_dir, generation))):
        if not source.exists():
            continue
        kept.unlink(missing_ok=True)
        try:
            os.link(source, kept)
        except OSError:  # a filesystem without hard links
            shutil.copyfile(source, kept)
    for old in listed(state_dir)[KEEP:]:
        checkpoint_path(state_dir, old).unlink(missing_ok=True)
        journal_path(state_dir, old).unlink(missing_ok=True)
    fd = os.open(target, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
