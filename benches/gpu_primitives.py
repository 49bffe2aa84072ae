"""What the checker's steps cost on this GPU, one primitive at a time, to choose what a save may spend.

`python benches/gpu_primitives.py [MB]` (default 256 MB, the 8192² fp32 softmax's output): the first and
a warm torch.profiler window (all activities and CUDA only), a CUDA IPC round (cuMemAlloc, handle,
open, copy, close) in one process, a device-to-host copy and a host compare of that size, a device
clone and compare, and a float64 compare. Prints each as it is measured; JSON to $OUT.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402

ROWS: dict[str, float] = {}
OPENER = """
import json, sys, time, torch
from trialtui.runner import cuda_ipc
meta, nbytes = json.loads(sys.argv[1]), int(sys.argv[2])
torch.empty(1, device="cuda")
for i in range(3):
    t = time.perf_counter()
    cuda_ipc.copy_in(meta, nbytes, "cuda")
    print(f"copy_in in another process #{i + 1} {(time.perf_counter() - t) * 1e3:.3f}")
"""


def timed(name: str, fn, repeat: int = 1) -> None:
    for i in range(repeat):
        torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        took = time.perf_counter() - t
        key = name if repeat == 1 else f"{name} #{i + 1}"
        ROWS[key] = round(took, 4)
        print(f"{key:<48}{took * 1e3:>10.2f} ms", flush=True)


def main() -> None:
    mb = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    n = mb * 2**20 // 4
    x = torch.randn(n, device="cuda")
    y = torch.softmax(x.view(-1, 8192) if n % 8192 == 0 else x, -1).reshape(-1)

    from torch.profiler import ProfilerActivity, profile

    def window(activities):
        with profile(activities=activities) as prof:
            for _ in range(10):
                torch.softmax(x.view(-1, 8192) if n % 8192 == 0 else x, -1)
            torch.cuda.synchronize()
        prof.events()

    timed("torch.profiler CPU+CUDA window (first)", lambda: window([ProfilerActivity.CPU, ProfilerActivity.CUDA]))
    timed("torch.profiler CPU+CUDA window", lambda: window([ProfilerActivity.CPU, ProfilerActivity.CUDA]), 2)
    timed("torch.profiler CUDA-only window", lambda: window([ProfilerActivity.CUDA]), 2)

    from trialtui.runner import cuda_ipc

    held = {}
    timed("Isolated: cuMemAlloc + copy", lambda: held.__setitem__("iso", cuda_ipc.Isolated(y)), 3)
    meta = held["iso"].meta()
    child = subprocess.run([sys.executable, "-c", OPENER, json.dumps(meta), str(y.numel() * 4)], capture_output=True,
                           text=True, cwd=Path(__file__).resolve().parents[1], timeout=120)
    for line in child.stdout.splitlines():
        name, _, ms = line.rpartition(" ")
        ROWS[name] = round(float(ms) / 1e3, 4)
        print(f"{name:<48}{float(ms):>10.2f} ms", flush=True)
    if child.returncode:
        print("the opener failed:", child.stderr[-2000:], flush=True)
    timed("Isolated.free", lambda: held["iso"].free())
    timed("export a caching-allocator block", lambda: cuda_ipc.export(y), 2)
    host = {}
    timed("device → host, pageable", lambda: host.__setitem__("h", y.to("cpu", copy=True)), 2)
    timed("host compare (torch.equal)", lambda: torch.equal(host["h"], host["h"]), 2)
    timed("device clone", lambda: host.__setitem__("d", y.clone()), 2)
    timed("device compare (torch.equal)", lambda: torch.equal(host["d"], y), 2)
    wide = y.double()
    timed("float64 abs-diff max", lambda: (y.double() - wide).abs().max().item(), 2)
    timed("allclose fp32", lambda: torch.allclose(y, host["d"]), 2)
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "gpu_primitives.json").write_text(json.dumps(
            {"mb": mb, "gpu": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"), "ms": ROWS}, indent=1))


if __name__ == "__main__":
    main()
