"""On the GPU: CUDA C++ candidates (torch's load_inline and load) validated, scored and watched.

Run from the repository root on the H200 (no internet needed; about 2 to 3 minutes, most of it
torch building the four extensions, which compiles torch/extension.h each time):

    OUT=/tmp/out python benches/gpu_cuda_language.py

Three problem directories are made in a temporary folder: sample_kernels/rmsnorm with
benches/cuda_language/rmsnorm_cuda.py (a row-wise RMSNorm kernel, bf16 in and out, float32 math),
tests/problems/kb_cuda_add (add_inline.py: KernelBench's load_inline style; add_file.py: a .cu
file beside a small wrapper; broken.py: an undefined name in the kernel; add_decoy.py: a token kernel beside
at::add in its host code, expected `fallback`), and GPU MODE's vectoradd
fixture with its own CUDA submission (cuda_inline.py: a template kernel dispatched by
AT_DISPATCH). Each candidate goes through `trialtui validate --json` (nvcc's device-only compile: registers, spills, shared memory),
`trialtui bench --json --device cuda` (built by load_inline, checked and timed on the GPU), and each
directory through `trialtui watch --headless --once --json` (the trial's final state). The
extensions are built first, all at once (each candidate imported once, timed as build_s), so the
benches find them built and run one at a time on an otherwise idle GPU. Expected:
correct for the five good candidates (the decoy flagged `fallback`, no other), invalid for broken.py (the nvcc line), never invalid or
incorrect from a CPU run. Prints a table, writes $OUT/gpu_cuda_language.json, exits 1 on a miss.

The build needs torch's CUDA toolkit of the same major version as torch (torch.utils.cpp_extension
finds it through CUDA_HOME or nvcc on PATH), ninja and g++. Where CUDA_HOME is not found, the
script installs the `trialtui[cuda]` wheels and ninja from ./.whl with pip --no-index, and points
CUDA_HOME at the wheels' nvidia/cu13 folder; for that, download beforehand on a machine with
internet, matching torch's CUDA (torch 2.11.0+cu130 is CUDA 13.0; the wheels are the same for every
Python 3 on x86-64 Linux):
    pip download --only-binary=:all: --no-deps -d .whl nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 \
        nvidia-nvvm==13.0.88 nvidia-cuda-cccl==13.0.85 ninja
(nvidia-cuda-runtime comes with torch.) Those are about 100 MB, over a device call's 64 MiB carry:
`python benches/cuda_carry.py` builds `.whl-cuda/` (61.5 MiB: the toolkit without libnvvm.so and nvlink, which
`nvcc -c` does not run, and trialtui's own wheels); carry it and set TRIALTUI_WHEELS=.whl-cuda. Validation itself needs none of this where trialtui[cuda]
or any nvcc is installed.
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
WHEELS = Path(os.environ.get("TRIALTUI_WHEELS") or ROOT / ".whl")  # benches/cuda_carry.py builds a set that fits the carry
BUILD_TIMEOUT_S = 400  # the first load_inline of a source compiles torch/extension.h
NO_PROFILE = '[profile]\nwhen = "never"\n'  # the verdicts are the point here; the profilers have their own bench
EXPECTED = {"rmsnorm_cuda.py": "correct", "add_inline.py": "correct", "add_file.py": "correct", "broken.py": "invalid",
            "cuda_inline.py": "correct", "add_decoy.py": "correct"}
FLAGGED = {"add_decoy.py": "fallback"}  # at::add in its host code does the job: the kernel records weigh it
GPUMODE = ROOT / "tests" / "fixtures" / "gpumode" / "problems" / "pmpp_v2" / "vectoradd_py"


def toolchain(env: dict[str, str], work: Path) -> dict[str, object]:
    """What torch's extension builder will use; installs the wheels from .whl/ where it finds no CUDA_HOME."""
    probe = ("import json, shutil, torch, torch.utils.cpp_extension as e; print(json.dumps({'torch': torch.__version__, "
             "'cuda': torch.version.cuda, 'cuda_home': e.CUDA_HOME, 'ninja': e.is_ninja_available(), "
             "'gxx': shutil.which('g++') or shutil.which('c++'), "
             "'gpu': torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}))")
    info = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env,
                                     check=True).stdout)
    if info["cuda_home"] and info["ninja"]:
        return info
    if not WHEELS.is_dir():
        info["problem"] = f"no CUDA toolkit or no ninja, and no {WHEELS} to install them from (see this file's docstring)"
        return info
    pip = [sys.executable, "-m", "pip", "install", "--no-index", "--find-links", str(WHEELS), "nvidia-cuda-nvcc",
           "nvidia-cuda-crt", "nvidia-nvvm", "nvidia-cuda-cccl", "ninja"]
    done = subprocess.run(pip, capture_output=True, text=True)
    info["installed_from_whl"] = done.returncode == 0
    if done.returncode != 0:
        info["problem"] = f"pip install from {WHEELS} failed: {done.stderr.strip()[-300:]}"
        return info
    import importlib

    importlib.invalidate_caches()
    nvidia = [Path(p) for p in importlib.import_module("nvidia").__path__]
    home = next((p / "cu13" for p in nvidia if (p / "cu13" / "bin" / "nvcc").exists()), None)
    if home is None:
        info["problem"] = "the wheels installed but no nvidia/cu13/bin/nvcc was found"
        return info
    libs = work / "cudalib"  # the wheels ship libcudart.so.13; the link step asks for -lcudart
    libs.mkdir(exist_ok=True)
    for lib in (home / "lib").glob("libcudart.so.*"):
        (libs / "libcudart.so").unlink(missing_ok=True)
        (libs / "libcudart.so").symlink_to(lib)
    env["CUDA_HOME"] = str(home)
    env["PATH"] = f"{home / 'bin'}:{Path(sys.executable).parent}:{env.get('PATH', '')}"
    env["LIBRARY_PATH"] = f"{libs}:{env.get('LIBRARY_PATH', '')}"
    info["cuda_home"] = str(home)
    return info


def problems(work: Path) -> dict[str, Path]:
    rms = work / "rmsnorm"
    rms.mkdir()
    shutil.copyfile(ROOT / "sample_kernels" / "rmsnorm" / "reference.py", rms / "reference.py")
    config = (ROOT / "sample_kernels" / "rmsnorm" / "trialtui.toml").read_text()
    (rms / "trialtui.toml").write_text(f"bench_timeout_s = {BUILD_TIMEOUT_S}\n{config}\n{NO_PROFILE}")
    shutil.copyfile(ROOT / "benches" / "cuda_language" / "rmsnorm_cuda.py", rms / "rmsnorm_cuda.py")
    add = Path(shutil.copytree(ROOT / "tests" / "problems" / "kb_cuda_add", work / "kb_cuda_add",
                               ignore=shutil.ignore_patterns(".trialtui")))
    config = (add / "trialtui.toml").read_text()
    (add / "trialtui.toml").write_text(f"bench_timeout_s = {BUILD_TIMEOUT_S}\n{config}\n{NO_PROFILE}")
    vec = Path(shutil.copytree(GPUMODE, work / "vectoradd", ignore=shutil.ignore_patterns("solutions", "submission.py")))
    shutil.copyfile(GPUMODE / "solutions" / "correct" / "submission_cuda_inline.py", vec / "cuda_inline.py")
    for shared in ("utils.py", "eval.py"):  # task.yml's ../utils.py and ../eval.py, as GPU MODE lays them out
        shutil.copyfile(GPUMODE.parent / shared, work / shared)
    (vec / "trialtui.toml").write_text(f"bench_timeout_s = {BUILD_TIMEOUT_S}\n{NO_PROFILE}")
    return {"rmsnorm": rms, "kb_cuda_add": add, "vectoradd": vec}


def trialtui(args: list[str], env: dict[str, str], timeout: float) -> tuple[str, str, float]:
    """stdout, the tail of stderr, and seconds."""
    started = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "trialtui", *args], capture_output=True, text=True, env=env,
                              timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return "", f"trialtui {args[0]} ran past {timeout:g} s", timeout
    return done.stdout, done.stderr[-400:], round(time.perf_counter() - started, 1)


BUILD = ("import importlib.util, sys; sys.path[:0] = [sys.argv[2]]; "
         "spec = importlib.util.spec_from_file_location('candidate', sys.argv[1]); "
         "spec.loader.exec_module(importlib.util.module_from_spec(spec))")


def build(path: Path, env: dict[str, str]) -> tuple[float, str]:
    """Import the candidate once so load_inline builds its extension into TORCH_EXTENSIONS_DIR (the
    benches then find it built and time one at a time); seconds and the error, if any."""
    started = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-c", BUILD, str(path), str(path.parent)], capture_output=True,
                              text=True, env=env, timeout=BUILD_TIMEOUT_S, cwd=path.parent)
    except subprocess.TimeoutExpired:
        return BUILD_TIMEOUT_S, f"the build ran past {BUILD_TIMEOUT_S} s"
    return round(time.perf_counter() - started, 1), "" if done.returncode == 0 else done.stderr[-600:]


def validate(path: Path, env: dict[str, str]) -> dict[str, object]:
    """trialtui validate on this machine: nvcc's device-only compile, the facts."""
    row: dict[str, object] = {"candidate": path.name, "expected": EXPECTED[path.name]}
    out, err, row["validate_s"] = trialtui(["validate", str(path), "--json"], env, 300)
    try:
        report = json.loads(out)
        row["validate_ok"] = report["ok"]
        row["kernels"] = [{k: x.get(k) for k in ("name", "arch", "registers", "spills", "shared_bytes", "tensor_core_op",
                                                 "vector_width")} for x in report["kernels"]]
        row["validate_errors"] = [f"line {f['line']}: {f['message']}" for f in report["errors"]]
    except (json.JSONDecodeError, KeyError):
        row["validate_errors"] = [(out + err)[-300:]]
    return row


def bench(path: Path, row: dict[str, object], env: dict[str, str]) -> None:
    """trialtui bench on the GPU: the verdict and the timing."""
    if EXPECTED[path.name] == "invalid":
        row["bench_state"] = "not run (validation)"
        return
    out, err, row["bench_s"] = trialtui(["bench", str(path), "--json", "--device", "cuda", "--seeds", "2"], env,
                                        BUILD_TIMEOUT_S + 60)
    try:
        result = json.loads(out)
    except json.JSONDecodeError:
        result = {"state": "no-json", "message": (out + err)[-400:]}
    row["bench_state"] = result.get("state")
    row["median_us"] = (result.get("timing") or {}).get("median_us")
    row["speedup"] = (result.get("speedup") or {}).get("eager")  # the problems' primary baseline
    row["flags"] = [f.get("code") for f in result.get("flags") or []]
    row["bench_message"] = (result.get("message") or "").replace("\n", " ")[:200]


def watch(root: Path, env: dict[str, str]) -> dict[str, str]:
    """`watch --headless --once --json` over a directory: each file's last state."""
    out, _, _ = trialtui(["watch", str(root), "--headless", "--once", "--json"], env, BUILD_TIMEOUT_S + 120)
    files, states = {}, {}
    for line in out.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if event.get("file") and event.get("trial_id"):
            files[event["trial_id"]] = event["file"]
        if event.get("trial_id") in files and event.get("state"):
            states[files[event["trial_id"]]] = event["state"]
    return states


def main() -> int:
    out = Path(os.environ.get("OUT") or tempfile.mkdtemp())
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="trialtui-cuda-"))
    env = {**os.environ, "TORCH_EXTENSIONS_DIR": str(work / "extensions"), "TORCH_CUDA_ARCH_LIST": "9.0",
           "MAX_JOBS": str(max(2, (os.cpu_count() or 8) // 4))}  # four builds share the cores
    info = toolchain(env, work)
    print(json.dumps(info))
    if info.get("problem"):
        (out / "gpu_cuda_language.json").write_text(json.dumps({"toolchain": info}, indent=2))
        print(f"cannot build CUDA extensions here: {info['problem']}")
        return 1
    roots = problems(work)
    paths = [roots["rmsnorm"] / "rmsnorm_cuda.py"] + [roots["kb_cuda_add"] / n for n in ("add_inline.py", "add_file.py", "broken.py", "add_decoy.py")] \
        + [roots["vectoradd"] / "cuda_inline.py"]
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=2 * len(paths)) as pool:  # validations and builds at once: no GPU timing yet
        validations = [pool.submit(validate, p, env) for p in paths]
        built = [pool.submit(build, p, env) if EXPECTED[p.name] != "invalid" else None for p in paths]
        rows = [f.result() for f in validations]
        builds = [f.result() if f else (None, "") for f in built]
    for path, row, (seconds, error) in zip(paths, rows, builds):
        row["build_s"], row["build_error"] = seconds, error
        bench(path, row, env)  # one at a time: timings on a GPU nothing else uses
        print(f"done {row['candidate']}: validate {row.get('validate_ok')}, build {seconds} s, bench {row.get('bench_state')} "
              f"{row.get('median_us')} µs", flush=True)
    watched = {}
    with ThreadPoolExecutor(max_workers=len(roots)) as pool:  # built by now; states only, so sharing the GPU is fine
        for states in pool.map(lambda root: watch(root, env), roots.values()):
            print(f"watched: {states}", flush=True)
            watched.update(states)
    misses = 0
    print(f"{'candidate':<16} {'expected':<9} {'validate':<9} {'kernels (sm_90 registers)':<34} {'bench':<9} "
          f"{'median µs':>10} {'speedup':>8}  watch")
    for row in rows:
        row["watch_state"] = watched.get(row["candidate"])
        bench_ok = row["expected"] == "invalid" or (row["bench_state"] == row["expected"] and (
            FLAGGED.get(row["candidate"]) in row.get("flags", []) if row["candidate"] in FLAGGED
            else "fallback" not in row.get("flags", [])))
        watch_ok = row["watch_state"] == row["expected"]
        validate_ok = (row.get("validate_ok") is True) == (row["expected"] != "invalid")
        row["ok"] = bench_ok and watch_ok and validate_ok
        misses += not row["ok"]
        kernels = ", ".join(f"{k['name']} {k['registers']}" for k in row.get("kernels") or [] if k["arch"] == "sm_90")
        median = f"{row['median_us']:.1f}" if isinstance(row.get("median_us"), (int, float)) else "-"
        speedup = f"{row['speedup']:.2f}" if isinstance(row.get("speedup"), (int, float)) else "-"
        print(f"{row['candidate']:<16} {row['expected']:<9} {str(row.get('validate_ok')):<9} {kernels[:34]:<34} "
              f"{str(row['bench_state']):<9} {median:>10} {speedup:>8}  {row['watch_state']}"
              + ("" if row["ok"] else "   <-- MISS"))
        for line in row.get("validate_errors") or []:
            print(f"    validate: {line[:160]}")
        if row.get("bench_message") and row["bench_state"] != "correct":
            print(f"    bench: {row['bench_message']}")
        if row.get("build_error"):
            print(f"    build: {row['build_error'][-300:]}")
    summary = {"toolchain": info, "rows": rows, "misses": misses, "wall_s": round(time.perf_counter() - started, 1)}
    (out / "gpu_cuda_language.json").write_text(json.dumps(summary, indent=2, default=str))
    print(f"{len(rows) - misses}/{len(rows)} as expected in {summary['wall_s']} s; details in {out / 'gpu_cuda_language.json'}")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
