"""Wall time from start to result: `trialtui bench` and a warm repeated save, against a bare script
doing the same correctness and timing work, side by side in one run.

python benches/bench_overhead.py [--device cuda|cpu] [PROBLEM ...]   (problems under benches/problems)
Each row is the median of three interleaved rounds. "warm save" is what the engine does on a
repeated save: a child that imported torch and triton while the user edited takes the job.
"""

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from trialtui.core.problem_dir import load_problem  # noqa: E402
from trialtui.engine.bench import BENCH_MODULE, bench_file, child_env  # noqa: E402
from trialtui.engine.jobs import WarmChildren  # noqa: E402

ROUNDS = 3
WARM_IMPORT_S = 8.0  # time the warm child gets to import, as an editing pause would give it


def timed(fn):
    t0 = time.perf_counter()
    ok = fn()
    return time.perf_counter() - t0, ok


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("problems", nargs="*", default=["axpy", "rowsoftmax", "matmul"])
    args = ap.parse_args()
    rows = []
    for name in args.problems:
        root = Path(tempfile.mkdtemp()) / name
        shutil.copytree(HERE / "problems" / name, root)
        problem = load_problem(root)
        env = {} if args.device == "cuda" else {"TRITON_INTERPRET": "1"}
        bare_cmd = [sys.executable, str(HERE / "bare_bench.py"), str(root)]
        cli_cmd = [sys.executable, "-m", "trialtui", "bench", str(root / "kernel.py"), "--device", args.device, "--no-cache"]
        warm = WarmChildren()
        times = {"bare": [], "cli": [], "warm": []}
        try:
            bench_file(problem, root / "kernel.py", device=args.device)  # Triton's disk cache warm for all
            for _ in range(ROUNDS):
                t, _ = timed(lambda: subprocess.run(bare_cmd, capture_output=True, env={**__import__("os").environ, **env}))
                times["bare"].append(t)
                t, _ = timed(lambda: subprocess.run(cli_cmd, capture_output=True))
                times["cli"].append(t)
                warm.prime(BENCH_MODULE, child_env(args.device))
                time.sleep(WARM_IMPORT_S)
                t, result = timed(lambda: bench_file(problem, root / "kernel.py", device=args.device, use_cache=False, warm=warm))
                assert result["state"] == "correct", result.get("message")
                times["warm"].append(t)
        finally:
            warm.close()
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append((name, med))
    print(f"wall time to result, median of {ROUNDS} interleaved rounds, device {args.device}")
    print(f"{'problem':<12}{'bare script':>12}{'trialtui bench':>16}{'ratio':>8}{'warm save':>11}{'ratio':>8}")
    for name, med in rows:
        print(f"{name:<12}{med['bare']:>11.2f}s{med['cli']:>15.2f}s{med['cli'] / med['bare']:>8.2f}"
              f"{med['warm']:>10.2f}s{med['warm'] / med['bare']:>8.2f}")
    print("targets: trialtui bench ≤ 1.25× the bare script; a warm repeated save ≤ 0.7×")


if __name__ == "__main__":
    main()
