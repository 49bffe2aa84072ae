"""The store on disk: trials.json rewritten atomically at checkpoints, the journal of every change
between them, and the recovery of a bad trials.json from kept generations.

Split from store.py, which keeps the Store API (lock, migration, trials, heads, blobs) on top of it.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from tinydb.middlewares import Middleware
from tinydb.storages import Storage

from trialtui.core import generations

JOURNAL_NAME = "journal.jsonl"
SNAPSHOTS = "snapshots"
TMP_SUFFIX = ".tmp"
TRIALS = "trials"
COMPACT_JSON = {"separators": (",", ":")}
_CHECKPOINT_KEY = "_checkpoint"  # beside TinyDB's tables in trials.json; TinyDB never sees it
_READ_ATTEMPTS = 5


class StoreError(RuntimeError):
    """A state directory that cannot be used as asked; the message says why."""


def atomic_write(path: Path, data: bytes) -> None:
    """Replace `path` by `data` so that a reader or a crash sees the old file or the new, never a mix.

    The temporary file sits in the same directory (os.replace is atomic only within a filesystem) and
    keeps the old file's permissions, so an editor sees an ordinary external change.
    """
    path = Path(path)
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    """The rename itself is durable only once the directory entry is."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _Unreadable(ValueError):
    """A checkpoint or journal that does not decode as one."""


def _load_checkpoint(path: Path) -> dict[str, Any]:
    """A checkpoint file's tables; FileNotFoundError when absent, _Unreadable when it does not decode."""
    raw = path.read_bytes()
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise _Unreadable(f"{path.name} is not valid JSON ({exc})") from exc
    if not isinstance(data, dict) or not isinstance(data.get(_CHECKPOINT_KEY, {}).get("generation", 0), int):
        raise _Unreadable(f"{path.name} is not a trialtui store")
    return data


def _read_journal(path: Path) -> tuple[int | None, list[list[Any]], int]:
    """(generation it follows, its whole lines, lines dropped); (None, [], 0) when there is none."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, [], 0
    header, *lines = raw.split(b"\n")
    try:
        follows = json.loads(header)["generation"]
        if not isinstance(follows, int):
            raise TypeError("generation is not a number")
    except (ValueError, KeyError, TypeError) as exc:
        raise _Unreadable(f"{path.name} has no valid header ({exc})") from exc
    entries = []
    for line in lines[:-1]:  # what follows the last newline is a torn write
        try:
            entries.append(json.loads(line))
        except ValueError:
            break
    return follows, entries, len(lines) - 1 - len(entries)


def _apply(data: dict[str, Any], line: list[Any]) -> None:
    for table, number, doc in line:
        data.setdefault(table, {})[str(number)] = doc


def _recovery_message(why: str, data: dict[str, Any], base: int | None, journals: int, gaps: list[tuple[int, int]],
                      kept: Path | None, read_only: bool, unreadable: list[int], orphans: int) -> str:
    """What was recovered, from where, and what is lost: trial ids are dense, so a gap is a lost trial."""
    ids = sorted(int(n) for n in data.get(TRIALS, {}))
    source = f"generation {base}" if base is not None else "no earlier generation"
    parts = [f"{why}; recovered {len(ids)} trial(s) from {source} and the {journals} journal(s) after it"]
    missing = sorted(set(range(1, ids[-1] + 1)) - set(ids)) if ids else []
    if gaps:
        spans = ", ".join(f"{a}" if a == b else f"{a}–{b}" for a, b in gaps)
        parts.append(f"the changes of generation(s) {spans} are missing, so later states of some trials may be lost")
    if unreadable:
        parts.append(f"kept generation(s) {', '.join(map(str, unreadable))} were unreadable too")
    if missing:
        parts.append(f"lost: {', '.join(f't{n}' for n in missing)}")
    elif not gaps and base is not None:
        parts.append("nothing is lost")
    if orphans:
        parts.append(f"{orphans} saved source(s) in {SNAPSHOTS}/ belong to no recovered trial")
    if kept is not None:
        parts.append(f"the bad file is kept as {kept.name}")
    elif read_only:
        parts.append("(read-only: open it with a writer, or run `trialtui trials doctor --repair`, to repair)")
    return "; ".join(parts)


class JournaledStorage(Storage):
    """TinyDB's JSON file, replaced atomically at each checkpoint, plus the journal written since.

    Each checkpoint has a generation number; the journal's first line names the generation it
    follows. A journal of an older generation is already folded in (the writer died between the two
    renames); a newer one means trials.json was replaced while a reader was reading, so it reads
    again. A crash can tear or garble only what was written after the last fsync, so replay stops at
    the first line that does not decode: nothing after it was promised to be on disk.

    What a crash cannot do, the world outside can: a trials.json that does not decode, is missing, or
    is older than its journal is rebuilt from the kept generations (`generations.py`) and every
    journal since; a writer keeps the bad file beside as `<name>.bad-<time>`. `recovery` then says
    what was recovered and what, if anything, is lost.
    """

    def __init__(self, path: str | Path, read_only: bool = False):
        self.path = Path(path)
        self.state_dir = self.path.parent
        self.journal = self.path.with_name(JOURNAL_NAME)
        self.read_only = read_only
        self.generation = 0
        self.journal_bytes = 0
        self.pending = 0  # journal lines since the last checkpoint
        self.recovery: str | None = None
        self._clean = False  # trials.json on disk is the generation read: keep it at the next checkpoint
        self._fd: int | None = None

    def read(self) -> dict[str, Any]:
        why = ""
        for _ in range(_READ_ATTEMPTS):
            try:
                data = _load_checkpoint(self.path)
            except FileNotFoundError:
                if generations.listed(self.state_dir):
                    return self._recover(f"{self.path.name} is missing")
                data = {}
            except _Unreadable as exc:
                return self._recover(str(exc))
            generation = data.pop(_CHECKPOINT_KEY, {}).get("generation", 0)
            try:
                follows, lines, _ = _read_journal(self.journal)
            except _Unreadable as exc:
                self._set_aside(self.journal, str(exc))
                follows, lines = None, []
            if follows is not None and follows > generation:
                why = (f"{self.journal.name} follows generation {follows}, but {self.path.name} is generation "
                       f"{generation} (replaced or deleted)")
                continue
            if follows == generation:
                for line in lines:
                    _apply(data, line)
            self.generation = generation
            self._clean = True
            return data
        return self._recover(why)

    def _set_aside(self, path: Path, why: str) -> None:
        """A journal with no readable header follows no known generation: none of it can be applied."""
        kept = self._keep_bad(path)
        where = f"it is kept as {kept.name}" if kept else "read-only: a writer will set it aside"
        self.recovery = f"{why}: none of its changes were applied ({where})"

    def _keep_bad(self, path: Path) -> Path | None:
        if self.read_only or not path.exists():
            return None
        kept = path.with_name(f"{path.name}.bad-{time.strftime('%Y%m%d-%H%M%S')}")
        os.replace(path, kept)
        return kept

    def _recover(self, why: str) -> dict[str, Any]:
        """The newest readable generation, then every journal that follows it, oldest first."""
        bases: list[tuple[int, dict[str, Any]]] = []
        with contextlib.suppress(_Unreadable, FileNotFoundError):
            current = _load_checkpoint(self.path)
            bases.append((current.pop(_CHECKPOINT_KEY, {}).get("generation", 0), current))
        kept_generations = generations.listed(self.state_dir)
        unreadable = []
        for number in kept_generations:
            try:
                data = _load_checkpoint(generations.checkpoint_path(self.state_dir, number))
            except FileNotFoundError:
                continue
            except _Unreadable:
                unreadable.append(number)
                continue
            data.pop(_CHECKPOINT_KEY, None)
            bases.append((number, data))
        base, data = max(bases, key=lambda b: b[0], default=(0, {}))
        journals: dict[int, list[list[Any]]] = {}
        for path in [*(generations.journal_path(self.state_dir, n) for n in kept_generations), self.journal]:
            with contextlib.suppress(_Unreadable):
                follows, lines, _ = _read_journal(path)
                if follows is not None:
                    journals[follows] = lines
        expected, gaps, replayed = base, [], 0
        for follows in sorted(g for g in journals if g >= base):
            if follows > expected:
                gaps.append((expected, follows - 1))
            for line in journals[follows]:
                _apply(data, line)
            replayed += 1
            expected = follows + 1
        kept = self._keep_bad(self.path)
        self.generation = max([base, *journals, *kept_generations])
        self._clean = False
        known = {doc.get("sha256") for doc in data.get(TRIALS, {}).values()}
        orphans = sum(1 for p in (self.state_dir / SNAPSHOTS).glob("*.py") if p.stem not in known)
        self.recovery = _recovery_message(why, data, base if bases else None, replayed, gaps, kept,
                                          self.read_only, unreadable, orphans)
        return data

    def write(self, data: dict[str, Any]) -> None:
        """A checkpoint: the whole database, then a fresh journal that follows it."""
        if self.read_only:
            raise StoreError("this store was opened read-only")
        generation = self.generation + 1
        if self._clean:  # the generation being replaced is what a later corrupt file recovers from
            generations.keep(self.state_dir, self.generation, self.path, self.journal)
        body = {**data, _CHECKPOINT_KEY: {"generation": generation}}
        atomic_write(self.path, json.dumps(body, **COMPACT_JSON).encode())
        header = json.dumps({"generation": generation}).encode() + b"\n"
        atomic_write(self.journal, header)
        self.close()
        self._fd = os.open(self.journal, os.O_WRONLY | os.O_APPEND)
        self.generation = generation
        self.journal_bytes = len(header)
        self.pending = 0
        self._clean = True

    def append(self, line: bytes, *, sync: bool) -> None:
        """One change, in the OS when this returns, and on the disk too when `sync`."""
        if self._fd is None:
            raise StoreError("this store was opened read-only")
        view = memoryview(line)
        while view:
            view = view[os.write(self._fd, view):]
        if sync:
            os.fsync(self._fd)
        self.journal_bytes += len(line)
        self.pending += 1

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class Checkpointed(Middleware):
    """TinyDB reads and writes this in-memory copy; it reaches the storage only at checkpoint()."""

    def __init__(self, storage_cls: type[Storage]):
        super().__init__(storage_cls)
        self.data: dict[str, Any] | None = None

    def read(self) -> dict[str, Any]:
        if self.data is None:
            self.data = self.storage.read()
        return self.data

    def write(self, data: dict[str, Any]) -> None:
        self.data = data

    def checkpoint(self) -> None:
        self.storage.write(self.read())

    def put(self, table: str, doc_id: int, doc: dict[str, Any]) -> None:
        """One document, in place: TinyDB's Table would rebuild the whole table dict to write it."""
        self.read().setdefault(table, {})[str(doc_id)] = doc
