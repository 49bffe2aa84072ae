"""Values across the checker/candidate boundary as plain data, never as objects either side must trust.

A message is one JSON line on a pipe; the tensors it carries are raw bytes in files of an exchange
directory (shared memory where there is room), described in the line by dtype and shape, or, for
CUDA tensors, CUDA IPC handles (runner/cuda_ipc.py) that the receiver copies from at once. Nested
tuples, lists and dicts of tensors and JSON scalars cross as they are; anything else crosses as an
`Opaque` naming its type, so a candidate that returns an object gets a clear structural verdict.
Everything received is checked (dtypes, sizes, file names) before it becomes a tensor.
"""

from __future__ import annotations

import errno
import itertools
import json
import math
import os
import resource
import select
import shutil
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import torch

from trialtui.runner import cuda_ipc
from trialtui.runner.tensors import DTYPES

MAX_LINE = 64 * 2**20
MAX_LEAVES = 100_000
CHUNK_BYTES = 256 * 2**20


def chunk_bytes() -> int:
    """Tensor bytes per file: 256 MB, or half of this process's RLIMIT_FSIZE where that is lower."""
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    return max(1 << 20, min(CHUNK_BYTES, soft // 2)) if soft != resource.RLIM_INFINITY else CHUNK_BYTES


class WireError(ValueError):
    """A message that does not follow the protocol: the sender is broken or hostile."""


class ChannelClosed(WireError):
    """The other side went away (exited, crashed, or closed its end)."""


class ChannelTimeout(WireError):
    """The other side started no reply, or stopped halfway through one, before the deadline."""


def _key_scalar(key: Any) -> bool:
    """A dict key that crosses as itself (a reference may key its outputs by layer number): a JSON scalar."""
    return key is None or isinstance(key, (str, bool, int)) or (isinstance(key, float) and math.isfinite(key))


@dataclass(frozen=True)
class Opaque:
    """A value the sender could not express as data; only its type name crossed."""

    type_name: str


class Channel:
    """One side of the protocol: JSON lines on `rfile`/`wfile`, tensor bytes in `directories` (in order)."""

    def __init__(self, rfile: IO[bytes], wfile: IO[bytes], directories: list[Path], name: str, *, isolate: bool = False):
        self.rfile = rfile
        self.wfile = wfile
        self.directories = [Path(d) for d in directories]
        self.name = name  # file prefix, so both sides never pick the same file name
        self.isolate = isolate  # CUDA tensors are shared from allocations of their own (the checker's side)
        self._ids = itertools.count()
        self._fd = rfile.fileno() if rfile is not None else -1  # a send-only end has none
        self._buffer = b""
        self._shared: list[Any] = []  # what the other side may still be copying from, until it answers
        self.stats = {"send_s": 0.0, "send_bytes": 0, "recv_s": 0.0, "recv_bytes": 0}  # tensor bytes and their time

    def _release(self) -> None:
        for item in self._shared:
            if isinstance(item, cuda_ipc.Isolated):
                item.free()
        self._shared = []

    def _readline(self, deadline: float | None) -> bytes:
        """One line, read straight from the descriptor: a sender that stops halfway cannot hang us past the deadline."""
        while b"\n" not in self._buffer:
            if len(self._buffer) > MAX_LINE:
                raise WireError("a message line over the size limit")
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                raise ChannelTimeout("no whole message before the deadline")
            ready, _, _ = select.select([self._fd], [], [], wait)
            if not ready:
                continue
            data = os.read(self._fd, 1 << 20)
            if not data:
                raise ChannelClosed("the other process closed the channel")
            self._buffer += data
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line + b"\n"

    def readable(self) -> bool:
        """Something to read now (a line begun, or bytes waiting): the other side has answered."""
        return bool(self._buffer) or bool(select.select([self._fd], [], [], 0)[0])

    def send(self, header: dict[str, Any], payload: Any = None) -> None:
        tensors: list[dict[str, Any]] = []
        started = time.perf_counter()
        tree = self._encode(payload, tensors)
        self.stats["send_s"] += time.perf_counter() - started
        line = json.dumps({**header, "payload": tree, "tensors": tensors}) + "\n"
        try:
            self.wfile.write(line.encode())
            self.wfile.flush()
        except (BrokenPipeError, ValueError, OSError) as exc:
            raise ChannelClosed(f"the other process is gone ({exc})") from exc

    def recv(self, device: torch.device | str = "cpu", max_bytes: int | None = None,
             deadline: float | None = None) -> tuple[dict[str, Any], Any]:
        line = self._readline(deadline)
        self._release()  # the other side answered: it has copied what we shared
        if len(line) > MAX_LINE:
            raise WireError("a message line over the size limit")
        try:
            message = json.loads(line)
        except ValueError as exc:
            raise WireError(f"not JSON: {exc}") from exc
        if not isinstance(message, dict):
            raise WireError("a message must be a JSON object")
        metas = message.pop("tensors", [])
        tree = message.pop("payload", None)
        if not isinstance(metas, list) or len(metas) > MAX_LEAVES:
            raise WireError("tensors must be a list of at most %d entries" % MAX_LEAVES)
        total = 0
        tensors = []
        started = time.perf_counter()
        for meta in metas:
            tensor = self._read_tensor(meta, device)
            # where the sender's tensor lived (a structural fact: a CUDA kernel's output left on the CPU)
            tensor.sent_from_device = str(meta.get("device") or "")[:16] or tensor.device.type
            total += tensor.numel() * tensor.element_size()
            if max_bytes is not None and total > max_bytes:
                raise WireError(f"more than {max_bytes} bytes of tensors in one message")
            tensors.append(tensor)
        self.stats["recv_s"] += time.perf_counter() - started
        self.stats["recv_bytes"] += total
        return message, self._decode(tree, tensors, depth=0)

    def _encode(self, value: Any, tensors: list[dict[str, Any]]) -> Any:
        if isinstance(value, torch.Tensor):
            tensors.append(self._write_tensor(value))
            return {"t": len(tensors) - 1}
        if value is None or isinstance(value, (bool, int, str)):
            return {"v": value}
        if isinstance(value, float):
            return {"v": value} if math.isfinite(value) else {"f": repr(value)}
        if isinstance(value, (tuple, list)):
            return {"tuple" if isinstance(value, tuple) else "list": [self._encode(v, tensors) for v in value]}
        if isinstance(value, dict) and all(_key_scalar(k) for k in value):
            return {"dict": [[k, self._encode(v, tensors)] for k, v in value.items()]}
        if isinstance(value, torch.Size):
            return {"tuple": [{"v": int(v)} for v in value]}
        if isinstance(value, torch.dtype):
            return {"dtype": str(value).removeprefix("torch.")}
        return {"opaque": type(value).__name__}

    def _decode(self, tree: Any, tensors: list[torch.Tensor], depth: int) -> Any:
        if depth > 64 or not isinstance(tree, dict) or len(tree) != 1:
            raise WireError("malformed payload")
        (kind, body), = tree.items()
        if kind == "t":
            if not isinstance(body, int) or not 0 <= body < len(tensors):
                raise WireError("payload names a tensor that was not sent")
            return tensors[body]
        if kind == "v":
            if body is not None and not isinstance(body, (bool, int, float, str)):
                raise WireError("a scalar must be a JSON scalar")
            return body
        if kind == "f":
            if body not in ("nan", "inf", "-inf"):
                raise WireError("bad float")
            return float(body)
        if kind in ("tuple", "list"):
            if not isinstance(body, list):
                raise WireError("a sequence must be a list")
            items = [self._decode(v, tensors, depth + 1) for v in body]
            return tuple(items) if kind == "tuple" else items
        if kind == "dict":
            if not isinstance(body, list) or not all(isinstance(p, list) and len(p) == 2 and _key_scalar(p[0]) for p in body):
                raise WireError("a dict must be a list of [key, value] pairs, each key a string, number, bool or None")
            return {k: self._decode(v, tensors, depth + 1) for k, v in body}
        if kind == "dtype":
            if body not in DTYPES:
                raise WireError(f"unknown dtype {body!r}")
            return DTYPES[body]
        if kind == "opaque":
            return Opaque(str(body)[:200])
        raise WireError(f"unknown payload kind {kind!r}")

    def _write_tensor(self, tensor: torch.Tensor) -> dict[str, Any]:
        tensor = tensor.detach()
        dtype = str(tensor.dtype).removeprefix("torch.")
        if dtype not in DTYPES:
            raise WireError(f"dtype {tensor.dtype} cannot cross the boundary")
        meta: dict[str, Any] = {"dtype": dtype, "shape": list(tensor.shape), "device": tensor.device.type}
        self.stats["send_bytes"] += tensor.numel() * tensor.element_size()
        meta["files"] = []
        if tensor.is_cuda and tensor.numel() and cuda_ipc.available():
            try:
                if self.isolate:
                    shared = cuda_ipc.Isolated(tensor)
                    meta.update(shared.meta())
                else:
                    shared = tensor.contiguous()
                    meta.update(cuda_ipc.export(shared))
                self._shared.append(shared)
                return meta
            except cuda_ipc.IpcError:
                pass  # e.g. expandable segments: this tensor goes by file
        if tensor.numel():
            flat = tensor.contiguous().reshape(-1).view(torch.uint8)
            step = chunk_bytes()
            for lo in range(0, flat.numel(), step):  # files under RLIMIT_FSIZE, whatever the tensor's size
                name = f"{self.name}-{next(self._ids)}.bin"
                meta["files"].append([self._write_bytes(name, flat[lo:lo + step].cpu().numpy().data), name])
        return meta

    def _write_bytes(self, name: str, data: memoryview) -> int:
        """Into the first directory with room; a fresh file only: the other side may have planted a link."""
        for index, directory in enumerate(self.directories):
            last = index == len(self.directories) - 1
            if not last and shutil.disk_usage(directory).free < data.nbytes + 2**26:
                continue
            try:
                fd = os.open(directory / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            except OSError as exc:
                raise WireError(f"the exchange directory was tampered with ({name}: {exc.strerror})") from exc
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                return index
            except OSError as exc:
                os.unlink(directory / name)
                if last or exc.errno != errno.ENOSPC:
                    raise WireError(f"cannot write tensor bytes to {directory}: {exc.strerror}") from exc
        raise WireError("no exchange directory")

    def _read_tensor(self, meta: Any, device: torch.device | str) -> torch.Tensor:
        if not isinstance(meta, dict):
            raise WireError("a tensor description must be an object")
        dtype = DTYPES.get(meta.get("dtype"))
        shape = meta.get("shape")
        if dtype is None:
            raise WireError(f"unknown dtype {meta.get('dtype')!r}")
        if not isinstance(shape, list) or len(shape) > 16 or not all(isinstance(s, int) and s >= 0 for s in shape):
            raise WireError(f"bad shape {shape!r}")
        numel = math.prod(shape)
        nbytes = numel * torch.empty((), dtype=dtype).element_size()
        if numel == 0:
            return torch.empty(shape, dtype=dtype, device=device)
        if "ipc" in meta:
            if not cuda_ipc.available(receiving=True):
                raise WireError("a CUDA IPC handle sent to a process without CUDA")
            try:
                buffer = cuda_ipc.copy_in(meta, nbytes, device)  # into our own memory before anything reads it
            except cuda_ipc.IpcError as exc:
                raise WireError(str(exc)) from None
            tensor = buffer.view(dtype).reshape(shape)
            return tensor if torch.device(device).type == "cuda" else tensor.to(device)
        files = meta.get("files")
        if not isinstance(files, list) or not files or len(files) > MAX_LEAVES:
            raise WireError("a tensor needs its list of files")
        paths = [self._checked_path(entry) for entry in files]
        sizes = [path.lstat().st_size for path in paths]
        if sum(sizes) != nbytes:  # checked before anything is allocated: a forged shape costs nothing
            raise WireError(f"the files of a tensor hold {sum(sizes)} bytes, its description says {nbytes}")
        buffer = torch.empty(nbytes, dtype=torch.uint8)
        offset = 0
        for path, size in zip(paths, sizes):
            if size:
                buffer[offset:offset + size].copy_(torch.from_file(str(path), shared=False, size=size, dtype=torch.uint8))
            os.unlink(path)
            offset += size
        tensor = buffer.view(dtype).reshape(shape)
        return tensor.to(device) if torch.device(device).type != "cpu" else tensor

    def _checked_path(self, entry: Any) -> Path:
        """[directory index, plain file name] of a regular file in one of our exchange directories."""
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], int) and isinstance(entry[1], str)):
            raise WireError(f"bad file entry {entry!r}")
        index, name = entry
        if not 0 <= index < len(self.directories):
            raise WireError(f"bad exchange directory index {index!r}")
        if Path(name).name != name or not name.endswith(".bin"):
            raise WireError(f"bad file name {name!r}")
        path = self.directories[index] / name
        try:
            info = path.lstat()
        except OSError as exc:
            raise WireError(f"tensor file {name} is missing") from exc
        if not stat.S_ISREG(info.st_mode):
            raise WireError(f"tensor file {name} is not a regular file")
        return path
