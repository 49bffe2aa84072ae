"""A timed batch's last output hash landing in host memory the checker watches: a clock per call with no
reply in it.

The checker's clock around a batch (runner/batch_clock.py) runs from the request until the outputs are in
its memory. Its fixed cost (the reply, the ring's copy: 1-1.7 ms a batch on the H200) varies by more than a
short call lasts, and the candidate's process decides when it answers, so a slope over two batch sizes can
be tilted (tests/exploits/gemm_short_bf16/tilts_the_slope.py). Here the timed loop also writes each call's
output hash (runner/fresh_inputs.digest: the next call's input is drawn from it) into a slot of host memory
the checker maps too (`Pad`), and the checker watches the batch's last slot from the batch's start: the
request, or where the batch waits for the checker's go (runner/go_gate.py), the go. That hash cannot land
before the last output exists, and the last output cannot exist before every output ahead of it (each call's
input comes from the previous output's hash). So the time from the start to the landing holds the whole
batch's work and, from a request, its way in besides: no reply, no second batch size. The outputs' copies
into the ring come after the last landing in every captured loop, the checker's own included
(runner/timed_batch.Captured), so none is on this clock to be moved off it. Landing late only adds; a value
that is not the hash the checker computes from the output it judges is no landing at all.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import random
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

SLOT_BYTES = 8  # one call's hash: two int32 words (runner/fresh_inputs.new_hashes)
POLLS_PER_LOOK = 256  # reads of the slot between looks at the reply channel and the deadline


def go_word(slots: int) -> int:
    """The go word's index (runner/go_gate.py): after the slots, on a 16-byte boundary (an aligned word the
    GPU reads whole, and the alignment Triton assumes of a pointer it specializes)."""
    return slots + (slots & 1)


class Pad:
    """The host memory the timed loop's hashes land in, a file both processes open (the loop maps it); the
    checker's side arms a batch's last slot and watches it. The checker reads and writes its words through
    the file, not a mapping: a candidate's process that shrinks the file cuts a read short (no landing)
    where a mapping would take the checker down with SIGBUS."""

    def __init__(self, slots: int) -> None:
        self.fd, self.path = _made(("/dev/shm", tempfile.gettempdir()))
        os.ftruncate(self.fd, -(-(go_word(max(1, slots)) + 1) * SLOT_BYTES // mmap.PAGESIZE) * mmap.PAGESIZE)
        self.slots = slots
        self.armed: tuple[int, int] | None = None
        self.seen: tuple[int, int] | None = None  # (perf_counter_ns, value) of the armed slot's landing

    def word(self, index: int) -> int | None:
        """The word at `index`, or None where the file no longer holds it."""
        data = os.pread(self.fd, SLOT_BYTES, index * SLOT_BYTES)
        return int.from_bytes(data, "little") if len(data) == SLOT_BYTES else None

    def _put(self, index: int, value: int) -> None:
        os.pwrite(self.fd, value.to_bytes(SLOT_BYTES, "little"), index * SLOT_BYTES)

    def wire(self) -> dict[str, Any]:
        return {"path": self.path, "slots": self.slots}

    def unlink(self) -> None:
        """Once the other side has mapped it: the file goes, the mappings stay."""
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def arm(self, n: int) -> None:
        """Batch of n calls: its last slot holds a value drawn now, so a landing is any other value; the go
        word (runner/go_gate.py) is shut."""
        sentinel = random.SystemRandom().getrandbits(64)
        self._put(n - 1, sentinel)
        self._put(go_word(self.slots), 0)
        self.armed, self.seen = (n - 1, sentinel), None

    def go(self, seed: int) -> int:
        """Open the gate with the batch's seed (never 0): the clock's start, perf_counter_ns, taken first."""
        started = time.perf_counter_ns()
        self._put(go_word(self.slots), seed)
        return started

    def watch(self, answered: Callable[[], bool], deadline: float) -> None:
        """Read the armed slot until it changes (`seen`), the other side answers or the deadline passes.
        In the thread that waits anyway: nothing else here needs the interpreter meanwhile."""
        assert self.armed is not None
        slot, sentinel = self.armed
        word, clock = self.word, time.perf_counter_ns
        while True:
            for _ in range(POLLS_PER_LOOK):
                value = word(slot)
                if value != sentinel:
                    self.seen = (clock(), value) if value is not None else None
                    return
            if answered() or time.monotonic() > deadline:
                value = word(slot)
                if value != sentinel and value is not None:  # landed while we looked away: seen now, later
                    self.seen = (clock(), value)
                return

    def landed_us(self, since_ns: int, expected: int) -> float | None:
        """µs from `since_ns` to the landing of `expected` (the last output's hash as the checker computes
        it); None where nothing landed or what landed is not that hash."""
        if self.seen is None or self.seen[1] != expected:
            return None
        return max(0.0, (self.seen[0] - since_ns) / 1000.0)

    def close(self) -> None:
        self.unlink()
        os.close(self.fd)


def _made(folders: tuple[str, ...]) -> tuple[int, str]:
    """A file for a pad, in memory where the system has a folder for it (a full or read-only /dev/shm: the next)."""
    for folder in folders[:-1]:
        try:
            return tempfile.mkstemp(prefix="trialtui-landing-", dir=folder)
        except OSError:
            continue
    return tempfile.mkstemp(prefix="trialtui-landing-", dir=folders[-1])


def as_word(pair: Any) -> int:
    """A call's hash (two int32 words, a tensor) as the slot's unsigned 64-bit value (both little-endian)."""
    return int(pair.detach().to("cpu").contiguous().view(-1).view(torch.int64).item()) & (2**64 - 1)


@dataclass
class PadView:
    """A process's view of a pad (`slots_of`): the landing slots and the go word as host tensors over the
    mapping, and, where registered with CUDA, the go word's address on the GPU (runner/go_gate.py reads it)."""

    slots: Any  # int32 (slots, 2)
    go: Any  # int64 (1,)
    go_on_device: int | None
    mapped: mmap.mmap
    registered: bool


HOST_REGISTER_DEVICEMAP = 2  # cudaHostRegisterMapped: the GPU reads it where cuMemHostGetDevicePointer says


def slots_of(wire: Any, device: Any) -> PadView | None:
    """The candidate's process's (or the checker's own loop's) view of a pad, registered with CUDA where the
    loop runs there, so a copy from the GPU lands in it as the stream reaches it; None where it cannot be."""
    try:
        path, slots = str(wire["path"]), int(wire["slots"])
        with open(path, "r+b") as fh:
            mapped = mmap.mmap(fh.fileno(), 0)
    except (KeyError, TypeError, ValueError, OSError):
        return None
    if slots < 1 or len(mapped) < (go_word(slots) + 1) * SLOT_BYTES:
        mapped.close()
        return None
    words = torch.frombuffer(mapped, dtype=torch.int64, count=go_word(slots) + 1)
    view = PadView(words[:slots].view(torch.int32).view(slots, 2), words[go_word(slots):], None, mapped, False)
    if torch.device(device).type == "cuda":
        try:
            code = torch.cuda.cudart().cudaHostRegister(words.data_ptr(), words.numel() * SLOT_BYTES, HOST_REGISTER_DEVICEMAP)
            view.registered = int(code) == 0
        except Exception:  # noqa: BLE001 - a torch without the binding: no landing, the reply's clock alone
            view.registered = False
        if not view.registered:
            del words, view
            mapped.close()
            return None
        view.go_on_device = _device_pointer(view.go.data_ptr())
    return view


def _device_pointer(host: int) -> int | None:
    """The GPU's address of registered host memory (the driver's word for it, not an assumption)."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        found = ctypes.c_uint64()
        lib.cuMemHostGetDevicePointer_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_void_p, ctypes.c_uint]
        return found.value if lib.cuMemHostGetDevicePointer_v2(ctypes.byref(found), host, 0) == 0 else None
    except (OSError, AttributeError):
        return None


def release(view: PadView | None) -> None:
    """Unregister and unmap what `slots_of` made."""
    if view is None:
        return
    if view.registered:
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaHostUnregister(view.slots.data_ptr())
    mapped = view.mapped
    view.slots = view.go = None
    try:
        mapped.close()
    except BufferError:  # a view of it is still alive somewhere: the process's exit unmaps it
        pass


def land(slots: Any, hashes: Any, call: int) -> None:
    """Queue call `call`'s hash into its slot (on the GPU's stream: it lands once the hash is made)."""
    slots[call].copy_(hashes[call], non_blocking=hashes.is_cuda)


def landing_per_call_us(landings: list[tuple[float, int]]) -> float | None:
    """The clock per call: the largest batches' fastest landing over their calls. Every batch does the
    whole work of its calls, and what lengthens one (the request's way in, the host descheduled) only adds."""
    if not landings:
        return None
    largest = max(n for _, n in landings)
    return min(us for us, n in landings if n == largest) / largest
