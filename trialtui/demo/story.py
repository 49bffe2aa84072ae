"""The demo's sample problems and their stories: finding them, reading `demo/story.toml`, copying a
sample into a fresh problem directory, saving a version like an editor, and what playing one produced.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import trialtui
from trialtui.core.bench_result import BenchResult
from trialtui.core.config import Config
from trialtui.core.decide_evidence import Tree
from trialtui.core.model import Action, Trial, TrialState
from trialtui.core.report import FINAL_DIR
from trialtui.core.store import atomic_write

SAMPLES_DIR = "sample_kernels"
STORY = "demo/story.toml"
RECORDED_DIR = "recorded"
ORDER = ("bias_gelu_residual", "softmax", "rmsnorm", "matmul_epilogue")  # the README's order
# Played when no problem is named: complete, recorded, and about a minute on a 2-core CPU.
DEFAULT_PROBLEM = "bias_gelu_residual"
# Not copied into the scratch problem: an old store, recordings, an old report card, bytecode.
SKIP_ON_COPY = frozenset({".trialtui", RECORDED_DIR, FINAL_DIR, "__pycache__"})


class DemoError(RuntimeError):
    """Something the demo itself cannot do: a missing sample, a used directory, a stuck engine."""



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


def fresh_parent(cwd: Path, names: list[str], base: str = "trialtui-demo") -> Path:
    """`cwd/trialtui-demo`, or the first of `-2`, `-3`, ... where none of these problems was played yet."""
    n = 1
    while True:
        parent = cwd / (base if n == 1 else f"{base}-{n}")
        if not any((parent / name).exists() and any((parent / name).iterdir()) for name in names):
            return parent
        n += 1


def sample_names(root: Path) -> list[str]:
    """Every sample with a story, the README's four first."""
    names = [n for n in _dirs(root) if (root / n / STORY).is_file()]
    return sorted(names, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


def resolve_names(root: Path, names: list[str] | tuple[str, ...], *, every: bool, tui: bool) -> list[str]:
    """The samples to play: the ones named, every one (`every`), or the default one."""
    known = sample_names(root)
    if names and every:
        raise DemoError("name the problems to play or pass --all, not both")
    if every:
        names = known
    elif not names:
        return [DEFAULT_PROBLEM if DEFAULT_PROBLEM in known else known[0]]
    bad = [n for n in names if n not in known]
    if bad:
        raise DemoError(f"no sample problem {', '.join(map(repr, bad))}; the samples are: {', '.join(known)}")
    if tui and len(names) > 1:
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
        text = set_toml_key(text, "baselines", json.dumps(baselines))
    if profile:
        text = set_toml_key(text, "when", json.dumps(profile), table="profile")
    if baselines or profile:
        toml.write_text(text, encoding="utf-8")
    return dest


def set_toml_key(text: str, key: str, value: str, table: str | None = None) -> str:
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



@dataclass(frozen=True)
class Claim:
    """What a beat says about the run beyond the correctness state, judged on the run's own numbers.

    `actions`: decide's actions that bear it out (empty: no claim on the action); `gain`: faster than
    the last correct ancestor beyond noise, by decide's own rule; `target`: at or above the config's
    target_speedup against the primary baseline. A claim on numbers is not judged without a GPU speed.
    """

    says: str  # "a decisive win", as in "expected a decisive win"
    actions: tuple[str, ...] = ()
    gain: bool = False
    target: bool = False

    @property
    def needs_speed(self) -> bool:
        return bool(self.actions) and not set(self.actions) <= {Action.FIX.value}


A = Action
BEAT_CLAIMS: dict[str, Claim] = {
    "first": Claim("a first correct version"),
    "fails_correctness": Claim("a failed correctness check", (A.FIX.value,)),
    "fixed": Claim("a fix that passes"),
    "branch_back": Claim("a save grown from the best"),
    "regressed": Claim("a regression", (A.BRANCH_BACK.value,)),
    "plateau": Claim("a plateau", (A.SWITCH_APPROACH.value,)),
    "improved": Claim("a gain", (A.CONTINUE.value, A.FINALIZE.value), gain=True),
    "different_approach": Claim("a gain from the new approach", (A.CONTINUE.value, A.FINALIZE.value), gain=True),
    "decisive_win": Claim("a decisive win", (A.FINALIZE.value,), target=True),
}
del A


@dataclass(frozen=True)
class Judgement:
    """A beat's claim against the run: `held` True (borne out), False (contradicted) or None (not
    judged: no GPU speed here), and the words for it."""

    held: bool | None
    text: str


def judge(version: Version, trial: Trial, trials: list[Trial], config: Config) -> Judgement:
    """Whether `trial` bears out what its beat claims: decide's stored action, its speed against the
    primary baseline and the target, and its change against the last correct ancestor."""
    claim = BEAT_CLAIMS.get(version.beat, Claim(version.beat or "this step"))
    action = (trial.decision.action if trial.decision is not None else "") or "no decision"
    baseline, target = config.primary_baseline, config.target_speedup
    speed = trial.speedup(baseline)
    said = f"decide says {action}" + (f": {speed:.2f}× {baseline}" if speed is not None else "")
    if not claim.actions:
        return Judgement(True, said)
    if claim.needs_speed and (trial.state != TrialState.CORRECT.value or trial.gpu_timing is None):
        if trial.state != TrialState.CORRECT.value:
            return Judgement(False, f"expected {claim.says}; {said}")
        return Judgement(None, f"{claim.says} is not judged: no GPU speed for it here; {said}")
    if claim.target:
        said += f" (target {target:.2f}×)"
    misses = []
    if action not in claim.actions:
        misses.append("action")
    if claim.target and (speed is None or speed < target):
        misses.append("target")
    if claim.gain:
        tree = Tree(trials, trial, baseline)
        prev = tree.prev_correct(trial)
        if prev is not None and prev.gpu_timing is None:
            return Judgement(None, f"{claim.says} is not judged: {prev.id}, the trial before it, has no GPU speed "
                                   f"here; {said}")
        change = tree.compare(trial, prev) if prev is not None else None
        if change is None or change.outcome != "faster":
            misses.append("gain")
            if change is not None:
                said += f", {change.text()} than {prev.id} ({change.noise_text()})"
    if misses:
        return Judgement(False, f"expected {claim.says}; {said}")
    return Judgement(True, said)


@dataclass
class Outcome:
    """One played version: what it became, against what the story expects (state, parent, and what
    its beat claims of decide's action and the numbers)."""

    version: Version
    trial_id: str
    state: str
    parent: str | None
    speedup: float | None
    expected_parent: str | None = None  # the trial of the version the story grows this one from
    judgement: Judgement = Judgement(True, "")

    @property
    def as_expected(self) -> bool:
        return (self.state == self.version.expected and self.parent == self.expected_parent
                and self.judgement.held is not False)

    @property
    def unjudged(self) -> bool:
        return self.judgement.held is None


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
    best_result: BenchResult | None = None
    report: Path | None = None
    report_note: str = ""
    unreplayed: list[str] = field(default_factory=list)  # replay: correct versions without GPU numbers
    wall_s: float = 0.0
    error: str | None = None

    @property
    def mismatches(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.as_expected]

    @property
    def unjudged(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.as_expected and o.unjudged]


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

