"""`trialtui mcp` end to end through the SDK's own stdio client, on the smallest sample problem, on the CPU."""

from __future__ import annotations

import asyncio
import time
import shutil
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from conftest import as_result

from trialtui.agent.session import MAX_SOURCE_BYTES

PROBLEMS = Path(__file__).parent / "problems"
DEADLINE_S = 240  # a loaded 2-core machine: generous, never a claim about speed

pytestmark = pytest.mark.slow


def one_candidate(tmp_path: Path) -> Path:
    """kb_add with only add.py: the engine scores one candidate on start, not three."""
    root = tmp_path / "kb_add"
    root.mkdir()
    for name in ("reference.py", "trialtui.toml", "add.py"):
        shutil.copy(PROBLEMS / "kb_add" / name, root / name)
    return root


@asynccontextmanager
async def mcp_client(root: Path):
    params = StdioServerParameters(command=sys.executable, args=["-m", "trialtui", "mcp", str(root), "--device", "cpu"])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, **args) -> dict:
    reply = await session.call_tool(tool, args)
    assert not reply.is_error, reply.content
    return reply.structured_content


async def refused(session: ClientSession, tool: str, **args) -> str:
    reply = await session.call_tool(tool, args)
    assert reply.is_error
    return reply.content[0].text


def test_an_agent_submits_fails_fixes_and_branches_back_through_mcp(tmp_path):
    root = one_candidate(tmp_path)
    good = (root / "add.py").read_text()
    wrong = good.replace("x + y", "x - y")
    smaller = good.replace("BLOCK=256", "BLOCK=128").replace("cdiv(n, 256)", "cdiv(n, 128)")
    smaller = "".join(line for line in smaller.splitlines(keepends=True) if not line.startswith("# strategy:"))

    async def body():
        async with mcp_client(root) as s:
            tools = {t.name for t in (await s.list_tools()).tools}
            assert {"problem", "validate", "submit", "result", "tree", "best", "branch", "profile", "log",
                    "finalize"} <= tools
            info = await call(s, "problem")
            assert info["form"] == "KernelBench" and info["must_define"]["entry_point"] == "ModelNew"
            assert info["candidates"] == ["add.py"] and "x + y" in info["reference"]
            assert (await call(s, "validate", name="add.py", source=good))["ok"] is True
            broken = await call(s, "validate", name="add.py", source="def nothing(:\n")
            assert broken["ok"] is False and broken["errors"]
            first = await call(s, "result", trial_id="t1", wait_s=DEADLINE_S)  # add.py, scored on start
            assert first["state"] == "correct" and first["done"]
            # no GPU: the budget never moves, so the answer itself says this is where to stop
            assert info["machine"]["gpu"] is False and first["machine"] == info["machine"]
            assert first["stop"] is True and "correct on CPU" in first["machine"]["stop_when"]
            assert first["budget"]["used"] == 0 and (await call(s, "best"))["machine"]["gpu"] is False

            sent = await call(s, "submit", name="add.py", source=wrong, strategy="subtract by mistake")
            assert sent["new"] and sent["parent"] == "t1"
            bad = await call(s, "result", trial_id=sent["trial_id"], wait_s=DEADLINE_S)
            assert bad["stop"] is False  # a failure on the CPU is fixed here, not a reason to stop
            assert bad["state"] == "incorrect" and bad["next_action"]["action"] == "fix"
            assert bad["numbers"]["correctness"]["passed"] is False and bad["budget"]["left"] == bad["budget"]["limit"]

            fixed = await call(s, "submit", name="add.py", source=smaller, strategy="smaller blocks")
            ok = await call(s, "result", trial_id=fixed["trial_id"], wait_s=DEADLINE_S)
            assert ok["state"] == "correct" and ok["numbers"]["device"] == "cpu" and ok["next_action"]["action"]
            saved = (root / "add.py").read_text()  # the label last: every line the agent sent keeps its number
            assert saved.startswith(smaller) and saved.endswith("# strategy: smaller blocks\n")

            back = await call(s, "branch", trial_id="t1")
            assert back["head"] == "t1" and (root / "add.py").read_text() == good
            drawn = await call(s, "tree")
            assert drawn["heads"] == {"add.py": "t1"} and [r["trial_id"] for r in drawn["trials"]] == ["t1", "t2", "t3"]
            assert "t3" in drawn["text"]
            assert (await call(s, "best"))["trial_id"] is None  # correct on the CPU is never best
            assert "GPU" in await refused(s, "profile", trial_id="t3")
            assert (await call(s, "log", trial_id="t2"))["trial_id"] == "t2"
            assert "no trial" in await refused(s, "finalize")

            assert "not a candidate file name" in await refused(s, "submit", name="../outside.py", source=good)
            assert "not a candidate file name" in await refused(s, "submit", name=".trialtui/x.py", source=good)
            assert "reference" in await refused(s, "submit", name="reference.py", source=good)
            huge = good + "#" * MAX_SOURCE_BYTES
            assert f"at most {MAX_SOURCE_BYTES} bytes" in await refused(s, "submit", name="add.py", source=huge)
            assert "no trial 't99'" in await refused(s, "result", trial_id="t99", wait_s=0)
            reference = await s.read_resource("trialtui://reference")
            assert "x + y" in reference.contents[0].text
            assert (await call(s, "tree"))["trials"][-1]["trial_id"] == "t3"  # nothing refused became a trial
        assert not (tmp_path / "outside.py").exists()

    asyncio.run(body())


def test_refusals_give_the_real_reason_a_cuda_source_can_be_saved_and_log_leads_with_the_failure(tmp_path):
    root = one_candidate(tmp_path)

    async def body():
        async with mcp_client(root) as s:
            private = await refused(s, "submit", name="_helpers.py", source="x = 1\n")
            assert "names starting with _ or . are private" in private and "not a candidate file name" not in private
            saved = await call(s, "submit", name="add.cu", source="__global__ void add() {}\n")
            assert saved["trial_id"] is None and "not a trial" in saved["message"]
            assert (root / "add.cu").read_text() == "__global__ void add() {}\n"
            sent = await call(s, "submit", name="add.py", source="def broken(:\n")
            failed = await call(s, "result", trial_id=sent["trial_id"], wait_s=DEADLINE_S)
            log = await call(s, "log", trial_id=sent["trial_id"])
            assert log["state"] == failed["state"] == "invalid" and log["message"] == failed["message"]
            assert log["message"].startswith("line 1:")

    asyncio.run(body())


def test_the_agent_attaches_to_a_running_engine_and_leaves_it_running(tmp_path):
    """The reverse: a TUI or watcher runs the engine; `trialtui mcp` attaches through the control channel."""
    import threading

    from trialtui.core.problem_dir import load_problem
    from trialtui.core.store import STATE_DIR
    from trialtui.engine import control
    from trialtui.engine.loop import Engine

    root = one_candidate(tmp_path)
    engine = Engine(load_problem(root), device="cpu")
    engine.host = "trialtui watch"
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(engine.run(),))
    thread.start()
    wrong = (root / "add.py").read_text().replace("x + y", "x - y")
    try:
        async def body():
            async with mcp_client(root) as s:
                assert (await call(s, "result", trial_id="t1", wait_s=DEADLINE_S))["state"] == "correct"
                sent = await call(s, "submit", name="add.py", source=wrong, strategy="subtract")
                assert (await call(s, "result", trial_id=sent["trial_id"], wait_s=DEADLINE_S))["state"] == "incorrect"
                assert (await call(s, "branch", trial_id="t1"))["head"] == "t1"

        asyncio.run(body())
        assert control.send(root / STATE_DIR, "ping")["ok"]  # the agent left; the watcher's engine runs on
        assert engine.store.heads == {"add.py": "t1"} and engine.store.get("t2").state == "incorrect"
    finally:
        loop.call_soon_threadsafe(engine.stop)
        thread.join(30)
        loop.close()
        engine.close()


def test_an_agent_checks_a_trial_on_held_out_cases_and_is_told_the_case_it_fails(tmp_path):
    """generalize(trial_id): finalize's held-out check on demand (issue 38). kb_add's add.py indexes its
    inputs as if packed, so of the five cases it fails only the non-contiguous one; the source's cases are
    then recorded as seen."""
    from trialtui.core import revealed

    root = one_candidate(tmp_path)
    with (root / "trialtui.toml").open("a") as config:
        config.write("[generalize]\nbudget_s = 900\n")  # a loaded machine: every case runs

    async def body():
        async with mcp_client(root) as s:
            assert "generalize" in {t.name for t in (await s.list_tools()).tools}
            assert (await call(s, "result", trial_id="t1", wait_s=DEADLINE_S))["state"] == "correct"
            found = await call(s, "generalize", trial_id="t1")
            assert found["generalizes"].startswith(
                "generalizes: 4 of 5 held-out cases; fails at non-contiguous inputs at the checked sizes ("), found
            assert found["fails"] is True and [c["outcome"] for c in found["cases"]].count("passed") == 4
            assert "no trial 't9'" in await refused(s, "generalize", trial_id="t9")

    asyncio.run(body())
    assert list(revealed._read(root / ".trialtui").values())[0]["cases"][2] == "non-contiguous inputs at the checked sizes"


def test_the_agents_finalize_answer_carries_the_generalizes_line(tmp_path, records_unread):
    """finalize() through MCP, beside an engine with a fake GPU whose held-out run fails one case: the
    answer, the report's JSON and REPORT.md's top all carry the line."""
    from test_control import Running
    from test_engine import GpuBench, make_engine

    class FailsOneHeldOutCase(GpuBench):
        def json(self, problem, path, *, heldout=None, **kw):
            if heldout is None:
                return super().json(problem, path, **kw)
            outcomes = [{"outcome": "passed"} for _ in heldout]
            outcomes[1] = {"outcome": "failed", "message": "3 of 4099 values differ; first at (4096,)"}
            return {"state": "incorrect", "correctness": {"heldout": outcomes}}

    root = one_candidate(tmp_path)
    config = (root / "trialtui.toml").read_text() + '[profile]\nwhen = "never"\n'
    with Running(make_engine(root, bench=FailsOneHeldOutCase([100.0, 100.0]), config=config)):
        async def body():
            async with mcp_client(root) as s:
                assert (await call(s, "result", trial_id="t1", wait_s=DEADLINE_S))["state"] == "correct"
                return await call(s, "finalize")

        answer = asyncio.run(body())
    line = "generalizes: 4 of 5 held-out cases; fails at n=4099 (3 of 4099 values differ; first at (4096,))"
    assert answer["generalizes"] == line and answer["report_json"]["generalizes"] == line
    assert answer["report"].splitlines()[2] == f"**{line}**"


def test_without_a_gpu_the_answer_says_stop_at_a_cpu_correct_or_gpu_only_trial():
    from trialtui.agent import views
    from trialtui.core.model import Trial

    def trial(state: str, **result) -> Trial:
        return Trial(id="t1", file="k.py", sha256="x", created=0.0, state=state, result=as_result({"state": state, **result}))

    cpu, gpu = views.machine_view("cpu", None), views.machine_view("cuda", None)
    cuda_cpp = trial("error", needs_gpu=True)
    assert views.stop_now(cuda_cpp, cpu) and not views.stop_now(cuda_cpp, gpu)
    assert not views.stop_now(trial("incorrect"), cpu)
    assert views.stop_now(trial("error"), views.machine_view("cpu", "jobs cannot run on this machine"))


def test_an_agent_cancels_a_trial_it_need_not_wait_out(tmp_path):
    """cancel(trial_id): a save that hangs is stopped where it is (its CPU preview, the queue or its job) and stays
    in the tree as cancelled; a trial with no job left is refused, saying why."""
    root = one_candidate(tmp_path)
    hangs = (root / "add.py").read_text().replace("import torch\n", "import time\nimport torch\n", 1).replace(
        "        n = x.numel()\n", "        time.sleep(3600)\n        n = x.numel()\n", 1)
    assert "time.sleep(3600)" in hangs

    async def body():
        async with mcp_client(root) as s:
            assert "cancel" in {t.name for t in (await s.list_tools()).tools}
            assert (await call(s, "result", trial_id="t1", wait_s=DEADLINE_S))["state"] == "correct"
            assert "t1 is correct: it has no job to cancel" in await refused(s, "cancel", trial_id="t1")
            sent = await call(s, "submit", name="add.py", source=hangs)
            started = time.monotonic()
            stopped = await call(s, "cancel", trial_id=sent["trial_id"])
            assert stopped["cancelled"] is True
            done = await call(s, "result", trial_id=sent["trial_id"], wait_s=DEADLINE_S)
            assert done["state"] == "cancelled" and time.monotonic() - started < DEADLINE_S

    asyncio.run(body())
