"""The hostile corpus (tests/hostile) through the real CLI: every candidate gets its expected verdict.

After every run: the CLI is alive and answered, no process the candidates started is left, the
problem's files are as they were, and no log is over 2 MB. `bench` runs each candidate on a copy of
its problem (a few at a time: most of a hanging case is waiting); `watch --once` scores each problem
directory in one run, as the engine does after a restart.
"""

from __future__ import annotations

import hashlib
import re
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


def bench_subset(cases: list[corpus.Case]) -> list[corpus.Case]:
    chosen = {case.id: case for case in cases if len(case.states) > 1}
    for case in cases:
        if len(case.states) == 1 and not any(c.problem == case.problem and c.states == case.states for c in chosen.values()):
            chosen[case.id] = case
    return sorted(chosen.values(), key=lambda c: c.id)


def test_the_bench_subset_covers_every_problem_verdict_class_and_two_verdict_case():
    subset = bench_subset(CASES)
    assert {(c.problem, s) for c in subset for s in c.states} >= {(c.problem, s) for c in CASES for s in c.states}
    assert {c.id for c in CASES if len(c.states) > 1} <= {c.id for c in subset}
    assert len(subset) <= 16


def test_bench_scores_a_representative_subset_of_hostile_candidates(tmp_path):
    def one(case: corpus.Case) -> list[str]:
        root = corpus.copy_problem(CORPUS, case.problem, tmp_path / case.file.removesuffix(".py"))
        before = problem_files(root)
        result, marker = corpus.run_bench(root / case.file)
        wrong = [corpus.mismatch(case, result)] + [f"{case.id}: {w}" for w in aftermath(root, before, marker)]
        if result.get("state") == "cli-crashed":
            wrong.append(f"{case.id}: the CLI did not answer: {result['message']}")
        return [w for w in wrong if w]

    with ThreadPoolExecutor(max_workers=3) as pool:
        wrong = [w for found in pool.map(one, bench_subset(CASES)) for w in found]
    assert not wrong, "\n".join(wrong)


SPIN_FLAG = """
import os as _os
from pathlib import Path as _Path


def _ancestry():
    # the job this process belongs to (a fork of the job keeps its __main__; a fork server's jobs share
    # its command line), then the command lines above it
    import sys as _sys
    spec = getattr(_sys.modules.get("__main__"), "__spec__", None)
    pid, found = _os.getpid(), [f"job module: {getattr(spec, 'name', None)}"]
    while pid > 1 and len(found) < 7:
        found.append(_Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\\0", b" ").decode(errors="replace"))
        pid = int(_Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    return "\\n".join(found)


"""


@pytest.mark.parametrize("command, stop", [("bench", "SIGINT"), ("watch", "SIGINT"), ("watch", "SIGTERM")])
def test_ctrl_c_ends_the_cli_and_every_job_process(command, stop, tmp_path):
    """Ctrl-C (or a SIGTERM to `watch`) while a benchmark job spins in a forward that ignores SIGINT and SIGTERM:
    the CLI ends and so does every process of the job, and a watch leaves its trial `interrupted` in the store,
    not benchmarking (the next engine runs it again). The signal is sent once the job's forward has started (the
    candidate writes a file then), and the job's own timeout is set far beyond the wait, so only the
    Ctrl-C can have ended it. The CLI starts with SIGINT ignored and blocked, as whatever ran before in
    that terminal (or in the same test worker) may leave it: a person's Ctrl-C must end it all the same.
    How quickly it ends is a number for a benchmark, not a bound here."""
    import os
    import signal
    import subprocess
    import sys
    import uuid

    from procs import wait_for

    root = tmp_path / "relu"
    root.mkdir()
    (root / "reference.py").write_bytes((CORPUS / "relu" / "reference.py").read_bytes())
    # the benchmark job's timeout far beyond the wait; the validation's short: its trace spins in forward
    # until then (a core and seconds for nothing), and whichever phase it stops in, the trial is queued
    config = (CORPUS / "relu" / "trialtui.toml").read_text()
    config = re.sub(r"(?m)^bench_timeout_s = .*$", "bench_timeout_s = 3600", config)
    config = re.sub(r"(?m)^validate_timeout_s = .*$", "validate_timeout_s = 2", config)
    assert "bench_timeout_s = 3600" in config and "validate_timeout_s = 2" in config
    (root / "trialtui.toml").write_text(config)
    spin = tmp_path / "spinning"
    spin.mkdir()
    source = (CORPUS / "hang" / "loop_forward.py").read_text()
    source = source.replace("\nclass ModelNew", SPIN_FLAG + "class ModelNew", 1).replace(
        "        while True:", f"        _Path({str(spin)!r}, str(_os.getpid())).write_text(_ancestry())\n"
        "        while True:", 1)
    (root / "loop_forward.py").write_text(source)
    args = (["bench", str(root / "loop_forward.py")] if command == "bench" else ["watch", str(root), "--headless"])
    marker = uuid.uuid4().hex
    def as_a_background_job_left_it():  # SIGINT ignored and blocked, as nohup, a shell or a test worker may leave it
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})

    cli = subprocess.Popen([sys.executable, "-m", "trialtui", *args, "--device", "cpu"],
                           env={**os.environ, corpus.MARK_ENV: marker}, preexec_fn=as_a_background_job_left_it,
                           stdout=subprocess.DEVNULL, stderr=(tmp_path / "stderr").open("wb"))
    try:
        # watch first validates the file (its CPU trace spins in forward too, until validate_timeout_s);
        # the benchmark job's forward is the one whose process descends from a bench_job
        wait_for(lambda: cli.poll() is not None or any("bench_job" in f.read_text() for f in spin.iterdir()),
                 "the benchmark job to start spinning in forward")
        assert cli.poll() is None, f"the CLI ended before it was interrupted: {(tmp_path / 'stderr').read_text()[-2000:]}"
        cli.send_signal(getattr(signal, stop))
        cli.wait(timeout=120)
        wait_for(lambda: not corpus.leftovers(marker), "every process of the job to end after Ctrl-C", timeout_s=120)
        if command == "watch":
            from trialtui.core.store import Store

            with Store.open(root, writer=False) as store:
                assert [t.state for t in store.trials()] == ["interrupted"]
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()


@pytest.mark.skipif(__import__("shutil").which("bwrap") is None, reason="bubblewrap (bwrap) is not installed")
def test_bench_sandbox_keeps_the_problem_read_only(tmp_path):
    root = corpus.copy_problem(CORPUS, "tamper", tmp_path)
    before = problem_files(root)
    result, marker = corpus.run_bench(root / "append_reference.py", extra=["--sandbox"])
    assert result["state"] == "error"
    assert "Read-only file system" in result["message"]
    assert aftermath(root, before, marker) == []


def test_a_save_that_hangs_the_cpu_run_is_a_timeout_without_a_benchmark_on_a_cpu_lane(tmp_path):
    """The benchmark on a CPU lane runs the same interpreter, a run per seed and case, so once the validation's
    single run hung, its own limit can only be reached too: the trial is `timeout` at once, and says why."""
    import subprocess
    import sys

    from trialtui.core.store import Store

    root = tmp_path / "hang"
    root.mkdir()
    for name in ("reference.py", "loop_forward.py"):
        (root / name).write_bytes((CORPUS / "hang" / name).read_bytes())
    config = (CORPUS / "hang" / "trialtui.toml").read_text()
    (root / "trialtui.toml").write_text(re.sub(r"(?m)^bench_timeout_s = .*$", "bench_timeout_s = 6", config))
    out = subprocess.run([sys.executable, "-m", "trialtui", "watch", str(root), "--once", "--headless", "--device", "cpu"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode in (0, 1), out.stderr[-2000:]
    with Store.open(root, writer=False) as store:
        (trial,) = store.trials()
    assert trial.state == "timeout" and "not benchmarked: on this CPU the benchmark runs the same interpreter" in (
        trial.result.message if trial.result else "")
