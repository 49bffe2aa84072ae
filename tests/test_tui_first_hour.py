"""What a new user meets in the TUI's first hour (issue 36): keys that cannot act say why, help lists
each key once, and the detail pane words a trial as a person would."""

from __future__ import annotations

import asyncio
import io

from rich.console import Console

from trialtui.tui import describe
from trialtui.tui.app import TrialApp
from trialtui.tui.screens.confirm import ConfirmScreen
from trialtui.tui.screens.help import HelpScreen

from test_tui_scenarios import scenario, utc  # noqa: F401


def test_b_and_F_without_a_best_say_why_instead_of_nothing(tmp_path, utc):
    problem, store, engine = scenario(tmp_path, 0)

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.press("b", "F")
            await pilot.pause(0.2)
            said = [n.message for n in app._notifications]
            assert "No best trial to branch to yet: no correct trial yet" in said, said
            assert "No best trial to finalize yet: no correct trial yet" in said, said
            assert not isinstance(app.screen, ConfirmScreen)  # nothing to confirm

    try:
        asyncio.run(body())
    finally:
        store.close()


def test_help_lists_the_tab_keys_once(tmp_path, utc):
    problem, store, engine = scenario(tmp_path, 0)

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.press("question_mark")
            await pilot.pause(0.2)
            assert isinstance(app.screen, HelpScreen)
            console = Console(width=120, record=True, file=io.StringIO())
            console.print(app.screen._content())
            rows = [line.split() for line in console.export_text().splitlines() if line.strip()]
            assert sum(row[:4] == ["1", "2", "3", "4"] for row in rows) == 1
            assert not any(row[0] in ("1", "2", "3", "4") and row[1:2] != ["2"] for row in rows), rows

    try:
        asyncio.run(body())
    finally:
        store.close()


def test_notifications_never_cover_the_next_action_pane(tmp_path, utc):
    from textual.widgets._toast import Toast

    from trialtui.engine import events as ev
    from trialtui.tui.widgets.next_action import NextAction

    problem, store, engine = scenario(tmp_path, 3)

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=(80, 24), notifications=True) as pilot:
            for size in ((80, 24), (140, 40)):
                await pilot.resize_terminal(*size)
                engine.emit(ev.Notice(f"a notice at {size}", "info"))
                await pilot.pause(0.3)
                pane = app.query_one(NextAction).region
                toasts = [toast.region for toast in app.screen.query(Toast)]
                assert toasts, "no notification was shown"
                assert not any(toast.overlaps(pane) for toast in toasts), (size, toasts, pane)

    try:
        asyncio.run(body())
    finally:
        store.close()


def test_the_detail_header_names_an_error_once_and_a_root_in_plain_words(tmp_path, utc):
    from conftest import as_result
    from test_tui import screen_text
    from test_tui_scenarios import T0, gpu_result, version

    problem, store, engine = scenario(tmp_path, 2)
    crashed = store.add_trial("k2.py", version(9, "a fresh start"), created=T0 + 1000)
    store.update(crashed.id, state="error", result=as_result(gpu_result(
        None, "error", "checking correctness: RuntimeError: boom")))

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=(160, 36)) as pilot:
            app.go_to(crashed.id)
            await pilot.pause(0.2)
            text = screen_text(app)
            assert "error: checking correctness: RuntimeError: boom · k2.py, a new root · saved" in text, text
            assert "error: error" not in text and "nothing" not in text, text
            row, _ = describe.outcome(store.get(crashed.id), "eager")
            assert row == "error: checking correctness: RuntimeError: boom"  # the tree's row says the state too
            await pilot.press("3")
            await pilot.pause(0.2)
            assert "d: diff (a new root: every line is new)" in screen_text(app)

    try:
        asyncio.run(body())
    finally:
        store.close()
