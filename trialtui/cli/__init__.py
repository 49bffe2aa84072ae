"""The `trialtui` command line, a front end beside the TUI and the agent: `commands` holds the group and
its top-level commands, one module per subcommand group beside it, `refusal` what they all share.
`main` is the console script's entry point and `python -m trialtui`'s."""

from trialtui.cli.commands import cli, main

__all__ = ["cli", "main"]
