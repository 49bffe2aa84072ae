"""`trialtui trials doctor`: finds what is broken in a store, repairs only what can be repaired without guessing."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from trialtui.cli.commands import cli
from trialtui.cli.trials import trials
from trialtui.core.store import Store

from conftest import KB_GOOD, write_problem


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


def test_the_logs_the_app_writes_are_owned_and_only_those_nothing_owns_are_noted(tmp_path):
    root, t1, t2 = make(tmp_path)
    logs = root / ".trialtui" / "logs"
    logs.mkdir()
    owned = ["t1.log", "t2-NVIDIA_H200.log", f"validate-{t1.sha256}.log", "validate-kernel.log", "analyze.log",
             "bench-kernel-1764000000000.log", "profile-t2-ncu.log", "finalize-t2.log", "finalize-t2-heldout.log"]
    stray = ["finalize-t9.log", "notes.txt", "t9.log", f"validate-{'0' * 64}.log"]  # t9 and that source are lost
    for name in owned + stray:
        (logs / name).write_text("log\n")
    found = json.loads(doctor(root).output)
    assert [(i["code"], i["needs_attention"]) for i in found["left"]] == [("orphan_logs", False)]
    assert found["left"][0]["message"] == ("4 log(s) belong to nothing trialtui keeps (kept in logs/: "
                                           "finalize-t9.log, notes.txt, t9.log, …)")
    result = CliRunner().invoke(trials, ["doctor", "--dir", str(root)])
    assert result.exit_code == 0 and result.output.endswith("store is healthy (1 note(s) above, nothing to do)\n")


def test_an_issue_left_says_so_in_its_count_and_its_exit_status(tmp_path):
    root, _, t2 = make(tmp_path)
    (root / ".trialtui" / "logs").mkdir()
    (root / ".trialtui" / "logs" / "stray.log").write_text("log\n")
    with Store.open(root) as store:
        store.update(t2.id, log="logs/t2.log")  # never written: a missing log needs looking at
    result = CliRunner().invoke(trials, ["doctor", "--dir", str(root)])
    assert result.exit_code == 1
    assert result.output.endswith("1 issue(s) left (1 note(s) above, nothing to do)\n"), result.output


@pytest.mark.slow
def test_a_watch_and_analyze_leave_a_store_doctor_passes(tmp_path):
    root = write_problem(tmp_path / "p", files={"kernel.py": KB_GOOD, "broken.py": KB_GOOD.replace("x + b", "x + bb")},
                         config="seeds = 1\n")
    for args in (["watch", str(root), "--headless", "--once", "--device", "cpu"], ["analyze", str(root)]):
        run = CliRunner().invoke(cli, args)
        assert run.exit_code == 0, run.output
    assert {p.name.split("-")[0] for p in (root / ".trialtui" / "logs").iterdir()} >= {"validate", "analyze.log"}
    result = CliRunner().invoke(trials, ["doctor", "--dir", str(root)])
    assert result.exit_code == 0 and result.output == "store is healthy\n", result.output
