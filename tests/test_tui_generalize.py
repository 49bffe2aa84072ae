"""The TUI's finalize dialog and its outcome carry the held-out check (issue 38), through `App.run_test()`."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from trialtui.core import revealed
from trialtui.core.report_card import Finalized, ReportCard
from trialtui.tui.app import TrialApp
from trialtui.tui.screens.confirm import ConfirmScreen

from test_tui_scenarios import STORY, scenario, utc  # noqa: F401

SIZE = (120, 36)
LINE = "generalizes: 7 of 8 held-out cases; fails at dim=257 (3 of 1028 values differ)"


@pytest.fixture
def story(tmp_path, utc):
    problem, store, engine = scenario(tmp_path, len(STORY))
    yield problem, store, engine
    store.close()


def screen_text(app: TrialApp) -> str:
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


def test_the_finalize_dialog_names_the_held_out_check_and_its_outcome_says_the_line(story, monkeypatch):
    problem, store, engine = story
    finalized = []

    def fake_finalize(problem_, store_, trial, *, device=None, bench=None, **kw):
        finalized.append(trial.id)
        named = {f.name: None for f in dataclasses.fields(ReportCard) if f.name not in ("extra", "_keys")}
        card = ReportCard(**{**named, "trial": trial.id, "generalizes": LINE})
        return Finalized("", card, Path(problem_.root / "final"))

    monkeypatch.setattr("trialtui.engine.finalize.finalize", fake_finalize)

    async def body():
        app = TrialApp(problem, engine)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("F")
            await pilot.pause()
            assert isinstance(app.screen, ConfirmScreen)
            text = " ".join(screen_text(app).split())
            assert "held-out cases" in text and "(at most 30 s)" in text
            await pilot.press("n")
            revealed.record(problem.state_dir, store.get("t8").sha256, ["dim=257"])
            await pilot.press("F")
            await pilot.pause()
            assert "checked on demand for this source before" in " ".join(screen_text(app).split())
            await pilot.press("y")
            for _ in range(300):
                if finalized and any(LINE in n.message for n in app._notifications):
                    break
                await pilot.pause(0.1)
            assert finalized == ["t8"]
            assert any(n.message.startswith(LINE) for n in app._notifications)

    asyncio.run(body())
