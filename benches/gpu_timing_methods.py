"""On the H200: which way of timing one call agrees with Nsight Compute, from 2 µs kernels to 130 µs ones (issue 34).

    OUT=/tmp/methods python benches/gpu_timing_methods.py      # about two minutes on one H200

The same kernels are timed here by several methods side by side, one process, interleaved per round,
and each against ncu's `gpu__time_duration.sum` (`--clock-control none`, its own cache flush):

- `zero`: trialtui's timed loop as it was (GPU spin, L2 flushed by writing a 2×L2 buffer, event pair
  around one call); `zero-null`: the same around no call at all (what the events and gaps add).
- `read`: the flush reads the buffer instead (L2 left clean: the call does not pay the flush's write-back);
  `read-null` likewise.
- `batchK`: K × (flush, call) between one event pair, minus K × (flush) alone, over K (the gaps between
  kernels inside a stream, not an event pair per call).

Kernels: tests/problems/kb_add's Triton add at n = 4096, 65536, 2²⁰, 2²⁴ (fp32), and
benches/problems/kb_softmax's kernel at 8192² fp32. Prints a row per kernel and
method as it completes; writes $OUT/methods.json.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benches"))

from gpu_tiny import median_duration_us  # noqa: E402
OUT = Path(os.environ.get("OUT") or "gpu_timing_methods_out")
SPIN = 2_000_000
ROUNDS = 200
BATCH_K = 20

BARE = """
import importlib.util, sys, torch
spec = importlib.util.spec_from_file_location("cand", sys.argv[1]); cand = importlib.util.module_from_spec(spec); spec.loader.exec_module(cand)
shape = [int(s) for s in sys.argv[2].split("x")]
xs = [torch.randn(*shape, device="cuda") for _ in range(int(sys.argv[3]))]
model = cand.ModelNew()
for _ in range(8):
    model(*xs)
torch.cuda.synchronize()
"""


def load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem + "_mod", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def ncu_us(path: Path, shape: str, nargs: int, kernel: str) -> float | None:
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    done = subprocess.run([ncu, "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "-k", f"regex:{kernel}",
                           "--launch-skip", "3", "--csv", sys.executable, "-c", BARE, str(path), shape, str(nargs)],
                          capture_output=True, text=True, timeout=180)
    return median_duration_us(done.stdout)


def main() -> int:
    import torch

    OUT.mkdir(parents=True, exist_ok=True)
    dev = torch.device("cuda")
    l2 = torch.cuda.get_device_properties(dev).L2_cache_size
    buf = torch.empty(2 * l2 // 4, dtype=torch.int32, device=dev)
    sink = torch.empty((), dtype=torch.int64, device=dev)  # where the read flush's sum lands

    def zero_flush():
        buf.zero_()

    def read_flush():
        sink.copy_(buf.sum())

    add = ROOT / "tests" / "problems" / "kb_add" / "add.py"
    soft = ROOT / "benches" / "problems" / "kb_softmax" / "kernel.py"
    cases = [(f"add n={n}", add, str(n), 2, "add_kernel") for n in (4096, 65536, 2**20, 2**24)]
    cases.append(("softmax 8192x8192", soft, "8192x8192", 1, "softmax"))
    rows = []
    for name, path, shape, nargs, kernel in cases:
        model = load(path).ModelNew()
        dims = [int(s) for s in shape.split("x")]
        xs = [torch.randn(*dims, device=dev) for _ in range(nargs)]

        def call():
            return model(*xs)

        for _ in range(5):
            call()
        torch.cuda.synchronize()
        samples: dict[str, list[float]] = {}

        def one(label, flush, fn):
            torch.cuda._sleep(SPIN)
            flush()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            if fn is not None:
                fn()
            e.record()
            return label, s, e

        def batch(label, flush, fn, k):
            torch.cuda._sleep(SPIN * 2)
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(k):
                flush()
                if fn is not None:
                    fn()
            e.record()
            return label, s, e

        for _ in range(ROUNDS):
            pend = [one("zero", zero_flush, call), one("zero-null", zero_flush, None),
                    one("read", read_flush, call), one("read-null", read_flush, None),
                    batch("zbatch", zero_flush, call, BATCH_K), batch("zbatch-null", zero_flush, None, BATCH_K),
                    batch("rbatch", read_flush, call, BATCH_K), batch("rbatch-null", read_flush, None, BATCH_K)]
            torch.cuda.synchronize()
            for label, s, e in pend:
                samples.setdefault(label, []).append(s.elapsed_time(e) * 1000.0)
        med = {k: statistics.median(v) for k, v in samples.items()}
        derived = {
            "zero": med["zero"], "zero-null": med["zero-null"], "zero-minus-null": med["zero"] - med["zero-null"],
            "read": med["read"], "read-null": med["read-null"], "read-minus-null": med["read"] - med["read-null"],
            "zbatch": (med["zbatch"] - med["zbatch-null"]) / BATCH_K,
            "rbatch": (med["rbatch"] - med["rbatch-null"]) / BATCH_K,
        }
        ref = ncu_us(path, shape, nargs, kernel)
        row = {"case": name, "ncu_us": ref, **{k: round(v, 3) for k, v in derived.items()}}
        rows.append(row)
        print(f"{name:20s} ncu {ref if ref is None else round(ref, 2)} | "
              + "  ".join(f"{k} {v:.2f}" + (f" ({v / ref:.3f})" if ref else "") for k, v in derived.items()), flush=True)
        (OUT / "methods.json").write_text(json.dumps({"rows": rows, "rounds": ROUNDS, "batch_k": BATCH_K,
                                                      "gpu": torch.cuda.get_device_name(dev)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
