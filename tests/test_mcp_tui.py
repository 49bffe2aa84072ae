"""One engine, two front ends: a TUI opened beside `trialtui mcp` attaches to its engine, shows the agent's
trials live, and `q` in it leaves the agent's engine running."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from trialtui.core.problem_dir import load_problem
from trialtui.core.store import STATE_DIR
from trialtui.engine import control
from trialtui.engine.attach import RemoteEngine
from trialtui.tui.app import make_app

from test_mcp import DEADLINE_S, call, mcp_client, one_candidate

pytestmark = pytest.mark.slow
SHOWN_S = 30  # how long the TUI may take to show a result it was sent: generous, not a speed claim


async def until(ready, deadline_s: float) -> None:
    ends = time.monotonic() + deadline_s
    while not ready():
        assert time.monotonic() < ends, "not shown in time"
        await asyncio.sleep(0.05)


def test_the_tui_attaches_to_the_agents_engine_shows_its_trial_and_q_leaves_it_running(tmp_path):
    root = one_candidate(tmp_path)
    wrong = (root / "add.py").read_text().replace("x + y", "x * y")

    async def body():
        async with mcp_client(root) as agent:
            assert (await call(agent, "result", trial_id="t1", wait_s=DEADLINE_S))["done"]
            app = make_app(load_problem(root))
            assert isinstance(app.engine, RemoteEngine) and app.engine.host == "trialtui mcp"
            assert isinstance(app.engine.pid, int) and app.engine.pid != os.getpid()  # the server's, not "pid None"
            async with app.run_test(size=(120, 40)) as pilot:
                await until(lambda: any("attached to the engine" in n.message for n in app._notifications), SHOWN_S)
                assert "t1" in app.trials
                sent = await call(agent, "submit", name="add.py", source=wrong, strategy="multiply by mistake")
                done = await call(agent, "result", trial_id=sent["trial_id"], wait_s=DEADLINE_S)
                assert done["state"] == "incorrect"
                await until(lambda: getattr(app.trials.get(sent["trial_id"]), "state", None) == "incorrect", SHOWN_S)
                assert any(line.startswith(f"✗ {sent['trial_id']}") for line in app.tree.plain_lines())
                await pilot.press("q")
            assert control.send(root / STATE_DIR, "ping")["ok"]  # the agent's engine still runs
            assert (await call(agent, "tree"))["trials"][-1]["trial_id"] == sent["trial_id"]

    asyncio.run(body())


def test_when_the_agents_engine_exits_the_attached_tui_runs_one_and_scores_the_next_save(tmp_path):
    """A TUI attached to an agent's engine must not go dead when that agent stops (issue 36.12): it takes
    the directory over, says so, and the next save is scored by its own engine."""
    root = one_candidate(tmp_path)
    source = (root / "add.py").read_text()

    async def body():
        agent_session = mcp_client(root)
        agent = await agent_session.__aenter__()
        try:
            assert (await call(agent, "result", trial_id="t1", wait_s=DEADLINE_S))["done"]
            app = make_app(load_problem(root))
            assert isinstance(app.engine, RemoteEngine)
            async with app.run_test(size=(120, 40)) as pilot:
                await until(lambda: any("attached to the engine" in n.message for n in app._notifications), SHOWN_S)
                await agent_session.__aexit__(None, None, None)  # the agent's session ends, and its engine with it
                agent_session = None
                await until(lambda: app.owns_engine and not isinstance(app.engine, RemoteEngine), SHOWN_S)
                assert any("this window runs the engine now" in n.message for n in app._notifications)
                assert not app.status.standing.engine_down
                (root / "add.py").write_text(source + "\n# saved after the agent left\n")
                await until(lambda: any(t.id != "t1" and t.state == "correct" for t in app.trials.values()), DEADLINE_S)
                await pilot.press("q")
        finally:
            if agent_session is not None:
                await agent_session.__aexit__(None, None, None)

    asyncio.run(body())
