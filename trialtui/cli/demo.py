"""`trialtui demo`: the whole loop on a sample problem, live on a GPU, honest without one.

Registered in cli/commands.py with `cli.add_command(demo)`; also runs alone: `python -m trialtui.cli.demo`.
`--headless` never imports Textual.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from pathlib import Path

import click


def _fail(message: str, code: int = 2) -> None:
    click.echo(f"trialtui demo: {message}", err=True)
    sys.exit(code)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("problems", nargs=-1, metavar="[PROBLEM]...")
@click.option("--all", "every", is_flag=True, help="Headless: play every sample's story (default: one).")
@click.option("--into", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Play in DIR/<problem> (must be new or empty); default ./trialtui-demo (then -2, -3, ... "
                   "when a previous demo is there).")
@click.option("--speed", type=click.FloatRange(min=0), default=None,
              help="Scale the pauses between story beats: 1 = followable (the TUI's default), "
                   "0.5 = twice as fast, 0 = none (the default with --headless and --record).")
@click.option("--headless", is_flag=True, help="Print one line per event and beat, then a table; no TUI.")
@click.option("--replay/--live", "replay", default=None,
              help="--live: measure every number on this machine's GPU (the default when one is visible). "
                   "--replay: check correctness live on the CPU and show GPU numbers only from recordings "
                   "of the same source, labelled with GPU and date (the default without a GPU).")
@click.option("--record", "record_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Live on the GPU, headless; write each version's result to DIR/<problem>/<version>.json "
                   "(copy them into sample_kernels/<problem>/recorded/), the report cards and summary.json.")
@click.option("--recordings", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="With --replay: read recordings from DIR/<problem>/ instead of the samples' recorded/.")
@click.option("--baselines", default=None,
              help="Override the samples' baselines, e.g. 'eager' to skip torch.compile (first is primary).")
@click.option("--profile", "profile_when", type=click.Choice(["auto", "always", "never"]), default=None,
              help="Live: override the samples' profile policy ('never' saves time). Replay never "
                   "profiles: there is no GPU to profile on.")
@click.option("--gpus", default=None, help="Live: GPUs to use, e.g. 0,1 (default: every visible one). "
                                           "Each problem has a GPU to itself while it plays.")
@click.option("--jobs", type=click.IntRange(min=1), default=None,
              help="Headless: problems played at once (default and maximum live: one per GPU; replay: 1).")
@click.option("--finalize/--no-finalize", default=True, help="Finalize the best trial into final/REPORT.md.")
@click.option("--samples", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Where the sample problems are (default: sample_kernels/ of trialtui's checkout).")
@click.option("--progress", is_flag=True, help="With --headless: also print progress and queue events.")
@click.option("--theme", default=None, help="TUI theme.")
@click.option("--agent", is_flag=True, help="A scripted coding agent plays the story through `trialtui mcp` "
                                            "(open the TUI on the directory to watch it live).")
def demo(problems, every, into, speed, headless, replay, record_dir, recordings, baselines, profile_when, gpus, jobs,
         finalize, samples, progress, theme, agent) -> None:
    """Play a sample problem's story through the real loop: saves, trials, a failure and its fix,
    a regression and a branch back to the best, a plateau, a new approach, a win, a report card.

    PROBLEM: a sample's name (default: bias_gelu_residual; --all: every sample, headless).
    Without a GPU nothing is timed here: correctness is real, and speeds appear only where a GPU
    recording of the very same source exists, labelled "replayed from a recording on <GPU>, <date>".
    """
    from trialtui.core.config import BASELINE_KINDS
    from trialtui.demo import play as d
    from trialtui.demo import story as ds
    from trialtui.engine.bench import detect_device
    from trialtui.engine.lanes import visible_gpus

    if record_dir is not None:
        headless = True
        if replay:
            _fail("--record measures live; it cannot be combined with --replay")
    gpu_here = detect_device() == "cuda"
    mode = "live" if (replay is False or (replay is None and gpu_here) or record_dir is not None) else "replay"
    if mode == "live" and not gpu_here:
        _fail("--live and --record measure on a GPU, and none is visible here; --replay shows recorded numbers")
    speed = speed if speed is not None else (0.0 if headless else 1.0)
    kinds = None
    if baselines:
        kinds = [k.strip() for k in baselines.split(",") if k.strip()]
        if not kinds or any(k not in BASELINE_KINDS for k in kinds):
            _fail(f"--baselines takes a comma list of {', '.join(BASELINE_KINDS)}, got {baselines!r}")
    try:
        root = ds.samples_root(samples)
        if every and not headless:
            raise ds.DemoError("--all plays every story one after another: add --headless (the TUI shows one)")
        names = ds.resolve_names(root, problems, every=every, tui=not headless)
        stories = [ds.load_story(root / name) for name in names]
    except ds.DemoError as exc:
        _fail(str(exc))
    parent_dir = into.resolve() if into else ds.fresh_parent(Path.cwd(), names)
    parent_dir.mkdir(parents=True, exist_ok=True)
    lanes = ([g.strip() for g in gpus.split(",") if g.strip()] if gpus else visible_gpus()) or ["0"]
    plans = []
    try:
        for story in stories:
            dest = ds.prepare(story.sample, parent_dir, story, baselines=kinds,
                             profile="never" if mode == "replay" else profile_when)
            rec = (recordings / story.problem) if recordings else (story.sample / ds.RECORDED_DIR)
            plans.append(d.Plan(story, dest, mode, gpu=lanes[0] if mode == "live" else None,
                                recordings=rec if mode == "replay" else None))
    except (ds.DemoError, OSError) as exc:
        _fail(str(exc))
    if agent:
        sys.exit(_agent(d, plans[0], mode))
    if headless:
        at_once = min(jobs or len(lanes), len(lanes)) if mode == "live" else (jobs or 1)
        sys.exit(_headless(d, plans, mode, parent_dir, speed=speed, finalize=finalize, record_dir=record_dir,
                           jobs=at_once, gpus=lanes, progress=progress))
    _tui(d, plans[0], mode, speed=speed, finalize=finalize, theme=theme)


def _headless(d, plans, mode, parent_dir: Path, *, speed, finalize, record_dir, jobs, gpus, progress) -> int:
    import time

    from trialtui.demo import printer as dp

    out = sys.stdout
    click.echo(f"trialtui demo: {len(plans)} problem(s) in {parent_dir}")
    click.echo(f"  {d.describe_mode(mode)}")
    if mode == "live":
        click.echo(f"  GPUs {', '.join(gpus)}: {jobs} problem(s) at a time, each on a GPU of its own")
    if record_dir is not None:
        record_dir = record_dir.resolve()
        click.echo(f"  recording every version's result into {record_dir}/<problem>/")
    started = time.monotonic()
    try:
        runs = asyncio.run(d.play_all(plans, out, jobs=jobs, speed=speed, finalize=finalize,
                                      record_dir=record_dir, progress=progress, gpus=gpus))
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        return 130
    click.echo("")
    click.echo(dp.final_table(runs))
    for run in runs:
        if run.report:
            click.echo(f"report card ({run.problem}): {run.report}")
            held_out = unclean(run.report)
            if held_out:
                click.echo(f"  {held_out}: not a clean win, as its report card says")
        elif run.report_note:
            click.echo(f"no report card ({run.problem}): {run.report_note}")
    for run in runs:
        for o in run.mismatches:
            click.echo(f"story mismatch ({run.problem}): {o.version.file}: {mismatch_text(o)}")
    if record_dir is not None:
        click.echo(f"recordings: {record_dir} (summary.json; copy <problem>/v*.json into "
                   f"sample_kernels/<problem>/recorded/)")
    click.echo(f"played in {_shown(parent_dir)} in {time.monotonic() - started:.0f} s")
    for line in dp.next_steps([plan.root for plan in plans], played_all=len(plans) > 1,
                              shown=lambda path: shlex.quote(_shown(path))):
        click.echo(line)
    return 1 if any(run.error for run in runs) else 0


def unclean(report: Path) -> str | None:
    """The held-out check's line where the finalized kernel failed it (report.json beside REPORT.md), else None:
    the story's table shows speed only, and a kernel that fails off its sizes is no clean win."""
    try:
        card = json.loads((report.parent / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return card.get("generalizes") if (card.get("generalization") or {}).get("fails") is True else None


def mismatch_text(o) -> str:
    """What differs from the story: the state, the parent, or (the state right) what its beat claims."""
    if o.state != o.version.expected:
        return f"was {o.state}, the story expects {o.version.expected}"
    if o.parent != o.expected_parent:
        return f"grew from {o.parent or 'nothing'}, the story expects {o.expected_parent or 'a new root'}"
    return f"{o.state} as expected, but {o.judgement.text}"


def _shown(path: Path) -> str:
    """A path as the user would type it: relative to where they are, when it is below it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _agent(d, plan, mode) -> int:
    """--agent: the SDK's client, scripted, plays the story through `trialtui mcp` (trialtui/agent/script.py)."""
    from trialtui.agent.script import play

    click.echo(f"trialtui demo --agent: {plan.story.problem} in {_shown(plan.root)}")
    click.echo(f"  {d.describe_mode(mode)}")
    click.echo(f"  watch it live from another terminal: trialtui {shlex.quote(_shown(plan.root))}")
    return asyncio.run(play(plan.story, plan.root, recordings=plan.recordings))


def _tui(d, plan, mode, *, speed, finalize, theme) -> None:
    from trialtui.tui.app import make_app

    try:
        engine, player = d.build_engine(plan, speed=speed, finalize=finalize)
    except Exception as exc:  # noqa: BLE001
        _fail(f"{type(exc).__name__}: {exc}", 1)
    try:
        make_app(engine.problem, engine=engine, device=engine.device, theme=theme, demo=player).run()
    finally:
        engine.close()
    run = player.run
    click.echo(f"demo played in {plan.root} ({d.describe_mode(mode)})")
    if run is not None and run.report:
        click.echo(f"report card: {run.report}")
    if run is not None and run.error:
        _fail(run.error, 1)


if __name__ == "__main__":
    demo()
