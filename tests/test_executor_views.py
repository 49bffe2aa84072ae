"""Where each trial ran, as the views say it: the status bar names a remote executor's host, the detail pane
and headless lines say host, GPU and executor, the tree shows a trial's speedup on every GPU model, and
finalize's report names where its re-benchmark ran."""

from __future__ import annotations

import asyncio

from conftest import as_result

from trialtui.core.report import build_report
from trialtui.tui.app import TrialApp

from test_tui_scenarios import STORY, gpu_result, scenario, utc  # noqa: F401
from test_tui_small import screen_text

REMOTE = {"host": "gpu-box", "executor": "ssh://alice@gpu-box"}


def test_the_tui_names_the_host_jobs_run_on_and_each_model_speedup(tmp_path, utc):
    problem, store, engine = scenario(tmp_path, len(STORY))
    engine.where = "ssh alice@gpu-box"
    last = f"t{len(STORY)}"
    result = gpu_result(200.0)
    result["env"] = {**result["env"], **REMOTE}
    result["models"] = {"NVIDIA H200": {"state": "correct", "speedup": {"eager": 1.31}},
                        "NVIDIA A100": {"state": "correct", "speedup": {"eager": 1.12}}}
    store.update(last, result=as_result(result))

    async def body():
        app = TrialApp(problem, engine, clock=lambda: 1000.0)
        async with app.run_test(size=(160, 44)) as pilot:
            app.tree.move_to(last, by_user=True)
            await pilot.pause()
            text = screen_text(app)
            assert "ssh alice@gpu-box · " in text.splitlines()[0]
            assert "ran on" in text and "gpu-box · NVIDIA H200 (ssh://alice@gpu-box)" in text
            assert any("NVIDIA H200 1.31× · NVIDIA A100 1.12×" in line for line in app.tree.plain_lines())

    try:
        asyncio.run(body())
    finally:
        store.close()


def test_finalize_report_names_where_the_re_benchmark_ran(tmp_path):
    problem, store, _ = scenario(tmp_path, 1)
    result = gpu_result(200.0)
    result["env"] = {**result["env"], **REMOTE}
    trial = store.get("t1")
    store.close()
    text, report = build_report(problem, trial, as_result(result))
    assert "- Ran on: gpu-box through ssh://alice@gpu-box" in text
    assert (report["host"], report["executor"]) == ("gpu-box", "ssh://alice@gpu-box")
    assert "Ran on" not in build_report(problem, trial, as_result(gpu_result(200.0)))[0]  # this machine's: as before
