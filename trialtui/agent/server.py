"""`trialtui mcp`: the agent session's calls as MCP tools and resources, over stdio or token-guarded local HTTP.

Built on the official SDK's `MCPServer`. The tool names are an interface clients and tests rely on
(docs/AGENTS.md). Every failure reaches the client as a tool error with its reason (`ToolError`); none
stops the server or the engine.
"""

from __future__ import annotations

import hmac
import secrets
import sys
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any, TextIO

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError

from trialtui import __version__
from trialtui.agent.session import AgentError, AgentSession

INSTRUCTIONS = """\
trialtui judges GPU kernel candidates against a frozen PyTorch reference. Call problem() first. Then loop:
submit(name, source, strategy) a candidate file, result(trial_id, wait_s=300) for its verdict and next_action,
and do what next_action says (fix, optimize, branch back with branch(trial_id) after a regression, switch
approach at a plateau; never stop at a plateau). finalize() once a result is a decisive win. Never time or
check kernels yourself; a tool that fails is reported, not bypassed."""


async def _answer(call: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    """A tool's answer, or a tool error that says why: a refusal as worded, a bug of trialtui's named as one."""
    try:
        return await call
    except AgentError as exc:
        raise ToolError(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - the agent reads why; the server and the engine go on
        raise ToolError(f"trialtui failed: {type(exc).__name__}: {exc}") from exc


def build_server(session: AgentSession) -> MCPServer:
    """The MCP server for one session; its lifespan starts the engine (inside the transport: see `serve`)."""

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncIterator[None]:
        await session.start()
        yield

    server: MCPServer = MCPServer("trialtui", instructions=INSTRUCTIONS, version=__version__, lifespan=lifespan,
                                  log_level="WARNING")

    @server.tool()
    async def problem() -> dict[str, Any]:
        """The problem: form, reference source, dtype, test and bench sizes, tolerances, baselines, budget,
        what a candidate must define, the candidate files, and the rules."""
        return await _answer(session.problem_info())

    @server.tool()
    async def validate(name: str, source: str) -> dict[str, Any]:
        """The CPU stages only (static checks, a real compile for the target GPU) on `source` as candidate
        `name`; no file is written and no trial is made. Returns ok, errors, warnings and compile facts."""
        return await _answer(session.validate(name, source))

    @server.tool()
    async def submit(name: str, source: str, strategy: str = "") -> dict[str, Any]:
        """Save `source` into candidate file `name` (a .py in the problem directory) exactly as an editor
        saves it; the engine scores it like any save. `strategy` labels the trial (as a `# strategy:`
        last line unless the source has one, so line numbers in answers are the source's own). Returns trial_id (an existing one when the source is not new).
        A `.cu`/`.cuh` name saves a CUDA source that a candidate's load(sources=[...]) builds: no trial of its own."""
        return await _answer(session.submit(name, source, strategy))

    @server.tool()
    async def result(trial_id: str, wait_s: float = 120.0) -> dict[str, Any]:
        """Wait up to `wait_s` seconds (at most 600) for the trial's final state and decision. Returns state,
        message, numbers with their label (GPU, dtype, shape, baseline, date), flags and whether they
        disqualify, verdicts with evidence, next_action with its reason, and the budget left; done is
        false when it was still running at the deadline."""
        return await _answer(session.result(trial_id, wait_s))

    @server.tool()
    async def tree() -> dict[str, Any]:
        """The tree of trials: an ASCII drawing, one row per trial, the heads, the best and the budget."""
        return await _answer(session.tree())

    @server.tool()
    async def best() -> dict[str, Any]:
        """The best trial (correct, timed on a GPU, unflagged) with its numbers, or why there is none."""
        return await _answer(session.best())

    @server.tool()
    async def branch(trial_id: str) -> dict[str, Any]:
        """Write a trial's source back into its file and make it the head: the next submit grows from it."""
        return await _answer(session.branch(trial_id))

    @server.tool()
    async def cancel(trial_id: str) -> dict[str, Any]:
        """Stop a trial that is validating, queued or running (a hang you need not wait out, a save you replaced):
        it stays in the tree as `cancelled`, and the queue moves on."""
        return await _answer(session.cancel(trial_id))

    @server.tool()
    async def profile(trial_id: str) -> dict[str, Any]:
        """Queue a profile of a correct GPU trial (Nsight Compute counters where they can be read);
        result(trial_id) returns the verdicts when it is done."""
        return await _answer(session.profile(trial_id))

    @server.tool()
    async def log(trial_id: str) -> dict[str, Any]:
        """The trial's state and what happened (`message`: the failure as the harness said it), then the last
        64 KB of its job log (what the candidate printed, the harness's messages, interpreter warnings)."""
        return await _answer(session.log(trial_id))

    @server.tool()
    async def finalize() -> dict[str, Any]:
        """Re-benchmark the best trial with no cached baseline and write final/REPORT.md; refused when
        there is no best or it is flagged."""
        return await _answer(session.finalize())

    @server.tool()
    async def generalize(trial_id: str) -> dict[str, Any]:
        """Check a trial where it was never tuned, as finalize will: sizes off the common block sizes, smaller
        and larger, non-contiguous and unaligned inputs, fresh seeds; untimed. Returns the card's
        "generalizes:" line and each case. Those cases are then not held out for that source: the card says so."""
        return await _answer(session.generalize(trial_id))

    @server.resource("trialtui://reference", name="reference", mime_type="text/x-python",
                     description="reference.py: the PyTorch reference every candidate is checked against")
    def reference() -> str:
        return session.reference_text()

    @server.resource("trialtui://config", name="config", mime_type="application/toml",
                     description="trialtui.toml: dtype, seeds, tolerances, sizes, baselines, budget, targets")
    def config() -> str:
        return session.config_text()

    @server.resource("trialtui://report", name="report", mime_type="text/markdown",
                     description="final/REPORT.md: the report card finalize() wrote")
    def report() -> str:
        try:
            return session.report_text()
        except AgentError as exc:
            raise ResourceError(str(exc)) from None

    return server


def _require_token(app: Any, token: str) -> Any:
    """The HTTP app behind a bearer token: a request without it gets 401 and never reaches MCP."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b"trialtui mcp: a bearer token is required\n"})
                return
        await app(scope, receive, send)

    return guarded


def _first_refusal(group: BaseExceptionGroup) -> AgentError | None:
    for exc in group.exceptions:
        found = _first_refusal(exc) if isinstance(exc, BaseExceptionGroup) else exc
        if isinstance(found, AgentError):
            return found
    return None


async def serve(session: AgentSession, *, http_port: int | None = None, out: TextIO = sys.stderr) -> None:
    """Serve until the client hangs up (stdio) or the process is stopped (HTTP); the engine stops with it
    if this session started it, and is left running if it belongs to another front end.

    Over stdio the engine starts inside the transport, where the SDK has pointed fd 1 away from the
    wire: nothing a job process inherits can write into the protocol.
    """
    server = build_server(session)
    try:
        if http_port is None:
            try:
                await server.run_stdio_async()
            except BaseExceptionGroup as group:  # a refusal at start (lifespan) comes wrapped by the transport
                raise _first_refusal(group) or group
            return
        import uvicorn

        await session.start()
        token = secrets.token_urlsafe(32)
        app = _require_token(server.streamable_http_app(host="127.0.0.1"), token)
        config = uvicorn.Config(app, host="127.0.0.1", port=http_port, log_level="warning")
        out.write(f"trialtui mcp: http://127.0.0.1:{http_port}/mcp (loopback only)\n"
                  f"  token: {token}\n  send it as the header  Authorization: Bearer {token}\n")
        out.flush()
        await uvicorn.Server(config).serve()
    finally:
        await session.close()
