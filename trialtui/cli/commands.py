"""The `trialtui` command: plain `trialtui [DIR]` opens the TUI; subcommands are headless."""

from __future__ import annotations

import difflib
import json
import shlex
import sys
from pathlib import Path

import click

from trialtui import __version__
from trialtui.cli.interrupt import CtrlC, terminate_as_ctrl_c
from trialtui.cli.refusal import JsonGroup, executor_option, fail, opened_executor, problem_for
from trialtui.core.problem import ProblemError
from trialtui.core.problem_dir import load_problem


# `bench` exit codes: the verdict as a number for scripts and CI.
BENCH_EXIT = {"correct": 0, "incorrect": 1}
BENCH_EXIT_OTHER = 2  # error, timeout, invalid, or a refusal


class _Group(JsonGroup):
    """`trialtui DIR` and plain `trialtui` mean `trialtui open DIR`: the TUI is the default command."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        first = next((a for a in args if not a.startswith("-")), None)
        if not any(a in ("-h", "--help", "--version") for a in args) and (first is None or first not in self.commands) \
                and not self._mistyped(args):
            args = ["open", *args]
        return super().parse_args(ctx, args)

    def _mistyped(self, args: list[str]) -> bool:
        """A first word that names no path but looks like a command (`bnch`) is a typo: click's "No such
        command ... Did you mean" says so, where `open` would call it a missing directory."""
        return bool(args) and not args[0].startswith("-") and not Path(args[0]).exists() \
            and bool(difflib.get_close_matches(args[0], list(self.commands)))


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="trialtui")
def cli() -> None:
    """Score every save of a GPU kernel: validate, check, time, profile, decide.

    `trialtui [DIR]` opens the TUI on a problem directory (default: the current one).
    """


@cli.command(name="open")
@click.argument("directory", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--theme", default=None, help="Theme name: trialtui, trialtui-light, trialtui-contrast, "
              "or one of your own in ~/.config/trialtui/themes/.")
@executor_option
def open_(directory: Path | None, theme: str | None, executor_url: str | None) -> None:
    """Open the TUI on DIRECTORY (default: the current directory)."""
    from trialtui.core.store import StoreError
    from trialtui.tui.app import make_app
    from trialtui.tui.served import serve_app, served

    problem = problem_for((directory or Path.cwd()).resolve())
    executor = opened_executor(executor_url, problem)
    try:
        app = make_app(problem, theme=theme, executor=executor)
    except StoreError as exc:
        executor.close()
        fail(str(exc))
    if served():  # a browser tab of `trialtui serve`: it ends with its tab or server, never left behind
        serve_app(app)
    try:
        app.run()
    finally:
        executor.close()


@cli.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--arch", default=None, help="Target arch(s), e.g. sm_90 or sm_90,sm_80 (default: config).")
@click.option("--no-compile", is_flag=True, help="Static checks only: nothing of the candidate is executed.")
@executor_option
def validate(file: Path, as_json: bool, arch: str | None, no_compile: bool, executor_url: str | None) -> None:
    """Check FILE on the CPU: syntax, structure, Triton constraints, and a real compile for the GPU."""
    from trialtui.engine.executors.local import LocalExecutor
    from trialtui.engine.validate import validate_file
    from trialtui.render import render_validation

    problem = problem_for(file.resolve())
    archs = [a.strip() for a in arch.split(",")] if arch else None
    executor = opened_executor(executor_url, problem)
    try:  # the compile stage where jobs run (a laptop has no torch to compile with)
        run = validate_file if isinstance(executor, LocalExecutor) else executor.validate
        report = run(problem, file.resolve(), arch=archs, compile=not no_compile)
    finally:
        executor.close()
    click.echo(json.dumps(report.to_json(), indent=2) if as_json else render_validation(report, file.name))
    sys.exit(0 if report.ok else 1)


@cli.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default=None, help="Default: cuda when present.")
@click.option("--seeds", type=click.IntRange(min=1), default=None, help="Correctness seeds (default: config, 5).")
@click.option("--baseline-us", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Use this primary-baseline time instead of measuring.")
@click.option("--no-cache", is_flag=True, help="Measure baselines even when cached.")
@click.option("--cuda-graph", is_flag=True, help="Time CUDA-graph replays (for kernels of a few µs).")
@click.option("--all-gpus", is_flag=True, help="Benchmark on every visible GPU at once, one job per GPU, to compare them.")
@click.option("--sandbox", is_flag=True, help="Run the job under bubblewrap: read-only files, no network (docs/SECURITY.md).")
@click.option("--generalize", is_flag=True, help="Check held-out sizes, layouts and fresh seeds instead, untimed "
              "(finalize's check; its card then says these cases were not held out for this source).")
@click.option("--weigh", is_flag=True, help="Also weigh library work on kernel records (a profile job after a correct "
              "GPU bench, a few seconds): libraries doing most of the work flag it `fallback`, as finalize does.")
@executor_option
def bench(file: Path, as_json: bool, device, seeds, baseline_us, no_cache, cuda_graph, all_gpus, sandbox,
          generalize, weigh, executor_url) -> None:
    """Check FILE against the reference on several seeds and, only if correct, time it.

    \b
    Exit status: 0 correct, 1 incorrect, 2 error, timeout or invalid (and a refusal,
    e.g. a file outside a problem directory); with --all-gpus the worst of the GPUs.
    With --generalize: 0 every held-out case passed, 1 one failed, 2 the check could not run.
    """
    from concurrent.futures import ThreadPoolExecutor

    from trialtui.core import kernel_split
    from trialtui.core.bench_result import BenchResult
    from trialtui.core.kernel_split import KernelSplit
    from trialtui.engine.bench import bench_file
    from trialtui.engine.executors.local import LocalExecutor
    from trialtui.engine.jobs import cancel_on_interrupt, use_sandbox
    from trialtui.engine.lanes import visible_gpus
    from trialtui.render import render_bench

    problem = problem_for(file.resolve())
    if sandbox:
        use_sandbox()
    executor = opened_executor(executor_url, problem, device)
    here = isinstance(executor, LocalExecutor)
    run = bench_file if here else executor.bench

    weighed: dict[str | None, KernelSplit] = {}

    def one(gpu: str | None) -> BenchResult:
        env = {"CUDA_VISIBLE_DEVICES": gpu} if gpu else None
        result = run(
            problem, file.resolve(), device=device if here else device or executor.device, seeds=seeds,
            baseline_us=baseline_us, use_cache=not no_cache, cuda_graph=cuda_graph, env=env,
        )
        if not weigh or result.state != "correct" or (result.env or {}).get("device") != "cuda":
            return result
        profile = executor.profile(problem, file.resolve(), name=f"bench-{file.stem}", env=env)
        found = kernel_split.of_profile(profile, kernel_split.own_kernels(None, file.read_text(errors="replace")))
        if found is not None:
            weighed[gpu] = found
        return kernel_split.flagged(result, found) or result

    if generalize:
        from trialtui.engine.generalize import check_file

        try:
            found = check_file(problem, file.resolve(), device=device if here else device or executor.device,
                               bench=run, on_demand=True)
        finally:
            executor.close()
        click.echo(json.dumps(found.to_dict(), indent=2) if as_json else found.text())
        sys.exit(2 if found.error or found.off else 1 if found.fails else 0)
    gpus = ((visible_gpus() or ["0"]) if here else [s.gpu for s in executor.slots]) if all_gpus else [None]
    try:
        with ThreadPoolExecutor(max_workers=len(gpus)) as pool, cancel_on_interrupt():  # one job per GPU, in parallel
            results = dict(zip(gpus, pool.map(one, gpus)))
    finally:
        executor.close()
    if as_json:
        payload = results[None].to_json() if not all_gpus else {f"gpu{g}": r.to_json() for g, r in results.items()}
        click.echo(json.dumps(payload, indent=2, default=str))
    else:
        for gpu, result in results.items():
            click.echo((f"== GPU {gpu} ==\n" if all_gpus else "") + render_bench(result, problem, file.name))
            if weigh and result.state == "correct":
                click.echo(f"  records: {weighed[gpu].line()}" if gpu in weighed else
                           "  records: none weighed (no GPU timing, no kernel records, or no kernel of its own found)")
        click.echo(f"  (a one-off check, kept in no tree: `trialtui {shlex.quote(str(problem.root))}` records "
                   "every save as a trial)")
    sys.exit(max(BENCH_EXIT.get(r.state, BENCH_EXIT_OTHER) for r in results.values()))


@cli.command()
@click.argument("directory", type=click.Path(path_type=Path))
@click.option("--from", "from_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Wrap an existing KernelBench problem file as the reference.")
def init(directory: Path, from_file: Path | None) -> None:
    """Scaffold a problem directory: reference, one candidate and a commented trialtui.toml."""
    from trialtui.core.scaffold import ScaffoldError, scaffold

    if from_file is not None:
        refuse_a_form_init_cannot_wrap(from_file)
    try:
        written = scaffold(directory, from_file)
    except ScaffoldError as exc:
        fail(str(exc))
    for path in written:
        click.echo(f"wrote {path}")
    if from_file is None:  # a name like "softmax" is only the directory's: say what the example is
        click.echo("the reference is an example (bias + GELU, KernelBench form): put your problem in reference.py, "
                   "or start again with `trialtui init DIR --from your_problem.py`")
    click.echo(f"next: cd {shlex.quote(str(directory))} && trialtui")


def refuse_a_form_init_cannot_wrap(from_file: Path) -> None:
    """A problem file of a form `init --from` cannot wrap (GPU MODE) is used where it is: its task folder,
    the reference beside task.yml, is a problem directory already, so the refusal says what to run there."""
    from trialtui.core.forms import detect

    try:
        form = detect(from_file)
    except ProblemError:
        return  # scaffold names what is wrong with the file
    if form.scaffold_candidate(from_file.read_text()) is not None:
        return
    folder = from_file.resolve().parent
    said = f"{from_file} is a {form.label} problem file, which `init --from` cannot wrap"
    try:
        candidates = load_problem(folder).candidates()
    except ProblemError as exc:
        fail(f"{said}; it is used in its own folder, which is not a problem directory yet: {exc}")
    first = min(candidates, key=lambda p: p.name != "submission.py", default=None)  # GPU MODE's name for it
    once = (f", `trialtui bench {shlex.quote(str(first))}` checks one once" if first
            else f" (one that defines {form.entry_point})")
    fail(f"{said}; its folder is a problem directory already: `trialtui {shlex.quote(str(folder))}` scores every "
         f"save of a candidate there{once}")


@cli.command()
@click.argument("directory", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--headless", is_flag=True, help="Print one line per event instead of opening the TUI.")
@click.option("--json", "as_json", is_flag=True, help="With --headless: JSON lines.")
@click.option("--once", is_flag=True, help="Score whatever is new, wait until the queue drains, exit (headless: one line per event).")
@click.option("--device", type=click.Choice(["cuda", "cpu"]), default=None)
@click.option("--gpus", default=None, help="Lanes to use, e.g. 0,1 (default: every visible GPU).")
@click.option("--progress", is_flag=True, help="With --headless: also print progress and queue events.")
@click.option("--sandbox", is_flag=True, help="Run every job under bubblewrap: read-only files, no network (docs/SECURITY.md).")
@executor_option
def watch(directory, headless, as_json, once, device, gpus, progress, sandbox, executor_url) -> None:
    """Watch DIRECTORY and score each save; exit status is non-zero only for trialtui's own failures."""
    import asyncio
    import time

    from trialtui.engine.jobs import cancel_all, use_sandbox

    if sandbox:
        use_sandbox()

    from trialtui.core.store import StoreError
    from trialtui.engine.headless import HeadlessPrinter, opening
    from trialtui.engine.lanes import Lanes
    from trialtui.engine.loop import Engine
    from trialtui.engine.shared import Shared

    root = (directory or Path.cwd()).resolve()
    problems = problems_under(root)
    if not headless and not once:  # a TUI that exits when the queue drains would show nothing
        if len(problems) > 1:
            fail(f"{root} holds {len(problems)} problems: open one in the TUI, or watch them all with --headless")
        from trialtui.tui.app import make_app

        executor = opened_executor(executor_url, problems[0], device)
        try:
            app = make_app(problems[0], device=device, executor=executor)
        except StoreError as exc:
            executor.close()
            fail(str(exc))
        try:
            app.run()
        finally:
            executor.close()
        return
    from trialtui.engine.executors.local import LocalExecutor
    from trialtui.engine.lanes import Lane

    executor = opened_executor(executor_url, problems[0], device)
    if isinstance(executor, LocalExecutor):
        lanes = Lanes.detect(device or detect(), gpus.split(",") if gpus else None)
    else:
        wanted = set(gpus.split(",")) if gpus else None
        lanes = Lanes([Lane(s.name, s.gpu) for s in executor.slots if wanted is None or s.gpu in wanted])
    engines = []
    shared = Shared() if len(problems) > 1 else None
    running: list[tuple[asyncio.AbstractEventLoop, asyncio.Task]] = []

    def reader_left() -> None:
        """stdout's reader left (`| head`): the watch ends as at Ctrl-C, quietly, as a Unix tool's would."""
        for loop, task in running:
            loop.call_soon_threadsafe(task.cancel)

    try:
        for problem in problems:
            engine = Engine(problem, device=device or executor.device, lanes=lanes, executor=executor, shared=shared)
            engine.subscribe(HeadlessPrinter(as_json=as_json, progress=progress, on_closed=reader_left,
                                             problem=problem.name if len(problems) > 1 else None))
            engines.append(engine)
    except StoreError as exc:
        for engine in engines:
            engine.close()
        if shared is not None:
            shared.close()
        executor.close()
        fail(str(exc))

    async def run_all() -> None:
        running.append((asyncio.get_running_loop(), asyncio.current_task()))
        try:
            await asyncio.gather(*(engine.run(once=once) for engine in engines))
        except asyncio.CancelledError:  # Ctrl-C: validations too, so no thread waits on a job
            cancel_all()
            raise

    if not as_json:
        click.echo(f"{time.strftime('%H:%M:%S')} {opening(root, problems, once)}")
    terminate_as_ctrl_c()
    try:
        asyncio.run(run_all())
    except (KeyboardInterrupt, asyncio.CancelledError):  # Ctrl-C, or the reader of stdout left
        pass
    finally:
        for engine in engines:
            engine.close()
        if shared is not None:
            shared.close()
        executor.close()


def problems_under(root: Path):
    """The problem at `root`, or every problem directory directly below it."""
    if (root / "reference.py").exists():
        return [problem_for(root)]
    found, errors = [], []
    for child in sorted(p for p in root.iterdir() if p.is_dir() and (p / "reference.py").exists()):
        try:
            found.append(load_problem(child))
        except ProblemError as exc:
            errors.append(f"{child.name}: {exc}")
    for error in errors:
        click.echo(f"trialtui: skipping {error}", err=True)
    if not found:
        fail(f"no problem in {root}: it has no reference.py, and neither has any directory below it")
    return found


def known_gpu(ctx: click.Context, param: click.Parameter, name: str) -> str:
    """`--gpu` as a name with ceilings: an unknown one left the roofline out without a word."""
    from trialtui.core.gpus import ceilings_for, known_names

    if ceilings_for(name) is None:
        raise click.BadParameter(f"no ceilings for {name!r}; known GPUs: {', '.join(known_names())} (or a "
                                 "name that contains a model's, e.g. H100 or 'RTX 4090')")
    return name


@cli.command()
@click.argument("directory", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True)
@click.option("--gpu", default="NVIDIA H200", show_default=True, callback=known_gpu,
              help="Whose ceilings the roofline uses.")
def analyze(directory, as_json, gpu) -> None:
    """The reference's ops, FLOPs, minimum bytes, roofline bound and floor, fusion chances (no GPU)."""
    from trialtui.engine.profile import analyze as run_analysis
    from trialtui.render import render_analysis

    problem = problem_for((directory or Path.cwd()).resolve())
    result = run_analysis(problem, gpu=gpu, use_cache=False)
    click.echo(json.dumps(result.to_json(), indent=2, default=str) if as_json else render_analysis(result, problem))
    sys.exit(0 if result.get("state") == "ok" else 1)


@cli.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "as_json", is_flag=True)
@click.option("--gpu", default="NVIDIA H200", show_default=True, callback=known_gpu,
              help="Without a GPU here: whose roofline the analytic verdicts use.")
def profile(file: Path, as_json: bool, gpu: str) -> None:
    """FILE under the best profiler here: Nsight Compute counters, else CUPTI kernel records (when
    counters can't be read), else analytic verdicts (when this machine has no GPU)."""
    from trialtui.engine.profile import profile_candidate
    from trialtui.render import render_verdicts

    problem = problem_for(file.resolve())
    out = profile_candidate(problem, file.resolve(), gpu=gpu)
    if not out.correct:
        fail(f"{file.name} is {out.state}: {out.message} — only a correct kernel is profiled", 1)
    click.echo(json.dumps(out.to_json(), indent=2, default=str) if as_json else render_verdicts(out))


@cli.command()
@click.option("--json", "as_json", is_flag=True)
def calibrate(as_json: bool) -> None:
    """Measure this GPU's copy bandwidth and matmul rates once; cached per GPU and driver."""
    from trialtui.engine.profile import calibrate as run_calibration

    from trialtui.render import render_calibration

    if detect() == "cpu":
        fail("calibrate measures a GPU, and this machine has none (datasheet ceilings are used until it runs on one)", 1)
    result = run_calibration()
    click.echo(json.dumps(result.to_json(), indent=2, default=str) if as_json else render_calibration(result))
    sys.exit(0 if result.ok else 1)


def detect() -> str:
    from trialtui.engine.bench import detect_device

    return detect_device()


def main() -> None:
    from trialtui.cli.demo import demo
    from trialtui.cli.mcp import mcp
    from trialtui.cli.serve import serve
    from trialtui.cli.trials import trials

    cli.add_command(trials)
    cli.add_command(demo)
    cli.add_command(serve)
    cli.add_command(mcp)
    CtrlC().install()
    cli()
