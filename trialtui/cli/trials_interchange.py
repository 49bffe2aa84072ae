"""`trialtui trials export|import`: the trials out as JSON lines, a markdown table or trial_manager's
layout, and trial_manager's trials in (refused while a running engine holds the store)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import click

from trialtui.cli.refusal import JsonCommand, Refusal
from trialtui.cli.trials_access import config_of, dir_option, echo_json, json_option, opened_store
from trialtui.core.interchange import HF_STATE, InterchangeError, hf_state, import_hf, markdown_table, trials_jsonl
from trialtui.core.problem import REFERENCE_NAME
from trialtui.core.store import atomic_write


@click.command()
@click.option("--format", "fmt", type=click.Choice(["jsonl", "md", "hf"]), required=True)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="jsonl, md: a file (default: standard output). hf: the trials directory (default: ./trials).",
)
@dir_option
def export(fmt: str, out: Path | None, root: Path) -> None:
    """Write the trials as JSON lines, a markdown table for a PR, or trial_manager's layout."""
    baseline = config_of(root).primary_baseline
    with opened_store(root) as store:
        found = store.trials()
        sources = {t.id: store.snapshot_path(t.sha256) for t in found} if fmt == "hf" else {}
    if fmt == "hf":
        name = root.resolve().name
        kernel_dir = (out or Path("trials")) / name
        kernel_dir.mkdir(parents=True, exist_ok=True)
        for trial in found:
            atomic_write(kernel_dir / f"{trial.id}.py", sources[trial.id].read_bytes())
        state = hf_state(name, root.resolve() / REFERENCE_NAME, found, baseline)
        atomic_write(kernel_dir / HF_STATE, (json.dumps(state, indent=2) + "\n").encode())
        click.echo(f"wrote {len(found)} trials to {kernel_dir}")
        return
    if fmt == "jsonl":
        text = trials_jsonl(found)
    else:
        text = markdown_table(root.resolve().name, found, baseline)
    if out is None:
        click.echo(text, nl=False)
    else:
        atomic_write(out, text.encode())


@click.command(name="import", cls=JsonCommand)
@click.option("--format", "fmt", type=click.Choice(["hf"]), required=True)
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@dir_option
@json_option
def import_(fmt: str, directory: Path, root: Path, as_json: bool) -> None:
    """Add the trials of a trial_manager directory (trials/<kernel>/ with state.json) to this problem.

    Trials whose file and source are already here are matched, not duplicated.
    """
    state_path = directory / HF_STATE
    if not state_path.exists():
        kernels = sorted(p.parent.name for p in directory.glob(f"*/{HF_STATE}"))
        hint = f"; pass one of: {', '.join(shlex.quote(str(directory / k)) for k in kernels)}" if kernels else ""
        raise Refusal(f"no {HF_STATE} in {directory}{hint}", 1)
    try:
        state = json.loads(state_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise Refusal(f"{state_path}: {exc}", 1) from exc
    baseline = config_of(root).primary_baseline
    with opened_store(root, writer=True) as store:
        try:
            mapping, added = import_hf(store, directory, state, baseline)
        except InterchangeError as exc:
            raise Refusal(str(exc), 1) from exc
    if as_json:
        echo_json({"imported": mapping, "added": added})
    else:
        click.echo(f"imported {len(mapping)} trials from {directory} ({len(mapping) - len(added)} were already here)")
