"""On the GPU: GPU MODE problems written the upstream way load and score (issue 13, item 2).

Run from the repository root on the H200 (no internet needed, about a minute):

    OUT=/tmp/out python benches/gpu_gpumode.py
    OUT=/tmp/out GPUMODE_ONLY=prefixsum_py,vectoradd_py python benches/gpu_gpumode.py   # those problems only

1. The five pmpp_v2 problems of tests/fixtures/gpumode, unmodified (reference imports `task` and
   `../utils.py`, inputs from `torch.Generator(device="cuda")`), at their own task.yml sizes:
   their submission.py and upstream's Triton vectoradd must be correct, upstream's wrong examples
   (an unwritten output, a bf16 matmul) incorrect.
2. References that draw their inputs four ways: a CPU generator then `.to("cuda")` (failed before
   with "Expected a 'cuda' device type for generator but found 'cpu'"), a CUDA generator, the
   default generator, explicit `device="cuda"` tensors; the candidate is right for all four.

Each candidate is scored with `python -m trialtui bench FILE --json --device cuda --seeds 2`,
three at a time. Prints a table, writes $OUT/gpu_gpumode.json, exits 1 if a verdict is wrong.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UPSTREAM = ROOT / "tests" / "fixtures" / "gpumode" / "problems" / "pmpp_v2"
JOB_TIMEOUT_S = 200

UPSTREAM_JOBS = [  # problem, candidate (relative to the problem), expected state
    ("vectoradd_py", "submission.py", "correct"),
    ("vectoradd_py", "solutions/correct/submission_triton.py", "correct"),
    ("matmul_py", "submission.py", "correct"),
    ("matmul_py", "solutions/wrong/low-precision.py", "incorrect"),
    ("grayscale_py", "submission.py", "correct"),
    ("grayscale_py", "solutions/wrong/empty.py", "incorrect"),
    ("histogram_py", "submission.py", "correct"),
    ("prefixsum_py", "submission.py", "correct"),  # its reference in float64, its output in the float32 buffer
]

STYLES = {
    "cpu_generator": """
        g = torch.Generator(device="cpu").manual_seed(seed)
        return torch.randn(n, n, generator=g).to("cuda")""",
    "cuda_generator": """
        g = torch.Generator(device="cuda").manual_seed(seed)
        return torch.empty(n, n, device="cuda").uniform_(0, 1, generator=g)""",
    "default_generator": """
        return torch.randn(n, n)""",
    "explicit_cuda": """
        g = torch.Generator(device=torch.device("cuda", 0)).manual_seed(seed)
        return torch.randn(n, n, device=torch.device("cuda"), generator=g).cuda().contiguous()""",
}
STYLE_REFERENCE = """import torch


def generate_input(n, seed):{body}


def ref_kernel(data):
    return data + torch.ones(data.shape, device="cuda")


def check_implementation(data, output):
    ok = torch.equal(output, ref_kernel(data))
    return ok, "" if ok else "mismatch"
"""
STYLE_TASK = "tests:\n  - {n: 67, seed: 3}\nbenchmarks:\n  - {n: 4096, seed: 5}\n"
STYLE_CANDIDATE = "import torch\n\n\ndef custom_kernel(data):\n    return data + 1.0\n"


def upstream_job(work: Path, name: str, candidate: str) -> Path:
    parent = work / "pmpp_v2"
    if not parent.exists():
        parent.mkdir()
        for support in ("utils.py", "eval.py", "template.py"):
            shutil.copyfile(UPSTREAM / support, parent / support)
    root = parent / name
    if not root.exists():
        shutil.copytree(UPSTREAM / name, root)
    path = root / candidate
    if path.parent != root:  # upstream keeps examples in solutions/: score them from the problem dir
        path = Path(shutil.copyfile(path, root / f"example_{path.parent.name}_{path.name}"))
    return path


def style_job(work: Path, style: str) -> Path:
    root = work / f"style_{style}"
    root.mkdir()
    (root / "reference.py").write_text(STYLE_REFERENCE.format(body=textwrap.indent(textwrap.dedent(STYLES[style]), "    ")))
    (root / "task.yml").write_text(STYLE_TASK)
    (root / "plus_one.py").write_text(STYLE_CANDIDATE)
    return root / "plus_one.py"


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
    result["wall_s"] = round(time.perf_counter() - started, 1)
    print(f"done {path.parent.name}/{path.name}: {result.get('state')} in {result['wall_s']} s, "
          f"{(result.get('message') or '')[:160]}", flush=True)
    return result


def main() -> int:
    out = Path(os.environ.get("OUT") or tempfile.mkdtemp())
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp())
    only = [n for n in os.environ.get("GPUMODE_ONLY", "").split(",") if n]  # problem names, else every job
    jobs = [(f"{name}/{candidate}", expected, upstream_job(work, name, candidate))
            for name, candidate, expected in UPSTREAM_JOBS if not only or name in only]
    jobs += [(f"style/{style}", "correct", style_job(work, style)) for style in STYLES if not only]
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(score, [path for _, _, path in jobs]))
    rows, wrong = [], 0
    for (label, expected, _), result in zip(jobs, results):
        ok = result.get("state") == expected
        wrong += not ok
        peak = result.get("peak_mem_bytes")
        rows.append({"job": label, "state": result.get("state"), "expected": expected, "ok": ok,
                     "peak_mem_gib": round(peak / 2**30, 2) if peak else None, "wall_s": result.get("wall_s"),
                     "dtype": result.get("dtype"), "median_us": (result.get("timing") or {}).get("median_us"),
                     "floor_us": ((result.get("timing") or {}).get("work") or {}).get("floor_us"),
                     "message": (result.get("message") or "").replace("\n", " ")[:160]})
    (out / "gpu_gpumode.json").write_text(json.dumps({"rows": rows, "results": results}, indent=1, default=str))
    print(f"{'job':52s} {'state':10s} {'ok':3s} {'peak GiB':>8s} {'wall s':>6s}  message")
    for r in rows:
        peak = f"{r['peak_mem_gib']:.2f}" if r["peak_mem_gib"] is not None else "-"
        print(f"{r['job'][:52]:52s} {str(r['state']):10s} {'yes' if r['ok'] else 'NO':3s} {peak:>8s} "
              f"{r['wall_s'] or 0:6.1f}  {r['message'][:100]}")
    print(f"{len(rows)} jobs, {wrong} wrong verdicts, {time.perf_counter() - started:.0f} s")
    shutil.rmtree(work, ignore_errors=True)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
