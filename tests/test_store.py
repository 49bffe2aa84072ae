"""The store: snapshots, journal and checkpoints, the lock, migration, recovery, branch and blobs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import as_result

from trialtui.core import store as store_mod
from trialtui.core import tree
from trialtui.core.model import SCHEMA_VERSION, TrialState
from trialtui.core.store import Store, StoreError, StoreLocked, UnknownTrial, atomic_write, sha256_of

RESULT = {"version": 1, "state": "correct", "speedup": {"eager": 1.5}, "timing": {"median_us": 10.0}}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "prob"


@pytest.fixture
def writer(root: Path):
    root.mkdir()
    with Store.open(root) as store:
        yield store


def on_disk(root: Path) -> dict:
    """trials.json as TinyDB last checkpointed it."""
    return json.loads((root / ".trialtui" / "trials.json").read_text())


def test_a_trial_keeps_its_source_as_a_content_addressed_snapshot(writer):
    trial = writer.add_trial("k.py", "# strategy: tile 64\nx = 1\n")
    assert trial.id == "t1" and trial.strategy == "tile 64" and trial.state == "detected"
    assert trial.sha256 == sha256_of(b"# strategy: tile 64\nx = 1\n")
    assert writer.snapshot_path(trial.sha256).name == f"{trial.sha256}.py"
    assert writer.read_source(writer.get("t1")) == "# strategy: tile 64\nx = 1\n"
    assert writer.heads == {"k.py": "t1"}


def test_updates_survive_close_and_reopen(root, writer):
    t1 = writer.add_trial("k.py", "a")
    writer.update(t1.id, state=TrialState.CORRECT, result=as_result(RESULT), sol=0.7)
    writer.close()
    with Store.open(root, writer=False) as again:
        back = again.get("t1")
    assert back.state == "correct" and back.speedup() == 1.5 and back.sol == 0.7


def test_every_write_is_in_the_journal_before_any_checkpoint(root, writer):
    t1 = writer.add_trial("k.py", "a")
    writer.update(t1.id, state="validating")
    assert "t1" not in json.dumps(on_disk(root).get("trials", {}))
    with Store.open(root, writer=False) as reader:
        assert reader.get("t1").state == "validating"
        assert reader.heads == {"k.py": "t1"}


def test_the_journal_is_folded_into_trials_json_once_it_passes_its_limit(root, writer, monkeypatch):
    monkeypatch.setattr(store_mod, "JOURNAL_LIMIT_BYTES", 2000)
    for i in range(10):
        writer.add_trial("k.py", f"x = {i}\n", parent=f"t{i}" if i else None)
    assert len(on_disk(root)["trials"]) >= 5
    assert (root / ".trialtui" / "journal.jsonl").stat().st_size < 2500


def test_ids_are_never_reused_across_reopens(root, writer):
    writer.add_trial("k.py", "a")
    writer.add_trial("k.py", "b", parent="t1")
    writer.close()
    with Store.open(root) as again:
        assert again.add_trial("k.py", "c", parent="t2").id == "t3"


def test_record_applies_the_save_rule(writer):
    save, t1 = writer.record("k.py", "a")
    assert save == tree.Save(tree.NEW, parent=None) and t1.id == "t1"
    assert writer.record("k.py", "a") == (tree.Save(tree.UNCHANGED, head="t1"), t1)
    save, t2 = writer.record("k.py", "b")
    assert save.parent == "t1" and writer.heads["k.py"] == "t2"
    save, back = writer.record("k.py", "a")
    assert save.kind == tree.CHECKOUT and back.id == "t1" and writer.heads["k.py"] == "t1"
    save, t3 = writer.record("k.py", "c")
    assert t3.parent == "t1"
    save, t4 = writer.record("copy.py", "b")
    assert t4.parent == "t2" and t4.file == "copy.py"
    assert len(writer.trials()) == 4


def test_a_save_over_the_source_limit_is_never_a_trial_or_a_snapshot(writer):
    from trialtui.core.model import MAX_SOURCE_BYTES
    from trialtui.core.store import SourceTooLarge

    huge = b"x = 1\n" * (MAX_SOURCE_BYTES // 6 + 1)
    for data in (huge[: MAX_SOURCE_BYTES + 1], huge + b"# the editor's second write\n"):
        with pytest.raises(SourceTooLarge, match="kernel.py is 1.0 MB; candidates over 1 MB are not read or recorded"):
            writer.record("kernel.py", data)
    assert writer.trials() == [] and not any((writer.state_dir / "snapshots").iterdir())


def test_update_refuses_identity_and_unknown_fields_and_bad_states(writer):
    writer.add_trial("k.py", "a")
    for fields in ({"sha256": "x"}, {"id": "t9"}, {"file": "other.py"}, {"speedup": 2.0}):
        with pytest.raises(TypeError):
            writer.update("t1", **fields)
    with pytest.raises(ValueError):
        writer.update("t1", state="finished")
    assert writer.get("t1").state == "detected"


def test_unknown_trials_and_parents_are_refused(writer):
    with pytest.raises(UnknownTrial):
        writer.get("t1")
    with pytest.raises(UnknownTrial):
        writer.get("best")
    with pytest.raises(UnknownTrial):
        writer.add_trial("k.py", "a", parent="t7")


def test_second_writer_is_refused_naming_the_holders_pid(root, writer):
    with pytest.raises(StoreLocked) as info:
        Store.open(root)
    assert info.value.pid == os.getpid()
    assert f"pid {os.getpid()}" in str(info.value)


def test_a_writer_in_another_process_is_named_and_readers_work_beside_it(root):
    root.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys
            from trialtui.core.store import Store
            store = Store.open({str(root)!r})
            store.add_trial("k.py", "a")
            print("ready", flush=True)
            sys.stdin.read()
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreLocked) as info:
            Store.open(root)
        assert info.value.pid == holder.pid
        with Store.open(root, writer=False) as reader:
            assert [t.id for t in reader.trials()] == ["t1"]
    finally:
        holder.communicate("")
    with Store.open(root) as store:  # the lock went with its holder
        assert store.writer


def test_a_closed_writer_frees_the_lock(root, writer):
    writer.close()
    with Store.open(root) as again:
        assert again.writer


def test_a_reader_creates_nothing_and_cannot_write(root):
    root.mkdir()
    with Store.open(root, writer=False) as reader:
        assert reader.trials() == [] and reader.heads == {}
        with pytest.raises(StoreError):
            reader.add_trial("k.py", "a")
    assert not (root / ".trialtui").exists()


def write_state(root: Path, trials: dict, generation: int = 1, journal: bytes | None = None) -> None:
    state = root / ".trialtui"
    (state / "snapshots").mkdir(parents=True)
    body = {"trials": trials, "meta": {"1": {"heads": {}}}, "_checkpoint": {"generation": generation}}
    (state / "trials.json").write_text(json.dumps(body))
    if journal is not None:
        (state / "journal.jsonl").write_bytes(journal)


V0_RECORD = {"id": "t1", "file": "k.py", "sha256": "ab" * 32, "created": 1.0, "state": "correct",
             "parent": None, "result": RESULT, "verdicts": None}


def test_a_v0_record_is_migrated_in_memory_for_readers_and_on_disk_by_a_writer(root):
    write_state(root, {"1": dict(V0_RECORD)})
    with Store.open(root, writer=False) as reader:
        trial = reader.get("t1")
    assert trial.schema == SCHEMA_VERSION and trial.verdicts == [] and trial.stale is False
    assert trial.speedup() == 1.5
    assert "schema" not in on_disk(root)["trials"]["1"]
    with Store.open(root):
        pass
    record = on_disk(root)["trials"]["1"]
    assert record["schema"] == SCHEMA_VERSION and record["verdicts"] == [] and record["note"] is None


def test_a_v0_record_without_identity_cannot_be_migrated(root):
    write_state(root, {"1": {k: v for k, v in V0_RECORD.items() if k != "sha256"}})
    with pytest.raises(StoreError, match="sha256"):
        Store.open(root, writer=False)


def test_a_record_from_a_newer_trialtui_is_refused(root):
    write_state(root, {"1": {**V0_RECORD, "schema": SCHEMA_VERSION + 1}})
    with pytest.raises(StoreError, match="upgrade trialtui"):
        Store.open(root, writer=False)


def test_trials_a_dead_writer_left_in_flight_are_interrupted_when_a_writer_opens(root):
    records = {str(n): {**V0_RECORD, "id": f"t{n}", "state": s, "schema": SCHEMA_VERSION}
               for n, s in enumerate(["correct", "benchmarking", "validating", "invalid"], start=1)}
    write_state(root, records)
    with Store.open(root, writer=False) as reader:
        assert reader.get("t2").state == "benchmarking"
    with Store.open(root) as store:
        assert store.recovered == ["t2", "t3"]
        assert [t.state for t in store.trials()] == ["correct", "interrupted", "interrupted", "invalid"]


def journal_line(doc: dict) -> bytes:
    return json.dumps([["trials", int(doc["id"][1:]), doc]]).encode() + b"\n"


def test_a_torn_last_journal_line_is_ignored_and_later_writes_still_land(root):
    doc = {**V0_RECORD, "schema": SCHEMA_VERSION}
    torn = journal_line({**doc, "id": "t2"})[:-20]
    write_state(root, {}, journal=b'{"generation": 1}\n' + journal_line(doc) + torn)
    with Store.open(root, writer=False) as reader:
        assert [t.id for t in reader.trials()] == ["t1"]
    with Store.open(root) as store:
        store.add_trial("k.py", "b")
    with Store.open(root, writer=False) as reader:
        assert [t.id for t in reader.trials()] == ["t1", "t2"]


def test_replay_stops_at_a_garbled_line_since_nothing_after_it_was_synced(root):
    doc = {**V0_RECORD, "schema": SCHEMA_VERSION}
    journal = (b'{"generation": 1}\n' + journal_line(doc) + b"\0\0\0\0\n"
               + journal_line({**doc, "id": "t2"}))
    write_state(root, {}, journal=journal)
    with Store.open(root, writer=False) as reader:
        assert [t.id for t in reader.trials()] == ["t1"]


def test_a_journal_without_its_header_is_set_aside_not_guessed_at(root):
    doc = {**V0_RECORD, "schema": SCHEMA_VERSION}
    write_state(root, {"1": doc}, journal=b"garbage\n" + journal_line({**doc, "state": "incorrect"}))
    with Store.open(root, writer=False) as reader:
        assert reader.get("t1").state == "correct"
        assert "no valid header" in reader.recovery and "read-only" in reader.recovery
    assert (root / ".trialtui" / "journal.jsonl").exists()
    with Store.open(root) as store:
        assert store.get("t1").state == "correct" and "kept as journal.jsonl.bad-" in store.recovery
    assert len(list((root / ".trialtui").glob("journal.jsonl.bad-*"))) == 1


def test_new_trials_final_states_and_head_moves_are_fsynced_intermediate_states_are_not(writer, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(store_mod.os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    journal_fd = writer._disk._fd

    def syncs(action) -> int:
        synced.clear()
        action()
        return synced.count(journal_fd)

    assert syncs(lambda: writer.add_trial("k.py", "a")) == 1
    assert syncs(lambda: writer.update("t1", state="validating")) == 0
    assert syncs(lambda: writer.update("t1", state="benchmarking")) == 0
    assert syncs(lambda: writer.update("t1", state="correct", result=as_result(RESULT))) == 1
    assert syncs(lambda: writer.set_head("k.py", "t1")) == 1


def test_a_journal_older_than_the_checkpoint_is_already_folded_in(root):
    doc = {**V0_RECORD, "schema": SCHEMA_VERSION}
    write_state(root, {"1": doc}, generation=3,
                journal=b'{"generation": 2}\n' + journal_line({**doc, "state": "benchmarking"}))
    with Store.open(root, writer=False) as reader:
        assert reader.get("t1").state == "correct"


def test_a_journal_newer_than_the_checkpoint_recovers_and_names_the_missing_generations(root):
    doc = {**V0_RECORD, "schema": SCHEMA_VERSION}
    write_state(root, {"1": doc}, generation=1,
                journal=b'{"generation": 5}\n' + journal_line({**doc, "id": "t3", "state": "incorrect"}))
    with Store.open(root, writer=False) as reader:
        assert [t.id for t in reader.trials()] == ["t1", "t3"]
        assert "generation(s) 1–4 are missing" in reader.recovery and "lost: t2" in reader.recovery


def test_atomic_write_replaces_keeping_the_mode_and_leaving_no_temporary(tmp_path):
    target = tmp_path / "k.py"
    target.write_text("old")
    target.chmod(0o640)
    atomic_write(target, b"new")
    assert target.read_text() == "new" and (target.stat().st_mode & 0o777) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["k.py"]


def test_a_writer_clears_temporaries_a_crash_left_behind(root, writer):
    writer.close()
    leftover = root / ".trialtui" / "snapshots" / ".abc.py.x1.tmp"
    leftover.write_text("half")
    with Store.open(root):
        assert not leftover.exists()


def test_blobs_are_files_beside_referenced_by_relative_path(writer):
    rel = writer.write_blob("logs", "t1.bench.log", "hello")
    assert rel == "logs/t1.bench.log"
    assert writer.read_blob(rel) == "hello"
    assert (writer.state_dir / rel).read_text() == "hello"
    for kind, name in (("logs", "../x"), ("secrets", "a.txt"), ("logs", "..")):
        with pytest.raises(ValueError):
            writer.write_blob(kind, name, "x")


def test_branch_puts_the_source_back_and_moves_the_head_creating_no_trial(root, writer):
    (root / "k.py").write_text("a")
    writer.record("k.py", "a")
    (root / "k.py").write_text("b")
    writer.record("k.py", "b")
    assert writer.branch("t1") is None
    assert (root / "k.py").read_text() == "a"
    assert writer.heads == {"k.py": "t1"} and len(writer.trials()) == 2
    save, t3 = writer.record("k.py", "c")
    assert t3.parent == "t1"


def test_branch_records_content_that_is_not_a_trial_yet_first(root, writer):
    (root / "k.py").write_text("a")
    writer.record("k.py", "a")
    (root / "k.py").write_text("b")
    writer.record("k.py", "b")
    (root / "k.py").write_text("unsaved work")  # nobody was watching
    kept = writer.branch("t1")
    assert kept.id == "t3" and kept.parent == "t2"
    assert writer.read_source(kept) == "unsaved work"
    assert (root / "k.py").read_text() == "a" and writer.heads["k.py"] == "t1"


def test_branch_to_a_trial_whose_file_is_gone_recreates_it(root, writer):
    writer.add_trial("k.py", "a")
    writer.branch("t1")
    assert (root / "k.py").read_text() == "a"


def test_a_trial_left_profiling_after_its_correct_result_is_correct_again_not_interrupted(root):
    # an engine stopped while a correct trial's counters ran (H200, 2026-12-04: `trialtui profile` then benched
    # the kernel again, 10.5 s, since the store said `profiling`): only the profile is lost, the number stands
    correct = {"version": 1, "state": "correct", "timing": {"median_us": 127.5}, "env": {"device": "cuda"}}
    states = [("profiling", correct), ("profiling", None), ("benchmarking", None)]
    records = {str(n): {**V0_RECORD, "id": f"t{n}", "state": s, "result": r, "schema": SCHEMA_VERSION}
               for n, (s, r) in enumerate(states, start=1)}
    write_state(root, records)
    with Store.open(root) as store:
        assert store.recovered == ["t2", "t3"]
        assert [t.state for t in store.trials()] == ["correct", "interrupted", "interrupted"]
        assert store.get("t1").median_us == 127.5


def test_profile_reuses_the_result_of_a_trial_whose_counters_are_running(tmp_path):
    from conftest import write_problem

    from trialtui.core.baselines import reference_hash
    from trialtui.core.problem_dir import load_problem
    from trialtui.engine.profile import established

    root = write_problem(tmp_path / "p", files={"kernel.py": "x = 1\n"})
    problem = load_problem(root)
    result = as_result({"state": "correct", "timing": {"median_us": 127.5}, "env": {"device": "cuda"},
                        "reference_sha": reference_hash(problem.reference)})
    with Store.open(root) as store:
        _, trial = store.record("kernel.py", (root / "kernel.py").read_text())
        store.update(trial.id, state="profiling", result=result)
        assert established(problem, root / "kernel.py").id == trial.id  # read while the engine holds the store
        store.update(trial.id, state="incorrect")
    assert established(problem, root / "kernel.py") is None
