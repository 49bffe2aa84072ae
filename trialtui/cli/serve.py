"""`trialtui serve DIR`: the TUI in a browser, through textual-serve.

Each browser tab gets its own `trialtui DIR` process behind a websocket. It binds to 127.0.0.1 by
default: the page drives a real terminal app that writes kernels' sources into DIR, so it is meant
for your own browser, or for one at the end of an SSH tunnel (`ssh -L 8000:127.0.0.1:8000 gpu-box`),
never for a network.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from trialtui.cli.refusal import problem_for

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def serve_command(directory: Path, theme: str | None) -> str:
    """The command textual-serve starts per browser tab: this interpreter, so the same install, exec'd by
    the shell so that the server is its parent and its death reaches the tab (trialtui/tui/served.py)."""
    parts = [sys.executable, "-m", "trialtui", "open", str(directory)]
    if theme:
        parts += ["--theme", theme]
    return f"exec {shlex.join(parts)}"


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("directory", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Anything but loopback lets others drive your TUI.")
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True)
@click.option("--theme", default=None, help="Theme name: trialtui, trialtui-light, trialtui-contrast, "
              "or one of your own in ~/.config/trialtui/themes/.")
def serve(directory: Path | None, host: str, port: int, theme: str | None) -> None:
    """Serve the TUI on DIRECTORY (default: the current one) to a browser at http://HOST:PORT."""
    root = (directory or Path.cwd()).resolve()
    problem_for(root)  # a directory that is not a problem says so here, not in the browser
    try:
        from textual_serve.server import Server
    except ImportError:
        click.echo("trialtui serve: textual-serve is not installed (pip install textual-serve)", err=True)
        sys.exit(2)
    if host not in LOOPBACK:
        click.echo(f"trialtui serve: listening on {host}: anyone who can reach it can drive this TUI", err=True)
    click.echo(f"trialtui serve: {root} at http://{'127.0.0.1' if host == '::1' else host}:{port} (ctrl+c stops)")
    Server(serve_command(root, theme), host=host, port=port, title=f"trialtui · {problem_for(root).name}").serve()


if __name__ == "__main__":
    serve()
