"""The TUI's raw profile view asks the profiler that made the profile: a counter-free profile shows
its kernel records, its profiler and why ncu was skipped."""

from __future__ import annotations

import asyncio

from trialtui.tui.app import TrialApp
from trialtui.tui.widgets.detail import TrialDetail

from conftest import as_profile
from test_profilers import ERR, records
from test_tui_scenarios import STORY, scenario, utc  # noqa: F401


def screen_text(app: TrialApp) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def test_raw_view_of_an_activity_profile_lists_kernel_records(tmp_path, utc):  # noqa: F811
    problem, store, engine = scenario(tmp_path, len(STORY))
    body = {**records(("rms_norm_kernel", 1, 130.0), ("void at::native::copy_kernel", 2, 5.0)),
            "label": "CUPTI kernel records (torch.profiler, no hardware counters)",
            "skipped": [{"source": "ncu", "reason": ERR}]}
    store.update("t3", profile=as_profile(body))

    async def body_():
        app = TrialApp(problem, engine)
        async with app.run_test(size=(120, 36)) as pilot:
            app.go_to("t3")
            await pilot.press("s")
            await pilot.pause()
            await pilot.press("s")
            await pilot.pause()
            assert app.query_one(TrialDetail).raw
            text = screen_text(app)
            assert "profiler: CUPTI kernel records" in text and "ncu unavailable: ERR_NVGPUCTRPERM" in text
            assert "rms_norm_kernel (dominant)" in text and "launches per call" in text

    try:
        asyncio.run(body_())
    finally:
        store.close()
