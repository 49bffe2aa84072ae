"""A timed batch starts when the checker says so: its calls queued on the GPU behind a kernel that waits for
the checker's go, the batch's seed written into the word of host memory both processes map
(runner/landing.py).

The landing clock from the request holds the request's way into the candidate's process besides the calls
(the pipe, the interpreter, the GPU's switch to that process's context): on the H200 330-520 µs a batch more
than the checker's own loop pays (2026-12-04), and it varies, so it bounds the clock no better than the
reply did. Behind the gate, the candidate's process queues the whole batch and answers; the checker takes
its clock's start as it writes the seed, and the GPU, reading that word, starts the first call a PCIe read
later. No call's input exists before the seed does (runner/fresh_inputs.py), so no call's work can start
before the go, whatever the candidate's process queued. The checker's own loop beside it is not gated: in its
process the first launch is the start (a gated loop there left its next baseline drifting 89 %, H200).
"""

from __future__ import annotations

import functools
from typing import Any

LIMIT_NS = 5_000_000_000  # the kernel gives up after this: a go never written cannot hold the GPU for good


@functools.cache
def _compile():
    import triton
    import triton.language as tl

    @triton.jit
    def await_go(go_ptr, seed_ptr, limit_ns):
        start = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)
        now = start
        go = tl.load(go_ptr, volatile=True)
        while (go == 0) & (now - start < limit_ns):
            go = tl.load(go_ptr, volatile=True)
            now = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)
        tl.store(seed_ptr, go)

    return await_go


class _OnDevice:
    """Host memory's address on the GPU, as Triton takes a pointer argument."""

    def __init__(self, address: int) -> None:
        import torch

        self.address, self.dtype = address, torch.int64

    def data_ptr(self) -> int:
        return self.address


class Gate:
    """`wait(seed)`: queue, on the current stream, a wait for the go and its word into `seed` (the loop's
    device-side seed, runner/fresh_inputs.Refresher.seed)."""

    def __init__(self, go_on_device: int, limit_ns: int = LIMIT_NS) -> None:
        self.go, self.limit_ns, self.kernel = _OnDevice(go_on_device), limit_ns, _compile()

    def wait(self, seed: Any) -> None:
        self.kernel[(1,)](self.go, seed, self.limit_ns, num_warps=1)

    @classmethod
    def of(cls, view: Any, seed: Any) -> tuple[Gate | None, str | None]:
        """A gate over a pad's go word (runner/landing.PadView), tried once with the word already set:
        (the gate, None), or (None, why not) where it cannot be built or does not read the word."""
        import torch

        if view is None or view.go_on_device is None:
            return None, "no go word on the GPU"
        try:
            gate = cls(view.go_on_device)
            view.go[0] = 0x5EED
            gate.wait(seed)
            torch.cuda.synchronize()
            read = int(seed.item())
        except Exception as exc:  # noqa: BLE001 - an old Triton, no inline asm: the batch starts on the request
            return None, f"{type(exc).__name__}: {exc}"[:300]
        finally:
            view.go[0] = 0
        return (gate, None) if read == 0x5EED else (None, f"the gate read {read}, not the word written")
