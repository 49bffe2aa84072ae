"""On the GPU: the checker/candidate split end to end, on the samples and on timing attacks.

Runs the checker (trialtui.runner.bench_job.run) in this process for each case; the candidate runs
in its own process as it does under trialtui. Prints one row per case and writes every result to
$OUT/checker.json. Run from the repo root: `python benches/gpu_checker.py`.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trialtui.core.job_spec import BenchSpec  # noqa: E402
from trialtui.core.problem_dir import load_problem  # noqa: E402
from trialtui.runner import bench_job  # noqa: E402

LIAR = '''
import torch
torch.cuda.Event.elapsed_time = lambda self, end: 0.001
'''
SLEEPY_LIAR = '''
import torch
_real = torch.cuda.Event.elapsed_time
def _fast(self, end):
    return _real(self, end) / 20
_fast.__qualname__ = _real.__qualname__
torch.cuda.Event.elapsed_time = _fast
'''
SIDE_STREAM = '''
import torch
_side = torch.cuda.Stream()
_orig = custom_kernel
def custom_kernel(data):
    out = torch.empty_like(data)
    with torch.cuda.stream(_side):
        out.copy_(torch.softmax(data, -1))
    return out
'''


def cases() -> list[tuple[str, str, str, dict]]:
    """(label, problem dir, candidate source, extra config)."""
    soft = (ROOT / "sample_kernels" / "softmax" / "submission.py").read_text()
    out = [
        ("softmax sample (GM fp32)", "softmax", soft, {}),
        ("softmax, Event.elapsed_time -> 1 ns", "softmax", soft + LIAR, {}),
        ("softmax, events divided by 20", "softmax", soft + SLEEPY_LIAR, {}),
        ("softmax, side stream", "softmax", soft + SIDE_STREAM, {}),
    ]
    return out


def main() -> None:
    out_dir = Path(os.environ.get("OUT", "/tmp/gpu_checker"))
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    work = Path(tempfile.mkdtemp())
    for i, (label, problem_name, source, _) in enumerate(cases()):
        root = work / f"{i}-{problem_name}"
        shutil.copytree(ROOT / "sample_kernels" / problem_name, root, ignore=shutil.ignore_patterns("demo", "recorded", ".trialtui"))
        (root / "cand.py").write_text(source)
        problem = load_problem(root)
        spec = problem.job_spec(candidate=str(root / "cand.py"), device="cuda", seeds=problem.config.seeds,
                                baselines=problem.config.baselines, timeout_s=240)
        t0 = time.perf_counter()
        r = bench_job.run(BenchSpec.from_wire(spec))
        r["label"] = label
        r["job_s"] = round(time.perf_counter() - t0, 2)
        results.append(r)
        t = r.get("timing") or {}
        c = r.get("correctness") or {}
        flags = ",".join(f["code"] for f in r.get("flags", []))
        sp = r.get("speedup") or {}
        print(f"{label:40s} {r['state']:9s} median {t.get('median_us', 0):9.2f} us  kernel {t.get('kernel_us') or 0:9.2f}"
              f"  wall/call {t.get('checker_wall_us_per_call') or 0:9.2f}  speedup {json.dumps({k: round(v, 3) for k, v in sp.items()})}"
              f"  normwise {c.get('normwise_err')} <= {c.get('normwise_bound')}  peak {r.get('peak_mem_bytes')}"
              f" ({(r.get('memory') or {}).get('peak_over_case')}x case)  flags [{flags}]  {r['job_s']} s  phases {r.get('phases_s')}  {r['message'][:200]}",
              flush=True)
        (out_dir / "checker-2.json").write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
