"""The trial store: the one writer of `<problem>/.trialtui/`, built so that a crash never loses a trial.

TinyDB rewrites its whole file on every write: most of a second per write at 10,000 trials
(benches/store.py). So TinyDB works on an in-memory copy, and `trials.json` is rewritten (atomically)
only at checkpoints: when a writer opens or closes, and when the journal grows past a limit. Between
checkpoints every change is one line appended to `journal.jsonl`, so a write costs one record. A
line reaches the OS before its call returns (it survives the process being killed); it is fsync'd,
so it also survives power loss, whenever it adds a trial, moves a head or makes a trial final.
Sources are content-addressed snapshots; logs and profiles are files beside, referenced by their
path relative to the state directory. The files on disk and their recovery are store_journal.py's.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from tinydb import TinyDB

from trialtui.core import tree
from trialtui.core.bench_result import BenchResult
from trialtui.core.profile_result import ProfileResult
from trialtui.core.validation_report import ValidationReport
from trialtui.core.model import (
    MAX_SOURCE_BYTES,
    SCHEMA_VERSION,
    Decision,
    Trial,
    TrialState,
    Verdict,
    correct_result_stands,
)
from trialtui.core.state_dir import STATE_DIR
from trialtui.core.store_journal import (
    COMPACT_JSON,
    SNAPSHOTS,
    TMP_SUFFIX,
    TRIALS,
    Checkpointed,
    JournaledStorage,
    StoreError,
    atomic_write,
)

DB_NAME = "trials.json"
LOCK_NAME = "lock"
BLOB_KINDS = ("logs", "profiles")
# A checkpoint rewrites every record, so it waits until the journal is worth folding in; the limit
# also bounds how much a reader replays on open.
JOURNAL_LIMIT_BYTES = 4 << 20
META = "meta"
META_ID = 1
_PLAIN_NAME = re.compile(r"^[^/\\]+$")
_IDENTITY = {"id", "file", "sha256", "schema"}  # what a trial is; never changed after it is added


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


class StoreReadOnly(StoreError):
    """The problem directory cannot be written, so no writer can keep its trials there."""

    def __init__(self, root: Path, error: OSError):
        super().__init__(
            f"{root} is not writable ({error.strerror}): trialtui keeps its trials in {root / STATE_DIR}. "
            f"Make the directory writable, or copy it somewhere writable (cp -r {root} ~/) and run trialtui "
            "there; read-only commands (trials status, show, diff, export) work as it is.")


class SourceTooLarge(StoreError):
    """A save larger than any candidate is read: never a trial, never a snapshot."""

    def __init__(self, file: str, size: int):
        super().__init__(f"{file} is {size / 1e6:.1f} MB; candidates over {MAX_SOURCE_BYTES / 1e6:.0f} MB are not "
                         "read or recorded (no trial, no snapshot): a kernel file is a few hundred lines")


_NOT_WRITABLE = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _as_bytes(source: str | bytes) -> bytes:
    return source.encode("utf-8") if isinstance(source, str) else bytes(source)


def _profile_cut_off(doc: dict[str, Any]) -> bool:
    """A trial a dead writer left in flight whose correct result stands: correct again, not interrupted
    (interrupted trials run again: a second benchmark of a settled number)."""
    return (doc.get("state") != TrialState.CORRECT.value
            and correct_result_stands(doc.get("state", ""), (doc.get("result") or {}).get("state")))


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
            try:
                (state / SNAPSHOTS).mkdir(parents=True, exist_ok=True)
                lock_fd = _take_lock(state / LOCK_NAME)
            except OSError as exc:
                if exc.errno in _NOT_WRITABLE:
                    raise StoreReadOnly(root, exc) from None
                raise
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
        self.recovered = self._settle_in_flight()
        self._cache.checkpoint()

    def _settle_in_flight(self) -> list[str]:
        """Trials no job of this store's writer runs any more (it died, or it is closing): a cut-off profile's
        correct again (its number stands), the others interrupted, run again by the next engine. Their ids."""
        self._trials.update({"state": TrialState.CORRECT.value}, cond=_profile_cut_off)
        in_flight = self._trials.update(
            {"state": TrialState.INTERRUPTED.value},
            cond=lambda doc: not TrialState(doc["state"]).is_final,
        )
        return [f"t{n}" for n in sorted(in_flight)]

    @property
    def writer(self) -> bool:
        return self._lock_fd is not None

    def close(self) -> None:
        """Settle the trials still in flight (no job of this writer's runs them now), fold the journal into
        trials.json and give up the lock; safe to call twice, and after the problem directory was removed."""
        with self._mutex:
            if self._lock_fd is None:
                return
            try:
                if self.state_dir.is_dir():  # a watch stopped by Ctrl-C leaves no trial queued or benchmarking
                    self._settle_in_flight()
                if self._disk.pending and self.state_dir.is_dir():
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
        if len(data) > MAX_SOURCE_BYTES:
            raise SourceTooLarge(file, len(data))
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
        if not isinstance(fields.get("result"), (BenchResult, type(None))):
            raise TypeError(f"a trial's result is a BenchResult, not {type(fields['result']).__name__}")
        for name, kind in (("profile", ProfileResult), ("validation", ValidationReport), ("decision", Decision)):
            if not isinstance(fields.get(name), (kind, type(None))):
                raise TypeError(f"a trial's {name} is a {kind.__name__}, not {type(fields[name]).__name__}")
        wrong = next((v for v in fields.get("verdicts") or [] if not isinstance(v, Verdict)), None)
        if wrong is not None:
            raise TypeError(f"a trial's verdicts are Verdicts, not {type(wrong).__name__}")
        return replace(trial, **fields)

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
        line = json.dumps(puts, **COMPACT_JSON).encode() + b"\n"
        is_new = trial is not None and str(doc_id(trial.id)) not in self._cache.read().get(TRIALS, {})
        sync = meta is not None or is_new or trial.state_enum.is_final  # type: ignore[union-attr]
        self._disk.append(line, sync=sync)
        for table, number, doc in json.loads(line):
            self._cache.put(table, number, doc)
            self._db.table(table).clear_cache()
        if self._disk.journal_bytes > JOURNAL_LIMIT_BYTES:
            self._cache.checkpoint()
