"""The hostile corpus (tests/hostile) through the real CLI: every candidate gets its expected verdict.

After every run: the CLI is alive and answered, no process the candidates started is left, the
problem's files are as they were, and no log is over 2 MB. `bench` runs each candidate on a copy of
its problem (a few at a time: most of a hanging case is waiting); `watch --once` scores each problem
directory in one run, as the engine does after a restart.
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import corpus

CORPUS = Path(__file__).resolve().parent / "hostile"
CASES = corpus.cases(CORPUS)
PROBLEMS = sorted({case.problem for case in CASES})
LOG_LIMIT = 2 * 1024 * 1024

pytestmark = pytest.mark.slow


def problem_files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and ".trialtui" not in p.parts and "__pycache__" not in p.parts}


def oversized_logs(root: Path) -> list[str]:
    return [f"{p.name}: {p.stat().st_size} bytes" for p in (root / ".trialtui").rglob("*.log")
            if p.stat().st_size > LOG_LIMIT]


def aftermath(root: Path, before: dict[str, str], marker: str) -> list[str]:
    """What a run left wrong: live processes, changed problem files, oversized logs."""
    wrong = [f"left running: {p}" for p in corpus.leftovers(marker)]
    after = problem_files(root)
    wrong += [f"{name} differs after the run" for name in sorted(set(before) | set(after)) if before.get(name) != after.get(name)]
    return wrong + [f"log over 2 MB: {log}" for log in oversized_logs(root)]


def test_the_corpus_is_large_enough_and_well_formed():
    assert len(CASES) >= 30
    assert {"relu", "tamper"} <= set(PROBLEMS)


@pytest.mark.parametrize("problem", PROBLEMS)
def test_watch_once_scores_every_hostile_candidate(problem, tmp_path):
    root = corpus.copy_problem(CORPUS, problem, tmp_path)
    before = problem_files(root)
    final, marker, returncode = corpus.run_watch(root)
    assert returncode == 0, final.get("__cli__")
    wrong = [corpus.mismatch(case, final.get(case.file)) for case in CASES if case.problem == problem]
    wrong = [w for w in wrong if w] + aftermath(root, before, marker)
    assert not wrong, "\n".join(wrong)


def test_bench_scores_every_hostile_candidate(tmp_path):
    def one(case: corpus.Case) -> list[str]:
        root = corpus.copy_problem(CORPUS, case.problem, tmp_path / case.file.removesuffix(".py"))
        before = problem_files(root)
        result, marker = corpus.run_bench(root / case.file)
        wrong = [corpus.mismatch(case, result)] + [f"{case.id}: {w}" for w in aftermath(root, before, marker)]
        if result.get("state") == "cli-crashed":
            wrong.append(f"{case.id}: the CLI did not answer: {result['message']}")
        return [w for w in wrong if w]

    with ThreadPoolExecutor(max_workers=3) as pool:
        wrong = [w for found in pool.map(one, CASES) for w in found]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("command", ["bench", "watch"])
def test_ctrl_c_ends_the_cli_and_every_job_process_within_two_seconds(command, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time
    import uuid

    root = tmp_path / "relu"
    root.mkdir()
    for name in ("reference.py", "trialtui.toml", "loop_forward.py"):
        (root / name).write_bytes((CORPUS / "relu" / name).read_bytes())
    args = (["bench", str(root / "loop_forward.py")] if command == "bench" else ["watch", str(root), "--headless"])
    marker = uuid.uuid4().hex
    cli = subprocess.Popen([sys.executable, "-m", "trialtui", *args, "--device", "cpu"],
                           env={**os.environ, corpus.MARK_ENV: marker}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not any("bench_job" in p for p in corpus.leftovers(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(3)  # the job is importing or spinning in forward
    assert cli.poll() is None, "the CLI ended before it was interrupted"
    started = time.monotonic()
    cli.send_signal(signal.SIGINT)
    cli.wait(timeout=10)
    while corpus.leftovers(marker) and time.monotonic() - started < 2:
        time.sleep(0.05)
    took = time.monotonic() - started
    assert corpus.leftovers(marker) == []
    assert took < 2.0, f"Ctrl-C took {took:.1f} s"


@pytest.mark.skipif(__import__("shutil").which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
def test_bench_sandbox_keeps_the_problem_read_only(tmp_path):
    root = corpus.copy_problem(CORPUS, "tamper", tmp_path)
    before = problem_files(root)
    result, marker = corpus.run_bench(root / "append_reference.py", extra=["--sandbox"])
    assert result["state"] == "error"
    assert "Read-only file system" in result["message"]
    assert aftermath(root, before, marker) == []
