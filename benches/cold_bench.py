"""A cold `trialtui bench --json` of one bench problem, against the bare cold script, with its phase breakdown.

`python benches/cold_bench.py [PROBLEM] [--device cuda|cpu]` (default kb_softmax on cuda): a copy of
benches/problems/PROBLEM, then the bare cold script (benches/bare_bench.py) and the CLI, alternated
twice, each in a fresh process. Prints each run as it ends and the phases of the CLI's last result;
the results go to $OUT/cold_bench.json.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from trialtui.core.phases import breakdown_lines  # noqa: E402


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    device = "cpu" if "--device=cpu" in sys.argv or ("--device" in sys.argv and "cpu" in sys.argv) else "cuda"
    name = args[0] if args else "kb_softmax"
    root = Path(tempfile.mkdtemp()) / name
    shutil.copytree(HERE / "problems" / name, root)
    env = {**os.environ, **({"TRITON_INTERPRET": "1"} if device == "cpu" else {})}
    rows = []
    for i in range(2):
        t = time.perf_counter()
        subprocess.run([sys.executable, str(HERE / "bare_bench.py"), str(root), *(["--cpu"] if device == "cpu" else [])],
                       check=True, capture_output=True, env=env)
        bare = time.perf_counter() - t
        t = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "trialtui", "bench", str(root / "kernel.py"), "--json", "--device", device],
                              capture_output=True, text=True, env=env)
        ours = time.perf_counter() - t
        result = json.loads(done.stdout) if done.stdout.strip().startswith("{") else {"state": "?", "message": done.stderr[-800:]}
        timing = result.get("timing") or {}
        rows.append({"bare_cold_s": round(bare, 2), "trialtui_bench_s": round(ours, 2), "state": result.get("state"),
                     "median_us": timing.get("median_us"), "confirmed": timing.get("confirmed"),
                     "speedup": result.get("speedup"), "phases_s": result.get("phases_s")})
        print(f"run {i + 1}: bare cold {bare:.2f} s, trialtui bench {ours:.2f} s ({ours / bare:.2f}×, target ≤ 1.5×); "
              f"{result.get('state')} {timing.get('median_us')} µs confirmed={timing.get('confirmed')} "
              f"speedup {result.get('speedup')} {result.get('message', '')[:200]}", flush=True)
        for line in breakdown_lines(result.get("phases_s")):
            print("   ", line, flush=True)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "cold_bench.json").write_text(json.dumps(
            {"problem": name, "device": device, "date": time.strftime("%Y-%m-%d"), "runs": rows}, indent=1, default=str))


if __name__ == "__main__":
    main()
