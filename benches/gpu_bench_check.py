"""On the GPU: is trialtui's number right? Run on the H200: python benches/gpu_bench_check.py OUTDIR

For each bench problem: five `trialtui bench` runs (spread), a bare do_bench median, ncu's
gpu__time_duration for the same kernel, and the wall time of trialtui vs the bare script; then a
wrong kernel, a side-stream kernel and an illegal access, each followed by a normal job.
Writes OUTDIR/bench_check.json and prints a table.
"""

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from trialtui.core.problem_dir import load_problem  # noqa: E402
from trialtui.engine.bench import bench_file  # noqa: E402

PROBLEMS = ["axpy", "rowsoftmax", "matmul"]
out_dir = Path(sys.argv[1])
out_dir.mkdir(parents=True, exist_ok=True)
report = {"problems": {}, "bad": {}}


def fresh(name):
    tmp = Path(tempfile.mkdtemp()) / name
    shutil.copytree(HERE / "problems" / name, tmp)
    return tmp


def ncu_time_us(root):
    cmd = ["ncu", "--clock-control", "none", "--nvtx", "--nvtx-include", "trialtui_profile/",
           "--metrics", "gpu__time_duration.sum", "--csv", "--page", "raw",
           sys.executable, str(HERE / "bare_bench.py"), str(root), "--ncu"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    rows = [line for line in p.stdout.splitlines() if line.startswith('"')]
    if len(rows) < 3:
        return None, p.stdout[-2000:] + p.stderr[-2000:]
    header = next(__import__("csv").reader([rows[0]]))
    units = next(__import__("csv").reader([rows[1]]))
    col = header.index("gpu__time_duration.sum")
    scale = {"ns": 1e-3, "us": 1.0, "usecond": 1.0, "nsecond": 1e-3, "msecond": 1e3, "ms": 1e3}.get(units[col], 1.0)
    total = sum(float(next(__import__("csv").reader([r]))[col].replace(",", "")) for r in rows[2:])
    return total * scale, f"{len(rows) - 2} kernel(s), unit {units[col]}"


for name in PROBLEMS:
    root = fresh(name)
    problem = load_problem(root)
    runs = []
    for i in range(5):
        t0 = time.perf_counter()
        r = bench_file(problem, root / "kernel.py", device="cuda", use_cache=False)
        wall = time.perf_counter() - t0
        runs.append({"state": r["state"], "message": r.get("message"), "median_us": (r.get("timing") or {}).get("median_us"),
                     "kernel_us": (r.get("timing") or {}).get("kernel_us"), "rse": (r.get("timing") or {}).get("rse"),
                     "n": (r.get("timing") or {}).get("n"), "speedup": r.get("speedup"), "flags": r.get("flags"), "wall_s": wall})
        print(f"{name} run {i + 1}/5: {r['state']} median {runs[-1]['median_us']} µs, kernel {runs[-1]['kernel_us']} µs, "
              f"wall {wall:.1f} s", flush=True)
        if i == 0:
            (out_dir / f"result_{name}.json").write_text(json.dumps(r.to_json(), indent=1, default=str))
    t0 = time.perf_counter()
    bare = subprocess.run([sys.executable, str(HERE / "bare_bench.py"), str(root)], capture_output=True, text=True)
    bare_wall = time.perf_counter() - t0
    try:
        bare_json = json.loads(bare.stdout.strip().splitlines()[-1])
    except Exception:
        bare_json = {"error": bare.stdout[-1000:] + bare.stderr[-2000:]}
    t0 = time.perf_counter()
    cli = subprocess.run([sys.executable, "-m", "trialtui", "bench", str(root / "kernel.py"), "--no-cache"],
                         capture_output=True, text=True)
    cli_wall = time.perf_counter() - t0
    ncu_us, ncu_note = ncu_time_us(root)
    report["problems"][name] = {"runs": runs, "bare": bare_json, "bare_wall_s": bare_wall, "cli_wall_s": cli_wall,
                                "cli_out": cli.stdout[-1500:] + cli.stderr[-1500:], "ncu_us": ncu_us, "ncu_note": ncu_note}
    (out_dir / "bench_check.json").write_text(json.dumps(report, indent=1, default=str))

BAD = {
    "wrong": ("tl.store(o_ptr + offs, 2.5 * x + y, mask=m)", "tl.store(o_ptr + offs, 2.5 * x + y * 1.01, mask=m)"),
    "side_stream": ("        axpy_kernel[(triton.cdiv(n, 4096),)](x, y, out, n, BLOCK=4096, num_warps=8)",
                    "        s = torch.cuda.Stream()\n        with torch.cuda.stream(s):\n"
                    "            for _ in range(20):\n"
                    "                axpy_kernel[(triton.cdiv(n, 4096),)](x, y, out, n, BLOCK=4096, num_warps=8)"),
    "illegal_address": ("x = tl.load(x_ptr + offs, mask=m)", "x = tl.load(x_ptr + offs * 1000000, mask=m)"),
}
root = fresh("axpy")
source = (root / "kernel.py").read_text()
problem = load_problem(root)
for name, (old, new) in BAD.items():
    assert old in source, name
    (root / "bad.py").write_text(source.replace(old, new))
    r = bench_file(problem, root / "bad.py", device="cuda")
    after = bench_file(problem, root / "kernel.py", device="cuda")
    report["bad"][name] = {"state": r["state"], "message": r.get("message"), "flags": r.get("flags"),
                           "next_job_state": after["state"], "next_job_median_us": (after.get("timing") or {}).get("median_us")}
    (out_dir / f"bad_{name}.json").write_text(json.dumps(r.to_json(), indent=1, default=str))
    print(f"bad {name}: {r['state']}, next job {after['state']}", flush=True)
(out_dir / "bench_check.json").write_text(json.dumps(report, indent=1, default=str))

print(f"{'problem':<12}{'trialtui med':>14}{'kernel_us':>11}{'do_bench':>10}{'ncu':>10}{'med/db':>8}{'kern/ncu':>9}{'spread5':>9}{'cli/bare':>9}")
for name, p in report["problems"].items():
    meds = [r["median_us"] for r in p["runs"] if r["median_us"]]
    med = meds[0] if meds else None
    kern = p["runs"][0]["kernel_us"]
    db = p["bare"].get("do_bench_us")
    spread = (max(meds) / min(meds) - 1) if meds else None
    f = lambda v: f"{v:.1f}" if isinstance(v, (int, float)) else str(v)
    ratio = lambda a, b: f"{a / b:.3f}" if a and b else "-"
    print(f"{name:<12}{f(med):>14}{f(kern):>11}{f(db):>10}{f(p['ncu_us']):>10}{ratio(med, db):>8}{ratio(kern, p['ncu_us']):>9}"
          f"{(f'{spread:.2%}' if spread is not None else '-'):>9}{ratio(p['cli_wall_s'], p['bare_wall_s']):>9}")
for name, b in report["bad"].items():
    print(f"bad {name}: {b['state']} | {b['message']} | flags {[x['code'] for x in b['flags'] or []]} | next job {b['next_job_state']}")
