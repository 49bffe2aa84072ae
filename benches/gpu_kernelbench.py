"""On the GPU: real KernelBench problems at their own sizes, one correct and one perturbed candidate each.

Run from the repository root on the H200 (no internet needed, under 4 minutes):

    OUT=/tmp/out python benches/gpu_kernelbench.py

Each problem directory is built in a temporary folder from the KernelBench file in
tests/fixtures/kernelbench (as reference.py, unmodified, no trialtui.toml: the file's own sizes)
and the two candidates in benches/kernelbench_cases/<level>_<name>/: `correct.py` is the
reference's own forward (Model renamed ModelNew), `perturbed.py` the same with its output scaled by
(1 + 2e-4) or one value moved by 1.0. Each is scored with `python -m trialtui bench FILE --json
--device cuda --seeds 2`, three jobs at a time (the verdicts and the memory are the point here, not
the timings). Prints a table, writes $OUT/gpu_kernelbench.json, exits 1 if a verdict is wrong.
level1/36_RMSNorm_ and level1/63_conv_standard_2D__square_input__square_kernel ran out of memory
on the H200 before (issue 13, item 7).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "kernelbench"
CASES = ROOT / "benches" / "kernelbench_cases"
EXPECTED = {"correct": "correct", "perturbed": "incorrect"}
JOB_TIMEOUT_S = 200


def problem_dir(case: Path, work: Path) -> Path:
    level, name = case.name.split("_", 1)
    root = work / case.name
    root.mkdir()
    shutil.copyfile(FIXTURES / level / f"{name}.py", root / "reference.py")
    for candidate in ("correct.py", "perturbed.py"):
        shutil.copyfile(case / candidate, root / candidate)
    return root


def score(path: Path) -> dict:
    cmd = [sys.executable, "-m", "trialtui", "bench", str(path), "--json", "--device", "cuda", "--seeds", "2"]
    started = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=JOB_TIMEOUT_S, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"state": "timeout", "message": f"trialtui bench ran past {JOB_TIMEOUT_S} s", "wall_s": JOB_TIMEOUT_S}
    try:
        result = json.loads(done.stdout)
    except json.JSONDecodeError:
        result = {"state": "no-json", "message": (done.stdout + done.stderr)[-400:]}
    result["exit_code"] = done.returncode
    result["wall_s"] = round(time.perf_counter() - started, 1)
    memory = result.get("memory") or {}
    print(f"done {path.parent.name}/{path.name}: {result.get('state')} in {result['wall_s']} s, peak "
          f"{result.get('peak_mem_bytes')} B ({memory.get('peak_over_case')}x case), phases {result.get('phases_s')}, "
          f"{(result.get('message') or '')[:160]}", flush=True)
    return result


def main() -> int:
    out = Path(os.environ.get("OUT") or tempfile.mkdtemp())
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp())
    only = sys.argv[1:]  # problem names (or parts of them) to run; all when none are given
    roots = {case.name: problem_dir(case, work) for case in sorted(p for p in CASES.iterdir() if p.is_dir())
             if not only or any(o in case.name for o in only)}
    jobs = [(name, kind, root / f"{kind}.py") for name, root in roots.items() for kind in EXPECTED]
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=int(os.environ.get("KB_PARALLEL", "3"))) as pool:
        results = list(pool.map(score, [path for _, _, path in jobs]))
    rows, wrong = [], 0
    for (problem, kind, _), result in zip(jobs, results):
        ok = result.get("state") == EXPECTED[kind]
        wrong += not ok
        peak = result.get("peak_mem_bytes")
        rows.append({"problem": problem, "candidate": kind, "state": result.get("state"), "expected": EXPECTED[kind],
                     "ok": ok, "peak_mem_gib": round(peak / 2**30, 2) if peak else None,
                     "flags": [f.get("code") for f in result.get("flags") or []], "wall_s": result.get("wall_s"),
                     "message": (result.get("message") or "").replace("\n", " ")[:160]})
    (out / "gpu_kernelbench.json").write_text(json.dumps({"rows": rows, "results": results}, indent=1, default=str))
    print(f"{'problem':58s} {'candidate':9s} {'state':10s} {'ok':3s} {'peak GiB':>8s} {'wall s':>6s}  message")
    for r in rows:
        peak = f"{r['peak_mem_gib']:.2f}" if r["peak_mem_gib"] is not None else "-"
        print(f"{r['problem'][:58]:58s} {r['candidate']:9s} {str(r['state']):10s} {'yes' if r['ok'] else 'NO':3s} "
              f"{peak:>8s} {r['wall_s'] or 0:6.1f}  {r['message'][:90]}")
    print(f"{len(rows)} jobs, {wrong} wrong verdicts, {time.perf_counter() - started:.0f} s")
    shutil.rmtree(work, ignore_errors=True)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
