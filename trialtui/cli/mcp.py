"""`trialtui mcp [DIR]`: a Model Context Protocol server for coding agents, on the problem's one engine.

Registered in cli/commands.py. The server is trialtui/agent/; this module only parses options. Over stdio
(the default) an MCP client starts it as a subprocess; `--http` listens on 127.0.0.1 only and
requires the bearer token it prints.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from trialtui.cli.refusal import executor_option, opened_executor, problem_for


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("directory", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--http", "http", is_flag=True, help="Serve streamable HTTP on 127.0.0.1 (token printed) instead of stdio.")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="With --http.")
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default=None, help="Default: cuda when present.")
@click.option("--replay", "recordings", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              hidden=True, help="demo --agent: correctness on the CPU, GPU numbers only from these recordings, labelled.")
@executor_option
def mcp(directory: Path | None, http: bool, port: int, device: str | None, recordings: Path | None,
        executor_url: str | None) -> None:
    """Serve DIRECTORY (default: the current one) to a coding agent over MCP: problem, validate, submit,
    result, tree, best, branch, cancel, profile, log, finalize, generalize (docs/AGENTS.md).

    It starts the directory's engine, or attaches to the one a TUI or watcher runs there; a TUI
    opened later attaches to this one and shows the agent's trials live.
    """
    import anyio

    from trialtui.agent.server import serve
    from trialtui.agent.session import AgentError, AgentSession

    root = (directory or Path.cwd()).resolve()
    executor = None if recordings is not None else opened_executor(executor_url, problem_for(root), device)
    make_engine = _replay_engine(recordings) if recordings is not None else _engine_on(executor, device)
    try:
        try:
            session = AgentSession(root, device=device, make_engine=make_engine)
        except AgentError as exc:
            click.echo(f"trialtui mcp: {exc}", err=True)
            sys.exit(2)
        try:
            anyio.run(lambda: serve(session, http_port=port if http else None))
        except KeyboardInterrupt:
            pass
        except AgentError as exc:
            click.echo(f"trialtui mcp: {exc}", err=True)
            sys.exit(2)
    finally:
        if executor is not None:
            executor.close()


def _engine_on(executor, device: str | None):
    """The agent's engine, its jobs where `--executor` (or [executor] in trialtui.toml) says."""
    from trialtui.engine.loop import Engine

    def make(problem):
        return Engine(problem, device=device, executor=executor)

    return make


def _replay_engine(recordings: Path):
    """The demo's CPU engine: real correctness, recorded GPU numbers of the very same source, labelled so."""
    from trialtui.demo.replay import ReplayBench, load_recordings
    from trialtui.engine.lanes import Lane, Lanes
    from trialtui.engine.loop import Engine

    def make(problem):
        return Engine(problem, device="cpu", lanes=Lanes([Lane("cpu", None)]),
                      bench=ReplayBench(load_recordings(recordings)))

    return make


if __name__ == "__main__":
    mcp()
