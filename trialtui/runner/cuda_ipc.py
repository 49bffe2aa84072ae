"""CUDA tensors between the checker and the candidate's process without leaving the GPU: CUDA IPC handles.

Files cost a 256 MB output a trip through host memory twice per seed; an IPC handle costs one
device-to-device copy. Both ends copy what they receive into memory of their own at once, so nothing
the other side can still reach is compared or computed on. An IPC handle opens the whole allocation
it lies in, so the checker shares its inputs from an allocation made for them alone (`Isolated`,
cuMemAlloc outside PyTorch's caching allocator), never from a block that may hold the reference's
outputs. The driver API is called through ctypes: nothing to build, the same on every torch.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

import torch

HANDLE_BYTES = 64
DISABLE_ENV = "TRIALTUI_NO_CUDA_IPC"  # files instead, e.g. to measure what IPC saves
_LAZY_PEER_ACCESS = 1


class IpcError(RuntimeError):
    """The driver refused: the caller falls back to files (sending) or rejects the message (receiving)."""


class _Handle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_ubyte * HANDLE_BYTES)]


_driver: Any = None


def _cuda() -> Any:
    global _driver
    if _driver is None:
        lib = ctypes.CDLL("libcuda.so.1")
        lib.cuIpcGetMemHandle.argtypes = [ctypes.POINTER(_Handle), ctypes.c_uint64]
        lib.cuIpcOpenMemHandle_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), _Handle, ctypes.c_uint]
        lib.cuIpcCloseMemHandle.argtypes = [ctypes.c_uint64]
        lib.cuMemGetAddressRange_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_size_t), ctypes.c_uint64]
        lib.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
        lib.cuMemFree_v2.argtypes = [ctypes.c_uint64]
        _driver = lib
    return _driver


def _check(code: int, what: str) -> None:
    if code != 0:
        raise IpcError(f"{what} failed (CUresult {code})")


def available(receiving: bool = False) -> bool:
    """CUDA in use here (or, `receiving`, usable: its context is made now) and the driver library found."""
    if (os.environ.get(DISABLE_ENV) == "1" and not receiving) or not torch.cuda.is_available():
        return False  # the switch is the sender's: a receiver takes what comes
    if not torch.cuda.is_initialized():
        if not receiving:
            return False
        torch.empty(1, device="cuda")  # the primary context, current on this thread, for the driver calls
    try:
        _cuda()
    except OSError:
        return False
    return True


def _range(ptr: int) -> tuple[int, int]:
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    _check(_cuda().cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), ctypes.c_uint64(ptr)), "cuMemGetAddressRange")
    return base.value, size.value


def export(tensor: torch.Tensor) -> dict[str, Any]:
    """The handle of a contiguous CUDA tensor's allocation and the tensor's offset in it."""
    torch.cuda.current_stream(tensor.device).synchronize()  # the bytes are final before the other side copies
    ptr = tensor.data_ptr()
    base, _ = _range(ptr)
    handle = _Handle()
    _check(_cuda().cuIpcGetMemHandle(ctypes.byref(handle), ctypes.c_uint64(base)), "cuIpcGetMemHandle")
    return {"ipc": bytes(handle.reserved).hex(), "offset": ptr - base}


class _Span:
    """A device range seen as a flat uint8 tensor (no ownership), for torch to copy from or into."""

    def __init__(self, ptr: int, nbytes: int):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False), "version": 2}


def _open(meta: dict[str, Any], nbytes: int) -> int:
    """Map the sender's allocation here; the mapped address of `meta`'s offset, checked to hold `nbytes`."""
    handle_hex, offset = meta.get("ipc"), meta.get("offset")
    if not (isinstance(handle_hex, str) and len(handle_hex) == 2 * HANDLE_BYTES and isinstance(offset, int) and offset >= 0):
        raise IpcError("a malformed IPC handle")
    try:
        raw = bytes.fromhex(handle_hex)
    except ValueError:
        raise IpcError("a malformed IPC handle") from None
    ptr = ctypes.c_uint64()
    _check(_cuda().cuIpcOpenMemHandle_v2(ctypes.byref(ptr), _Handle.from_buffer_copy(raw), _LAZY_PEER_ACCESS), "cuIpcOpenMemHandle")
    _, size = _range(ptr.value)
    if offset + nbytes > size:
        _cuda().cuIpcCloseMemHandle(ptr.value)
        raise IpcError(f"the tensor ({nbytes} bytes at {offset}) lies outside its allocation ({size} bytes)")
    return ptr.value


def copy_in(meta: dict[str, Any], nbytes: int, device: torch.device | str) -> torch.Tensor:
    """Open the sender's handle, check the range lies inside its allocation, copy it into our own memory."""
    device = torch.device(device if torch.device(device).type == "cuda" else "cuda")
    ptr = _open(meta, nbytes)
    try:
        out = torch.empty(nbytes, dtype=torch.uint8, device=device)
        if nbytes:
            out.copy_(torch.as_tensor(_Span(ptr + meta["offset"], nbytes), device=device))
        torch.cuda.current_stream(device).synchronize()  # copied before the handle closes
        return out
    finally:
        _cuda().cuIpcCloseMemHandle(ptr)


class Mapped:
    """Another process's allocation, mapped here for as long as this object lives: written in place.

    The candidate's process writes its timed calls' outputs straight into the checker's ring this way
    (runner/timed_batch.py): no allocation, export or mapping per batch, so a batch costs what the
    checker's own measure of the harness's work per call (the same loop over the same ring) says."""

    def __init__(self, meta: dict[str, Any], nbytes: int, device: torch.device | str = "cuda"):
        self.ptr = _open(meta, nbytes)
        self.tensor = torch.as_tensor(_Span(self.ptr + meta["offset"], nbytes), device=torch.device(device))

    def close(self) -> None:
        if self.ptr:
            del self.tensor
            _cuda().cuIpcCloseMemHandle(self.ptr)
            self.ptr = 0


class Isolated:
    """Device memory of one allocation of its own, holding a copy of one tensor: safe to share by handle."""

    def __init__(self, tensor: torch.Tensor):
        flat = tensor.detach().contiguous().reshape(-1).view(torch.uint8)
        self.nbytes = max(1, flat.numel())
        ptr = ctypes.c_uint64()
        _check(_cuda().cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(self.nbytes)), "cuMemAlloc")
        self.ptr = ptr.value
        if flat.numel():
            self.view(tensor.device).copy_(flat)
        torch.cuda.current_stream(tensor.device).synchronize()

    @classmethod
    def empty(cls, nbytes: int) -> Isolated:
        """An allocation of its own, its bytes left as they are (the checker's ring of timed outputs)."""
        self = cls.__new__(cls)
        ptr = ctypes.c_uint64()
        _check(_cuda().cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(max(1, nbytes))), "cuMemAlloc")
        self.ptr, self.nbytes = ptr.value, max(1, nbytes)
        return self

    def view(self, device: torch.device | str = "cuda") -> torch.Tensor:
        """The allocation as a flat uint8 tensor (no ownership: valid until `free`)."""
        return torch.as_tensor(_Span(self.ptr, self.nbytes), device=torch.device(device))

    def meta(self) -> dict[str, Any]:
        handle = _Handle()
        _check(_cuda().cuIpcGetMemHandle(ctypes.byref(handle), ctypes.c_uint64(self.ptr)), "cuIpcGetMemHandle")
        return {"ipc": bytes(handle.reserved).hex(), "offset": 0}

    def free(self) -> None:
        if self.ptr:
            _cuda().cuMemFree_v2(ctypes.c_uint64(self.ptr))
            self.ptr = 0
