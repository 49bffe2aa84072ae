"""A removed problem directory stays removed: trialtui's late writers never re-create it."""

from __future__ import annotations

import shutil

import pytest

from trialtui.core.baselines import BaselineCache
from trialtui.core.revealed import record
from trialtui.core.state_dir import STATE_DIR, make_dirs
from trialtui.core.store import Store
from trialtui.runner.job_log import Log
from trialtui.runner.profile_job import profile

from conftest import KB_GOOD, write_problem


def test_make_dirs_makes_what_is_below_the_state_directory_and_never_the_problem(tmp_path):
    (tmp_path / "p").mkdir()
    make_dirs(tmp_path / "p" / STATE_DIR / "logs" / "deep")  # the problem is there: all below it is made
    assert (tmp_path / "p" / STATE_DIR / "logs" / "deep").is_dir()
    with pytest.raises(FileNotFoundError):
        make_dirs(tmp_path / "gone" / STATE_DIR / "logs")
    assert not (tmp_path / "gone").exists()
    make_dirs(tmp_path / "a" / "b")  # not a state folder: mkdir -p
    assert (tmp_path / "a" / "b").is_dir()


def test_writers_that_outlive_the_problem_fail_and_leave_it_removed(tmp_path):
    """A job's log (written by the supervisor thread) once re-created a removed problem, and its engine
    watched on for the test's 120 s hang guard."""
    root = write_problem(tmp_path / "p", files={"kernel.py": KB_GOOD})
    store = Store.open(root)
    store.record("kernel.py", KB_GOOD)
    shutil.rmtree(root)
    with pytest.raises(FileNotFoundError):
        Log().open(str(root / STATE_DIR / "logs" / "t1.log"))
    with pytest.raises(FileNotFoundError):
        record(root / STATE_DIR, "0" * 64, ["default"])
    with pytest.raises(FileNotFoundError):
        BaselineCache(root / STATE_DIR).record({"problem": "p"}, {}, {"eager": {"median_us": 1.0}})
    with pytest.raises(FileNotFoundError):
        profile(["true"], root / STATE_DIR / "profiles" / "t1", ncu_bin="/nonexistent/ncu")
    store.close()  # nothing left to fold into: closing says nothing
    assert not root.exists()
