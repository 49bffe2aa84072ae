"""The running engine's control channel: `trials branch|note|rerun|finalize` from a second terminal.

A problem directory has one writer (the TUI or a watcher holds `.trialtui/lock`), so a CLI command
that writes asks that writer instead of being refused. The channel is a Unix socket beside the lock,
owner-only (mode 0600, and a peer whose uid is not ours is hung up on); one JSON line in, one JSON
line out. The engine applies the command on its event loop and emits the same events as the TUI's
own keys, so the TUI redraws at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import socket
import struct
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

SOCKET_NAME = "control.sock"
_MAX_PATH = 100  # sun_path holds 108 bytes on Linux, 104 on macOS
_LINE_LIMIT = 1 << 20

Handler = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


class Unavailable(OSError):
    """No engine answers on this problem's channel (none runs, or it is older than the channel)."""


class Refused(RuntimeError):
    """The engine received the command and said no; the message says why."""


def socket_path(state_dir: Path) -> Path:
    """`.trialtui/control.sock`, or (when that path is too long for a socket) a private one in the temp dir."""
    path = Path(state_dir).resolve() / SOCKET_NAME
    if len(os.fsencode(path)) <= _MAX_PATH:
        return path
    private = Path(tempfile.gettempdir()) / f"trialtui-{os.getuid()}"
    private.mkdir(mode=0o700, exist_ok=True)
    return private / f"{hashlib.sha256(os.fsencode(path)).hexdigest()[:20]}.sock"


def _peer_is_us(sock: socket.socket | None) -> bool:
    if sock is None or not hasattr(socket, "SO_PEERCRED"):
        return sock is not None  # no peer credentials here: the socket's mode is the guard
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return uid == os.getuid()


class Server:
    """Serves one engine's commands while it runs; the caller holds the store's lock, so a socket left
    by a dead engine is stale and is replaced."""

    def __init__(self, state_dir: Path, handler: Handler):
        self.path = socket_path(state_dir)
        self.handler = handler
        self._server: asyncio.AbstractServer | None = None

    async def start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self._server = await asyncio.start_unix_server(self._serve, path=str(self.path), limit=_LINE_LIMIT)
        os.chmod(self.path, 0o600)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if not _peer_is_us(writer.get_extra_info("socket")):
                return
            try:
                request = json.loads(await reader.readline())
                op, args = request["op"], request.get("args") or {}
                if not isinstance(op, str) or not isinstance(args, dict):
                    raise TypeError("op must be a string and args an object")
            except (ValueError, KeyError, TypeError) as exc:
                reply: dict[str, Any] = {"ok": False, "error": f"a malformed command: {exc}"}
            else:
                reply = await self.handler(op, args)
            writer.write(json.dumps(reply, default=str).encode() + b"\n")
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away; the command (if it ran) still stands
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


def send(state_dir: Path, op: str, args: dict[str, Any] | None = None, *, timeout: float | None = 10.0) -> dict[str, Any]:
    """Ask the engine that holds `state_dir`; returns its reply's fields. `timeout` None waits as long as it takes."""
    path = socket_path(state_dir)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(str(path))
            sock.sendall(json.dumps({"op": op, "args": args or {}}).encode() + b"\n")
            chunks = []
            while not chunks or not chunks[-1].endswith(b"\n"):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        except FileNotFoundError as exc:
            raise Unavailable(f"no control channel at {path}") from exc
        except (ConnectionError, socket.timeout, OSError) as exc:
            raise Unavailable(f"{path}: {exc}") from exc
    try:
        reply = json.loads(b"".join(chunks))
    except ValueError as exc:
        raise Unavailable(f"{path} hung up without an answer") from exc
    if not reply.get("ok"):
        raise Refused(reply.get("error") or "refused")
    return reply
