"""`trialtui trials …`: the trial tree from the shell, and the way in and out of trial_manager's layout.

Reading commands (trials_read.py) open the store without its lock, so they work while the TUI runs.
Commands that write take the lock; while a running TUI or watcher holds it, note, branch, rerun and
finalize (here) are sent to that engine through its control channel (engine.control) and the TUI shows
them at once; import (trials_interchange.py) is refused, naming the holder.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from trialtui.cli.refusal import JsonGroup, Refusal, executor_option, opened_executor
from trialtui.cli.trials_access import (ask_engine, dir_argument, dir_option, echo_json, held, json_option, opened_store,
                                         problem_of, sent_via)
from trialtui.cli.trials_interchange import export, import_
from trialtui.cli.trials_read import best, diff, show, status
from trialtui.core import tree
from trialtui.core.problem import Problem
from trialtui.core.store import Store


@click.group("trials", cls=JsonGroup)
def trials() -> None:
    """The trial tree of a problem: status, best, branch back, finalize, export and import."""


for command in (status, best, show, diff, export, import_):
    trials.add_command(command)


@trials.command()
@click.argument("trial_id")
@click.argument("text", nargs=-1, required=True)
@dir_option
def note(trial_id: str, text: tuple[str, ...], root: Path) -> None:
    """Label a trial; the label shows instead of its `# strategy:` comment. An empty TEXT clears it."""
    label = " ".join(text).strip() or None
    locked = held(root)
    if locked is not None:
        reply = ask_engine(root, locked, "note", {"trial": trial_id, "text": label})
        click.echo(f"{reply['trial']}: {reply['label'] or '(no label)'} {sent_via(reply)}")
        return
    with opened_store(root, writer=True) as store:
        trial = store.update(trial_id, note=label)
    click.echo(f"{trial.id}: {tree.label(trial) or '(no label)'}")


@trials.command()
@click.argument("trial_id")
@dir_option
@json_option
def branch(trial_id: str, root: Path, as_json: bool) -> None:
    """Put a trial's source back into its file and move the head there: the next save grows from it."""
    locked = held(root)
    if locked is not None:
        reply = ask_engine(root, locked, "branch", {"trial": trial_id})
        head, file, recorded_id, via = reply["head"], reply["file"], reply["recorded"], f" {sent_via(reply)}"
    else:
        with opened_store(root, writer=True) as store:
            target = store.get(trial_id)
            recorded = store.branch(trial_id)
        head, file, recorded_id, via = target.id, target.file, recorded.id if recorded else None, ""
    if as_json:
        echo_json({"head": head, "file": file, "recorded": recorded_id})
        return
    if recorded_id:
        click.echo(f"{file} held changes that were not a trial yet: kept as {recorded_id}")
    click.echo(f"{file} now holds {head}; its next save grows from {head}{via}")


@trials.command()
@click.argument("trial_ids", nargs=-1)
@click.option("--interrupted", is_flag=True, help="Every interrupted trial, newest save first.")
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default=None, help="Default: cuda when a GPU is visible.")
@executor_option
@dir_option
@json_option
def rerun(trial_ids: tuple[str, ...], interrupted: bool, device: str | None, executor_url: str | None, root: Path,
          as_json: bool) -> None:
    """Measure trials again: queued in the running TUI or watcher, or else run here until they are done."""
    if bool(trial_ids) == interrupted:
        raise Refusal("give trial IDs or --interrupted (not both)", 2)
    locked = held(root)
    if locked is not None:
        reply = ask_engine(root, locked, "rerun", {"trials": list(trial_ids), "interrupted": interrupted})
        if as_json:
            echo_json({"queued": reply["queued"], "skipped": reply["skipped"], "pid": reply["pid"]})
            return
        for why in reply["skipped"].values():
            click.echo(f"not queued: {why}")
        click.echo(f"queued {', '.join(reply['queued']) or 'nothing'} {sent_via(reply)}")
        return
    problem = problem_of(root)
    executor = opened_executor(executor_url, problem, device)
    with opened_store(root, writer=True) as store, _closing(executor):
        engine = local_engine(problem, store, device, executor)
        ids = [t.id for t in engine.interrupted()] if interrupted else [store.get(t).id for t in trial_ids]
        if not ids:
            click.echo("no interrupted trials")
            return
        from trialtui.engine.headless import HeadlessPrinter

        engine.subscribe(HeadlessPrinter(as_json=as_json))
        try:
            asyncio.run(engine.run(only=ids))
        finally:
            engine.close()


def local_engine(problem: Problem, store: Store, device: str | None, executor: Any = None) -> Any:
    """The engine `trials rerun` runs when no other holds the problem (a seam for tests)."""
    from trialtui.engine.loop import Engine

    return Engine(problem, device=device, store=store, validate_workers=1, executor=executor)


@contextlib.contextmanager
def _closing(executor: Any) -> Iterator[None]:
    try:
        yield
    finally:
        executor.close()


@trials.command()
@click.argument("trial_id", required=False)
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default=None, help="Default: cuda when a GPU is visible.")
@executor_option
@dir_option
@json_option
def finalize(trial_id: str | None, device: str | None, executor_url: str | None, root: Path, as_json: bool) -> None:
    """Re-benchmark a trial (default: the best) with no cached baseline; write final/ with its report.

    Holding the store's lock meanwhile also keeps a watcher's GPU jobs from running beside it.
    """
    from trialtui.core.report_card import Finalized
    from trialtui.engine.executors.local import LocalExecutor
    from trialtui.engine.finalize import FinalizeError, finalize as finalize_trial

    problem = problem_of(root)
    locked = held(root)
    if locked is not None:
        reply = ask_engine(root, locked, "finalize", {"trial": trial_id, "device": device}, timeout=None)
        sent = Finalized.from_wire(reply)
        if as_json:
            echo_json(sent.card.to_json())
        else:
            click.echo(sent.text, nl=False)
            click.echo(f"\nwrote {sent.out_dir / 'REPORT.md'} and {sent.out_dir / 'report.json'} {sent_via(reply)}")
        return
    with opened_store(root, writer=True) as store:
        found = store.trials()
        trial = store.get(trial_id) if trial_id else tree.best(found, problem.config.primary_baseline)
        if trial is None:
            raise Refusal(f"nothing to finalize: {tree.no_best_reason(found, problem.config.primary_baseline)}", 1)
        if tree.disqualified(trial):
            raise Refusal(f"{trial.id} is never finalized: {'; '.join(tree.disqualified(trial))}", 1)
        executor = opened_executor(executor_url, problem, device)
        try:
            here = isinstance(executor, LocalExecutor)  # finalize's own bench_file, as before
            done = finalize_trial(problem, store, trial, device=device if here else device or executor.device,
                                  bench=None if here else executor.bench, profile=executor.profile)
        except FinalizeError as exc:
            raise Refusal(str(exc), 1) from exc
        finally:
            executor.close()
    if as_json:
        echo_json(done.card.to_json())
    else:
        click.echo(done.text, nl=False)
        click.echo(f"\nwrote {done.out_dir / trial.file}, {done.out_dir / 'REPORT.md'}, {done.out_dir / 'report.json'}")


@trials.command()
@click.option("--repair", is_flag=True, help="Fix what can be fixed without guessing (needs the store: stop a running trialtui).")
@dir_argument
@dir_option
@json_option
@click.pass_context
def doctor(ctx: click.Context, repair: bool, root: Path, as_json: bool) -> None:
    """Check the store: it opens, snapshots match, parents and heads are valid, nothing left in flight.

    Exit status 1 while an issue is left; notes (a recovered store, interrupted trials, files nothing
    owns) are said and need nothing done.
    """
    from trialtui.core import doctor as checks

    locked = held(root)
    with opened_store(root, writer=repair and locked is None) as store:
        issues = checks.check(store, writer_running=locked is not None)
        repaired = checks.repair(store, issues) if store.writer else []
        left = checks.check(store) if repaired else issues
    needs = [i for i in left if i.needs_attention]
    if as_json:
        echo_json({"issues": [i.to_dict() for i in issues], "repaired": [i.to_dict() for i in repaired],
                    "left": [i.to_dict() for i in left]})
    else:
        for issue in issues:
            fixed = " — repaired" if issue in repaired else (f" (--repair: {issue.repair})" if issue.repair else "")
            click.echo(f"{issue.code}: {issue.message}{fixed}")
        if repair and locked is not None:
            click.echo(f"not repaired: {locked}")
        notes = f" ({len(left) - len(needs)} note(s) above, nothing to do)" if len(left) > len(needs) else ""
        click.echo(f"{len(needs)} issue(s) left{notes}" if needs else f"store is healthy{notes}")
    ctx.exit(1 if needs else 0)
