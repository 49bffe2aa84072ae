"""`trialtui trials …`: the trial tree from the shell, and the way in and out of trial_manager's layout.

Reading commands open the store without its lock, so they work while the TUI runs. Commands that
write take the lock; while a running TUI or watcher holds it, note, branch, rerun and finalize are
sent to that engine through its control channel (engine.control) and the TUI shows them at once;
import is refused, naming the holder.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import functools
import json
import time
from collections.abc import Iterator
from pathlib import Path
from textwrap import indent
from typing import Any

import click

from trialtui.cli_refusal import Refusal, executor_option, opened_executor
from trialtui.core import provenance, tree
from trialtui.core.config import Config, ConfigError, load_config
from trialtui.core.interchange import HF_STATE, InterchangeError, hf_state, import_hf, markdown_table, trials_jsonl
from trialtui.core.model import Trial
from trialtui.core.problem import REFERENCE_NAME, Problem, ProblemError
from trialtui.core.problem_dir import load_problem
from trialtui.core.store import (
    STATE_DIR,
    Store,
    StoreError,
    StoreLocked,
    UnknownTrial,
    atomic_write,
    lock_holder,
)
from trialtui.engine import control

def _dir_option(func: Any) -> Any:
    return click.option(
        "--dir",
        "root",
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        default=".",
        help="The problem directory (default: the current one).",
    )(func)


def _dir_argument(func: Any) -> Any:
    """`trials status DIR` as well as `--dir DIR`: the other commands take the directory as their argument."""

    @functools.wraps(func)
    def wrapped(*args: Any, directory: Path | None, root: Path, **kwargs: Any) -> Any:
        return func(*args, root=directory or root, **kwargs)

    return click.argument("directory", required=False,
                          type=click.Path(exists=True, file_okay=False, path_type=Path))(wrapped)


def _json_option(func: Any) -> Any:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(func)


@contextlib.contextmanager
def _store(root: Path, *, writer: bool = False) -> Iterator[Store]:
    try:
        with Store.open(root, writer=writer) as store:
            if store.recovery:
                click.echo(f"warning: {store.recovery}", err=True)
            yield store
    except StoreError as exc:
        raise Refusal(str(exc), 1) from exc
    except UnknownTrial as exc:
        raise Refusal(exc.args[0], 1) from exc


def _held(root: Path) -> StoreLocked | None:
    """The running engine's lock, when one holds this problem; else None (the caller writes itself)."""
    return lock_holder(root)


def _ask_engine(root: Path, locked: StoreLocked, op: str, args: dict[str, Any],
                timeout: float | None = 10.0) -> dict[str, Any]:
    """Send a command to the engine that holds the store; its refusal or silence is a clear message."""
    try:
        return control.send(root.resolve() / STATE_DIR, op, args, timeout=timeout)
    except control.Refused as exc:
        raise Refusal(str(exc), 1) from exc
    except control.Unavailable as exc:
        raise Refusal(f"{locked} (its control channel did not answer: {exc})", 1) from exc


def _via(reply: dict[str, Any]) -> str:
    return f"(sent to the running trialtui, pid {reply.get('pid')})"


def _config(root: Path) -> Config:
    try:
        return load_config(root)
    except ConfigError as exc:
        raise Refusal(str(exc), 1) from exc


def _problem(root: Path) -> Problem:
    try:
        return load_problem(root)
    except ProblemError as exc:
        raise Refusal(str(exc), 1) from exc


def _echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2))


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


@click.group("trials")
def trials() -> None:
    """The trial tree of a problem: status, best, branch back, finalize, export and import."""


@trials.command()
@_dir_argument
@_dir_option
@_json_option
def status(root: Path, as_json: bool) -> None:
    """Draw the trial tree: icons, speedups, heads (▸) and the best trial (<<< BEST)."""
    cfg = _config(root)
    baseline = cfg.primary_baseline
    with _store(root) as store:
        found, heads = store.trials(), store.heads
    top = tree.best(found, baseline)
    spent = tree.budget(found, cfg.max_trials)
    if as_json:
        best_id = top.id if top else None
        _echo_json(
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
    drawing = tree.render_tree(found, best_id=top.id if top else None, heads=heads, baseline=baseline)
    click.echo(indent(drawing, "  ") if drawing else "  (no trials yet)")
    latest = max(found, key=lambda t: tree.id_number(t.id), default=None)
    if latest is not None and latest.decision:
        key = f" [{latest.decision['key']}]" if latest.decision.get("key") else ""
        click.echo(f"\n  Next ({latest.id}): {latest.decision['action']}{key} — {latest.decision['reason']}")


@trials.command()
@_dir_argument
@_dir_option
@_json_option
@click.pass_context
def best(ctx: click.Context, root: Path, as_json: bool) -> None:
    """The best trial: highest speedup against the primary baseline among correct, unflagged GPU trials."""
    baseline = _config(root).primary_baseline
    with _store(root) as store:
        found = store.trials()
        top = tree.best(found, baseline)
        snapshot = store.snapshot_path(top.sha256) if top else None
    if top is None:
        reason = tree.no_best_reason(found, baseline)
        click.echo(json.dumps({"best": None, "reason": reason}) if as_json else f"No best: {reason}.")
        ctx.exit(1)
    base = ((top.result or {}).get("baselines") or {}).get(baseline) or {}
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
        _echo_json({**fields, provenance.KEY: _origin(top)[provenance.KEY]})
        return
    for key, value in fields.items():
        click.echo(f"{key}: {value if value is not None else ('root' if key == 'parent' else '—')}")


@trials.command()
@click.argument("trial_id")
@_dir_option
@_json_option
def show(trial_id: str, root: Path, as_json: bool) -> None:
    """Everything recorded about one trial."""
    baseline = _config(root).primary_baseline
    with _store(root) as store:
        trial = store.get(trial_id)
        snapshot = store.snapshot_path(trial.sha256)
    if as_json:
        _echo_json({**trial.to_dict(), "snapshot": str(snapshot), **_origin(trial)})
        return
    result = trial.result or {}
    created = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(trial.created))
    click.echo(f"{trial.id}  {trial.file}  {trial.state}")
    click.echo(f"  parent: {trial.parent or 'root'}   created: {created}   sha256: {trial.sha256[:12]}")
    click.echo(f"  strategy: {trial.strategy or '—'}   note: {trial.note or '—'}")
    click.echo(f"  {baseline}: {tree.summary(trial, baseline)}")
    env = result.get("env") or {}
    origin = provenance.of_result(result)
    if origin is not None and not origin.measured_here:
        click.echo(f"  numbers: {origin.label()}")
        if origin.recording:
            click.echo(f"  recording: {origin.recording}")
        for hop in origin.imports:
            click.echo(f"  imported: {hop.format} from {hop.source}" + (f" ({hop.at})" if hop.at else ""))
    if env:
        where = env.get("gpu") or env.get("device")
        said = "measured on" if origin is None or origin.measured_here else "timed on"
        click.echo(f"  {said}: {where}, {result.get('dtype')}, sizes {result.get('sizes')}")
    if result.get("message"):
        click.echo(f"  message: {result['message']}")
    for why in tree.disqualified(trial):
        click.echo(f"  never best: {why}")
    for verdict in trial.verdicts:
        click.echo(f"  verdict [{verdict.get('severity')}] {verdict.get('title')}: {verdict.get('evidence')}")
    if trial.decision:
        click.echo(f"  next: {trial.decision.get('action')}: {trial.decision.get('reason')}")
    if trial.log:
        click.echo(f"  log: {root / STATE_DIR / trial.log}")
    click.echo(f"  source: {snapshot}")


@trials.command()
@click.argument("first")
@click.argument("second", required=False)
@_dir_option
def diff(first: str, second: str | None, root: Path) -> None:
    """Diff two trials' sources; with one ID, what that trial changed from its parent."""
    with _store(root) as store:
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


@trials.command()
@click.argument("trial_id")
@click.argument("text", nargs=-1, required=True)
@_dir_option
def note(trial_id: str, text: tuple[str, ...], root: Path) -> None:
    """Label a trial; the label shows instead of its `# strategy:` comment. An empty TEXT clears it."""
    label = " ".join(text).strip() or None
    locked = _held(root)
    if locked is not None:
        reply = _ask_engine(root, locked, "note", {"trial": trial_id, "text": label})
        click.echo(f"{reply['trial']}: {reply['label'] or '(no label)'} {_via(reply)}")
        return
    with _store(root, writer=True) as store:
        trial = store.update(trial_id, note=label)
    click.echo(f"{trial.id}: {tree.label(trial) or '(no label)'}")


@trials.command()
@click.argument("trial_id")
@_dir_option
@_json_option
def branch(trial_id: str, root: Path, as_json: bool) -> None:
    """Put a trial's source back into its file and move the head there: the next save grows from it."""
    locked = _held(root)
    if locked is not None:
        reply = _ask_engine(root, locked, "branch", {"trial": trial_id})
        head, file, recorded_id, via = reply["head"], reply["file"], reply["recorded"], f" {_via(reply)}"
    else:
        with _store(root, writer=True) as store:
            target = store.get(trial_id)
            recorded = store.branch(trial_id)
        head, file, recorded_id, via = target.id, target.file, recorded.id if recorded else None, ""
    if as_json:
        _echo_json({"head": head, "file": file, "recorded": recorded_id})
        return
    if recorded_id:
        click.echo(f"{file} held changes that were not a trial yet: kept as {recorded_id}")
    click.echo(f"{file} now holds {head}; its next save grows from {head}{via}")


@trials.command()
@click.argument("trial_ids", nargs=-1)
@click.option("--interrupted", is_flag=True, help="Every interrupted trial, newest save first.")
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default=None, help="Default: cuda when a GPU is visible.")
@executor_option
@_dir_option
@_json_option
def rerun(trial_ids: tuple[str, ...], interrupted: bool, device: str | None, executor_url: str | None, root: Path,
          as_json: bool) -> None:
    """Measure trials again: queued in the running TUI or watcher, or else run here until they are done."""
    if bool(trial_ids) == interrupted:
        raise Refusal("give trial IDs or --interrupted (not both)", 2)
    locked = _held(root)
    if locked is not None:
        reply = _ask_engine(root, locked, "rerun", {"trials": list(trial_ids), "interrupted": interrupted})
        if as_json:
            _echo_json({"queued": reply["queued"], "skipped": reply["skipped"], "pid": reply["pid"]})
            return
        for why in reply["skipped"].values():
            click.echo(f"not queued: {why}")
        click.echo(f"queued {', '.join(reply['queued']) or 'nothing'} {_via(reply)}")
        return
    problem = _problem(root)
    executor = opened_executor(executor_url, problem, device)
    with _store(root, writer=True) as store, _closing(executor):
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
@_dir_option
@_json_option
def finalize(trial_id: str | None, device: str | None, executor_url: str | None, root: Path, as_json: bool) -> None:
    """Re-benchmark a trial (default: the best) with no cached baseline; write final/ with its report.

    Holding the store's lock meanwhile also keeps a watcher's GPU jobs from running beside it.
    """
    from trialtui.engine.executors.local import LocalExecutor
    from trialtui.engine.finalize import FinalizeError, finalize as finalize_trial

    problem = _problem(root)
    locked = _held(root)
    if locked is not None:
        reply = _ask_engine(root, locked, "finalize", {"trial": trial_id, "device": device}, timeout=None)
        text, report, out_dir = reply["text"], reply["report"], Path(reply["out_dir"])
        if as_json:
            _echo_json(report)
        else:
            click.echo(text, nl=False)
            click.echo(f"\nwrote {out_dir / 'REPORT.md'} and {out_dir / 'report.json'} {_via(reply)}")
        return
    with _store(root, writer=True) as store:
        found = store.trials()
        trial = store.get(trial_id) if trial_id else tree.best(found, problem.config.primary_baseline)
        if trial is None:
            raise Refusal(f"nothing to finalize: {tree.no_best_reason(found, problem.config.primary_baseline)}", 1)
        if tree.disqualified(trial):
            raise Refusal(f"{trial.id} is never finalized: {'; '.join(tree.disqualified(trial))}", 1)
        executor = opened_executor(executor_url, problem, device)
        try:
            here = isinstance(executor, LocalExecutor)  # finalize's own bench_file, as before
            text, report, out_dir = finalize_trial(problem, store, trial, device=device if here else device or executor.device,
                                                   bench=None if here else executor.bench)
        except FinalizeError as exc:
            raise Refusal(str(exc), 1) from exc
        finally:
            executor.close()
    if as_json:
        _echo_json(report)
    else:
        click.echo(text, nl=False)
        click.echo(f"\nwrote {out_dir / trial.file}, {out_dir / 'REPORT.md'}, {out_dir / 'report.json'}")


@trials.command()
@click.option("--repair", is_flag=True, help="Fix what can be fixed without guessing (needs the store: stop a running trialtui).")
@_dir_argument
@_dir_option
@_json_option
@click.pass_context
def doctor(ctx: click.Context, repair: bool, root: Path, as_json: bool) -> None:
    """Check the store: it opens, snapshots match, parents and heads are valid, nothing left in flight.

    Exit status 1 while something found needs attention.
    """
    from trialtui.core import doctor as checks

    locked = _held(root)
    with _store(root, writer=repair and locked is None) as store:
        issues = checks.check(store, writer_running=locked is not None)
        repaired = checks.repair(store, issues) if store.writer else []
        left = checks.check(store) if repaired else issues
    if as_json:
        _echo_json({"issues": [i.to_dict() for i in issues], "repaired": [i.to_dict() for i in repaired],
                    "left": [i.to_dict() for i in left]})
    else:
        for issue in issues:
            fixed = " — repaired" if issue in repaired else (f" (--repair: {issue.repair})" if issue.repair else "")
            click.echo(f"{issue.code}: {issue.message}{fixed}")
        if repair and locked is not None:
            click.echo(f"not repaired: {locked}")
        click.echo("store is healthy" if not left else f"{len(left)} issue(s) left")
    needs = [i for i in left if i.code not in ("interrupted", "orphan_snapshots", "orphan_logs", "recovered")]
    ctx.exit(1 if needs else 0)


@trials.command()
@click.option("--format", "fmt", type=click.Choice(["jsonl", "md", "hf"]), required=True)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="jsonl, md: a file (default: standard output). hf: the trials directory (default: ./trials).",
)
@_dir_option
def export(fmt: str, out: Path | None, root: Path) -> None:
    """Write the trials as JSON lines, a markdown table for a PR, or trial_manager's layout."""
    baseline = _config(root).primary_baseline
    with _store(root) as store:
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


@trials.command(name="import")
@click.option("--format", "fmt", type=click.Choice(["hf"]), required=True)
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@_dir_option
@_json_option
def import_(fmt: str, directory: Path, root: Path, as_json: bool) -> None:
    """Add the trials of a trial_manager directory (trials/<kernel>/ with state.json) to this problem.

    Trials whose file and source are already here are matched, not duplicated.
    """
    state_path = directory / HF_STATE
    if not state_path.exists():
        kernels = sorted(p.parent.name for p in directory.glob(f"*/{HF_STATE}"))
        hint = f"; pass one of: {', '.join(str(directory / k) for k in kernels)}" if kernels else ""
        raise Refusal(f"no {HF_STATE} in {directory}{hint}", 1)
    try:
        state = json.loads(state_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise Refusal(f"{state_path}: {exc}", 1) from exc
    baseline = _config(root).primary_baseline
    with _store(root, writer=True) as store:
        try:
            mapping, added = import_hf(store, directory, state, baseline)
        except InterchangeError as exc:
            raise Refusal(str(exc), 1) from exc
    if as_json:
        _echo_json({"imported": mapping, "added": added})
    else:
        click.echo(f"imported {len(mapping)} trials from {directory} ({len(mapping) - len(added)} were already here)")
