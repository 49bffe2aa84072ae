"""The GPU kept busy for a fixed wall time while the host queues what follows: the checker's measure of
what an event pair costs (timing.Bencher.empty_pair_us) needs the GPU ahead of the host, so that it reads
the pair's GPU time and not the host's launch latency.

It is never inside the timed loop any more: a wait there was in the checker's clock and taken off it as
the harness's own cost, and a loop rewritten in the candidate's process could skip it and do a call's work
in its place, outside the call's events (issue 33: tests/exploits/gemm_bf16/forges_the_clock.py, 154 µs
for a 194 µs GEMM, H200, 2026-12-03). `torch.cuda._sleep` spins a number of clock cycles, and the SM clock
moves with load and temperature; this wait reads the GPU's global timer (nanoseconds, whatever the
clock), in one tiny Triton kernel replayed as a CUDA graph; where Triton cannot compile it, it falls back
to the cycle spin and says so.
"""

from __future__ import annotations

import functools

WAIT_NS = 1_000_000  # longer than the host takes to queue a call and its set-up (43-126 µs for a Triton launch)
FALLBACK_CYCLES = 2_000_000  # about 1 ms at 2 GHz


@functools.cache
def _compile():
    import triton
    import triton.language as tl

    @triton.jit
    def wait_ns(out_ptr, ns):
        start = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)
        now = start
        while now - start < ns:
            now = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)
        tl.store(out_ptr, now - start)

    return wait_ns


class Waiter:
    """Waits `ns` on the current stream of `device`; `ready()` compiles and launches it once, outside any clock."""

    def __init__(self, device, ns: int = WAIT_NS) -> None:
        import torch

        self.ns = ns
        self.out = torch.zeros(1, dtype=torch.int64, device=device)
        self.how = "globaltimer"
        self._launch = self._cycles
        try:
            kernel = _compile()
            kernel[(1,)](self.out, 0, num_warps=1)
            torch.cuda.synchronize(device)
            self._launch = lambda: kernel[(1,)](self.out, self.ns, num_warps=1)
        except Exception as exc:  # an old Triton, no inline asm: the cycle spin, named in the result
            self.how = f"cycles ({type(exc).__name__})"
            return
        try:  # replayed as a CUDA graph: a launch of a few µs, not the Triton launcher's tens
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                kernel[(1,)](self.out, self.ns, num_warps=1)
            torch.cuda.synchronize(device)
            self._launch = graph.replay
            self.how = "globaltimer, graph"
        except Exception:
            torch.cuda.synchronize(device)

    def _cycles(self) -> None:
        import torch

        torch.cuda._sleep(FALLBACK_CYCLES)

    def __call__(self) -> None:
        self._launch()
