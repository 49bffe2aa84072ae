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
