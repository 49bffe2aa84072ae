"""The problem's files around every job: a copy before it, the copy put back after it, and the bytes known good.

A candidate runs as the user and can write the problem directory. Every job (validation or benchmark)
starts with a snapshot of the files it depends on (the reference, the candidate, task.yml and the files
it names, trialtui.toml) and ends by putting back what changed; the change is the job's error. Jobs of
one problem overlap (a validation beside a benchmark), so a job may also find, when it starts, a file
that a job still running has changed or removed: it is put back from the last bytes known good before
the job starts (so an innocent job is not judged against a tampered reference), and the change is
charged to the jobs that were running.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import os
import re
import shutil
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trialtui.core.state_dir import make_dirs

_lock = threading.Lock()
# Import lines, read as text: the ast module is not safe in two threads at once on CPython 3.11, and lanes are threads.
_FROM_IMPORT = re.compile(r"^[ \t]*from[ \t]+([A-Za-z_]\w*)[\w.]*[ \t]+import\b", re.M)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([A-Za-z_][\w., \t]*)", re.M)
_guarding: dict[int, set[Path]] = {}  # a running job's token: the files its snapshot covers
_overlapped: dict[int, set[Path]] = {}  # a running job's token: those another job also covered meanwhile
_found: dict[int, list[dict[str, str]]] = {}  # a running job's token: its files another job found changed
_known: dict[Path, bytes] = {}  # each file's bytes as a job found them when no other job was running
_tokens = iter(range(1, 1 << 62))


def protected_files(spec: dict[str, Any]) -> list[Path]:
    """The problem's files and the candidate: a job that changes one is an error, and it is put back."""
    paths = [Path(spec[key]) for key in ("reference", "candidate") if spec.get(key)]
    paths += [Path(p) for p in spec.get("support_files", [])]
    if "root" in spec:
        root = Path(spec["root"])
        paths += [root / "task.yml", root / "trialtui.toml"]
        paths += _task_files(root / "task.yml")
    return [p for p in dict.fromkeys(paths) if p.is_file() or p in _known]


def _task_files(task: Path) -> list[Path]:
    """Files a GPU MODE task.yml names under `files:` (not the submission placeholder)."""
    if not task.is_file():
        return []
    import yaml

    try:
        data = yaml.safe_load(task.read_text(encoding="utf-8")) or {}
    except (yaml.YAMLError, OSError, UnicodeDecodeError):
        return []
    entries = data.get("files") if isinstance(data, dict) else None
    sources = [e.get("source") for e in entries or [] if isinstance(e, dict)]
    return [(task.parent / s).resolve() for s in sources if isinstance(s, str) and not s.startswith("@")]


@dataclass
class Snapshot:
    """The bytes of the protected files before a job, to compare and restore after it."""

    saved: dict[Path, bytes] = field(default_factory=dict)
    root: Path | None = None
    listing: frozenset[str] = frozenset()  # the problem directory's entries before the job

    @classmethod
    def take(cls, paths: list[Path], root: Path | None = None) -> "Snapshot":
        listing = frozenset(_entries(root)) if root is not None else frozenset()
        return cls({p: p.read_bytes() for p in paths if p.is_file()}, root, listing)

    def remove_planted(self, keep_dir: Path) -> list[dict[str, str]]:
        """Entries the job created in the problem directory under the name of a module something else
        provides (a stdlib or installed module, a .pth hook): moved beside the log and charged. A new
        file of any other name (the user's next candidate, saved meanwhile) stays where it is."""
        planted = []
        if self.root is None:
            return planted
        for name in sorted(set(_entries(self.root)) - self.listing):
            if not shadows_a_module(name, self.root) or _namespace_only(self.root / name):
                continue
            path = self.root / name
            make_dirs(keep_dir)
            kept = keep_dir / f"planted-{name}"
            try:
                shutil.rmtree(kept) if kept.is_dir() and not kept.is_symlink() else kept.unlink(missing_ok=True)
                os.replace(path, kept)
            except OSError:
                continue
            planted.append({"file": str(path), "how": "created (it shadows a module)", "kept": str(kept)})
        return planted

    def restore_changed(self, keep_dir: Path) -> list[dict[str, str]]:
        """Put back every file the job changed or removed; the changed bytes are kept in `keep_dir`."""
        changed = []
        for path, before in self.saved.items():
            after = _read(path)
            if after == before:
                continue
            entry = {"file": str(path), "how": "removed" if after is None else "changed"}
            if after is not None:
                make_dirs(keep_dir)
                kept = keep_dir / f"{path.name}.{hashlib.sha256(after).hexdigest()[:12]}"
                kept.write_bytes(after)
                entry["kept"] = str(kept)
            _write(path, before)
            changed.append(entry)
        return changed


def begin(spec: dict[str, Any]) -> tuple[int, Snapshot]:
    """Register a job: settle its files (see the module's doc), snapshot them, and note overlaps."""
    paths = protected_files(spec)
    with _lock:
        token = next(_tokens)
        running = dict(_guarding)
        for path in paths:
            now = _read(path)
            if not any(path in theirs for theirs in running.values()):  # no running job can have written it
                if now is not None:
                    _known[path] = now
                continue
            good = _known.get(path)
            if good is None or now == good:
                continue
            _write(path, good)  # a running job changed it: this job starts from the good bytes
            for other, theirs in running.items():
                if path in theirs:
                    _found[other].append({"file": str(path), "how": "removed" if now is None else "changed",
                                          "found_by": "another job of this problem, when it started"})
        _overlapped[token] = set()
        _found[token] = []
        for other, theirs in running.items():
            shared = theirs.intersection(paths)
            _overlapped[other] |= shared
            _overlapped[token] |= shared
        _guarding[token] = set(paths)
    return token, Snapshot.take(paths, Path(spec["root"]) if spec.get("root") else None)


def with_sibling_modules(spec: dict[str, Any]) -> dict[str, Any]:
    """The modules the reference imports from its own folder join the support files: the checker gets
    their known-good text (runner/known_good.py), since it puts no problem folder on its import path."""
    reference = Path(spec["reference"]) if spec.get("reference") else None
    if reference is None or not reference.is_file():
        return spec
    try:
        text = reference.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return spec  # the job's own load says what is wrong with it
    names = {m.group(1) for m in _FROM_IMPORT.finditer(text)}
    names |= {part.strip().split(".")[0].split()[0] for m in _IMPORT.finditer(text) for part in m.group(1).split(",") if part.strip()}
    siblings = [reference.parent / f"{name}.py" for name in sorted(names)]
    known = set(spec.get("support_files", []))
    extra = [str(p) for p in siblings if p.is_file() and p != reference and str(p) not in known
             and str(p) != spec.get("candidate")]
    return {**spec, "support_files": [*spec.get("support_files", []), *extra]} if extra else spec


def with_reference_source(spec: dict[str, Any], snapshot: Snapshot) -> dict[str, Any]:
    """The known-good text of the reference and its support files in the spec: the job loads them from
    there, not from files a job running beside it (or this job's candidate) may have changed. A job that
    loads no problem (calibrate) gets none."""
    if not spec.get("reference"):
        return spec
    texts = {}
    for path in [spec.get("reference"), *spec.get("support_files", [])]:
        data = snapshot.saved.get(Path(path)) if path else None
        try:
            if data is not None:
                texts[str(path)] = data.decode("utf-8")
        except UnicodeDecodeError:
            continue  # the job's own load says what is wrong with it
    spec = {**spec, "support_sources": {p: t for p, t in texts.items() if p != spec.get("reference")}}
    if spec.get("reference") in texts:
        spec["reference_source"] = texts[spec["reference"]]
    return spec


def end(token: int, snapshot: Snapshot, keep_dir: Path) -> tuple[list[dict[str, str]], set[Path]]:
    """The job's changes (put back) and those others found while it ran; and the files another job
    covered meanwhile (a change there may be that job's)."""
    changed = snapshot.restore_changed(keep_dir) + snapshot.remove_planted(keep_dir)
    with _lock:
        _guarding.pop(token, None)
        for entry in changed:  # a job still running that covers the file may be the one that wrote it
            for other, theirs in _guarding.items():
                if Path(entry["file"]) in theirs:
                    _found[other].append({**entry, "found_by": "another job of this problem, when it ended"})
        found = _found.pop(token, [])
        shared = _overlapped.pop(token, set())
    seen = {c["file"] for c in changed}
    return changed + [f for f in found if f["file"] not in seen], shared


def _entries(root: Path) -> list[str]:
    try:
        return [entry.name for entry in os.scandir(root)]
    except OSError:
        return []


def shadows_a_module(name: str, root: Path) -> bool:
    """A directory entry that Python would import in place of a module found elsewhere (or a .pth hook):
    the stdlib, what this process imported, or what its path outside `root` provides."""
    stem = name.removesuffix(".py") if name.endswith(".py") else name.split(".")[0]
    if name.endswith(".pth") or stem in ("sitecustomize", "usercustomize"):
        return True  # hooks the interpreter runs at start
    if name.startswith(".") or not stem.isidentifier():
        return False
    if stem in sys.stdlib_module_names or stem in sys.modules:
        return True
    elsewhere = [p for p in sys.path if p and os.path.realpath(p) != os.path.realpath(root)]
    try:
        spec = importlib.machinery.PathFinder.find_spec(stem, elsewhere)
    except (ImportError, ValueError):
        return False
    return spec is not None and spec.origin is not None  # a namespace portion elsewhere is no module to shadow


def _namespace_only(path: Path) -> bool:
    """A folder without __init__.py (e.g. __pycache__): a namespace portion, which never wins over a module."""
    return path.is_dir() and not path.is_symlink() and not (path / "__init__.py").exists()


def _read(path: Path) -> bytes | None:
    try:
        return None if path.is_symlink() else path.read_bytes()
    except OSError:
        return None


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.trialtui-restore")
    tmp.write_bytes(data)
    os.replace(tmp, path)
