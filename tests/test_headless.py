"""The headless printer: the sys.stdout of the moment it is made (as CliRunner and pytest-xdist need), and a
line only where it adds to what the trial's lines said."""

from __future__ import annotations

import asyncio
import io
import sys

from click.testing import CliRunner

from trialtui.cli.commands import cli
from trialtui.core.problem_dir import load_problem
from trialtui.engine import events as ev
from trialtui.engine.headless import HeadlessPrinter, opening
from trialtui.engine.lanes import Lane, Lanes
from trialtui.engine.loop import Engine

from conftest import KB_GOOD, as_result, no_analysis, write_problem
from test_engine import ok_validate


def test_default_output_is_the_current_stdout_not_the_one_at_import(monkeypatch):
    now = io.StringIO()
    monkeypatch.setattr(sys, "stdout", now)
    HeadlessPrinter()(ev.TrialCreated("t1", "kernel.py", None, "tiles"))
    assert "t1 kernel.py created" in now.getvalue()


WRONG = "case 1 (defaults) seed 0: output: 4095 of 4096 values (99.98%) outside atol=0.0001 rtol=0.0001; max abs err 0.9"


def wrong_bench(problem, path, **kw):
    return as_result({"version": 1, "state": "incorrect", "message": WRONG,
                      "correctness": {"passed": False, "message": WRONG, "max_abs_err": 0.9},
                      "env": {"device": "cpu", "gpu": None}, "dtype": "float32", "sizes": [{}]})


def printed(root, bench) -> list[str]:
    """What `watch --once --headless` prints for the candidates in `root`, each line without its time."""
    out = io.StringIO()
    engine = Engine(load_problem(root), device="cpu", lanes=Lanes([Lane("cpu", None)]), bench=bench,
                    validate=ok_validate, analyze=no_analysis)
    engine.subscribe(HeadlessPrinter(out))
    try:
        asyncio.run(engine.run(once=True))
    finally:
        engine.close()
    return [line.split(" ", 1)[1] for line in out.getvalue().splitlines()]


def test_a_failed_save_says_its_result_once_and_the_next_action_without_repeating_it(tmp_path):
    root = write_problem(tmp_path / "p", files={"kernel.py": KB_GOOD})
    lines = [line for line in printed(root, wrong_bench)
             if "validating: compiling" not in line]  # said when the lane waits for the compile
    assert lines == ["t1 kernel.py created (new root) — fused bias relu",
                     "t1 benchmarking: on cpu",
                     f"t1 result incorrect: {WRONG}",
                     "t1 next: fix — Incorrect: t1 fails the correctness check; "
                     "fix it in place before timing it again."]


def test_queued_is_said_when_the_trial_waits_and_a_result_state_without_its_result_is_kept():
    out = io.StringIO()
    printer = HeadlessPrinter(out)
    for event in (ev.TrialCreated("t2", "k2.py", "t1", None), ev.StateChanged("t2", "validating"),
                  ev.StateChanged("t2", "queued"), ev.StateChanged("t1", "benchmarking", "on gpu0"),
                  ev.StateChanged("t1", "interrupted", "connection lost; trying once more"),
                  ev.StateChanged("t1", "queued", "queued again"), ev.StateChanged("t2", "benchmarking", "on gpu0")):
        printer(event)
    assert [line.split(" ", 1)[1] for line in out.getvalue().splitlines()] == [
        "t2 k2.py created from t1", "t2 queued", "t1 benchmarking: on gpu0",
        "t1 interrupted: connection lost; trying once more", "t1 queued: queued again", "t2 benchmarking: on gpu0"]


def test_watch_opens_with_what_it_watches_and_how_to_stop(tmp_path):
    root = write_problem(tmp_path / "p", files={"kernel.py": KB_GOOD, "k2.py": KB_GOOD})
    assert opening(root, [load_problem(root)], once=False) == (
        f"watching {root} (k2.py, kernel.py): every save of a candidate is scored; Ctrl-C stops")
    empty = write_problem(tmp_path / "empty")
    run = CliRunner().invoke(cli, ["watch", str(empty), "--headless", "--once", "--device", "cpu"])
    assert run.exit_code == 0, run.output
    first = run.output.splitlines()[0].split(" ", 1)[1]
    assert first == f"scoring what is new in {empty} (no candidate yet), then exiting; Ctrl-C stops sooner"


def test_a_reader_that_leaves_ends_the_printing_quietly_once(tmp_path, capfd):
    """`watch --headless --json | head -5`: every event after the pipe closed printed a BrokenPipeError traceback.
    The first failed write ends the printing, tells `on_closed` once, and nothing reaches stderr."""
    import os

    root = write_problem(tmp_path / "p", files={"kernel.py": KB_GOOD})
    read, write = os.pipe()
    os.close(read)  # the reader left before the first line
    out = os.fdopen(write, "w")
    told = []
    engine = Engine(load_problem(root), device="cpu", lanes=Lanes([Lane("cpu", None)]), bench=wrong_bench,
                    validate=ok_validate, analyze=no_analysis)
    printer = HeadlessPrinter(out, as_json=True, on_closed=lambda: told.append(1))
    engine.subscribe(printer)
    try:
        asyncio.run(engine.run(once=True))
    finally:
        engine.close()
    out.close()  # what was buffered goes to /dev/null now, not into one more BrokenPipeError
    assert printer.closed and told == [1]
    assert "Traceback" not in capfd.readouterr().err
