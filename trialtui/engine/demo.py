"""`trialtui demo`: play a sample problem's scripted story through the real loop.

A sample problem (`sample_kernels/<name>/`) is copied into a scratch directory and an ordinary
`Engine` runs on the copy. `DemoPlayer.play(engine)` then saves each version listed in
`demo/story.toml` into the candidate file the way an editor does (temp file in the same directory,
then `os.replace`), lets the watcher pick the save up, waits for the trial's final state and
decision, branches back to the best trial at the `branch_back` beat (what pressing `b` does), and
at the end finalizes the best trial into `final/REPORT.md`.

Numbers, honestly:

* live (a GPU is present): every number is measured by `bench_file` on the GPU, now.
* replay (no GPU): correctness is checked for real (`bench_file` on the CPU, Triton's interpreter,
  test sizes). When the trial is correct and a recording made on a GPU exists for the very same
  source (sha256), the recording's GPU timing, baselines, speedups and environment are merged into
  the result, which then carries `"recorded": {"gpu", "date", "source": "replay", ...}` and is
  labelled "recorded on <GPU>, <date>" wherever it is shown. Without a recording a correct trial
  has no speed, and the demo says so. Nothing is ever made up.

Recordings (written by `trialtui demo --record DIR` on a GPU, one file per story version,
`DIR/<problem>/<version stem>.json`, to be copied into `sample_kernels/<problem>/recorded/`)::

    {"problem": "softmax", "version": "v3", "file": "v3.py", "sha256": "<source sha256>",
     "recorded_at": "2025-11-29T10:00:00+00:00", "trial": "t3", "state": "correct",
     "result": {<the trial's whole bench result, as the engine stored it>},
     "sol": 0.81, "verdicts": [...], "profile": null}

Replay indexes every recording of a problem by sha256, so only byte-identical source ever gets
numbers, whatever its file is called.

No Textual here: the TUI receives a `DemoPlayer` and awaits `play(engine)`; headless runs print.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
import os
import re
import shutil
import tempfile
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import trialtui
from trialtui.core import tree
from trialtui.core.model import Trial, TrialState
from trialtui.core.problem import Problem
from trialtui.core.report import FINAL_DIR
from trialtui.core.store import atomic_write, sha256_of
from trialtui.engine import events as ev
from trialtui.engine.bench import bench_file
from trialtui.engine.finalize import FinalizeError, finalize
from trialtui.engine.headless import HeadlessPrinter

SAMPLES_DIR = "sample_kernels"
STORY = "demo/story.toml"
RECORDED_DIR = "recorded"
ORDER = ("bias_gelu_residual", "softmax", "rmsnorm", "matmul_epilogue")  # the README's order
TUI_DEFAULT = "bias_gelu_residual"
# Not copied into the scratch problem: an old store, recordings, an old report card, bytecode.
SKIP_ON_COPY = frozenset({".trialtui", RECORDED_DIR, FINAL_DIR, "__pycache__"})
# Seconds at --speed 1: before a save (read the beat), after its decision (see the result), before a branch.
PAUSE_BEFORE_S, PAUSE_AFTER_S, PAUSE_BRANCH_S = 1.5, 2.5, 1.5
SAVE_FALLBACK_S = 5.0  # the watcher normally reports a save within ~1.6 s
META_KEYS = ("problem", "version", "file", "sha256", "recorded_at", "trial", "state")


class DemoError(RuntimeError):
    """Something the demo itself cannot do: a missing sample, a used directory, a stuck engine."""


# ---------------------------------------------------------------------------------------------
# samples and stories


def samples_root(override: Path | str | None = None) -> Path:
    """`sample_kernels/` beside the package (a source checkout), or the directory given."""
    root = Path(override) if override else Path(trialtui.__file__).resolve().parents[1] / SAMPLES_DIR
    if not root.is_dir() or not any((root / name / STORY).is_file() for name in _dirs(root)):
        raise DemoError(
            f"no sample problems at {root}: they ship with trialtui's source repository, not with the "
            f"installed package. Install from a checkout (pip install -e .) or pass --samples "
            f"path/to/{SAMPLES_DIR}."
        )
    return root


def _dirs(root: Path) -> list[str]:
    try:
        return [p.name for p in root.iterdir() if p.is_dir()]
    except OSError:
        return []


def sample_names(root: Path) -> list[str]:
    """Every sample with a story, the README's four first."""
    names = [n for n in _dirs(root) if (root / n / STORY).is_file()]
    return sorted(names, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


def resolve_names(root: Path, names: list[str] | tuple[str, ...], *, several: bool) -> list[str]:
    """The samples to play: the ones named, or all (several) / the TUI's default (one)."""
    known = sample_names(root)
    if not names:
        return known if several else [TUI_DEFAULT if TUI_DEFAULT in known else known[0]]
    bad = [n for n in names if n not in known]
    if bad:
        raise DemoError(f"no sample problem {', '.join(map(repr, bad))}; the samples are: {', '.join(known)}")
    if not several and len(names) > 1:
        raise DemoError("the TUI plays one problem at a time; use --headless to play several")
    return list(dict.fromkeys(names))


@dataclass(frozen=True)
class Version:
    file: str
    parent: str
    expected: str
    beat: str
    note: str = ""

    @property
    def stem(self) -> str:
        return Path(self.file).stem


@dataclass(frozen=True)
class Story:
    problem: str
    candidate: str
    versions: tuple[Version, ...]
    sample: Path

    def source(self, version: Version) -> bytes:
        return (self.sample / "demo" / version.file).read_bytes()

    def by_file(self, file: str) -> Version | None:
        return next((v for v in self.versions if v.file == file), None)


def load_story(sample: Path) -> Story:
    data = tomllib.loads((sample / STORY).read_text(encoding="utf-8"))
    versions = tuple(
        Version(v["file"], v.get("parent", ""), v.get("expected", "correct"), v.get("beat", ""), v.get("note", ""))
        for v in data.get("version", [])
    )
    if not versions or not data.get("candidate"):
        raise DemoError(f"{sample / STORY} names no candidate or no versions")
    for v in versions:
        if not (sample / "demo" / v.file).is_file():
            raise DemoError(f"{sample / STORY} lists {v.file}, which is not in {sample / 'demo'}")
    return Story(data.get("problem") or sample.name, data["candidate"], versions, sample)


def prepare(sample: Path, parent_dir: Path, story: Story, *, baselines: list[str] | None = None,
            profile: str | None = None) -> Path:
    """Copy a sample into `parent_dir/<name>`, leaving out old state, recordings and reports.

    The candidate file is reset to the story's first version, so the tree starts where the story
    does. `baselines` (e.g. ["eager"]) and `profile` (auto | always | never) override the copy's
    trialtui.toml.
    """
    dest = parent_dir / sample.name
    if dest.exists() and any(dest.iterdir()):
        raise DemoError(f"{dest} already exists and is not empty: pick another --into, or remove it")

    def ignore(directory: str, names: list[str]) -> list[str]:
        top = Path(directory).resolve() == sample.resolve()
        return [n for n in names if n == "__pycache__" or (top and n in SKIP_ON_COPY)]

    shutil.copytree(sample, dest, ignore=ignore, dirs_exist_ok=True)
    atomic_write(dest / story.candidate, story.source(story.versions[0]))
    toml = dest / "trialtui.toml"
    text = toml.read_text(encoding="utf-8") if toml.exists() else ""
    if baselines:
        text = _set_key(text, "baselines", json.dumps(baselines))
    if profile:
        text = _set_key(text, "when", json.dumps(profile), table="profile")
    if baselines or profile:
        toml.write_text(text, encoding="utf-8")
    return dest


def _set_key(text: str, key: str, value: str, table: str | None = None) -> str:
    """Set `key = value` at the top level or in `[table]` of a TOML text, keeping everything else."""
    line = f"{key} = {value}  # set by trialtui demo"
    lines = text.splitlines()
    current, start, found = None, None, False
    for i, raw in enumerate(lines):
        header = re.match(r"^\s*\[+\s*([^\]]+?)\s*\]+", raw)
        if header:
            current = header.group(1)
            if current == table:
                start = i
            continue
        if current == table and re.match(rf"^\s*{re.escape(key)}\s*=", raw):
            lines[i], found = line, True
    if not found:
        if table is None:
            lines.insert(0, line)  # before any [table], or it would belong to it
        elif start is not None:
            lines.insert(start + 1, line)
        else:
            lines += ["", f"[{table}]", line]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# recordings and replay


def load_recordings(directory: Path | None) -> dict[str, dict[str, Any]]:
    """sha256 → recording, from every *.json in `directory` (absent: none). Unreadable files are skipped."""
    found: dict[str, dict[str, Any]] = {}
    if directory is None or not directory.is_dir():
        return found
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("result"), dict) and data.get("sha256"):
            found[data["sha256"]] = {**data, "path": str(path)}
    return found


def recorded_date(recording: dict[str, Any]) -> str:
    return str(recording.get("recorded_at") or "an unknown date")[:10]


def recorded_label(result: dict[str, Any] | None) -> str | None:
    """'recorded on NVIDIA H200, 2025-11-29' for a replayed result, else None."""
    recorded = (result or {}).get("recorded")
    if not recorded:
        return None
    return f"recorded on {recorded.get('gpu') or 'an unknown GPU'}, {recorded.get('date') or 'an unknown date'}"


def merge_recording(cpu: dict[str, Any], recording: dict[str, Any]) -> dict[str, Any]:
    """The live CPU result with the recording's GPU numbers in place of the CPU timing."""
    gpu = recording["result"]
    env = gpu.get("env") or {}
    merged = dict(cpu)
    for key in ("timing", "baselines", "speedup", "env", "sizes", "dtype"):
        merged[key] = gpu.get(key)
    merged["flags"] = list(cpu.get("flags") or []) + [
        {**f, "message": f"{f.get('message', '')} (in the recording)"} for f in gpu.get("flags") or []
    ]
    merged["recorded"] = {
        "gpu": env.get("gpu"),
        "date": recorded_date(recording),
        "source": "replay",
        "recorded_at": recording.get("recorded_at"),
        "version": recording.get("version"),
        "sha256": recording.get("sha256"),
        "trial": recording.get("trial"),
        "correctness": gpu.get("correctness"),  # the check at bench sizes on that GPU
        "cpu": {"timing": cpu.get("timing"), "env": cpu.get("env"), "sizes": cpu.get("sizes")},
    }
    return merged


class ReplayBench:
    """The engine's `bench` without a GPU: the real CPU check, then recorded GPU numbers if any.

    Correctness always comes from the CPU run; a recording only ever adds speed to a trial that is
    correct here, and only a recording of the same source bytes (sha256) counts.
    """

    def __init__(self, recordings: dict[str, dict[str, Any]], inner: Callable[..., dict[str, Any]] = bench_file):
        self.recordings = recordings
        self.inner = inner

    def __call__(self, problem: Problem, path: Path | str, **kwargs: Any) -> dict[str, Any]:
        kwargs["device"] = "cpu"
        result = self.inner(problem, path, **kwargs)
        if result.get("state") != TrialState.CORRECT.value:
            return result
        sha = sha256_of(Path(path).read_bytes())
        recording = self.recordings.get(sha)
        if recording is None:
            result.setdefault("flags", []).append({
                "code": "no-recording",
                "message": f"no GPU recording for this source (sha256 {sha[:12]}): correct on the CPU, no speed",
            })
            return result
        gpu = recording["result"]
        if gpu.get("state") != TrialState.CORRECT.value or not gpu.get("speedup"):
            result.setdefault("flags", []).append({
                "code": "recording-not-correct",
                "message": f"the recorded GPU run of this source ({recording.get('file')}) was "
                           f"{gpu.get('state')}: {gpu.get('message') or 'no timing'}; no speed",
            })
            return result
        return merge_recording(result, recording)


def recording_for(problem: str, version: Version, trial: Trial) -> dict[str, Any]:
    """What `--record` writes for one played version."""
    return {
        "problem": problem,
        "version": version.stem,
        "file": version.file,
        "sha256": trial.sha256,
        "recorded_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "trial": trial.id,
        "state": trial.state,
        "result": trial.result,
        "sol": trial.sol,
        "verdicts": trial.verdicts,
        "profile": trial.profile,
    }


# ---------------------------------------------------------------------------------------------
# events and printing


def numbers_label(result: dict[str, Any] | None) -> str:
    """Where a trial's numbers come from, for every line that shows one."""
    result = result or {}
    recorded = recorded_label(result)
    if recorded:
        return f"{recorded} (replay; correctness checked live here)"
    env = result.get("env") or {}
    if env.get("device") == "cuda":
        return f"measured live on {env.get('gpu') or 'the GPU'}"
    if any(f.get("code") == "no-recording" for f in result.get("flags") or []):
        return "no GPU recording for this source: no speed"
    return "CPU: no GPU timing"


class DemoPrinter(HeadlessPrinter):
    """HeadlessPrinter's lines with the problem's name, beats and demo notes as they are (no `!!`),
    and where each number comes from after every result and new best."""

    def __init__(self, engine: Any, out: TextIO, *, prefix: str = "", progress: bool = False):
        super().__init__(out, as_json=False, progress=progress)
        self.engine = engine
        self.prefix = prefix

    def text(self, event: ev.Event) -> str:  # type: ignore[override]
        if isinstance(event, ev.Notice) and event.message.startswith(("beat: ", "demo: ")):
            line = event.message
        else:
            line = HeadlessPrinter.text(event)
            if isinstance(event, ev.NewBest) or (isinstance(event, ev.ResultReady) and event.state == "correct"):
                line += f" — {numbers_label(self._result(event.trial_id))}"
        return f"{self.prefix}{line}"

    def _result(self, trial_id: str) -> dict[str, Any] | None:
        try:
            return self.engine.store.get(trial_id).result
        except Exception:  # noqa: BLE001 - a line is never worth a crash
            return None


# ---------------------------------------------------------------------------------------------
# playing a story


@dataclass
class Outcome:
    version: Version
    trial_id: str
    state: str
    parent: str | None
    speedup: float | None

    @property
    def as_expected(self) -> bool:
        return self.state == self.version.expected


@dataclass
class ProblemRun:
    """What playing one story produced: the headless table and the tests read this."""

    problem: str
    root: Path
    mode: str  # live | replay
    outcomes: list[Outcome] = field(default_factory=list)
    branched_to: str | None = None
    best: str | None = None
    best_version: str | None = None
    best_result: dict[str, Any] | None = None
    report: Path | None = None
    report_note: str = ""
    wall_s: float = 0.0
    error: str | None = None

    @property
    def mismatches(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.as_expected]


async def pause(seconds: float) -> None:
    if seconds > 0:
        await asyncio.sleep(seconds)


def editor_save(path: Path, data: bytes) -> None:
    """Save like an editor: a temp file in the same directory, then a rename over the file."""
    try:
        mode = path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".demo~")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)  # mkstemp makes 0600; an editor keeps the file's mode
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class DemoPlayer:
    """Plays one story into a running engine; `play(engine)` is what the TUI awaits."""

    def __init__(
        self,
        story: Story,
        *,
        mode: str,
        speed: float = 1.0,
        finalize: bool = True,
        finalize_bench: Callable[..., dict[str, Any]] = bench_file,
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

    async def play(self, engine: Any) -> ProblemRun:
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
                outcome = Outcome(version, trial.id, trial.state, trial.parent, trial.speedup(baseline))
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

    async def _branch_back(self, engine: Any, version: Version, trial_for: dict[str, str], baseline: str) -> None:
        """What pressing `b` on the best trial does; without any speed, the story's parent stands in."""
        best = tree.best(engine.store.trials(), baseline)
        story_parent = trial_for.get(version.parent)
        if best is not None:
            target, why = best.id, f"the best so far ({best.speedup(baseline):.2f}× vs {baseline})"
            played = next((f for f, t in trial_for.items() if t == best.id), None)
            if played and played != version.parent:
                why += f"; the story expected {version.parent}"
        elif story_parent is not None:
            target, why = story_parent, f"{version.parent}, the story's best: no trial has a speed to rank by here"
        else:
            raise DemoError(f"cannot branch back: no trial for {version.parent!r} and no best")
        self._beat(engine, version, f"branch back to {target} — {why}")
        await pause(PAUSE_BRANCH_S * self.speed)
        engine.branch(target)
        assert self.run is not None
        self.run.branched_to = target

    async def _trial_for(self, engine: Any, target: Path, sha: str) -> Trial:
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

    async def _decided(self, engine: Any, trial_id: str) -> Trial:
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

    def _timeout(self, engine: Any) -> float:
        if self.trial_timeout_s is not None:
            return self.trial_timeout_s
        cfg = engine.problem.config
        return 3 * (cfg.validate_timeout_s + cfg.bench_timeout_s) + 300  # queued behind other problems, too

    async def _finish(self, engine: Any, trial_for: dict[str, str], baseline: str) -> None:
        run = self.run
        assert run is not None
        trials = engine.store.trials()
        best = tree.best(trials, baseline)
        if best is None:
            # no speed anywhere (CPU, no recordings): the last correct version stands for the story's end
            correct = [o for o in run.outcomes if o.state == TrialState.CORRECT.value]
            if not correct:
                run.report_note = "no correct trial: nothing to finalize"
                self._notice(engine, run.report_note, "warning")
                return
            chosen = engine.store.get(correct[-1].trial_id)
            run.report_note = (f"no trial has a speed here, so no best: finalizing the story's last correct "
                               f"version, {chosen.id}")
        else:
            chosen = best
            run.best, run.best_result = best.id, best.result
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

    def _finalize(self, engine: Any, trial: Trial) -> Path:
        """`trialtui trials finalize` on the engine's own store (the engine holds the lock).

        The same steps as cli_trials.finalize: the trial's source into final/, a re-benchmark with
        no cached baseline, build_report, REPORT.md and report.json. A replayed trial's report is
        the CPU one, with the recorded GPU numbers added in a section of their own.
        """
        problem = engine.problem
        recorded = (lambda t: _recorded_extra(t, problem.config.baselines)) if recorded_label(trial.result) else None
        try:
            _, _, out_dir = finalize(problem, engine.store, trial, device="cuda" if self.mode == "live" else "cpu",
                                     bench=self.finalize_bench, env=self.finalize_env, extra=recorded)
        except FinalizeError as exc:
            raise DemoError(str(exc)) from exc
        return out_dir / "REPORT.md"

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
        text += ", as the story expects" if outcome.as_expected else f" — the story expected {version.expected}!"
        return text

    @staticmethod
    def _beat(engine: Any, version: Version, message: str, *, surprise: bool = False) -> None:
        """A story step, as a plain Notice (every subscriber shows those): `beat: <beat> — <what>`."""
        engine.emit(ev.Notice(f"beat: {version.beat} — {message}", "warning" if surprise else "info"))

    @staticmethod
    def _notice(engine: Any, message: str, level: str = "info") -> None:
        engine.emit(ev.Notice(f"demo: {message}", level))


def _recorded_extra(trial: Trial, baselines: list[str]) -> tuple[str, dict[str, Any]]:
    section, recorded = recorded_section(trial, baselines)
    return section, {"recorded": recorded}


def recorded_section(trial: Trial, baselines: list[str]) -> tuple[str, dict[str, Any]]:
    """REPORT.md's part for replayed GPU numbers: which GPU, when, against what; never 'measured'."""
    result = trial.result or {}
    recorded = result["recorded"]
    timing = result.get("timing") or {}
    lines = [
        "",
        f"## GPU numbers {recorded_label(result)} (replayed, not measured in this run)",
        "",
        f"- The same source (sha256 {str(recorded.get('sha256'))[:12]}) timed on {recorded.get('gpu')}; "
        f"dtype {result.get('dtype')}; sizes "
        + "; ".join(", ".join(f"{k}={v}" for k, v in (c or {}).items()) for c in (result.get("sizes") or [])),
        f"- Correctness in this run: the CPU check above; on the GPU at those sizes: "
        f"{'passed' if (recorded.get('correctness') or {}).get('passed') else 'not recorded'}",
        "",
        "| | median | speedup |",
        "|---|---|---|",
        f"| {trial.id} | {_us(timing.get('median_us'))} | |",
    ]
    for kind in baselines:
        base = (result.get("baselines") or {}).get(kind) or {}
        speed = (result.get("speedup") or {}).get(kind)
        lines.append(f"| {kind} | {_us(base.get('median_us'))} | {f'{speed:.2f}×' if speed is not None else '—'} |")
    data = {
        **{k: recorded.get(k) for k in ("gpu", "date", "source", "recorded_at", "sha256")},
        "time_us": timing.get("median_us"),
        "baselines_us": {k: ((result.get("baselines") or {}).get(k) or {}).get("median_us") for k in baselines},
        "speedup": {k: (result.get("speedup") or {}).get(k) for k in baselines},
        "dtype": result.get("dtype"),
        "sizes": result.get("sizes"),
    }
    return "\n".join(lines) + "\n", data


def _us(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f} µs"


# ---------------------------------------------------------------------------------------------
# the final table


def final_table(runs: list[ProblemRun], baselines: tuple[str, ...] = ("eager", "compile")) -> str:
    """One row per problem: its best trial, speedups, and where the numbers come from."""
    rows = [("problem", "best", *(f"vs {b}" for b in baselines), "story", "time", "numbers")]
    for run in runs:
        result = run.best_result or {}
        speed = result.get("speedup") or {}
        if run.error:
            where = f"FAILED: {run.error}"
        elif run.best:
            where = f"{_where(result)} · {numbers_label(result)}"
        else:
            where = "CPU: no GPU timing" + (" (no recording for any correct version)" if run.mode == "replay" else "")
        best = f"{run.best} ({run.best_version})" if run.best else "—"
        story = f"{len(run.outcomes) - len(run.mismatches)}/{len(run.outcomes)} as expected"
        rows.append((run.problem, best, *(f"{speed[b]:.2f}×" if speed.get(b) is not None else "—" for b in baselines),
                     story, f"{run.wall_s:.0f} s", where))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r[:-1], widths)) + "  " + r[-1] for r in rows]
    return "\n".join(line.rstrip() for line in lines)


def _where(result: dict[str, Any]) -> str:
    env = result.get("env") or {}
    case = (result.get("sizes") or [{}])[0] or {}
    shape = ", ".join(f"{k}={v}" for k, v in case.items() if k != "seed") or "default sizes"
    return f"{env.get('gpu') or '?'} · {result.get('dtype') or '?'} · {shape}"



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
                 trial_timeout_s: float | None = None) -> tuple[Any, DemoPlayer]:
    """The engine for a plan's problem copy, and the player that tells its story."""
    from trialtui.core.problem import load_problem
    from trialtui.engine.lanes import Lane, Lanes
    from trialtui.engine.loop import Engine

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


def run_summary(run: ProblemRun) -> dict[str, Any]:
    result = run.best_result or {}
    return {
        "problem": run.problem,
        "mode": run.mode,
        "best": run.best,
        "best_version": run.best_version,
        "speedup": result.get("speedup"),
        "time_us": (result.get("timing") or {}).get("median_us"),
        "baselines_us": {k: v.get("median_us") for k, v in (result.get("baselines") or {}).items()},
        "gpu": (result.get("env") or {}).get("gpu"),
        "dtype": result.get("dtype"),
        "sizes": result.get("sizes"),
        "recorded": result.get("recorded"),
        "report": str(run.report) if run.report else None,
        "story": [{"version": o.version.file, "beat": o.version.beat, "trial": o.trial_id, "parent": o.parent,
                   "state": o.state, "expected": o.version.expected, "speedup": o.speedup} for o in run.outcomes],
        "branched_to": run.branched_to,
        "wall_s": round(run.wall_s, 1),
        "error": run.error,
    }


def write_summary(directory: Path, runs: list[ProblemRun], *, merge: bool = False) -> Path:
    """`summary.json`: one entry per problem (merged with what is there when several write in turn)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "summary.json"
    data: dict[str, Any] = {}
    if merge and path.exists():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            data = {}
    for run in runs:
        data[run.problem] = run_summary(run)
    atomic_write(path, (json.dumps(data, indent=1, default=str) + "\n").encode())
    return path
