"""`trialtui demo`: play a sample problem's scripted story through the real loop.

A sample problem (`sample_kernels/<name>/`) is copied into a fresh directory and an ordinary
`Engine` runs on the copy. `DemoPlayer.play(engine)` then saves each version listed in
`demo/story.toml` into the candidate file the way an editor does, lets the watcher pick the save
up, waits for the trial's final state and decision, branches back to the best trial at the
`branch_back` beat (what pressing `b` does), and at the end finalizes the best trial into
`final/REPORT.md`.

Numbers, honestly:

* live (a GPU is present): every number is measured by `bench_file` on the GPU, now.
* replay (no GPU): correctness is checked for real on the CPU; GPU numbers come only from a
  recording of the very same source (replay.py) and say so. When a correct version has no
  recording, no best is ranked: a best among the recorded few would be a guess, so the story's own
  expectations decide the branch back and the finalize, and the demo names what it could not replay.

No Textual here: the TUI receives a `DemoPlayer` and awaits `play(engine)`; headless runs print.
Samples and stories: story.py; replay: replay.py; printed lines and table: printer.py.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from trialtui.core import tree
from trialtui.core.bench_result import BenchResult
from trialtui.core.model import Trial, TrialState
from trialtui.core.report import FINAL_DIR
from trialtui.core.store import atomic_write, sha256_of
from trialtui.demo.printer import DemoPrinter, write_summary
from trialtui.demo.replay import (
    ReplayBench,
    load_recordings,
    not_replayed,
    numbers_label,
    recorded_extra,
    recorded_label,
    recording_for,
)
from trialtui.demo.story import DemoError, Outcome, ProblemRun, Story, Version, editor_save, judge
from trialtui.engine import events as ev
from trialtui.engine.bench import bench_file
from trialtui.engine.finalize import FinalizeError, finalize
from trialtui.engine.loop import Engine

# Seconds at --speed 1: before a save (read the beat), after its decision (see the result), before a branch.
PAUSE_BEFORE_S, PAUSE_AFTER_S, PAUSE_BRANCH_S = 1.5, 2.5, 1.5
SAVE_FALLBACK_S = 5.0  # the watcher normally reports a save within ~1.6 s


async def pause(seconds: float) -> None:
    if seconds > 0:
        await asyncio.sleep(seconds)


class DemoPlayer:
    """Plays one story into a running engine; `play(engine)` is what the TUI awaits."""

    def __init__(
        self,
        story: Story,
        *,
        mode: str,
        speed: float = 1.0,
        finalize: bool = True,
        finalize_bench: Callable[..., BenchResult] = bench_file,
        finalize_env: dict[str, str] | None = None,
        record_dir: Path | None = None,
        trial_timeout_s: float | None = None,
    ):
        self.story = story
        self.mode = mode
        self.speed = max(0.0, speed)
        self.finalize = finalize
        self.finalize_bench = finalize_bench
        self.finalize_env = finalize_env
        self.record_dir = record_dir
        self.trial_timeout_s = trial_timeout_s
        self.run: ProblemRun | None = None

    # the steps

    async def play(self, engine: Engine) -> ProblemRun:
        started = time.monotonic()
        problem = engine.problem
        self.run = run = ProblemRun(self.story.problem, problem.root, self.mode)
        baseline = problem.config.primary_baseline
        target = problem.root / self.story.candidate
        trial_for: dict[str, str] = {}  # version file → trial id
        try:
            for i, version in enumerate(self.story.versions):
                data = self.story.source(version)
                where = f"{version.file} → {self.story.candidate}"
                if version.beat == "branch_back":
                    await self._branch_back(engine, version, trial_for, baseline)
                self._beat(engine, version, f"{where} (expect {version.expected}): {version.note}")
                await pause(PAUSE_BEFORE_S * self.speed if i else 0)
                if target.exists() and target.read_bytes() == data:
                    self._notice(engine, f"{self.story.candidate} already holds {version.file}")
                else:
                    editor_save(target, data)
                trial = await self._trial_for(engine, target, sha256_of(data))
                trial = await self._decided(engine, trial.id)
                trial_for[version.file] = trial.id
                judgement = judge(version, trial, engine.store.trials(), problem.config)
                outcome = Outcome(version, trial.id, trial.state, trial.parent, trial.speedup(baseline),
                                  expected_parent=trial_for.get(version.parent) if version.parent else None,
                                  judgement=judgement)
                run.outcomes.append(outcome)
                self._record(version, trial)
                self._beat(engine, version, self._outcome_text(outcome, trial), surprise=not outcome.as_expected)
                await pause(PAUSE_AFTER_S * self.speed)
            await self._finish(engine, trial_for, baseline)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - reported, and the caller's exit status says so
            run.error = f"{type(exc).__name__}: {exc}"
            engine.emit(ev.EngineError(f"demo {self.story.problem}: {run.error}"))
        finally:
            run.wall_s = time.monotonic() - started
        return run

    async def _branch_back(self, engine: Engine, version: Version, trial_for: dict[str, str], baseline: str) -> None:
        """What pressing `b` on the best trial does; when no best can be ranked, the story's parent stands in."""
        missing = self._unreplayed(engine, trial_for)
        best = None if missing else tree.best(engine.store.trials(), baseline)
        story_parent = trial_for.get(version.parent)
        if best is not None:
            target, why = best.id, f"the best so far ({best.speedup(baseline):.2f}× vs {baseline})"
            played = next((f for f, t in trial_for.items() if t == best.id), None)
            if played and played != version.parent:
                why += f"; the story expected {version.parent}"
        elif story_parent is not None:
            cannot = (f"no recording of {', '.join(missing)} to rank by" if missing
                      else "no trial has a speed to rank by here")
            target, why = story_parent, f"{version.parent}, the story's choice: {cannot}"
        else:
            raise DemoError(f"cannot branch back: no trial for {version.parent!r} and no best")
        self._beat(engine, version, f"branch back to {target} — {why}")
        await pause(PAUSE_BRANCH_S * self.speed)
        engine.branch(target)
        assert self.run is not None
        self.run.branched_to = target

    def _unreplayed(self, engine: Engine, trial_for: dict[str, str]) -> list[str]:
        """Replay: the versions played so far that are correct here but have no GPU numbers to rank by."""
        if self.mode != "replay":
            return []
        missing = []
        for file, trial_id in trial_for.items():
            trial = engine.store.get(trial_id)
            if trial.state == TrialState.CORRECT.value and not_replayed(trial.result):
                missing.append(file)
        return missing

    async def _trial_for(self, engine: Engine, target: Path, sha: str) -> Trial:
        """The trial the save made (found by file and content), once the watcher has recorded it."""
        started = time.monotonic()
        nudged = False
        while True:
            found = next((t for t in engine.store.trials() if t.file == target.name and t.sha256 == sha), None)
            if found is not None:
                return found
            waited = time.monotonic() - started
            if waited > SAVE_FALLBACK_S and not nudged and not engine.paused:
                # the watcher missed it (a slow or odd filesystem): hand the save over directly
                self._notice(engine, f"the watcher has not reported the save of {target.name} yet: recording it directly")
                nudged = True
                await engine.on_save(target)
                continue
            if waited > self._timeout(engine):
                raise DemoError(f"no trial appeared for the save of {target.name} in {waited:.0f} s")
            await asyncio.sleep(0.05)

    async def _decided(self, engine: Engine, trial_id: str) -> Trial:
        """Wait for the trial's final state and, if it gets one, its decision."""
        started = time.monotonic()
        no_decision = {TrialState.CANCELLED, TrialState.SUPERSEDED, TrialState.INTERRUPTED}
        while True:
            trial = engine.store.get(trial_id)
            state = trial.state_enum
            if state.is_final and (trial.decision is not None or state in no_decision):
                return trial
            if time.monotonic() - started > self._timeout(engine):
                raise DemoError(f"{trial_id} was still {trial.state} after {self._timeout(engine):.0f} s")
            await asyncio.sleep(0.1)

    def _timeout(self, engine: Engine) -> float:
        if self.trial_timeout_s is not None:
            return self.trial_timeout_s
        cfg = engine.problem.config
        return 3 * (cfg.validate_timeout_s + cfg.bench_timeout_s) + 300  # queued behind other problems, too

    async def _finish(self, engine: Engine, trial_for: dict[str, str], baseline: str) -> None:
        run = self.run
        assert run is not None
        run.unreplayed = missing = self._unreplayed(engine, trial_for)
        best = None if missing else tree.best(engine.store.trials(), baseline)
        if best is None:
            # no best to rank (no speed here, or versions without a recording): the story's end stands in
            correct = [o for o in run.outcomes if o.state == TrialState.CORRECT.value]
            if not correct:
                run.report_note = "no correct trial: nothing to finalize"
                self._notice(engine, run.report_note, "warning")
                return
            chosen = engine.store.get(correct[-1].trial_id)
            why = (f"could not replay {', '.join(missing)} (no GPU recording of that source)" if missing
                   else "no trial has a speed here")
            run.report_note = f"{why}, so no best is ranked: finalizing the story's last correct version, {chosen.id}"
            self._notice(engine, run.report_note, "warning" if missing else "info")
        else:
            chosen = best
            run.best = best.id
        run.best_result = chosen.result
        run.best_version = next((f for f, t in trial_for.items() if t == chosen.id), None)
        if not self.finalize:
            self._notice(engine, f"{chosen.id} is where the story ends (not finalized: --no-finalize)")
            return
        self._notice(engine, f"finalizing {chosen.id}: a clean re-benchmark without cached baselines, then the report card")
        await engine.drain()  # a trailing profile must not share the GPU with the re-benchmark
        pausing = not engine.paused  # and no save gets scored meanwhile (the TUI is still open)
        if pausing:
            engine.toggle_pause()
        try:
            run.report = await asyncio.to_thread(self._finalize, engine, chosen)
        except DemoError as exc:
            run.report_note = str(exc)
            self._notice(engine, run.report_note, "warning")
            return
        finally:
            if pausing and engine.paused:
                engine.toggle_pause()
        if self.record_dir is not None:
            dest = self.record_dir / self.story.problem / FINAL_DIR
            dest.mkdir(parents=True, exist_ok=True)
            for name in ("REPORT.md", "report.json"):
                shutil.copyfile(run.report.parent / name, dest / name)
        self._notice(engine, f"report card: {run.report}")

    def _finalize(self, engine: Engine, trial: Trial) -> Path:
        """`trialtui trials finalize` on the engine's own store (the engine holds the lock).

        The same steps as cli/trials.finalize: the trial's source into final/, a re-benchmark with
        no cached baseline, build_report, REPORT.md and report.json. A replayed trial's report is
        the CPU one, with the recorded GPU numbers added in a section of their own.
        """
        problem = engine.problem
        recorded = (lambda t: recorded_extra(t, problem.config.baselines)) if recorded_label(trial.result) else None
        try:
            done = finalize(problem, engine.store, trial, device="cuda" if self.mode == "live" else "cpu",
                            bench=self.finalize_bench, env=self.finalize_env, extra=recorded)
        except FinalizeError as exc:
            raise DemoError(str(exc)) from exc
        return done.out_dir / "REPORT.md"

    # reporting

    def _record(self, version: Version, trial: Trial) -> None:
        if self.record_dir is None:
            return
        dest = self.record_dir / self.story.problem
        dest.mkdir(parents=True, exist_ok=True)
        data = recording_for(self.story.problem, version, trial)
        atomic_write(dest / f"{version.stem}.json", (json.dumps(data, indent=1, default=str) + "\n").encode())

    def _outcome_text(self, outcome: Outcome, trial: Trial) -> str:
        version = outcome.version
        parent = f"child of {trial.parent}" if trial.parent else "a new root"
        text = f"{version.file} is {trial.id} ({parent}): {trial.state}"
        if outcome.speedup is not None:
            text += f", {outcome.speedup:.2f}× ({numbers_label(trial.result)})"
        elif trial.state == TrialState.CORRECT.value:
            text += f" ({numbers_label(trial.result)})"
        judged = outcome.judgement
        if outcome.state != version.expected:
            text += f" — the story expected {version.expected}!"
        elif outcome.parent != outcome.expected_parent:
            text += f" — the story grows it from {outcome.expected_parent} ({version.parent})!"
        elif judged.held is False:
            text += f" — {judged.text}!"
        elif judged.held is None:
            text += f" — {judged.text}"
        else:
            text += f", as the story expects ({judged.text})"
        return text

    @staticmethod
    def _beat(engine: Engine, version: Version, message: str, *, surprise: bool = False) -> None:
        """A story step, as a plain Notice (every subscriber shows those): `beat: <beat> — <what>`."""
        engine.emit(ev.Notice(f"beat: {version.beat} — {message}", "warning" if surprise else "info"))

    @staticmethod
    def _notice(engine: Engine, message: str, level: str = "info") -> None:
        engine.emit(ev.Notice(f"demo: {message}", level))


# ---------------------------------------------------------------------------------------------
# running stories headless (and building the engine the TUI gets)


@dataclass
class Plan:
    """One problem to play: where its copy lives and how its numbers are made."""

    story: Story
    root: Path
    mode: str  # live | replay
    gpu: str | None = None  # live: the GPU its lane (and its finalize) uses
    recordings: Path | None = None  # replay: where its recordings are read from


def describe_mode(mode: str) -> str:
    if mode == "live":
        return "live: every number is measured on this machine's GPU now"
    return ("replay: correctness is checked live on this CPU (Triton interpreter, test sizes); GPU numbers "
            "come only from recordings of the same source, labelled with their GPU and date")


def build_engine(plan: Plan, *, speed: float, finalize: bool = True, record_dir: Path | None = None,
                 trial_timeout_s: float | None = None) -> tuple[Engine, DemoPlayer]:
    """The engine for a plan's problem copy, and the player that tells its story."""
    from trialtui.core.problem_dir import load_problem
    from trialtui.engine.lanes import Lane, Lanes

    problem = load_problem(plan.root)
    if plan.mode == "live":
        gpu = plan.gpu or "0"
        engine = Engine(problem, device="cuda", lanes=Lanes([Lane(f"gpu{gpu}", gpu)]), bench=bench_file)
        finalize_bench, finalize_env = bench_file, {"CUDA_VISIBLE_DEVICES": gpu}
    else:
        engine = Engine(problem, device="cpu", lanes=Lanes([Lane("cpu", None)]),
                        bench=ReplayBench(load_recordings(plan.recordings)))
        finalize_bench, finalize_env = bench_file, None
    player = DemoPlayer(plan.story, mode=plan.mode, speed=speed, finalize=finalize, finalize_bench=finalize_bench,
                        finalize_env=finalize_env, record_dir=record_dir, trial_timeout_s=trial_timeout_s)
    return engine, player


async def play_one(plan: Plan, out: TextIO, *, speed: float, finalize: bool = True,
                   record_dir: Path | None = None, progress: bool = False) -> ProblemRun:
    """Run an engine on the plan's copy and play its story into it, printing every event."""
    name = plan.story.problem
    prefix = f"[{name}] "
    try:
        engine, player = build_engine(plan, speed=speed, finalize=finalize, record_dir=record_dir)
    except Exception as exc:  # noqa: BLE001 - a locked store, a bad toml: this problem fails, others go on
        return ProblemRun(name, plan.root, plan.mode, error=f"{type(exc).__name__}: {exc}")
    errors: list[str] = []
    engine.subscribe(DemoPrinter(engine, out, prefix=prefix, progress=progress))
    engine.subscribe(lambda e: errors.append(e.message) if isinstance(e, ev.EngineError) else None)
    out.write(f"{time.strftime('%H:%M:%S')} {prefix}playing {len(plan.story.versions)} versions in {plan.root} "
              f"({'GPU ' + str(plan.gpu) if plan.mode == 'live' else 'replay'})\n")
    out.flush()
    engine_task = asyncio.create_task(engine.run())
    player_task = asyncio.create_task(player.play(engine))
    try:
        await asyncio.wait({engine_task, player_task}, return_when=asyncio.FIRST_COMPLETED)
        if not player_task.done():
            player_task.cancel()
            await asyncio.gather(player_task, return_exceptions=True)
            exc = engine_task.exception() if not engine_task.cancelled() else None
            run = player.run or ProblemRun(name, plan.root, plan.mode)
            run.error = f"the engine stopped: {exc!r}" if exc else "the engine stopped before the story ended"
        else:
            run = player_task.result()
    finally:
        engine.stop()
        await asyncio.gather(engine_task, return_exceptions=True)
        engine.close()
    if run.error is None and errors:
        run.error = errors[0]
    out.write(f"{time.strftime('%H:%M:%S')} {prefix}done in {run.wall_s:.0f} s"
              + (f": FAILED: {run.error}" if run.error else "") + "\n")
    out.flush()
    return run


async def play_all(plans: list[Plan], out: TextIO, *, jobs: int = 1, speed: float = 0.0, finalize: bool = True,
                   record_dir: Path | None = None, progress: bool = False,
                   gpus: list[str] | None = None) -> list[ProblemRun]:
    """Play the plans, `jobs` at a time; live, each problem holds a GPU of `gpus` to itself meanwhile.

    One problem per GPU at a time: its engine's lane then serializes every GPU job on that GPU
    (benchmarks, profiles, the finalize), so no two measurements ever share a GPU.
    """
    free: asyncio.Queue[str] = asyncio.Queue()
    for gpu in gpus or ["0"]:
        free.put_nowait(gpu)
    gate = asyncio.Semaphore(max(1, jobs))

    async def one(plan: Plan) -> ProblemRun:
        async with gate:
            gpu = await free.get() if plan.mode == "live" else None
            try:
                if gpu is not None:
                    plan.gpu = gpu
                run = await play_one(plan, out, speed=speed, finalize=finalize, record_dir=record_dir,
                                     progress=progress)
            finally:
                if gpu is not None:
                    free.put_nowait(gpu)
            if record_dir is not None:
                write_summary(record_dir, [run], merge=True)
            return run

    return list(await asyncio.gather(*(one(p) for p in plans)))

