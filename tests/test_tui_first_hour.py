"""What a new user meets in the TUI's first hour (issue 36): keys that cannot act say why, help lists
each key once, and the detail pane words a trial as a person would; a window attached to another process's
engine says so and that q leaves it running, p is not offered where profiling cannot run, and text cut to
fit ends in "…"."""

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


def help_rows(app) -> list[str]:
    console = Console(width=160, record=True, file=io.StringIO())
    console.print(app.screen._content())
    return [line.strip() for line in console.export_text().splitlines()]


def test_a_window_attached_to_another_processs_engine_says_so_and_q_leaves_it_running(tmp_path):
    """Attached (engine/attach.py), q hangs up and the engine runs on: the header names whose engine it is, and
    the footer and help call q Leave, never "the engine stops"."""
    import os

    from trialtui.core.problem_dir import load_problem
    from trialtui.core.store import STATE_DIR
    from trialtui.engine import control
    from trialtui.engine.attach import RemoteEngine
    from trialtui.tui.app import make_app

    from conftest import KB_GOOD, write_problem
    from test_control import Running, two_trials
    from test_tui_small import settled_footer

    root = write_problem(tmp_path / "p", files={"kernel.py": KB_GOOD})

    async def body():
        app = make_app(load_problem(root))
        assert isinstance(app.engine, RemoteEngine)
        async with app.run_test(size=(140, 36)) as pilot:
            footer = await settled_footer(pilot, app, "q Leave")
            assert "q Leave" in footer and "Quit" not in footer, footer
            header = app.status.render().plain.splitlines()[1]
            assert f"⇄ attached to trialtui's engine (pid {os.getpid()})" in header, header  # its lock's pid
            await pilot.press("question_mark")
            await pilot.pause(0.2)
            rows = help_rows(app)
            assert [row.split(None, 1)[1] for row in rows if row.startswith("q ")] == [
                "leave this view (the engine keeps running in its own process; trials are saved)"], rows
            await pilot.press("escape", "q")
        assert app.return_code == 0

    with Running(two_trials(root)):
        asyncio.run(body())
        assert control.send(root / STATE_DIR, "ping")["ok"]  # q left the engine running


def test_a_window_with_its_own_engine_says_q_stops_it(tmp_path, utc):
    problem, store, engine = scenario(tmp_path, 3)

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=(140, 36)) as pilot:
            assert "attached" not in app.status.render().plain
            await pilot.press("question_mark")
            await pilot.pause(0.2)
            assert [row.split(None, 1)[1] for row in help_rows(app) if row.startswith("q ")] == [
                "quit (the engine stops; trials are saved)"]

    try:
        asyncio.run(body())
    finally:
        store.close()


def test_p_is_gone_on_a_cpu_engine_dimmed_on_a_cpu_trial_and_kept_for_gpu_trials(tmp_path, utc):
    from conftest import as_result
    from test_tui_scenarios import T0, cpu_result, version
    from test_tui_small import settled_footer

    problem, store, engine = scenario(tmp_path, 3)
    on_cpu = store.add_trial("kernel.py", version(9, "tried on a laptop"), created=T0 + 1000)
    store.update(on_cpu.id, state="correct", result=as_result(cpu_result()))

    async def gpu():
        app = TrialApp(problem, engine)
        async with app.run_test(size=(140, 36)) as pilot:
            app.go_to("t3")
            await pilot.pause(0.2)
            assert app.screen.active_bindings["p"].enabled
            assert "p Profile" in await settled_footer(pilot, app, "p Profile")
            await pilot.press("p")
            app.go_to(on_cpu.id)
            await pilot.pause(0.2)
            assert not app.screen.active_bindings["p"].enabled  # shown, dimmed
            await pilot.press("p")
            await pilot.pause(0.1)
        assert [call for call in engine.calls if call[0] == "profile"] == [("profile", "t3")]

    async def cpu():
        engine.device = "cpu"
        app = TrialApp(problem, engine)
        async with app.run_test(size=(140, 36)) as pilot:
            app.go_to("t3")
            await pilot.pause(0.2)
            assert "p" not in app.screen.active_bindings
            assert "Profile" not in await settled_footer(pilot, app, "? Help")
            await pilot.press("p")
            await pilot.pause(0.1)
        assert [call for call in engine.calls if call[0] == "profile"] == [("profile", "t3")]  # none more

    try:
        asyncio.run(gpu())
        asyncio.run(cpu())
    finally:
        store.close()


def test_text_cut_to_fit_ends_with_an_ellipsis(tmp_path, utc):
    import dataclasses

    from trialtui.core.problem_dir import load_problem
    from trialtui.core.store import Store
    from trialtui.tui.cut import cut

    from conftest import write_problem
    from test_tui_scenarios import FakeEngine
    from test_tui_small import screen_text

    assert (cut("abcdef", 4), cut("abcd", 4), cut("abcdef", 1), cut("abcdef", 0)) == ("abc…", "abcd", "…", "")
    kernel = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"
    problem, store, engine = scenario(tmp_path, 3)
    t3 = store.get("t3")
    timing = {**t3.result.timing, "kernels": {"own_us": 10.0, "library_us": 90.0, "own_share": 0.1,
                                             "library_top": [[kernel, 90.0]]}}
    store.update("t3", result=dataclasses.replace(t3.result, timing=timing))
    empty = load_problem(write_problem(tmp_path / "empty", files={}))

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=(220, 40)) as pilot:
            app.go_to("t3")
            await pilot.pause(0.2)
            assert f"library 90% ({kernel[:39]}… 90.00 µs)" in screen_text(app)
        app = TrialApp(empty, FakeEngine(empty, Store.open(empty.root, writer=True)))
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause(0.2)
            assert "│ No trials yet: save a candida…│" in screen_text(app)
        app.engine.close()

    try:
        asyncio.run(body())
    finally:
        store.close()
