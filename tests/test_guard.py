"""The problem's files around overlapping jobs: a job never starts against a file another job tampered with,
and the tamper is still charged to the job that was running."""

from __future__ import annotations

from trialtui.engine import guard

from conftest import KB_GOOD, write_problem


def spec_for(root, candidate):
    return {"root": str(root), "reference": str(root / "reference.py"), "candidate": str(root / candidate)}


def test_a_file_removed_by_a_running_job_is_back_before_the_next_job_and_charged_to_the_first(tmp_path):
    root = write_problem(tmp_path / "p", files={"a.py": KB_GOOD, "b.py": KB_GOOD})
    good = (root / "reference.py").read_bytes()
    token_a, snap_a = guard.begin(spec_for(root, "a.py"))  # alone: its files' bytes are the known good ones
    (root / "reference.py").unlink()  # job a deletes the reference while it runs

    token_b, snap_b = guard.begin(spec_for(root, "b.py"))  # job b starts beside it
    assert (root / "reference.py").read_bytes() == good  # b is judged against the real reference
    changed_b, _ = guard.end(token_b, snap_b, tmp_path / "kept-b")
    assert changed_b == []  # b did nothing wrong

    changed_a, shared = guard.end(token_a, snap_a, tmp_path / "kept-a")
    assert [(c["file"], c["how"]) for c in changed_a] == [(str(root / "reference.py"), "removed")]
    assert root / "reference.py" in shared  # "either may have written it"
    assert (root / "reference.py").read_bytes() == good


def test_a_change_while_alone_is_the_jobs_own_and_is_put_back(tmp_path):
    root = write_problem(tmp_path / "p", files={"a.py": KB_GOOD})
    good = (root / "reference.py").read_bytes()
    token, snap = guard.begin(spec_for(root, "a.py"))
    (root / "reference.py").write_text("def forged(): pass\n")
    changed, shared = guard.end(token, snap, tmp_path / "kept")
    assert [c["how"] for c in changed] == ["changed"] and not shared
    assert (root / "reference.py").read_bytes() == good
    assert (tmp_path / "kept").is_dir()  # what was written is kept


def test_an_edit_between_jobs_becomes_the_known_good_bytes(tmp_path):
    root = write_problem(tmp_path / "p", files={"a.py": KB_GOOD})
    token, snap = guard.begin(spec_for(root, "a.py"))
    guard.end(token, snap, tmp_path / "kept")
    (root / "reference.py").write_text((root / "reference.py").read_text() + "\n# the user's edit\n")
    edited = (root / "reference.py").read_bytes()
    token, snap = guard.begin(spec_for(root, "a.py"))  # alone again: the edit is accepted
    assert guard.end(token, snap, tmp_path / "kept") == ([], set())
    assert (root / "reference.py").read_bytes() == edited


def test_a_change_restored_by_the_job_that_ends_first_is_charged_to_the_one_still_running(tmp_path):
    root = write_problem(tmp_path / "p", files={"a.py": KB_GOOD, "b.py": KB_GOOD})
    token_a, snap_a = guard.begin(spec_for(root, "a.py"))
    token_b, snap_b = guard.begin(spec_for(root, "b.py"))
    (root / "reference.py").write_text("# appended by one of them\n")
    changed_a, shared_a = guard.end(token_a, snap_a, tmp_path / "kept-a")  # a ends first and puts it back
    changed_b, shared_b = guard.end(token_b, snap_b, tmp_path / "kept-b")
    assert [c["how"] for c in changed_a] == ["changed"] == [c["how"] for c in changed_b]
    assert root / "reference.py" in shared_a and root / "reference.py" in shared_b  # either may have written it


def test_jobs_load_the_reference_text_the_engine_sent_not_the_file(tmp_path):
    import pytest

    pytest.importorskip("torch")
    from trialtui.core.problem_dir import load_problem
    from trialtui.runner.loader import Reference

    root = write_problem(tmp_path / "p", files={"a.py": KB_GOOD})
    spec = load_problem(root).job_spec(candidate=str(root / "a.py"))
    token, snap = guard.begin(spec)
    sent = guard.with_reference_source(spec, snap)
    (root / "reference.py").unlink()  # another job removed it before this one loaded it
    reference = Reference(sent, "cpu")
    assert reference.module.__file__ == str(root / "reference.py")
    assert reference.module.Model(*reference.module.get_init_inputs())(*reference.make_inputs({}, 0)).shape == (8, 32)
    guard.end(token, snap, tmp_path / "kept")
    assert (root / "reference.py").exists()
