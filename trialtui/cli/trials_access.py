"""How a `trialtui trials` command reaches its problem: the directory (one that is no problem refused as
`watch` and `bench` refuse it) and --json options, the store opened (or a refusal), and the running
engine that holds the store, asked through its control channel."""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from trialtui.cli.refusal import Refusal, problem_for
from trialtui.core.config import Config, ConfigError, load_config
from trialtui.core.problem import REFERENCE_NAME, Problem, ProblemError
from trialtui.core.problem_dir import load_problem
from trialtui.core.store import STATE_DIR, Store, StoreError, StoreLocked, UnknownTrial, lock_holder
from trialtui.engine import control


def dir_option(func: Any) -> Any:
    """--dir; a directory with neither a reference.py nor a store of trials is refused (exit 2), not shown as an
    empty tree. A problem whose reference is gone or no longer loads still shows (and `doctor` repairs) its trials."""

    @functools.wraps(func)
    def wrapped(*args: Any, root: Path, **kwargs: Any) -> Any:
        if not (root / REFERENCE_NAME).exists() and not (root / STATE_DIR).is_dir():
            problem_for(root)  # raises the refusal of watch, bench and the TUI: no reference.py, what makes one
        return func(*args, root=root, **kwargs)

    return click.option(
        "--dir",
        "root",
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        default=".",
        help="The problem directory (default: the current one).",
    )(wrapped)


def dir_argument(func: Any) -> Any:
    """`trials status DIR` as well as `--dir DIR`: the other commands take the directory as their argument."""

    @functools.wraps(func)
    def wrapped(*args: Any, directory: Path | None, root: Path, **kwargs: Any) -> Any:
        given = click.get_current_context().get_parameter_source("root") is not ParameterSource.DEFAULT
        if directory is not None and given and directory.resolve() != root.resolve():  # one would be dropped unsaid
            raise Refusal(f"two problem directories given, {directory} and --dir {root}: give one")
        return func(*args, root=directory or root, **kwargs)

    return click.argument("directory", required=False,
                          type=click.Path(exists=True, file_okay=False, path_type=Path))(wrapped)


def json_option(func: Any) -> Any:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(func)


@contextlib.contextmanager
def opened_store(root: Path, *, writer: bool = False) -> Iterator[Store]:
    try:
        with Store.open(root, writer=writer) as store:
            if store.recovery:
                click.echo(f"warning: {store.recovery}", err=True)
            yield store
    except StoreError as exc:
        raise Refusal(str(exc), 1) from exc
    except UnknownTrial as exc:
        raise Refusal(exc.args[0], 1) from exc


def held(root: Path) -> StoreLocked | None:
    """The running engine's lock, when one holds this problem; else None (the caller writes itself)."""
    return lock_holder(root)


def ask_engine(root: Path, locked: StoreLocked, op: str, args: dict[str, Any],
                timeout: float | None = 10.0) -> dict[str, Any]:
    """Send a command to the engine that holds the store; its refusal or silence is a clear message."""
    try:
        return control.send(root.resolve() / STATE_DIR, op, args, timeout=timeout)
    except control.Refused as exc:
        raise Refusal(str(exc), 1) from exc
    except control.Unavailable as exc:
        raise Refusal(f"{locked} (its control channel did not answer: {exc})", 1) from exc


def sent_via(reply: dict[str, Any]) -> str:
    return f"(sent to the running trialtui, pid {reply.get('pid')})"


def config_of(root: Path) -> Config:
    try:
        return load_config(root)
    except ConfigError as exc:
        raise Refusal(str(exc), 1) from exc


def problem_of(root: Path) -> Problem:
    try:
        return load_problem(root)
    except ProblemError as exc:
        raise Refusal(str(exc), 1) from exc


def echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2))
