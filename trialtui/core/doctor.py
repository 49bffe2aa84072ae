"""`trialtui trials doctor`: check a problem's store and repair what can be repaired without guessing.

Checks: the store opened cleanly (or was rebuilt, see store.JournaledStorage); every trial's source
snapshot exists and hashes to its sha256; parents exist and come earlier; each head names a trial
of its file; no trial is left in flight by a dead writer; kept generations decode; files that nothing
owns. Repairs change only what is provably broken: a missing snapshot comes back from the candidate
file when that holds the very source; a dangling parent becomes a root; a bad head moves to its file's
newest trial. Some findings are notes (NOTES): worth knowing, with nothing to do, so doctor still passes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from trialtui.core import generations, tree
from trialtui.core.store import SNAPSHOTS, Store, atomic_write, sha256_of

NOTES = frozenset({"recovered", "interrupted", "orphan_snapshots", "orphan_logs"})  # said, nothing to do: doctor passes

# Each log the app writes in logs/ on purpose, first match first; `id` and `sha` name the trial it belongs to.
LOGS = tuple(re.compile(pattern) for pattern in (
    r"(?P<id>t\d+)(-.+)?\.log",  # a trial's job (engine/trial_jobs.py); with Ray, one more per GPU model
    r"finalize-(?P<id>t\d+)(-.+)?\.log",  # its finalize run and held-out check (engine/finalize.py)
    r"validate-(?P<sha>[0-9a-f]{64})\.log",  # the compile stage of a trial's source (engine/validate.py)
    r"validate-.+\.log",  # `trialtui validate FILE`
    r"bench-.+\.log",  # `trialtui bench FILE` (engine/bench.py)
    r"profile-.+\.log",  # a profile of a trial, or `trialtui profile FILE` (engine/profile.py)
    r"analyze\.log",  # the reference's analysis (engine/profile.py)
))


@dataclass(frozen=True)
class Issue:
    code: str
    message: str
    repair: str | None = None  # what --repair does; None when it cannot be repaired (or needs nothing)
    fix: Callable[[Store], None] | None = None

    @property
    def needs_attention(self) -> bool:
        return self.code not in NOTES

    def to_dict(self) -> dict[str, str | bool | None]:
        return {"code": self.code, "message": self.message, "repair": self.repair,
                "needs_attention": self.needs_attention}


def check(store: Store, *, writer_running: bool = False) -> list[Issue]:
    """Everything found wrong or worth knowing, in a stable order; trials in flight are normal while a writer runs."""
    issues: list[Issue] = []
    if store.recovery:
        issues.append(Issue("recovered", store.recovery, None if store.writer else "a writer keeps the recovered store"))
    if store.recovered:
        issues.append(Issue("interrupted", f"{', '.join(store.recovered)} were left in flight by a dead writer and "
                            "are now interrupted (`trialtui trials rerun --interrupted` runs them)"))
    found = store.trials()
    by_id = {t.id: t for t in found}
    for trial in found:
        issues += _snapshot(store, trial)
        if trial.parent is not None and (trial.parent not in by_id
                                         or tree.id_number(trial.parent) >= tree.id_number(trial.id)):
            issues.append(Issue("parent", f"{trial.id}'s parent {trial.parent} is not an earlier trial",
                                f"make {trial.id} a root", _set_parent(trial.id)))
        if not store.writer and not writer_running and not trial.state_enum.is_final:
            issues.append(Issue("in_flight", f"{trial.id} is {trial.state}: fine while a writer runs; after a crash "
                                "the next writer (or doctor --repair) marks it interrupted"))
    for file, head in store.heads.items():
        if head not in by_id or by_id[head].file != file:
            newest = max((t for t in found if t.file == file), key=lambda t: tree.id_number(t.id), default=None)
            target = newest.id if newest else None
            issues.append(Issue("head", f"{file}'s head {head} is not a trial of {file}",
                                f"move it to {target}" if target else f"forget {file}'s head", _move_head(file, target)))
    for number in generations.listed(store.state_dir):
        path = generations.checkpoint_path(store.state_dir, number)
        try:
            if path.exists():
                json.loads(path.read_bytes())
        except ValueError:
            issues.append(Issue("generation", f"kept generation {number} ({path.name}) does not decode",
                                "delete it", lambda _store, p=path: p.unlink(missing_ok=True)))
    issues += _orphans(store, found)
    return issues


def repair(store: Store, issues: list[Issue]) -> list[Issue]:
    """Apply every fix (the store must be a writer); returns the issues that were repaired."""
    done = []
    for issue in issues:
        if issue.fix is not None:
            issue.fix(store)
            done.append(issue)
    return done


def _snapshot(store: Store, trial) -> list[Issue]:
    path = store.snapshot_path(trial.sha256)
    if path.exists() and sha256_of(path.read_bytes()) == trial.sha256:
        return []
    what = "is missing" if not path.exists() else "does not hash to its sha256"
    candidate = store.root / trial.file
    if candidate.is_file() and sha256_of(candidate.read_bytes()) == trial.sha256:
        return [Issue("snapshot", f"{trial.id}'s source snapshot {what}", f"restore it from {trial.file}",
                      lambda s, c=candidate, p=path: atomic_write(p, c.read_bytes()))]
    return [Issue("snapshot", f"{trial.id}'s source snapshot {what}, and {trial.file} no longer holds it: "
                  "that source is lost")]


def _set_parent(trial_id: str) -> Callable[[Store], None]:
    return lambda store: store.update(trial_id, parent=None)


def _move_head(file: str, target: str | None) -> Callable[[Store], None]:
    def fix(store: Store) -> None:
        if target is None:
            store.drop_head(file)
        else:
            store.set_head(file, target)

    return fix


def _orphans(store: Store, found) -> list[Issue]:
    """Files nothing owns: kept (a lost trial's source or log may be among them), only counted."""
    issues = []
    known = {t.sha256 for t in found}
    snapshots = [p for p in (store.state_dir / SNAPSHOTS).glob("*.py") if p.stem not in known]
    if snapshots:
        issues.append(Issue("orphan_snapshots", f"{len(snapshots)} source snapshot(s) belong to no trial "
                            f"(kept in {SNAPSHOTS}/)"))
    logs = store.state_dir / "logs"
    referenced = {t.log for t in found if t.log}
    ids = {t.id for t in found}
    loose = sorted(p.name for p in logs.iterdir() if f"logs/{p.name}" not in referenced
                   and not _owned(p.name, ids, known)) if logs.is_dir() else []
    if loose:
        named = ", ".join(loose[:3]) + (", …" if len(loose) > 3 else "")
        issues.append(Issue("orphan_logs", f"{len(loose)} log(s) belong to nothing trialtui keeps (kept in logs/: "
                            f"{named})"))
    missing_logs = [t.id for t in found if t.log and not (store.state_dir / t.log).exists()]
    if missing_logs:
        issues.append(Issue("missing_logs", f"the logs of {', '.join(missing_logs)} are missing"))
    return issues


def _owned(name: str, ids: set[str], shas: set[str]) -> bool:
    """A log of a kind the app writes (LOGS) whose trial, where it names one, is still in the store."""
    for pattern in LOGS:
        found = pattern.fullmatch(name)
        if found is not None:
            trial, sha = found.groupdict().get("id"), found.groupdict().get("sha")
            return (trial is None or trial in ids) and (sha is None or sha in shas)
    return False
