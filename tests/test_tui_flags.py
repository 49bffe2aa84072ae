"""A flagged trial in the TUI: never ★ best, a ⚑ mark on its row, the reason in the detail pane (issue 13.5)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from test_tui_scenarios import STORY, scenario, utc  # noqa: F401

from conftest import as_result

from trialtui.tui.app import TrialApp

SIZE = (140, 40)
SIDE_STREAM = json.loads((Path(__file__).parent / "fixtures" / "gpu" / "bad_side_stream.json").read_text())


def screen_text(app: TrialApp) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def test_a_flagged_trial_is_marked_never_best_and_the_detail_says_why(tmp_path, utc):
    problem, store, engine = scenario(tmp_path, len(STORY))
    last = f"t{len(STORY)}"
    store.update(last, result=as_result(SIDE_STREAM))  # 49x eager, side stream: the fastest by far, and flagged

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SIZE) as pilot:
            assert app.best is not None and app.best.id != last
            row = app.tree.plain_lines()[-1]
            assert f" {last}" in row and "⚑ flagged 49.14×" in row and "★" not in row
            app.tree.move_to(last, by_user=True)
            await pilot.pause(0.3)
            text = screen_text(app)
            assert "never best" in text and "⚑ side-stream: GPU kernels ran 3747.1 µs" in text

    asyncio.run(body())
    store.close()
