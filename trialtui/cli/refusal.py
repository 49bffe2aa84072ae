"""How a command that will not run says so (`Refusal`, `fail`, `JsonGroup`'s commands under --json), the
problem a path names or a refusal, and the executor `--executor` names or a refusal: what the modules of
`trialtui/cli/` share, below all of them.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from trialtui.core.problem import Problem, ProblemError
from trialtui.core.problem_dir import load_problem


class Refusal(click.ClickException):
    """A command that will not run: a line on stderr, or under --json one JSON object on stdout."""

    def __init__(self, message: str, code: int = 2, *, as_json: bool | None = None, **fields) -> None:
        super().__init__(message)
        self.exit_code = code
        self.fields = fields
        ctx = click.get_current_context(silent=True)
        self.as_json = as_json if as_json is not None else bool(ctx is not None and ctx.params.get("as_json"))

    def show(self, file=None) -> None:
        if self.as_json:
            click.echo(json.dumps({"state": "refused", "message": self.message, "exit_code": self.exit_code,
                                   **self.fields}, default=str))
        else:
            click.echo(f"trialtui: {self.message}", err=True)


def fail(message: str, code: int = 2) -> None:
    raise Refusal(message, code)


class JsonCommand(click.Command):
    """Under --json a usage error (a missing FILE, a value out of range) is one JSON object too, exit 2:
    click checks arguments before it has read --json, so Refusal cannot tell by itself."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        flags = {opt for param in self.params if param.name == "as_json" for opt in param.opts}
        given = args[:args.index("--")] if "--" in args else list(args)  # click's parser consumes `args`
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            if flags.isdisjoint(given):
                raise
            raise Refusal(exc.format_message(), exc.exit_code, as_json=True) from exc


class JsonGroup(click.Group):
    """A group whose commands are JsonCommands: one with --json never answers it with click's usage text."""

    command_class = JsonCommand


def problem_for(path: Path) -> Problem:
    """The problem a file or directory belongs to, or a clear message and exit 2."""
    root = path if path.is_dir() else path.parent
    try:
        return load_problem(root)
    except ProblemError as exc:
        raise Refusal(str(exc)) from exc


def executor_option(command):
    return click.option("--executor", "executor_url", default=None, metavar="URL",
                        help="Where jobs run: local (default), ssh://user@host[:port] or ray://ADDRESS; "
                        "else [executor] url in trialtui.toml (docs/SCALING.md).")(command)


def opened_executor(url: str | None, problem, device: str | None = None):
    """The executor `--executor` or the problem's [executor] names, connected; a refusal when it cannot be."""
    from trialtui.core.executor import ExecutorError
    from trialtui.engine.executors import executor_for

    try:
        executor = executor_for(url, problem.config.executor, device)
        executor.open()
    except ExecutorError as exc:
        fail(str(exc))
    return executor
