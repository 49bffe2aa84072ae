"""Child job: measure this GPU's ceilings once and cache them, so floors use what the card reaches.

`python -m trialtui.runner.calibrate_job`, its spec a `CalibrateSpec`. Bandwidth is a large device-to-device copy counting
bytes read plus written; throughput is a large cuBLAS matrix product per dtype on random data
(zeros run faster and would flatter the ceiling).
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any, Callable

import torch

from trialtui.core.gpus import CALIBRATED, Ceilings, save_calibrated
from trialtui.core.job_spec import CalibrateSpec
from trialtui.core.result import RESULT_VERSION
from trialtui.runner.environment import environment
from trialtui.runner.child import serve

COPY_BYTES = 2 * 1024**3
MATMUL_N = 8192
REPS = 10


def _median_ms(fn: Callable[[], Any], reps: int = REPS, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def copy_gbps(nbytes: int = COPY_BYTES) -> float:
    """Device-to-device copy rate, counting every byte read and every byte written."""
    free, _ = torch.cuda.mem_get_info()
    nbytes = min(nbytes, free // 4)
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda").random_(0, 255)
    dst = torch.empty_like(src)
    ms = _median_ms(lambda: dst.copy_(src))
    return 2 * nbytes / (ms * 1e-3) / 1e9


def matmul_tflops(dtype: str, n: int = MATMUL_N) -> float:
    """Dense matrix-product rate; 'tf32' is fp32 operands with TF32 tensor cores allowed."""
    torch_dtype = {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(dtype, torch.float32)
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    a = torch.randn(n, n, device="cuda", dtype=torch_dtype)
    b = torch.randn(n, n, device="cuda", dtype=torch_dtype)
    out = torch.empty(n, n, device="cuda", dtype=torch_dtype)
    try:
        ms = _median_ms(lambda: torch.mm(a, b, out=out))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = False
    return 2 * n**3 / (ms * 1e-3) / 1e12


def calibrate(copy_bytes: int = COPY_BYTES, matmul_n: int = MATMUL_N) -> Ceilings:
    env = environment(torch.device("cuda"))
    major, _ = torch.cuda.get_device_capability()
    tflops: dict[str, float | None] = {}
    notes: dict[str, Any] = {"torch": env["torch"], "copy_bytes": copy_bytes, "matmul_n": matmul_n}
    for dtype in ("bfloat16", "float16", "tf32", "float32"):
        if dtype in ("bfloat16", "tf32") and major < 8:
            tflops[dtype] = None  # no tensor-core path before Ampere; an emulated rate is no ceiling
            continue
        try:
            tflops[dtype] = round(matmul_tflops(dtype, matmul_n), 1)
        except RuntimeError as exc:
            tflops[dtype] = None
            notes[f"{dtype}_error"] = str(exc).splitlines()[0][:200]
        torch.cuda.empty_cache()
    return Ceilings(
        gpu=env["gpu"],
        hbm_gbps=round(copy_gbps(copy_bytes), 1),
        tflops=tflops,
        l2_bytes=env.get("l2_bytes"),
        sm_count=env.get("sm_count"),
        source=CALIBRATED,
        driver=env.get("driver"),
        measured_at=time.time(),
        notes=notes,
    )


def run(spec: CalibrateSpec) -> dict[str, Any]:
    if not torch.cuda.is_available():
        return {"version": RESULT_VERSION, "state": "error", "message": "calibrate needs a CUDA GPU"}
    ceilings = calibrate()
    path = save_calibrated(ceilings)
    return {"version": RESULT_VERSION, "state": "ok", "ceilings": ceilings.to_dict(), "cache": str(path)}


if __name__ == "__main__":
    serve(run, sys.argv, spec_type=CalibrateSpec)
