"""`trialtui trials doctor`: finds what is broken in a store, repairs only what can be repaired without guessing."""

from __future__ import annotations

import json

from click.testing import CliRunner

from trialtui.cli.trials import trials
from trialtui.core.store import Store


def make(tmp_path):
    root = tmp_path / "p"
    root.mkdir()
    with Store.open(root) as store:
        t1 = store.add_trial("k.py", "a = 1\n", state="correct")
        t2 = store.add_trial("k.py", "a = 2\n", parent=t1.id, state="correct")
    (root / "k.py").write_text("a = 2\n")
    return root, t1, t2


def doctor(root, *args):
    return CliRunner().invoke(trials, ["doctor", "--dir", str(root), "--json", *args])


def test_a_healthy_store_passes(tmp_path):
    root, _, _ = make(tmp_path)
    result = doctor(root)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["left"] == []


def test_broken_snapshot_parent_and_head_are_found_then_repaired(tmp_path):
    root, t1, t2 = make(tmp_path)
    with Store.open(root) as store:
        store.snapshot_path(t2.sha256).unlink()  # k.py still holds t2's source: restorable
        store.snapshot_path(t1.sha256).write_text("tampered\n")  # nothing holds t1's: lost
        store._commit(store._with(store.get(t2.id), {"parent": "t9"}))
        meta = store._meta()
        meta["heads"] = {"k.py": "t7"}
        store._commit(None, meta=meta)
    found = json.loads(doctor(root).output)
    codes = sorted(i["code"] for i in found["issues"])
    assert codes == ["head", "parent", "snapshot", "snapshot"]
    assert doctor(root).exit_code == 1
    repaired = json.loads(doctor(root, "--repair").output)
    assert sorted(i["code"] for i in repaired["repaired"]) == ["head", "parent", "snapshot"]
    assert [i["code"] for i in repaired["left"]] == ["snapshot"]  # t1's source is lost, and said so
    assert "no longer holds it" in repaired["left"][0]["message"]
    with Store.open(root, writer=False) as reader:
        assert reader.get(t2.id).parent is None
        assert reader.heads == {"k.py": t2.id}
        assert reader.read_source(reader.get(t2.id)) == "a = 2\n"


def test_a_corrupt_store_is_reported_read_only_and_repaired_by_a_writer(tmp_path):
    root, _, _ = make(tmp_path)
    with Store.open(root):
        pass  # one more checkpoint, so a generation is kept
    (root / ".trialtui" / "trials.json").write_text("{\"trials\": {")
    result = doctor(root)
    assert result.stderr.startswith("warning: trials.json is not valid JSON")
    found = json.loads(result.stdout)
    assert [i["code"] for i in found["issues"]] == ["recovered"]
    assert "read-only" in found["issues"][0]["message"]
    result = CliRunner().invoke(trials, ["doctor", "--dir", str(root), "--repair"])
    assert result.exit_code == 0 and "nothing is lost" in result.output
    assert "store is healthy" in CliRunner().invoke(trials, ["doctor", "--dir", str(root)]).output


def test_trials_in_flight_are_normal_beside_a_running_writer_and_stale_after_a_crash(tmp_path):
    root, _, t2 = make(tmp_path)
    with Store.open(root) as store:
        store.update(t2.id, state="benchmarking")
        result = doctor(root)
        assert result.exit_code == 0 and json.loads(result.stdout)["issues"] == []
        store._disk.close()  # the writer dies here
        import os
        os.close(store._lock_fd)
        store._lock_fd = None
    assert [i["code"] for i in json.loads(doctor(root).stdout)["issues"]] == ["in_flight"]
    repaired = json.loads(doctor(root, "--repair").stdout)
    assert [i["code"] for i in repaired["issues"]] == ["interrupted"]  # the writer's open marked it
