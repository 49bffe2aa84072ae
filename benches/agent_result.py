"""A GPU number through `trialtui mcp`'s `result`: the SDK's stdio client submits kb_add's kernel and prints what it reads.

Run on a GPU machine: `python benches/agent_result.py` (under a minute once torch is warm). Writes
agent_result.json to $OUT when that is set. Exit status 0 only when the result is correct and timed on a GPU.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

PROBLEM = Path(__file__).resolve().parent.parent / "tests" / "problems" / "kb_add"


async def main() -> int:
    root = Path(tempfile.mkdtemp(prefix="trialtui-agent-")) / "kb_add"
    root.mkdir()
    for name in ("reference.py", "trialtui.toml"):
        shutil.copy(PROBLEM / name, root / name)
    started = time.monotonic()
    # the SDK gives a server only HOME, PATH and a few more; this one needs the caller's PYTHONPATH too
    # (on the device, the wheels are a --target folder), as an agent's MCP config would set it
    params = StdioServerParameters(command=sys.executable, args=["-m", "trialtui", "mcp", str(root)], env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        info = (await session.call_tool("problem", {})).structured_content
        sent = await session.call_tool("submit", {"name": "add.py", "source": (PROBLEM / "add.py").read_text(),
                                                  "strategy": "one masked elementwise kernel"})
        if sent.is_error:
            print(sent.content[0].text)
            return 1
        trial_id = sent.structured_content["trial_id"]
        reply = await session.call_tool("result", {"trial_id": trial_id, "wait_s": 100})
        out = {"device": info["device"], "submit": sent.structured_content,
               "result": reply.structured_content if not reply.is_error else reply.content[0].text,
               "wall_s": round(time.monotonic() - started, 2)}
    print(json.dumps(out, indent=1, default=str))
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "agent_result.json").write_text(json.dumps(out, indent=1, default=str))
    result = out["result"] if isinstance(out["result"], dict) else {}
    return 0 if result.get("state") == "correct" and (result.get("numbers") or {}).get("device") == "cuda" else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
