"""`trialtui demo --agent` starts `trialtui mcp` through the MCP SDK, which hands a server only HOME, PATH and
a few more variables: on a machine whose packages come from PYTHONPATH, and for the GPU CUDA_VISIBLE_DEVICES
names, the server must get the caller's environment (it failed to start on the H200 without it)."""

from __future__ import annotations

import asyncio
import io
from contextlib import asynccontextmanager

import pytest

pytest.importorskip("mcp")

from trialtui.agent import script  # noqa: E402


def test_the_agents_server_gets_the_callers_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHONPATH", "/tmp/site-of-carried-wheels")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    seen = {}

    @asynccontextmanager
    async def fake_stdio_client(params):
        seen["params"] = params
        raise RuntimeError("stop here")
        yield  # pragma: no cover

    monkeypatch.setattr(script, "stdio_client", fake_stdio_client)
    with pytest.raises(RuntimeError, match="stop here"):
        asyncio.run(script.play(None, tmp_path, recordings=None, out=io.StringIO()))
    env = seen["params"].env
    assert env["PYTHONPATH"] == "/tmp/site-of-carried-wheels" and env["CUDA_VISIBLE_DEVICES"] == "3"


def test_the_scripted_agent_says_where_a_replayed_number_came_from_once():
    """The summary of a replayed result already ends with its origin; the agent's line added it again."""
    from trialtui.agent.script import outcome

    said = "replayed from a recording on NVIDIA H200, 2026-12-02"
    assert outcome({"state": "correct", "summary": f"1.96× vs eager [H200 · {said}]", "numbers": {"replayed": said}}) \
        == f"1.96× vs eager [H200 · {said}]"
    assert outcome({"state": "correct", "summary": "1.96× vs eager", "numbers": {"replayed": said}}) \
        == f"1.96× vs eager ({said})"
    assert outcome({"state": "incorrect", "message": "case 1 differs"}) == "case 1 differs"
