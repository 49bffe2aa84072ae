"""`trialtui demo --agent`: a scripted coding agent plays a sample's story through `trialtui mcp`.

The agent is the SDK's own client over stdio, so every step goes through the interface a real agent
uses: problem, submit, result, best and branch at the story's branch-back beat, finalize at the end.
Without a GPU the server runs the demo's replay engine: correctness live on the CPU, GPU numbers only
from recordings of the very same source, labelled with their GPU and date. A TUI opened on the
directory meanwhile attaches to the server's engine and shows every trial as it lands.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from trialtui.demo.story import Story

RESULT_WAIT_S = 600.0


class ScriptError(RuntimeError):
    """A tool call the story needed failed; the message is the server's."""


def outcome(result: dict[str, Any]) -> str:
    """A result as the agent's line says it: its summary, and where a replayed number came from, once."""
    shown = result.get("summary") or result.get("message") or result["state"]
    replayed = (result.get("numbers") or {}).get("replayed")
    return f"{shown} ({replayed})" if replayed and replayed not in shown else shown


async def _tool(session: ClientSession, tool: str, **args: Any) -> dict[str, Any]:
    reply = await session.call_tool(tool, args)
    if reply.is_error:
        raise ScriptError(f"{tool}: {reply.content[0].text if reply.content else 'failed'}")
    return reply.structured_content or {}


async def play(story: Story, root: Path, *, recordings: Path | None, out: TextIO = sys.stdout) -> int:
    """Play the story into `root` through `trialtui mcp`; 0 when every version came out as the story expects."""
    def say(text: str) -> None:
        out.write(f"{time.strftime('%H:%M:%S')} agent: {text}\n")
        out.flush()

    args = ["-m", "trialtui", "mcp", str(root)]
    if recordings is not None:
        args += ["--device", "cpu", "--replay", str(recordings)]
    # the SDK hands a server only HOME, PATH and a few more: this one needs the caller's PYTHONPATH (packages
    # installed with --target) and CUDA_VISIBLE_DEVICES (the GPU it was given), as an agent's MCP config sets them
    params = StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        try:
            return await _story(session, story, say, out)
        except ScriptError as exc:  # the server's refusal, as the agent read it
            say(f"stopped: {exc}")
            return 1


async def _story(session: ClientSession, story: Story, say: Any, out: TextIO) -> int:
    surprises = 0
    info = await _tool(session, "problem")
    say(f"problem {info['name']} ({info['form']}, {info['dtype']}) on {info['device']}: a candidate defines "
        f"{info['must_define']['entry_point']}; {info['budget']['left']} GPU trials of budget left")
    trial_for: dict[str, str] = {}
    for version in story.versions:
        if version.beat == "branch_back":
            best = await _tool(session, "best")
            target = best.get("trial_id") or trial_for.get(version.parent)
            why = "the best so far" if best.get("trial_id") else f"the story's {version.parent} ({best.get('reason')})"
            if target is None:
                raise ScriptError(f"nothing to branch back to: {best.get('reason')}")
            await _tool(session, "branch", trial_id=target)
            say(f"regression: branch back to {target}, {why}")
        sent = await _tool(session, "submit", name=story.candidate, source=story.source(version).decode("utf-8"),
                           strategy=version.note)
        trial_for[version.file] = sent["trial_id"]
        result = await _tool(session, "result", trial_id=sent["trial_id"], wait_s=RESULT_WAIT_S)
        while not result["done"]:
            result = await _tool(session, "result", trial_id=sent["trial_id"], wait_s=RESULT_WAIT_S)
        shown = outcome(result)
        action = result.get("next_action") or {}
        surprise = result["state"] != version.expected
        surprises += surprise
        say(f"{version.file} is {sent['trial_id']}: {shown}" + (f" — the story expected {version.expected}!" if surprise else ""))
        if action:
            say(f"  next: {action['action']} — {action['reason']}")
    reply = await session.call_tool("finalize", {})
    if reply.is_error:
        say(f"finalize refused: {reply.content[0].text}")
    else:
        say(f"finalized: {reply.structured_content['out_dir']}/REPORT.md")
    tree = await _tool(session, "tree")
    out.write(tree["text"] + "\n")
    return 1 if surprises else 0
