"""A trials.json broken from outside (truncated, garbled, deleted, an old copy): recovered from kept generations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trialtui.core import generations
from trialtui.core.store import Store


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "prob"
    root.mkdir()
    return root


def sessions(root: Path, count: int, per_session: int = 3) -> list[str]:
    """`count` writer sessions (a checkpoint at each open and close), each adding trials and finishing some."""
    ids = []
    for session in range(count):
        with Store.open(root) as store:
            for n in range(per_session):
                trial = store.add_trial("k.py", f"x = {session * 100 + n}\n")
                store.update(trial.id, state="correct" if n % 2 == 0 else "incorrect")
                ids.append(trial.id)
    return ids


def by_id(root: Path) -> dict[str, str]:
    with Store.open(root, writer=False) as reader:
        return {t.id: t.state for t in reader.trials()}


def test_every_checkpoint_keeps_the_generation_it_replaces_up_to_a_limit(root):
    sessions(root, 4)
    kept = generations.listed(root / ".trialtui")
    assert len(kept) == generations.KEEP and kept == sorted(kept, reverse=True)
    for number in kept:
        assert generations.checkpoint_path(root / ".trialtui", number).exists()


def test_a_truncated_trials_json_recovers_every_trial_and_keeps_the_bad_file(root):
    ids = sessions(root, 3)
    expected = by_id(root)
    with Store.open(root) as store:  # journaled, not yet checkpointed, when the file is broken
        store.update("t1", note="kept")
        late = store.add_trial("k.py", "x = 'late'\n")
        path = root / ".trialtui" / "trials.json"
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
        store._disk.close()  # a process that dies without its closing checkpoint
        store._lock_fd, fd = None, store._lock_fd
        import os
        os.close(fd)
    with Store.open(root, writer=False) as reader:
        assert reader.recovery and "read-only" in reader.recovery
        assert {t.id: t.state for t in reader.trials()} == {**expected, late.id: "detected"}
    with Store.open(root) as store:
        message = store.recovery
        assert store.get("t1").note == "kept"
        assert [t.id for t in store.trials()] == [*ids, late.id]
    assert "trials.json is not valid JSON" in message and "nothing is lost" in message
    assert f"recovered {len(ids) + 1} trial(s)" in message
    bad = list((root / ".trialtui").glob("trials.json.bad-*"))
    assert len(bad) == 1 and bad[0].name in message
    with Store.open(root) as store:  # repaired for good: the next open says nothing
        assert store.recovery is None


def test_a_deleted_trials_json_recovers(root):
    ids = sessions(root, 2)
    (root / ".trialtui" / "trials.json").unlink()
    with Store.open(root) as store:
        assert [t.id for t in store.trials()] == ids
        assert "trials.json is missing" in store.recovery


def test_when_the_chain_is_broken_the_message_names_the_lost_trials(root):
    sessions(root, 3)
    state = root / ".trialtui"
    newest = generations.listed(state)[0]
    generations.journal_path(state, newest).unlink()  # the journal that added t7..t9 is gone too
    (state / "trials.json").write_text("{")
    with Store.open(root) as store:
        assert [t.id for t in store.trials()] == ["t1", "t2", "t3", "t4", "t5", "t6"]
        message = store.recovery
    assert f"generation(s) {newest} are missing" in message
    assert "3 saved source(s) in snapshots/ belong to no recovered trial" in message  # t7..t9's


def test_a_lost_trial_in_the_middle_is_named(root):
    sessions(root, 1)
    state = root / ".trialtui"
    body = json.loads((state / "trials.json").read_text())
    del body["trials"]["2"]
    (state / "trials.json").write_text(json.dumps(body))
    (state / "journal.jsonl").write_text('{"generation": 99}\n')
    with Store.open(root, writer=False) as reader:
        assert "lost: t2" in reader.recovery
