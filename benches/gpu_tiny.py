"""On the H200: tiny kernels' headlines against Nsight Compute's kernel time (issue 34).

    OUT=/tmp/tiny python benches/gpu_tiny.py [N ...]     # about a minute on one H200

For each size n (default 4096, 65536, 1048576, 16777216: fp32 add kernels of about 2 µs to 100 µs),
tests/problems/kb_add's Triton kernel (add.py) is scored by `trialtui bench --json --device cuda` in a
copy of the problem whose timed size is n, and the same kernel is run bare under
`ncu --metrics gpu__time_duration.sum --clock-control none` (ncu flushes the caches before each kernel,
as the harness flushes L2 before each timed call). The headline must be within 10 % of ncu's median
(issue 34: "within 10 % of ncu from 2 µs"). Prints a row per size; writes $OUT/tiny.json.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = ROOT / "tests" / "problems" / "kb_add"
OUT = Path(os.environ.get("OUT") or "gpu_tiny_out")
TOL = 0.10
BARE = """
import importlib.util, sys, torch
spec = importlib.util.spec_from_file_location("cand", sys.argv[1]); cand = importlib.util.module_from_spec(spec); spec.loader.exec_module(cand)
n = int(sys.argv[2])
x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
model = cand.ModelNew()
for _ in range(8):
    model(x, y)
torch.cuda.synchronize()
"""


def bench(root: Path) -> dict:
    done = subprocess.run([sys.executable, "-m", "trialtui", "bench", str(root / "add.py"), "--json", "--device", "cuda",
                           "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=180)
    try:
        return json.loads(done.stdout)
    except ValueError:
        return {"state": "unparsed", "message": (done.stdout + done.stderr)[-1500:]}


def ncu_us(root: Path, n: int) -> float | None:
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    done = subprocess.run([ncu, "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "-k", "regex:add_kernel",
                           "--launch-skip", "3", "--csv", sys.executable, "-c", BARE, str(root / "add.py"), str(n)],
                          capture_output=True, text=True, timeout=180)
    found = median_duration_us(done.stdout)
    if found is None:
        print(done.stdout[-800:], done.stderr[-800:], flush=True)
    return found


def median_duration_us(csv: str) -> float | None:
    """The median of the `gpu__time_duration.sum` rows of ncu's --csv output, in µs."""
    values = []
    for line in csv.splitlines():
        if "gpu__time_duration.sum" in line:
            cells = [c.strip('"') for c in line.split('","')]
            unit, value = cells[-2], cells[-1].strip('"').replace(",", "")
            scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}.get(unit, None)
            if scale is not None and re.fullmatch(r"[0-9.]+", value):
                values.append(float(value) * scale)
    return statistics.median(values) if values else None


def main(argv: list[str]) -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    sizes = [int(a) for a in argv] or [4096, 65536, 1048576, 16777216]
    rows, failures = [], 0
    for n in sizes:
        root = Path(tempfile.mkdtemp(prefix="tiny-")) / "kb_add"
        shutil.copytree(PROBLEM, root)
        config = (root / "trialtui.toml").read_text()
        (root / "trialtui.toml").write_text(config + f"[bench_sizes]\nn = {n}\n")
        result = bench(root)
        timing = result.get("timing") or {}
        headline = timing.get("median_us")
        reference = ncu_us(root, n)
        ratio = headline / reference if headline and reference else None
        ok = result.get("state") == "correct" and ratio is not None and abs(ratio - 1) <= TOL
        failures += not ok
        row = {"n": n, "state": result.get("state"), "headline_us": headline, "ncu_us": reference, "ratio": ratio,
               "confirmed": timing.get("confirmed"), "claimed_us": (timing.get("claimed") or {}).get("median_us"),
               "overhead_us": timing.get("overhead_us"), "rse": timing.get("rse"), "label": timing.get("label"),
               "flags": [f.get("code") for f in result.get("flags") or []], "message": (result.get("message") or "")[:300],
               "ok": ok}
        rows.append(row)
        print(f"n={n:>9}  {str(result.get('state')):9}  headline {headline and f'{headline:8.2f}' or '   -    '} µs  "
              f"ncu {reference and f'{reference:8.2f}' or '   -    '} µs  ratio {ratio and f'{ratio:.3f}' or '-'}  "
              f"confirmed {timing.get('confirmed')}  {'OK' if ok else 'FAIL'}", flush=True)
        (OUT / "tiny.json").write_text(json.dumps({"rows": rows, "failures": failures, "tolerance": TOL}, indent=1))
    print(f"{len(rows)} sizes, {failures} outside {TOL:.0%} of ncu", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
