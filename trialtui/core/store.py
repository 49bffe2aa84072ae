"""The trial store: the one writer of `<problem>/.trialtui/`, built so that a crash never loses a trial.

TinyDB rewrites its whole file on every write: most of a second per write at 10,000 trials
(benches/store.py). So TinyDB works on an in-memory copy, and `trials.json` is rewritten (atomically)
only at checkpoints: when a writer opens or closes, and when the journal grows past a limit. Between
checkpoints every change is one line appended to `journal.jsonl`, so a write costs one record. A
line reaches the OS before its call returns (it survives the process being killed); it is fsync'd,
so it also survives power loss, whenever it adds a trial, moves a head or makes a trial final.
Sources are content-addressed snapshots; logs and profiles are files beside, referenced by their
path relative to the state directory.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tinydb import TinyDB
from tinydb.middlewares import Middleware
from tinydb.storages import Storage

from trialtui.core import generations, tree
from trialtui.core.model import SCHEMA_VERSION, Trial, TrialState

STATE_DIR = ".trialtui"
DB_NAME = "trials.json"
JOURNAL_NAME = "journal.jsonl"
LOCK_NAME = "lock"
SNAPSHOTS = "snapshots"
BLOB_KINDS = ("logs", "profiles")
TMP_SUFFIX = ".tmp"
# A checkpoint rewrites every record, so it waits until the journal is worth folding in; the limit
# also bounds how much a reader replays on open.
JOURNAL_LIMIT_BYTES = 4 << 20
TRIALS, META = "trials", "meta"
META_ID = 1
_CHECKPOINT_KEY = "_checkpoint"  # beside TinyDB's tables in trials.json; TinyDB never sees it
_READ_ATTEMPTS = 5
_PLAIN_NAME = re.compile(r"^[^/\\]+$")
_JSON = {"separators": (",", ":")}
_IDENTITY = {"id", "file", "sha256", "schema"}  # what a trial is; never changed after it is added


class StoreError(RuntimeError):
    """A state directory that cannot be used as asked; the message says why."""


class UnknownTrial(KeyError):
    """An id that names no trial; args[0] is the message."""


class StoreLocked(StoreError):
    """Another process writes this problem directory."""

    def __init__(self, state_dir: Path, pid: int | None):
        self.pid = pid
        holder = f"pid {pid}" if pid else "another process"
        super().__init__(
            f"{state_dir} is held by trialtui {holder}: one writer (TUI or watcher) owns a problem "
            "directory at a time. Stop that one, or use a read-only command (status, show, diff, export)."
        )


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


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _as_bytes(source: str | bytes) -> bytes:
    return source.encode("utf-8") if isinstance(source, str) else bytes(source)


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
        atomic_write(self.path, json.dumps(body, **_JSON).encode())
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


def migrate(record: dict[str, Any]) -> dict[str, Any]:
    """Bring one stored record up to SCHEMA_VERSION, in place; refuse one from a newer trialtui."""
    version = record.get("schema", 0)
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"trial {record.get('id')} has schema {version}, newer than this trialtui's "
            f"{SCHEMA_VERSION}: upgrade trialtui to open this store"
        )
    while version < SCHEMA_VERSION:
        MIGRATIONS[version](record)
        version += 1
        record["schema"] = version
    return record


def _v0_to_v1(record: dict[str, Any]) -> None:
    """Records from before `schema` existed lack the fields added with it: give them their defaults.

    A v0 record may also hold `verdicts: null`, which v1 readers iterate over.
    """
    missing = [key for key in ("id", "file", "sha256") if not record.get(key)]
    if missing:
        raise StoreError(f"a stored trial lacks {', '.join(missing)} and cannot be recovered: {record!r:.200}")
    for key, value in Trial(id="", file="", sha256="", created=0.0).to_dict().items():
        if record.get(key) is None:
            record[key] = value


MIGRATIONS = {0: _v0_to_v1}


def doc_id(trial_id: str) -> int:
    """`t17` is TinyDB document 17: a trial is found without scanning the table."""
    if not re.fullmatch(r"t[1-9][0-9]*", trial_id):
        raise UnknownTrial(f"no trial {trial_id!r} (trial ids look like t1, t2, …)")
    return int(trial_id[1:])


def _take_lock(path: Path) -> int:
    """flock the lock file and write our pid into it; the kernel drops the lock when we die."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        text = os.read(fd, 32).decode(errors="replace").strip()
        os.close(fd)
        raise StoreLocked(path.parent, int(text) if text.isdigit() else None) from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    os.fsync(fd)
    return fd


def lock_holder(problem_root: Path | str) -> StoreLocked | None:
    """The writer that holds this problem now, if any, found without opening (or repairing) the store."""
    path = Path(problem_root).resolve() / STATE_DIR / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        text = os.read(fd, 32).decode(errors="replace").strip()
        return StoreLocked(path.parent, int(text) if text.isdigit() else None)
    finally:
        os.close(fd)  # drops the probe's shared lock with it
    return None


class Store:
    """The trials of one problem directory, and the only code that writes them.

    Open with `Store.open(root, writer=True)`: a writer holds `.trialtui/lock`; readers
    (`writer=False`) take no lock, write nothing, may run alongside it, and see the store as it was
    when they opened it. A writer marks trials that
    a dead writer left in flight as interrupted (listed in `recovered`); `recovery` says what was
    rebuilt when trials.json itself was bad. Trials handed out are built from the stored record;
    change them only through `update`.

    One store object may be shared by threads. Every read and write holds one lock, and a read holds
    it only to copy the table's references (documents are replaced on write, never changed in place),
    so a reader in a worker thread neither races a writer on the event loop (a dict changing size
    while it is iterated) nor stalls it while it builds thousands of trials.
    """

    def __init__(self, root: Path, db: TinyDB, lock_fd: int | None):
        self.root = root
        self.state_dir = root / STATE_DIR
        self._db = db
        self._cache: Checkpointed = db.storage  # type: ignore[assignment]
        self._disk: JournaledStorage = self._cache.storage  # type: ignore[assignment]
        self._lock_fd = lock_fd
        self._trials = db.table(TRIALS)
        self._mutex = threading.RLock()
        self._next = 1
        self.recovered: list[str] = []
        self.recovery: str | None = None

    @classmethod
    def open(cls, problem_root: Path | str, *, writer: bool = True) -> Store:
        root = Path(problem_root).resolve()
        state = root / STATE_DIR
        lock_fd = None
        if writer:
            (state / SNAPSHOTS).mkdir(parents=True, exist_ok=True)
            lock_fd = _take_lock(state / LOCK_NAME)
        db = TinyDB(state / DB_NAME, storage=Checkpointed(JournaledStorage), read_only=not writer)
        store = cls(root, db, lock_fd)
        try:
            store._prepare()
        except BaseException:
            store.close()
            raise
        return store

    def _prepare(self) -> None:
        self._trials.update(migrate, cond=lambda doc: doc.get("schema", 0) != SCHEMA_VERSION)
        self._next = max((doc.doc_id for doc in self._trials), default=0) + 1
        self.recovery = self._disk.recovery
        if not self.writer:
            return
        for leftover in [*self.state_dir.glob(f".*{TMP_SUFFIX}"), *self.state_dir.glob(f"*/.*{TMP_SUFFIX}")]:
            leftover.unlink()  # a write that a crash interrupted before its rename
        in_flight = self._trials.update(
            {"state": TrialState.INTERRUPTED.value},
            cond=lambda doc: not TrialState(doc["state"]).is_final,
        )
        self.recovered = [f"t{n}" for n in sorted(in_flight)]
        self._cache.checkpoint()

    @property
    def writer(self) -> bool:
        return self._lock_fd is not None

    def close(self) -> None:
        """Fold the journal into trials.json and give up the lock; safe to call twice."""
        with self._mutex:
            if self._lock_fd is None:
                return
            try:
                if self._disk.pending:
                    self._cache.checkpoint()
            finally:
                self._disk.close()
                os.ftruncate(self._lock_fd, 0)
                os.close(self._lock_fd)
                self._lock_fd = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Reading

    def _table(self, name: str) -> dict[str, dict[str, Any]]:
        """A shallow copy of one table, taken under the lock: safe to read from any thread."""
        with self._mutex:
            return dict(self._cache.read().get(name, {}))

    def trials(self) -> list[Trial]:
        """Every trial, in id order."""
        docs = self._table(TRIALS)
        return [Trial.from_dict(docs[key]) for key in sorted(docs, key=int)]

    def get(self, trial_id: str) -> Trial:
        number = str(doc_id(trial_id))
        with self._mutex:
            doc = self._cache.read().get(TRIALS, {}).get(number)
        if doc is None:
            raise UnknownTrial(f"no trial {trial_id!r} in {self.state_dir}")
        return Trial.from_dict(doc)

    @property
    def heads(self) -> dict[str, str]:
        """file → the trial its next save descends from."""
        return dict(self._meta().get("heads", {}))

    def head(self, file: str) -> Trial | None:
        head = self.heads.get(file)
        return self.get(head) if head else None

    def _meta(self) -> dict[str, Any]:
        with self._mutex:
            return dict(self._cache.read().get(META, {}).get(str(META_ID)) or {"heads": {}})

    def snapshot_path(self, sha: str) -> Path:
        return self.state_dir / SNAPSHOTS / f"{sha}.py"

    def read_source(self, trial: Trial) -> str:
        return self.snapshot_path(trial.sha256).read_bytes().decode("utf-8", errors="replace")

    def blob_path(self, kind: str, name: str) -> Path:
        """Where a log or profile named `name` lives, for a child process to write (mkdir its parent first)."""
        if kind not in BLOB_KINDS or not _PLAIN_NAME.match(name) or name in (".", ".."):
            raise ValueError(f"a blob is one of {BLOB_KINDS} with a plain file name, got {kind}/{name}")
        return self.state_dir / kind / name

    def read_blob(self, relpath: str) -> str:
        kind, _, name = relpath.partition("/")
        return self.blob_path(kind, name).read_text(encoding="utf-8", errors="replace")

    # Writing

    def record(self, file: str, source: str | bytes) -> tuple[tree.Save, Trial]:
        """Apply the save rule to one save of `file`: returns what it did and the file's head after.

        The rule looks only at the head and at trials with the same content, so only those are read.
        """
        data = _as_bytes(source)
        sha = sha256_of(data)
        with self._mutex:
            head = self.head(file)
            same = [Trial.from_dict(doc) for doc in self._table(TRIALS).values() if doc.get("sha256") == sha]
            save = tree.on_save(same + ([head] if head else []), self.heads, file, sha)
            if save.kind == tree.NEW:
                return save, self.add_trial(file, data, parent=save.parent)
            if save.kind == tree.CHECKOUT:
                self.set_head(file, save.head)
            return save, self.get(save.head)

    def add_trial(
        self,
        file: str,
        source: str | bytes,
        *,
        parent: str | None = None,
        strategy: str | None = None,
        move_head: bool = True,
        **fields: Any,
    ) -> Trial:
        """A new trial of `file` with this source, as the file's head unless `move_head` is False.

        The strategy defaults to the source's `# strategy:` comment. No save rule is applied: that
        is `record`'s job.
        """
        self._check_writer()
        data = _as_bytes(source)
        with self._mutex:
            if parent is not None:
                self.get(parent)
            sha = sha256_of(data)
            if not self.snapshot_path(sha).exists():
                atomic_write(self.snapshot_path(sha), data)
            trial = Trial(
                id=f"t{self._next}",
                file=file,
                sha256=sha,
                created=time.time(),
                parent=parent,
                strategy=strategy if strategy is not None else tree.parse_strategy(data),
            )
            trial = self._with(trial, fields)
            meta = self._meta()
            if move_head:
                meta["heads"] = {**meta.get("heads", {}), file: trial.id}
            self._commit(trial, meta=meta if move_head else None)
            self._next += 1
            return trial

    def update(self, trial_id: str, **fields: Any) -> Trial:
        """Set fields of a trial; durable when this returns. `state` takes a TrialState or its value."""
        self._check_writer()
        with self._mutex:
            trial = self._with(self.get(trial_id), fields)
            self._commit(trial)
            return trial

    @staticmethod
    def _with(trial: Trial, fields: dict[str, Any]) -> Trial:
        refused = (set(fields) - set(Trial.__dataclass_fields__)) | (set(fields) & _IDENTITY)
        if refused:
            raise TypeError(f"cannot set {', '.join(sorted(refused))} on a trial")
        if "state" in fields:
            fields = {**fields, "state": TrialState(fields["state"]).value}
        return Trial.from_dict({**trial.to_dict(), **fields})

    def set_head(self, file: str, trial_id: str) -> None:
        """Move `file`'s head: its next save descends from `trial_id`."""
        self._check_writer()
        with self._mutex:
            self.get(trial_id)
            meta = self._meta()
            meta["heads"] = {**meta.get("heads", {}), file: trial_id}
            self._commit(None, meta=meta)

    def drop_head(self, file: str) -> None:
        """Forget `file`'s head (its next save starts a new root); `trials doctor` does this to a head that names no trial."""
        self._check_writer()
        with self._mutex:
            meta = self._meta()
            meta["heads"] = {f: h for f, h in meta.get("heads", {}).items() if f != file}
            self._commit(None, meta=meta)

    def branch(self, trial_id: str) -> Trial | None:
        """Put a trial's source back into its file and make it the file's head; creates no trial.

        If the file holds content that is not a trial yet (nobody was watching), that content is
        recorded first, so nothing the user wrote is lost; that trial is returned, else None.
        """
        self._check_writer()
        with self._mutex:
            target = self.get(trial_id)
            if not _PLAIN_NAME.match(target.file):
                raise StoreError(f"{trial_id}'s file {target.file!r} is not a name inside {self.root}")
            path = self.root / target.file
            recorded = None
            if path.exists():
                save, trial = self.record(target.file, path.read_bytes())
                recorded = trial if save.kind == tree.NEW else None
            atomic_write(path, self.snapshot_path(target.sha256).read_bytes())
            self.set_head(target.file, trial_id)
            return recorded

    def write_blob(self, kind: str, name: str, text: str | bytes) -> str:
        """Write a log or profile beside the database; returns the path to keep in the record."""
        path = self.blob_path(kind, name)
        path.parent.mkdir(exist_ok=True)
        atomic_write(path, _as_bytes(text))
        return f"{kind}/{name}"

    def _check_writer(self) -> None:
        if not self.writer:
            raise StoreError(f"{self.state_dir} was opened read-only (or is closed)")

    def _commit(self, trial: Trial | None, *, meta: dict[str, Any] | None = None) -> None:
        """Journal first (one line: all or nothing), then TinyDB's copy, from the very bytes journaled.

        Intermediate states skip the fsync: a power cut may lose one, and the trial then reopens
        interrupted. Everything else is promised to be on disk when the call returns.
        """
        puts = []
        if trial is not None:
            puts.append([TRIALS, doc_id(trial.id), trial.to_dict()])
        if meta is not None:
            puts.append([META, META_ID, meta])
        line = json.dumps(puts, **_JSON).encode() + b"\n"
        is_new = trial is not None and str(doc_id(trial.id)) not in self._cache.read().get(TRIALS, {})
        sync = meta is not None or is_new or trial.state_enum.is_final  # type: ignore[union-attr]
        self._disk.append(line, sync=sync)
        for table, number, doc in json.loads(line):
            self._cache.put(table, number, doc)
            self._db.table(table).clear_cache()
        if self._disk.journal_bytes > JOURNAL_LIMIT_BYTES:
            self._cache.checkpoint()
