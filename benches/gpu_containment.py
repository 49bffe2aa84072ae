"""The containment layer on a GPU: the hostile corpora scored with --device cuda, and what the
supervisor layout costs on a repeat save, side by side with a job process started the old way.

    OUT=/some/dir python benches/gpu_containment.py [--device cuda] [--rounds 3] [--skip-hostile|--skip-overhead]

Hostile: every candidate of tests/hostile and benches/hostile_gpu through `trialtui bench FILE --json`
(six at a time) and each problem directory through `watch --once --headless --json`; per case the
verdict against its header (`# expect-cuda:` where the GPU differs), processes left (by a marker in
their environment), problem files changed, the largest log. Hanging cases take the problem's
timeout (set to 15 s here, in the copies).

Overhead: a warm repeat save of benches/problems/{axpy,rowsoftmax} through `run_child` (engine →
supervisor → stub → job, limits, snapshot, log pump) against the same warm job process started
directly with its spec on stdin and a result pipe (the single-process layout before the supervisor).
Both imported torch beforehand; the median of `--rounds` interleaved rounds, wall from spec to result.
Writes $OUT/gpu_containment.json and prints two tables.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import corpus  # noqa: E402
from trialtui.core.problem_dir import load_problem  # noqa: E402
from trialtui.engine.bench import BENCH_MODULE, bench_file, child_env  # noqa: E402
from trialtui.engine.jobs import WarmChildren  # noqa: E402

CORPORA = [ROOT / "tests" / "hostile", HERE / "hostile_gpu"]
HOSTILE_TIMEOUT_S = 15
WARM_IMPORT_S = 6.0
LOG_LIMIT = 2 * 1024 * 1024


def problem_files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".trialtui" not in p.parts and "__pycache__" not in p.parts}


def largest_log(root: Path) -> int:
    return max([p.stat().st_size for p in (root / ".trialtui").rglob("*.log")] or [0])


def short_timeouts(root: Path) -> None:
    config = root / "trialtui.toml"
    text = re.sub(r"(?m)^(validate|bench)_timeout_s = .*$", lambda m: f"{m.group(1)}_timeout_s = {HOSTILE_TIMEOUT_S}",
                  config.read_text())
    config.write_text(text)


def prepared(corpus_dir: Path, problem: str, tmp: Path) -> tuple[Path, dict[str, bytes]]:
    root = corpus.copy_problem(corpus_dir, problem, tmp)
    short_timeouts(root)
    return root, problem_files(root)


def bench_case(corpus_dir: Path, case: corpus.Case, device: str, tmp: Path) -> dict:
    root, before = prepared(corpus_dir, case.problem, tmp / f"{case.problem}-{case.file[:-3]}")
    started = time.monotonic()
    result, marker = corpus.run_bench(root / case.file, device=device, timeout_s=300)
    time.sleep(0.5)
    return {
        "case": case.id, "via": "bench", "state": result.get("state"), "message": str(result.get("message", ""))[:300],
        "wall_s": round(time.monotonic() - started, 2), "mismatch": corpus.mismatch(case, result, device),
        "left": corpus.leftovers(marker), "files_changed": problem_files(root) != before,
        "largest_log": largest_log(root), "containment": result.get("containment"),
    }


def watch_problem(corpus_dir: Path, problem: str, cases: list[corpus.Case], device: str, tmp: Path) -> list[dict]:
    root, before = prepared(corpus_dir, problem, tmp / f"watch-{problem}")
    final, marker, returncode = corpus.run_watch(root, device=device, timeout_s=600)
    time.sleep(0.5)
    left, changed, log = corpus.leftovers(marker), problem_files(root) != before, largest_log(root)
    return [{
        "case": case.id, "via": "watch", "state": (final.get(case.file) or {}).get("state"),
        "message": (final.get(case.file) or {}).get("message", "")[:300], "cli_returncode": returncode,
        "mismatch": corpus.mismatch(case, final.get(case.file), device), "left": left,
        "files_changed": changed, "largest_log": log,
    } for case in cases]


def contained(row: dict) -> bool:
    return not row["mismatch"] and not row["left"] and not row["files_changed"] and row["largest_log"] <= LOG_LIMIT


def row_line(row: dict) -> str:
    return (f"{'ok ' if contained(row) else 'BAD'} {row['via']:5} {row['case']:38} {str(row['state']):10} "
            f"left={len(row['left'])} files_changed={row['files_changed']} log={row['largest_log']} {row['mismatch'] or ''}")


def hostile(device: str, tmp: Path) -> list[dict]:
    """Every hostile case through `bench`, then each problem's through the watcher; a row printed as it lands."""
    jobs = [(d, c) for d in CORPORA for c in corpus.cases(d) if device == "cuda" or d.name != "hostile_gpu"]
    problems = sorted({(d, c.problem) for d, c in jobs})
    with ThreadPoolExecutor(max_workers=6) as pool:
        rows = landed([pool.submit(bench_case, d, c, device, tmp) for d, c in jobs])
        rows += landed([pool.submit(watch_problem, d, name, [c for cd, c in jobs if (cd, c.problem) == (d, name)],
                                    device, tmp) for d, name in problems])
    return rows


def landed(futures: list[Future]) -> list[dict]:
    """The jobs' rows in the order they finish, each printed as it lands (a run takes minutes)."""
    rows = []
    for done in as_completed(futures):
        result = done.result()
        for row in result if isinstance(result, list) else [result]:
            print(row_line(row), flush=True)
            rows.append(row)
    return rows


def direct_warm(module: str, env: dict[str, str], cwd: Path) -> tuple[subprocess.Popen, int, int]:
    """The job process as it was started before the supervisor: one process, torch imported, waiting.

    Returns the process and both ends of its result pipe (the write end's number is the same in it).
    """
    read_fd, write_fd = os.pipe()
    process = subprocess.Popen([sys.executable, "-m", module, "--warm"], stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(write_fd,), cwd=cwd,
                               env={**os.environ, **env, "PYTHONUNBUFFERED": "1"}, start_new_session=True)
    return process, read_fd, write_fd


def run_direct(process: subprocess.Popen, read_fd: int, write_fd: int, spec: dict) -> dict:
    if process.poll() is not None:
        raise RuntimeError(f"the directly started warm job exited early ({process.returncode})")
    process.stdin.write(json.dumps({**spec, "result_fd": write_fd}).encode())
    process.stdin.close()
    os.close(write_fd)
    data = b""
    while chunk := os.read(read_fd, 1 << 20):
        data += chunk
    os.close(read_fd)
    process.wait()
    return json.loads(data) if data else {"state": "error", "message": "no result"}


def captured_spec(problem, path: Path, device: str) -> dict:
    """The spec bench_file hands to run_child, taken from a real call (it also warms Triton's cache)."""
    import trialtui.engine.bench as bench

    seen = {}
    real = bench.run_child

    def spy(module, spec, **kwargs):
        seen.update(spec)
        return real(module, spec, **kwargs)

    bench.run_child = spy
    try:
        bench_file(problem, path, device=device, use_cache=False)
    finally:
        bench.run_child = real
    return seen


def overhead(device: str, rounds: int, tmp: Path) -> list[dict]:
    rows = []
    for name in ("axpy", "rowsoftmax"):
        root = tmp / f"overhead-{name}"
        shutil.copytree(HERE / "problems" / name, root)
        problem = load_problem(root)
        env = child_env(device)
        spec = captured_spec(problem, root / "kernel.py", device)
        times = {"supervised": [], "direct": []}
        for _ in range(rounds):
            warm = WarmChildren()
            warm.prime(BENCH_MODULE, env)
            process, read_fd, write_fd = direct_warm(BENCH_MODULE, env, tmp)
            time.sleep(WARM_IMPORT_S)
            t0 = time.perf_counter()
            result = bench_file(problem, root / "kernel.py", device=device, use_cache=False, warm=warm)
            times["supervised"].append(time.perf_counter() - t0)
            assert result["state"] == "correct", result.get("message")
            warm.close()
            t0 = time.perf_counter()
            direct = run_direct(process, read_fd, write_fd, spec)
            times["direct"].append(time.perf_counter() - t0)
            assert direct.get("state") == "correct", direct.get("message")
        sup, dire = statistics.median(times["supervised"]), statistics.median(times["direct"])
        rows.append({"problem": name, "device": device, "rounds": rounds, "supervised_s": round(sup, 3),
                     "direct_s": round(dire, 3), "overhead_ms": round((sup - dire) * 1000, 1), "all": times})
        print(f"overhead {name}: supervised {sup:.3f} s, direct {dire:.3f} s", flush=True)  # as it lands
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-hostile", action="store_true")
    ap.add_argument("--skip-overhead", action="store_true")
    args = ap.parse_args()
    out = Path(os.environ.get("OUT", "."))
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="gpu-containment-"))
    report: dict = {"device": args.device, "measured_at": time.strftime("%Y-%m-%d %H:%M")}
    if not args.skip_hostile:
        started = time.monotonic()
        report["hostile"] = hostile(args.device, tmp)
        report["hostile_wall_s"] = round(time.monotonic() - started, 1)
    report["overhead"] = [] if args.skip_overhead else overhead(args.device, args.rounds, tmp)
    (out / "gpu_containment.json").write_text(json.dumps(report, indent=2))
    if "hostile" in report:
        bad = [r for r in report["hostile"] if not contained(r)]
        print(f"hostile: {len(report['hostile'])} runs, {len(bad)} bad, {report['hostile_wall_s']} s")
    print(f"{'problem':12} {'supervised s':>12} {'direct s':>9} {'overhead ms':>11}")
    for row in report["overhead"]:
        print(f"{row['problem']:12} {row['supervised_s']:12.3f} {row['direct_s']:9.3f} {row['overhead_ms']:11.1f}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
