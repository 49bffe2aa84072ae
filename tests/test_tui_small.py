"""Issue 18, points 4 and 5: replayed numbers never look live, and 80×24 keeps the footer's Help and
Quit, the budget in the header, the history panel, and one notification at a time."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from conftest import as_result

from trialtui.core.problem_dir import load_problem
from trialtui.core.store import Store
from trialtui.engine import events as ev
from trialtui.tui.app import TrialApp

from test_tui_scenarios import STORY, FakeEngine, add_running, gpu_result, running_events, scenario, utc  # noqa: F401

SMALL = (80, 24)


def screen_text(app: TrialApp) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


async def settled_footer(pilot, app: TrialApp, wanted: str) -> str:
    """The footer once it holds `wanted`: it rebuilds itself after binding changes and resizes."""
    for _ in range(50):
        footer = screen_text(app).splitlines()[-1]
        if wanted in footer:
            return footer
        await pilot.pause(0.1)
    return footer


def test_80x24_keeps_help_quit_budget_and_history(tmp_path, utc):
    problem, store, engine = scenario(tmp_path, len(STORY))
    add_running(store, problem, engine)

    async def body():
        app = TrialApp(problem, engine, clock=lambda: 1000.0)
        async with app.run_test(size=SMALL) as pilot:
            for event in running_events(store):
                engine.emit(event)
            footer = await settled_footer(pilot, app, "x Cancel")
            lines = screen_text(app).splitlines()
            assert len(lines) == 24
            assert "? Help" in footer and "q Quit" in footer, footer  # a cut footer loses these first
            assert "x Cancel" in footer and "b Best" in footer, footer
            assert "d Diff" not in footer  # listed by ?, not in the narrow footer
            assert "budget 8/30" in lines[0], lines[0]  # the running t9 has no GPU result yet
            assert any("History" in line for line in lines)
            assert any("2.21×┤" in line for line in lines)  # the plot itself, not just its border
            await pilot.resize_terminal(140, 40)
            assert "d Diff" in await settled_footer(pilot, app, "d Diff")  # the wide footer has room for all

    try:
        asyncio.run(body())
    finally:
        store.close()


def test_80x24_shows_one_notification_at_a_time(tmp_path, utc):
    problem, store, engine = scenario(tmp_path, len(STORY))

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SMALL) as pilot:
            for i in range(4):
                engine.emit(ev.Notice(f"beat: number {i}", "info"))
            await pilot.pause(0.3)
            assert [n.message for n in app._notifications] == ["beat: number 3"]
            await pilot.resize_terminal(120, 36)
            for i in range(3):
                engine.emit(ev.Notice(f"wide {i}", "info"))
            await pilot.pause(0.3)
            assert len(app._notifications) == 4  # a tall screen stacks them

    try:
        asyncio.run(body())
    finally:
        store.close()


def test_replayed_numbers_on_a_cpu_never_read_as_live(tmp_path, utc):
    problem, store, _ = scenario(tmp_path, 1)
    result = {**gpu_result(300.0), "recorded": {"gpu": "NVIDIA H200", "date": "2026-11-29", "source": "replay"}}
    store.update("t1", result=as_result(result))
    engine = FakeEngine(problem, store, device="cpu")

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=(160, 40)) as pilot:  # wide enough for where and the labelled best
            await pilot.pause(0.3)
            text = screen_text(app)
            header = text.splitlines()[0]
            assert "replayed from a recording on NVIDIA H200, 2026-11-29 · this machine: CPU" in header, header
            assert "★ t1 1.38× (replayed)" in header, header
            assert "replayed" in text and "replayed from a recording on NVIDIA H200, 2026-11-29" in text
            assert "measured on" not in text
            assert "CUPTI" not in text and "kernels only, in the recording" in text

    try:
        asyncio.run(body())
    finally:
        store.close()


def test_live_gpu_numbers_keep_measured_on_and_cupti(tmp_path, utc):
    problem, store, engine = scenario(tmp_path, 1)

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=(140, 40)) as pilot:
            await pilot.pause(0.3)
            text = screen_text(app)
            assert "measured on" in text and "CUPTI, kernels only" in text and "replayed" not in text

    try:
        asyncio.run(body())
    finally:
        store.close()



def row_texts(app: TrialApp) -> dict[str, str]:
    width = app.tree.scrollable_content_region.width
    return {row.trial_id: app.tree.row_text(row, width).plain.rstrip() for row in app.tree.rows}


def shown_name(line: str, trial_id: str) -> str:
    return line.split(f"{trial_id} ", 1)[1].removeprefix("▸ ")


def test_narrow_headers_keep_this_machine_cpu_and_the_replayed_label(tmp_path, utc):
    """Issue 36, point 7: at 120 and 80 columns the header keeps "this machine: CPU" and that the
    numbers are replayed (the baseline's time and the long label go first); rows keep their label."""
    problem, store, _ = scenario(tmp_path, len(STORY))
    for trial in store.trials():
        recorded = {"gpu": "NVIDIA H200", "date": "2026-11-29", "source": "replay"}
        store.update(trial.id, result=replace(trial.result, recorded=recorded))
    engine = FakeEngine(problem, store, device="cpu")
    strategies = {trial.id: trial.strategy for trial in store.trials()}

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=(120, 36)) as pilot:
            for size in ((120, 36), SMALL):
                await pilot.resize_terminal(*size)
                await pilot.pause(0.3)
                header = screen_text(app).splitlines()[0]
                assert "this machine: CPU" in header and "replayed" in header, (size, header)
                assert "★ t8 2.10× (replayed)" in header and "budget 8/30" in header, (size, header)
                for trial_id, line in row_texts(app).items():
                    name = shown_name(line, trial_id).split("…")[0].split("  ")[0]
                    assert len(name) >= 3 and strategies[trial_id].startswith(name), (size, line)
                assert row_texts(app)["t1"].endswith("1.00× (replayed)")

    try:
        asyncio.run(body())
    finally:
        store.close()


def test_narrow_tree_rows_keep_the_strategy_before_the_file_and_the_error(tmp_path, utc):
    """Issue 36, point 7: a tree row gives up the file name and the failure's details ("wrong", not
    its error) before its strategy, at 120 columns as at 80."""
    problem, store, engine = scenario(tmp_path, len(STORY))
    strategies = {trial.id: trial.strategy for trial in store.trials()}

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=(120, 36)) as pilot:
            for size in ((120, 36), SMALL):
                await pilot.resize_terminal(*size)
                await pilot.pause(0.3)
                rows = row_texts(app)
                for trial_id, line in rows.items():
                    assert shown_name(line, trial_id).startswith(strategies[trial_id][:12]), (size, line)
                assert rows["t2"].endswith(" wrong"), (size, rows["t2"])  # the error is in the detail pane

    try:
        asyncio.run(body())
    finally:
        store.close()
