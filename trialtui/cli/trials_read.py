"""`trialtui trials status|best|show|diff`: the trial tree read from the store without its lock, so they
work while the TUI runs."""

from __future__ import annotations

import difflib
import json
import time
from pathlib import Path
from textwrap import indent
from typing import Any

import click

from trialtui.cli.refusal import JsonCommand
from trialtui.cli.trials_access import config_of, dir_argument, dir_option, echo_json, json_option, opened_store
from trialtui.core import provenance, tree
from trialtui.core.model import Trial
from trialtui.core.store import STATE_DIR
from trialtui.core.text import fmt_us
from trialtui.engine.stale import stale_now


def _origin(trial: Trial) -> dict[str, Any]:
    """Where a trial's numbers come from, for --json: measured here, replayed or imported, and the record."""
    found = provenance.of_result(trial.result)
    return {
        "measured_here": found.measured_here if found else None,
        "origin": (found.short() or "measured here") if found else None,
        provenance.KEY: found.to_dict() if found else None,
    }


def _row(trial: Trial, baseline: str, heads: dict[str, str], best_id: str | None) -> dict[str, Any]:
    """One trial as a line of `status --json`: enough to draw the tree, not the whole record."""
    return {
        "id": trial.id,
        "parent": trial.parent,
        "file": trial.file,
        "state": trial.state,
        "strategy": tree.label(trial) or None,
        "speedup": trial.speedup(baseline),
        "median_us": trial.median_us,
        "created": trial.created,
        "head": trial.id in heads.values(),
        "best": trial.id == best_id,
        "correct_on_cpu": tree.correct_on_cpu(trial),
        "never_best": tree.disqualified(trial),
        **_origin(trial),
    }


@click.command(cls=JsonCommand)
@dir_argument
@dir_option
@json_option
def status(root: Path, as_json: bool) -> None:
    """Draw the trial tree: icons, speedups, heads (▸) and the best trial (<<< BEST)."""
    cfg = config_of(root)
    baseline = cfg.primary_baseline
    with opened_store(root) as store:
        found, heads = store.trials(), store.heads
    top = tree.best(found, baseline)
    spent = tree.budget(found, cfg.max_trials)
    if as_json:
        best_id = top.id if top else None
        echo_json(
            {
                "problem": root.resolve().name,
                "baseline": baseline,
                "best": best_id,
                "no_best_reason": None if top else tree.no_best_reason(found, baseline),
                "budget": {"used": spent.used, "max": spent.limit, "left": spent.left, "spent": spent.spent},
                "heads": heads,
                "trials": [_row(t, baseline, heads, best_id) for t in found],
            }
        )
        return
    click.echo(f"Trial tree: {root.resolve().name}")
    click.echo(f"  Baseline: {baseline}")
    click.echo(f"  Best: {top.id}, {tree.summary(top, baseline)}" if top
               else f"  Best: none — {tree.no_best_reason(found, baseline)}")
    elsewhere = provenance.elsewhere(top.result) if top else ""
    if elsewhere:
        click.echo(f"        {elsewhere}")
    click.echo(f"  Budget: {spent.used}/{spent.limit} GPU trials{' (spent)' if spent.spent else ''}")
    click.echo(f"  Trials: {len(found)}")
    click.echo()
    here = {file: head for file, head in heads.items() if (root / file).exists()}  # ▸ head: what the file holds
    drawing = tree.render_tree(found, best_id=top.id if top else None, heads=here, baseline=baseline)
    click.echo(indent(drawing, "  ") if drawing else "  (no trials yet)")
    gone = sorted(heads.items() - here.items())
    if gone:
        click.echo()
    for file, head in gone:
        click.echo(f"  {file} is deleted (its head was {head}: saved again, it continues from there)")
    stale = stale_now(root, found)
    if stale:
        click.echo(f"\n  Stale: {', '.join(stale)}, measured against another reference.py than the one here: "
                   "re-run them (r in the TUI)")
    latest = max(found, key=lambda t: tree.id_number(t.id), default=None)
    decision = latest.decision if latest is not None else None
    if decision is not None:
        key = f" [{decision.key}]" if decision.key else ""
        click.echo(f"\n  Next ({latest.id}): {decision.action}{key} — {decision.reason}")


@click.command(cls=JsonCommand)
@dir_argument
@dir_option
@json_option
@click.pass_context
def best(ctx: click.Context, root: Path, as_json: bool) -> None:
    """The best trial: highest speedup against the primary baseline among correct, unflagged GPU trials."""
    baseline = config_of(root).primary_baseline
    with opened_store(root) as store:
        found = store.trials()
        top = tree.best(found, baseline)
        snapshot = store.snapshot_path(top.sha256) if top else None
    if top is None:
        reason = tree.no_best_reason(found, baseline)
        click.echo(json.dumps({"best": None, "reason": reason}) if as_json else f"No best: {reason}.")
        ctx.exit(1)
    base = top.baseline(baseline)
    fields = {
        "best_trial": top.id,
        "speedup": top.speedup(baseline),
        "baseline": baseline,
        "baseline_us": base.get("median_us"),
        "time_us": top.median_us,
        "strategy": tree.label(top) or None,
        "file": top.file,
        "snapshot": str(snapshot),
        "parent": top.parent,
        "origin": (provenance.of_result(top.result) or provenance.foreign()).label(),
    }
    if as_json:
        echo_json({**fields, provenance.KEY: _origin(top)[provenance.KEY]})
        return
    for key, value in fields.items():
        click.echo(f"{key}: {value if value is not None else ('root' if key == 'parent' else '—')}")


@click.command(cls=JsonCommand)
@click.argument("trial_id")
@dir_option
@json_option
def show(trial_id: str, root: Path, as_json: bool) -> None:
    """Everything recorded about one trial."""
    baseline = config_of(root).primary_baseline
    with opened_store(root) as store:
        trial = store.get(trial_id)
        snapshot = store.snapshot_path(trial.sha256)
    if as_json:
        echo_json({**trial.to_dict(), "snapshot": str(snapshot), **_origin(trial)})
        return
    result = trial.result
    created = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(trial.created))
    click.echo(f"{trial.id}  {trial.file}  {trial.state}{_measured(trial, baseline)}")
    click.echo(f"  parent: {trial.parent or 'root'}   created: {created}   sha256: {trial.sha256[:12]}")
    click.echo(f"  strategy: {trial.strategy or '—'}   note: {trial.note or '—'}")
    base_us = trial.baseline(baseline).get("median_us")
    if base_us is not None:
        click.echo(f"  {baseline}: {fmt_us(base_us)}")
    env = (result.env if result else None) or {}
    origin = provenance.of_result(result)
    if origin is not None and not origin.measured_here:
        click.echo(f"  numbers: {origin.label()}")
        if origin.recording:
            click.echo(f"  recording: {origin.recording}")
        for hop in origin.imports:
            click.echo(f"  imported: {hop.format} from {hop.source}" + (f" ({hop.at})" if hop.at else ""))
    if result and env:  # a timeout's result knows where it ran, not its dtype or sizes
        where = [env.get("gpu") or env.get("device"), result.dtype, f"sizes {result.sizes}" if result.sizes else None]
        said = "measured on" if origin is None or origin.measured_here else "timed on"
        if any(where):
            click.echo(f"  {said}: " + ", ".join(str(part) for part in where if part))
    if result and result.message:
        click.echo(f"  message: {result.message}")
    if stale_now(root, [trial]):
        click.echo("  stale: measured against another reference.py than the one here; re-run it")
    for why in tree.disqualified(trial):
        click.echo(f"  never best: {why}")
    for verdict in trial.verdicts:
        click.echo(f"  verdict [{verdict.severity}] {verdict.title}: {verdict.evidence}")
    if trial.decision is not None:
        click.echo(f"  next: {trial.decision.action}: {trial.decision.reason}")
    if trial.log:
        click.echo(f"  log: {root / STATE_DIR / trial.log}")
    click.echo(f"  source: {snapshot}")


def _measured(trial: Trial, baseline: str) -> str:
    """The trial's own numbers for its line (time, speedup, speed-of-light); '' where it has none."""
    if tree.correct_on_cpu(trial):
        return ": on the CPU interpreter, not timed"
    if trial.median_us is None:
        return ""
    numbers = [fmt_us(trial.median_us)]
    speedup = trial.speedup(baseline)
    if speedup is not None:
        origin = provenance.short(trial.result)
        numbers.append(f"{speedup:.2f}x vs {baseline}" + (f" ({origin})" if origin else ""))
    if trial.sol is not None:
        numbers.append(f"SoL {trial.sol:.0%}")
    return ": " + ", ".join(numbers)


@click.command()
@click.argument("first")
@click.argument("second", required=False)
@dir_option
def diff(first: str, second: str | None, root: Path) -> None:
    """Diff two trials' sources; with one ID, what that trial changed from its parent."""
    with opened_store(root) as store:
        new = store.get(second or first)
        old = store.get(first) if second else (store.get(new.parent) if new.parent else None)
        old_text = store.read_source(old) if old else ""
        new_text = store.read_source(new)
    lines = difflib.unified_diff(
        old_text.splitlines(keepends=True),
        new_text.splitlines(keepends=True),
        fromfile=f"{old.id}/{old.file}" if old else "/dev/null",
        tofile=f"{new.id}/{new.file}",
    )
    click.echo("".join(lines), nl=False)
