"""The bare script trialtui is measured against: the same correctness and timing work, no trialtui.

python benches/bare_bench.py PROBLEM_DIR [--ncu | --cpu]   (KernelBench form, candidate kernel.py)
Prints one JSON line: do_bench median of the candidate and of the eager reference, in µs (bench sizes).
With --ncu: warm up, then run the candidate once inside the NVTX range `trialtui_profile`.
With --cpu (run under TRITON_INTERPRET=1): the same check at the test sizes on the CPU, and the
median of three host-timed calls instead of do_bench, as trialtui does without a GPU.
"""

import importlib.util
import json
import sys
import time
import tomllib
from pathlib import Path

import torch
import triton

t0 = time.perf_counter()
root = Path(sys.argv[1])
cfg = tomllib.loads((root / "trialtui.toml").read_text()) if (root / "trialtui.toml").exists() else {}
dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[cfg.get("dtype", "float32")]
tol = cfg.get("atol", 1e-4 if dtype == torch.float32 else 1e-2)


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


ref = load(root / "reference.py", "ref")
on_cpu = "--cpu" in sys.argv
device = "cpu" if on_cpu else "cuda"
if on_cpu and dtype == torch.bfloat16:
    dtype = torch.float32  # Triton's interpreter misreads bf16 memory: run as fp32, as trialtui does on the CPU
for k, v in (cfg.get("test_sizes" if on_cpu else "bench_sizes") or {}).items():
    setattr(ref, k, v)
cand = load(root / "kernel.py", "cand")
model = ref.Model(*ref.get_init_inputs()).to(device).to(dtype)
new = cand.ModelNew(*ref.get_init_inputs()).to(device).to(dtype)
new.load_state_dict(model.state_dict())


def inputs(seed):
    torch.manual_seed(seed)
    return [x.to(device).to(dtype) if x.is_floating_point() else x.to(device) for x in ref.get_inputs()]


with torch.no_grad():
    if on_cpu:
        for seed in range(cfg.get("seeds", 5)):
            xs = inputs(seed)
            torch.testing.assert_close(new(*xs), model(*xs), atol=tol, rtol=tol)
        xs, times = inputs(0), []
        for _ in range(3):
            t = time.perf_counter()
            new(*xs)
            times.append((time.perf_counter() - t) * 1e6)
        print(json.dumps({"cpu_us": sorted(times)[1], "wall_s": time.perf_counter() - t0}))
        sys.exit(0)
    if "--ncu" in sys.argv:
        xs = inputs(0)
        for _ in range(3):
            new(*xs)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("trialtui_profile")
        new(*xs)
        torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
        sys.exit(0)
    for seed in range(cfg.get("seeds", 5)):
        xs = inputs(seed)
        torch.testing.assert_close(new(*xs), model(*xs), atol=tol, rtol=tol)
    xs = inputs(0)
    cand_us = triton.testing.do_bench(lambda: new(*xs), return_mode="median") * 1000
    ref_us = triton.testing.do_bench(lambda: model(*xs), return_mode="median") * 1000
print(json.dumps({"do_bench_us": cand_us, "eager_us": ref_us, "wall_s": time.perf_counter() - t0}))
