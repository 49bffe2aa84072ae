"""On the GPU: do trialtui's counters and verdicts name planted problems, and what does profiling cost?

Run on the H200 from the repo root:  PYTHONPATH=$PWD python3 benches/gpu_profile_check.py OUTDIR

1. calibrates the ceilings (trialtui.runner.calibrate_job) into OUTDIR/ceilings.json;
2. profiles five Triton kernels with trialtui's own ncu command (profile_job.profile) and checks the
   verdict each should get: a copy near peak (at_sol), the same with strided loads (uncoalesced or
   memory_low_bw), a matmul without tl.dot (tensor_cores_idle), one with tl.dot (tensor pipe and
   wgmma seen, no tensor_cores_idle), a register-heavy latency-bound kernel (low_occupancy, registers);
3. times trialtui's profile step (the whole profile_job child on a problem dir, and profile() alone)
   against a bare ncu command on the same kernel, interleaved;
4. writes OUTDIR/report.txt, OUTDIR/summary.json, OUTDIR/ceilings.json, OUTDIR/profiles.tar.gz.
Every step is guarded: one failure is recorded and the rest still run.
`--target KIND` is the program ncu runs: warm-up, then one launch inside the NVTX range.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import traceback
from pathlib import Path

import torch
import triton
import triton.language as tl

ROOT = Path(__file__).resolve().parents[1]
RANGE = "trialtui_profile"  # trialtui.runner.profile_job.RANGE; the target imports no trialtui code
MM = 4096
COPY_N, SMALL_N, ROWS = 2**28, 2**24, 16384
CHASE_ROWS, CHASE_N, CHASE_STEPS = 2**18, 2**24, 32


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


@triton.jit
def strided_scale_kernel(x_ptr, y_ptr, rows, cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # output: contiguous
    src = (offs % rows) * cols + offs // rows  # input: neighbouring threads `cols` elements apart
    mask = offs < rows * cols
    tl.store(y_ptr + offs, tl.load(x_ptr + src, mask=mask) * 2.0, mask=mask)


@triton.jit
def mm_nodot_kernel(a_ptr, b_ptr, c_ptr, N, K, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], tl.float32)
    for k in range(K):  # outer products on CUDA cores
        a = tl.load(a_ptr + rm * K + k).to(tl.float32)
        b = tl.load(b_ptr + k * N + rn).to(tl.float32)
        acc += a[:, None] * b[None, :]
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16))


@triton.jit
def mm_dot_kernel(a_ptr, b_ptr, c_ptr, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros([BM, BN], tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16))


@triton.jit
def chase_heavy_kernel(next_ptr, out_ptr, n, steps, BLOCK: tl.constexpr, WIDTH: tl.constexpr):
    """A dependent load chain (latency-bound) carrying a [BLOCK, WIDTH] register array: few warps fit."""
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    idx = rows % n
    keep = tl.zeros([BLOCK, WIDTH], tl.float32) + tl.arange(0, WIDTH)[None, :].to(tl.float32)
    for _ in range(steps):
        idx = tl.load(next_ptr + idx)
        keep = keep * 0.999 + idx.to(tl.float32)[:, None]
    tl.store(out_ptr + rows, tl.sum(keep, axis=1))


def build(kind: str):
    """Inputs on the GPU and a launcher: (launch, flops, min_bytes, dtype, matmul_like)."""
    dev = "cuda"
    if kind in ("copy", "copy_small"):
        n = COPY_N if kind == "copy" else SMALL_N
        x, y = torch.randn(n, device=dev), torch.empty(n, device=dev)

        def launch():
            scale_kernel[(triton.cdiv(n, 4096),)](x, y, n, BLOCK=4096, num_warps=8)

        return launch, 0, 8 * n, "float32", False
    if kind == "strided":
        x, y = torch.randn(ROWS * ROWS, device=dev), torch.empty(ROWS * ROWS, device=dev)

        def launch():
            strided_scale_kernel[(triton.cdiv(ROWS * ROWS, 4096),)](x, y, ROWS, ROWS, BLOCK=4096, num_warps=8)

        return launch, 0, 8 * ROWS * ROWS, "float32", False
    if kind in ("mm_nodot", "mm_dot"):
        a = torch.randn(MM, MM, device=dev, dtype=torch.bfloat16)
        b = torch.randn(MM, MM, device=dev, dtype=torch.bfloat16)
        c = torch.empty(MM, MM, device=dev, dtype=torch.bfloat16)

        def launch():
            if kind == "mm_nodot":
                mm_nodot_kernel[(MM // 64, MM // 64)](a, b, c, MM, MM, BM=64, BN=64, num_warps=4)
            else:
                mm_dot_kernel[(MM // 128, MM // 128)](a, b, c, MM, MM, BM=128, BN=128, BK=64, num_warps=8,
                                                      num_stages=3)

        return launch, 2 * MM**3, 3 * MM * MM * 2, "bfloat16", True
    if kind == "reg_heavy":
        nxt = torch.randperm(CHASE_N, device=dev, dtype=torch.int32)
        out = torch.empty(CHASE_ROWS, device=dev)

        def launch():
            chase_heavy_kernel[(CHASE_ROWS // 128,)](nxt, out, CHASE_N, CHASE_STEPS, BLOCK=128, WIDTH=128,
                                                     num_warps=4)

        return launch, 0, 0, "float32", False
    raise ValueError(kind)


def target(kind: str) -> None:
    launch = build(kind)[0]
    for _ in range(3):  # JIT compile outside the range
        launch()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(RANGE)
    launch()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()


# ---------------------------------------------------------------------------------------------
KINDS = {  # kind -> (what is planted, check on the verdict ids and the key metrics)
    "copy": ("bandwidth-bound near peak", lambda ids, m: "at_sol" in ids),
    "strided": ("strided, uncoalesced loads", lambda ids, m: bool({"uncoalesced", "memory_low_bw"} & set(ids))),
    "mm_nodot": ("matmul without tl.dot", lambda ids, m: "tensor_cores_idle" in ids),
    "mm_dot": ("matmul with tl.dot", lambda ids, m: "tensor_cores_idle" not in ids and (m.get(GMMA) or 0) > 0),
    "reg_heavy": ("very high register use", lambda ids, m: "low_occupancy" in ids),
}
GMMA = "sm__inst_executed_pipe_tensor_op_gmma.avg.pct_of_peak_sustained_elapsed"
SHOW = {"SM%": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "Mem%": "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
        "DRAM%": "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        "tensor%": "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", "gmma%": GMMA,
        "regs": "launch__registers_per_thread", "theo%": "sm__maximum_warps_per_active_cycle_pct",
        "ld B/sector%": "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct"}

KB_REFERENCE = """import torch
import torch.nn as nn

n = 1024


class Model(nn.Module):
    def forward(self, x):
        return x * 2.0


def get_inputs():
    return [torch.randn(n)]


def get_init_inputs():
    return []
"""
KB_CANDIDATE = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        scale_kernel[(triton.cdiv(x.numel(), 4096),)](x, y, x.numel(), BLOCK=4096, num_warps=8)
        return y
"""


class Check:
    """Collects results and errors; `step` runs one guarded stage."""

    def __init__(self, out: Path):
        self.out, self.work = out, Path(tempfile.mkdtemp(prefix="trialtui-profile-check-"))
        self.summary: dict = {"errors": {}}
        self.lines: list[str] = []
        self.bundle: list[Path] = []

    def say(self, line: str = "") -> None:
        print(line, flush=True)
        self.lines.append(line)

    def step(self, name: str, fn, *args):
        started = time.monotonic()
        try:
            return fn(*args)
        except BaseException as exc:  # noqa: BLE001 - one failure must not stop the others
            if isinstance(exc, KeyboardInterrupt):
                raise
            self.summary["errors"][name] = traceback.format_exc()[-3000:]
            self.say(f"!! {name} failed after {time.monotonic() - started:.1f} s: {type(exc).__name__}: {exc}")
            return None


def environment(check: Check) -> None:
    from trialtui.runner.profile_job import METRICS, find_ncu

    props = torch.cuda.get_device_properties(0)
    ncu_bin = find_ncu()
    env = {"gpu": props.name, "sm_count": props.multi_processor_count, "torch": torch.__version__,
           "triton": triton.__version__, "python": sys.version.split()[0], "ncu": ncu_bin}
    if ncu_bin:
        version = subprocess.run([ncu_bin, "--version"], capture_output=True, text=True, timeout=60)
        env["ncu_version"] = version.stdout.strip()
        known = subprocess.run([ncu_bin, "--query-metrics", "--chips", "gh100"], capture_output=True, text=True,
                               timeout=120).stdout
        env["metrics_missing"] = [m for m in METRICS if m.split(".")[0] not in known]
    check.summary["env"] = env
    check.say(f"GPU {env['gpu']} ({env['sm_count']} SMs), torch {env['torch']}, triton {env['triton']}, "
              f"ncu {env.get('ncu_version', 'missing').splitlines()[-1] if ncu_bin else 'missing'}")
    if env.get("metrics_missing"):
        check.say(f"!! not listed by ncu --query-metrics: {env['metrics_missing']}")


def profile_once(check: Check, kind: str) -> dict:
    """trialtui's profile(); if ncu rejects one of trialtui's metric names, say so and retry without it."""
    from trialtui.runner import profile_job

    target = [sys.executable, __file__, "--target", kind]
    body = profile_job.profile(target, check.work / kind, timeout_s=180)
    log = "" if body.get("available") else body.get("log_tail") or ""
    bad = [m for m in profile_job.METRICS if m.split(".")[0] in log]
    if bad:
        check.say(f"!! ncu rejected {bad}: retrying without them (profile_job.METRICS must change)")
        check.summary.setdefault("metrics_rejected", []).extend(bad)
        profile_job.METRICS = tuple(m for m in profile_job.METRICS if m not in bad)
        body = profile_job.profile(target, check.work / kind, timeout_s=180)
    return body


def calibrate(check: Check):
    from trialtui.core.gpus import Ceilings

    spec, result = check.work / "calibrate_spec.json", check.work / "calibrate_result.json"
    spec.write_text(json.dumps({"cache": str(check.out / "ceilings.json")}))
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "trialtui.runner.calibrate_job", str(spec), str(result)], check=True,
                   timeout=300)
    data = json.loads(result.read_text())
    check.summary["calibration"] = {**data, "wall_s": round(time.monotonic() - started, 1)}
    c = Ceilings.from_dict(data["ceilings"])
    check.say(f"ceilings (calibrated, {c.driver}): copy {c.hbm_gbps:,.0f} GB/s; TFLOP/s "
              + ", ".join(f"{k} {v}" for k, v in c.tflops.items()))
    return c


def median_us(launch) -> float:
    return triton.testing.do_bench(launch, warmup=50, rep=300, return_mode="median") * 1e3


def profile_kernels(check: Check, ceilings) -> None:
    from trialtui.core.gpus import datasheet
    from trialtui.core.ncu import dominant
    from trialtui.core.roofline import roofline
    from trialtui.core.profilers import verdicts_for_profile
    from trialtui.core.verdicts import Context

    ceilings = ceilings or datasheet(torch.cuda.get_device_name())
    rows = {}
    for kind, (planted, ok) in KINDS.items():
        row = rows[kind] = {"planted": planted}
        try:
            launch, flops, min_bytes, dtype, matmul = build(kind)
            row["median_us"] = round(median_us(launch), 2)
            del launch
            torch.cuda.empty_cache()
            body = profile_once(check, kind)
            row.update({k: body.get(k) for k in ("available", "reason", "ncu_s", "export_s")})
            check.bundle += [p for p in check.work.glob(f"{kind}[._]*") if p.suffix in (".csv", ".log")]
            roof = roofline(flops, min_bytes, dtype, ceilings) if min_bytes and ceilings else None
            ctx = Context(roofline=roof, measured_us=row["median_us"], matmul_like=matmul)
            verdicts = verdicts_for_profile(body, ctx)
            main = dominant(body.get("kernels") or []) or {"metrics": {}, "rules": []}
            row["metrics"] = {label: main["metrics"].get(name) for label, name in SHOW.items()}
            row["ncu_us"] = (main.get("duration_ns") or 0) / 1e3
            row["nvidia_rules"] = [f"{r['rule']}:{r['type']}" for r in main.get("rules", [])]
            row["verdicts"] = [v.to_dict() for v in verdicts]
            row["sol"] = roof.sol(row["median_us"]) if roof else None
            row["pass"] = bool(body.get("available")) and ok([v.id for v in verdicts], main["metrics"])
        except Exception:  # noqa: BLE001 - record, go on to the next kernel
            row["error"] = traceback.format_exc()[-3000:]
            row["pass"] = False
    check.summary["kernels"] = rows
    check.say("\nkernel     planted                     µs(bench) µs(ncu)  SoL   "
              + " ".join(f"{k:>7}" for k in SHOW) + "  verdicts -> PASS/FAIL")
    for kind, row in rows.items():
        m = row.get("metrics", {})
        cells = " ".join(f"{m[k]:7.1f}" if isinstance(m.get(k), float) else f"{'-':>7}" for k in SHOW)
        sol = f"{row['sol']:.2f}" if row.get("sol") else "  - "
        ids = ",".join(v["id"] for v in row.get("verdicts", [])) or row.get("reason") or "error"
        check.say(f"{kind:10} {row['planted']:27} {row.get('median_us', 0):9.1f} {row.get('ncu_us', 0):7.1f}  {sol:4}  "
                  f"{cells}  {ids} -> {'PASS' if row['pass'] else 'FAIL'}")
    for kind, row in rows.items():
        for v in row.get("verdicts", []):
            check.say(f"  {kind}: [{v['severity']}] {v['title']} — {v['evidence']}")


def timing(check: Check) -> None:
    """trialtui's profile step against a bare ncu command on the same kernel, interleaved."""
    from trialtui.core.problem_dir import load_problem
    from trialtui.runner.profile_job import find_ncu, ncu_command, profile

    ncu_bin = find_ncu()
    problem_dir = check.work / "scale_problem"
    problem_dir.mkdir(exist_ok=True)
    (problem_dir / "reference.py").write_text(KB_REFERENCE)
    (problem_dir / "kernel.py").write_text(KB_CANDIDATE)
    (problem_dir / "trialtui.toml").write_text(f"[test_sizes]\nn = 1024\n[bench_sizes]\nn = {SMALL_N}\n")
    spec = load_problem(problem_dir).job_spec(candidate=str(problem_dir / "kernel.py"),
                                              report=str(check.work / "job_t1"), ncu_timeout_s=180)
    spec_path, result_path = check.work / "job_spec.json", check.work / "job_result.json"
    spec_path.write_text(json.dumps(spec))
    env = {**os.environ, "LC_ALL": "C"}
    runs = {"bare ncu (same flags, bare script)": [], "trialtui profile_job child (problem dir)": [],
            "trialtui profile() on the bare script": []}
    job_parts = []
    for rep in range(2):
        started = time.monotonic()
        bare_target = [sys.executable, __file__, "--target", "copy_small"]
        bare = subprocess.run(ncu_command(ncu_bin, check.work / f"bare{rep}", bare_target),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=200)
        runs["bare ncu (same flags, bare script)"].append(time.monotonic() - started)
        (check.work / f"bare{rep}.log").write_bytes(bare.stdout)
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "trialtui.runner.profile_job", str(spec_path), str(result_path)],
                       check=True, timeout=300)
        runs["trialtui profile_job child (problem dir)"].append(time.monotonic() - started)
        job = json.loads(result_path.read_text())
        job_parts.append({k: job.get(k) for k in ("available", "reason", "ncu_s", "export_s")})
        started = time.monotonic()
        body = profile([sys.executable, __file__, "--target", "copy_small"], check.work / f"direct{rep}", timeout_s=200)
        runs["trialtui profile() on the bare script"].append(time.monotonic() - started)
        job_parts[-1]["direct"] = {k: body.get(k) for k in ("available", "reason", "ncu_s", "export_s")}
    check.bundle += [check.work / "bare0.log", check.work / "job_t1.log", check.work / "job_t1_raw.csv"]
    bare_s = statistics.median(runs["bare ncu (same flags, bare script)"])
    check.summary["timing"] = {"runs_s": runs, "parts": job_parts, "bare_median_s": bare_s}
    check.say(f"\nprofile step wall time, copy of {SMALL_N:,} fp32 (2 runs each, interleaved; target ≤ 1.3× bare)")
    for name, times in runs.items():
        med = statistics.median(times)
        check.say(f"  {name:42} median {med:6.2f} s  ({', '.join(f'{t:.2f}' for t in times)})  {med / bare_s:4.2f}×")
    check.say(f"  job parts (ncu_s, export_s): {[(p.get('ncu_s'), p.get('export_s')) for p in job_parts]}")
    if not all(p.get("available") for p in job_parts):
        check.say(f"  !! the job reported no counters: {[p.get('reason') for p in job_parts]}")


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(ROOT))
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    check = Check(out)
    check.step("environment", environment, check)
    ceilings = check.step("calibrate", calibrate, check)
    check.step("profile kernels", profile_kernels, check, ceilings)
    check.step("timing", timing, check)
    with tarfile.open(out / "profiles.tar.gz", "w:gz") as tar:
        for path in dict.fromkeys(check.bundle):
            if path.exists():
                tar.add(path, arcname=path.name)
    (out / "summary.json").write_text(json.dumps(check.summary, indent=1, default=str))
    (out / "report.txt").write_text("\n".join(check.lines) + "\n")
    failed = [k for k, r in check.summary.get("kernels", {}).items() if not r.get("pass")]
    print(f"\nwrote {sorted(p.name for p in out.iterdir())}; failed checks: {failed or 'none'}; "
          f"errors: {list(check.summary['errors']) or 'none'}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--target":
        target(sys.argv[2])
    elif len(sys.argv) == 2:
        sys.exit(main(Path(sys.argv[1])))
    else:
        sys.exit(__doc__)
