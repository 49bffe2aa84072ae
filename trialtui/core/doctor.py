"""`trialtui trials doctor`: check a problem's store and repair what can be repaired without guessing.

Checks: the store opened cleanly (or was rebuilt, see store.JournaledStorage); every trial's source
snapshot exists and hashes to its sha256; parents exist and come earlier; each head names a trial
of its file; no trial is left in flight by a dead writer; kept generations decode; files that no
trial references. Repairs change only what is provably broken: a missing snapshot comes back from
the candidate file when that holds the very source; a dangling parent becomes a root; a bad head
moves to its file's newest trial.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from trialtui.core import generations, tree
from trialtui.core.store import SNAPSHOTS, Store, atomic_write, sha256_of


@dataclass(frozen=True)
class Issue:
    code: str
    message: str
    repair: str | None = None  # what --repair does; None when it cannot be repaired (or needs nothing)
    fix: Callable[[Store], None] | None = None

    def to_dict(self) -> dict[str, str | None]:
        return {"code": self.code, "message": self.message, "repair": self.repair}


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
    """Files no trial references: kept (a lost trial's source or log may be among them), only counted."""
    issues = []
    known = {t.sha256 for t in found}
    snapshots = [p for p in (store.state_dir / SNAPSHOTS).glob("*.py") if p.stem not in known]
    if snapshots:
        issues.append(Issue("orphan_snapshots", f"{len(snapshots)} source snapshot(s) belong to no trial "
                            f"(kept in {SNAPSHOTS}/)"))
    logs = store.state_dir / "logs"
    referenced = {t.log for t in found if t.log}
    loose = [p for p in logs.iterdir() if f"logs/{p.name}" not in referenced
             and not p.name.startswith("finalize-")] if logs.is_dir() else []
    if loose:
        issues.append(Issue("orphan_logs", f"{len(loose)} log(s) belong to no trial (kept in logs/)"))
    missing_logs = [t.id for t in found if t.log and not (store.state_dir / t.log).exists()]
    if missing_logs:
        issues.append(Issue("missing_logs", f"the logs of {', '.join(missing_logs)} are missing"))
    return issues
