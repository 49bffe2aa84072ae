"""What the main states look like, as SVG snapshots: empty, running, new best, incorrect trial,
profile verdicts, budget spent; in the dark and light themes at 120×36, and at 80×24.

Built with `make_app` on a prefilled store and the scripted engine, with fixed times and a fixed
clock. Review changes with `pytest tests/test_tui_snapshots.py --snapshot-report` and accept them
with `--snapshot-update`.
"""

from __future__ import annotations

import pytest

from trialtui.core.problem_dir import load_problem
from trialtui.core.store import Store
from trialtui.engine import events as ev
from trialtui.tui.app import make_app

from conftest import write_problem
from test_tui_scenarios import STORY, FakeEngine, add_running, running_events, scenario, utc  # noqa: F401

SIZES = {"wide": (120, 36), "small": (80, 24)}
CASES = [("trialtui", "wide"), ("trialtui-light", "wide"), ("trialtui", "small")]


def build(tmp_path, state: str, theme: str):
    """(app, keys to press, run_before) for one main state."""
    if state == "empty":
        root = write_problem(tmp_path / "rmsnorm", files={})
        problem = load_problem(root)
        engine = FakeEngine(problem, Store.open(root, writer=True))
        return make_app(problem, engine=engine, theme=theme), (), None
    upto, max_trials = len(STORY), 8 if state == "budget" else 30
    problem, store, engine = scenario(tmp_path, upto, max_trials=max_trials)
    keys: tuple[str, ...] = ()
    before = None
    if state == "running":
        add_running(store, problem, engine)
        keys = ("k",)

        async def before(pilot):
            for event in running_events(store):
                engine.emit(event)
            await pilot.pause()
    elif state == "new_best":
        async def before(pilot):
            engine.emit(ev.NewBest("t8", 412.7 / 196.5, "t7", 412.7 / 229.0))
            await pilot.pause()
    elif state == "incorrect":
        keys = ("g", "j")
    elif state == "verdicts":
        keys = ("g", "j", "j", "2")
    app = make_app(problem, engine=engine, theme=theme)
    return app, keys, before


@pytest.mark.parametrize("theme,size", CASES, ids=[f"{t}-{s}" for t, s in CASES])
@pytest.mark.parametrize("state", ["empty", "running", "new_best", "incorrect", "verdicts", "budget"])
def test_main_states(snap_compare, tmp_path, utc, state, theme, size):
    app, keys, before = build(tmp_path, state, theme)
    app.clock = lambda: 1000.0  # a still spinner and elapsed time
    try:
        assert snap_compare(app, press=keys, terminal_size=SIZES[size], run_before=before)
    finally:
        app.engine.close()


def test_high_contrast_theme(snap_compare, tmp_path, utc):
    app, keys, before = build(tmp_path, "verdicts", "trialtui-contrast")
    app.clock = lambda: 1000.0
    try:
        assert snap_compare(app, press=keys, terminal_size=SIZES["wide"], run_before=before)
    finally:
        app.engine.close()
