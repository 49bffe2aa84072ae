"""Corpora of candidates with expected verdicts, scored through the real CLI (`bench` and `watch --once`).

A corpus is a directory of problem directories. Each candidate file there starts with a header line

    # expect: <state> | <message fragment>

where state is one of correct, incorrect, error, timeout, invalid, and the fragment (may be empty)
must appear in the result's message, case-insensitively. `a/b` alternatives are allowed only where a
`# why: ...` line in the header says why both are right (e.g. `watch` rejects statically what
`bench` runs). An optional `# expect-cuda: <state> | <fragment>` line, with its `# why:`, replaces
the expectation for --device cuda (benches/gpu_containment.py). Files without the header are not
candidates.

Every CLI run carries a unique marker in its environment (MARK_ENV); `leftovers(marker)` lists the
processes still holding it, so a test can require that nothing a candidate started outlives its job.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

STATES = ("correct", "incorrect", "error", "timeout", "invalid")
MARK_ENV = "TRIALTUI_CORPUS_MARK"
FINAL = {*STATES, "cancelled"}


class CorpusError(ValueError):
    """A candidate whose header does not follow the format."""


@dataclass(frozen=True)
class Case:
    problem: str  # the problem directory's name inside the corpus
    file: str
    states: tuple[str, ...]
    fragment: str
    cuda: tuple[tuple[str, ...], str] | None = None  # (states, fragment) on a GPU, where they differ
    flags: tuple[str, ...] = ()  # `# flags: a, b|c`: codes the result must carry ("b|c": either)

    @property
    def id(self) -> str:
        return f"{self.problem}/{self.file}"

    def expected(self, device: str) -> tuple[tuple[str, ...], str]:
        return self.cuda if device == "cuda" and self.cuda is not None else (self.states, self.fragment)


def _expectation(path: Path, text: str, prefix: str, explained: bool) -> tuple[tuple[str, ...], str]:
    states_text, sep, fragment = text.removeprefix(prefix).partition("|")
    states = tuple(s.strip() for s in states_text.split("/"))
    if not sep or not all(s in STATES for s in states):
        raise CorpusError(f"{path}: the header must read `{prefix} <{'|'.join(STATES)}> | <fragment>`")
    if len(states) > 1 and not explained:
        raise CorpusError(f"{path}: alternatives ({'/'.join(states)}) need a `# why:` line in the header")
    return states, fragment.strip()


def parse_header(path: Path) -> Case | None:
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines or not lines[0].startswith("# expect:"):
        return None
    header = [line for line in lines[:6] if line.startswith("#")]
    explained = any(line.startswith("# why:") for line in header)
    states, fragment = _expectation(path, lines[0], "# expect:", explained)
    cuda = [line for line in header if line.startswith("# expect-cuda:")]
    if cuda and not explained:
        raise CorpusError(f"{path}: `# expect-cuda:` needs a `# why:` line in the header")
    flags = tuple(code.strip() for line in header if line.startswith("# flags:")
                  for code in line.removeprefix("# flags:").split(",") if code.strip())
    return Case(path.parent.name, path.name, states, fragment,
                _expectation(path, cuda[0], "# expect-cuda:", explained) if cuda else None, flags)


def cases(corpus: Path) -> list[Case]:
    found = []
    for problem in sorted(p for p in corpus.iterdir() if (p / "reference.py").exists()):
        for path in sorted(problem.glob("*.py")):
            if path.name != "reference.py" and (case := parse_header(path)) is not None:
                found.append(case)
    return found


def copy_problem(corpus: Path, problem: str, tmp: Path) -> Path:
    """A fresh copy of one problem directory (its trial store starts empty)."""
    target = tmp / problem
    shutil.copytree(corpus / problem, target, ignore=shutil.ignore_patterns(".trialtui", "__pycache__"))
    return target


def _cli(args: list[str], marker: str, timeout_s: float) -> subprocess.CompletedProcess:
    env = {**os.environ, MARK_ENV: marker}
    return subprocess.run([sys.executable, "-m", "trialtui", *args], capture_output=True, text=True, env=env,
                          timeout=timeout_s)


def run_bench(path: Path, *, device: str = "cpu", timeout_s: float = 120.0, extra: list[str] = ()) -> tuple[dict, str]:
    """`trialtui bench FILE --json`: the result and the run's marker."""
    marker = uuid.uuid4().hex
    out = _cli(["bench", str(path), "--json", "--device", device, *extra], marker, timeout_s)
    try:
        result = json.loads(out.stdout)
    except ValueError:
        result = {"state": "cli-crashed", "message": f"rc {out.returncode}: {out.stdout[-500:]} {out.stderr[-1500:]}"}
    result["cli_returncode"] = out.returncode
    return result, marker


def run_watch(problem_dir: Path, *, device: str = "cpu", timeout_s: float = 300.0,
              extra: list[str] = ()) -> tuple[dict[str, dict], str, int]:
    """`trialtui watch DIR --once --headless --json`: the final state and message per candidate file."""
    marker = uuid.uuid4().hex
    out = _cli(["watch", str(problem_dir), "--once", "--headless", "--json", "--device", device, *extra],
               marker, timeout_s)
    files: dict[str, str] = {}
    final: dict[str, dict] = {}
    for line in out.stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("file") and event.get("trial_id"):
            files[event["trial_id"]] = Path(event["file"]).name
        state = event.get("state")
        if event.get("trial_id") in files and state in FINAL:
            final[files[event["trial_id"]]] = {"state": state, "message": event.get("message") or
                                               event.get("summary") or ""}
    if out.returncode != 0:
        final["__cli__"] = {"state": "cli-crashed", "message": f"rc {out.returncode}: {out.stderr[-1500:]}"}
    return final, marker, out.returncode


def mismatch(case: Case, result: dict | None, device: str = "cpu") -> str | None:
    """None when the result has an expected state and the fragment; else what differs."""
    if result is None:
        return f"{case.id}: no result"
    states, fragment = case.expected(device)
    state, message = result.get("state"), str(result.get("message", ""))
    if state not in states:
        return f"{case.id}: expected {'/'.join(states)}, got {state}: {message[:300]}"
    if fragment.lower() not in message.lower():
        return f"{case.id}: {state} as expected, but the message lacks {fragment!r}: {message[:300]}"
    if "flags" not in result:  # watch's event lines carry states, not flags
        return None
    carried = {f.get("code") for f in result.get("flags") or [] if isinstance(f, dict)}
    missing = [code for code in case.flags if not carried & set(code.split("|"))]
    if missing:
        return f"{case.id}: {state} as expected, but without the flag(s) {', '.join(missing)} (has {sorted(carried)})"
    return None


def leftovers(marker: str) -> list[str]:
    """Live processes whose environment holds the marker, as `pid cmdline`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if f"{MARK_ENV}={marker}".encode() not in Path(f"/proc/{entry}/environ").read_bytes():
                continue
            if Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                continue
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        found.append(f"{entry} {cmd[:200]}")
    return found
