"""The running engine's control channel: the way every other front end reaches a problem's one engine.

A problem directory has one writer (the TUI, a watcher or `trialtui mcp` holds `.trialtui/lock`), so a
front end that starts second asks that writer instead of being refused: `trials branch|note|rerun|finalize`
from a second terminal, a TUI or an MCP server attached to another front end's engine. The channel is a
Unix socket beside the lock, owner-only (mode 0600, and a peer whose uid is not ours is hung up on); one
JSON line in, one JSON line out. The engine applies the command on its event loop and emits the same
events as the TUI's own keys, so every view redraws at once. The `events` command is the one that
streams: after its reply line, every event the engine emits follows as a JSON line until either side
hangs up (`stream` is its client).
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
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

SOCKET_NAME = "control.sock"
_MAX_PATH = 100  # sun_path holds 108 bytes on Linux, 104 on macOS
_LINE_LIMIT = 1 << 20
# Events a viewer may fall behind by before it is hung up on (it then reattaches and reloads): a stuck
# viewer must not grow the engine's memory without bound.
STREAM_BACKLOG = 10_000

Handler = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
Listener = Callable[[Any], None]  # an engine subscriber: called with each event


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

    def __init__(self, state_dir: Path, handler: Handler, *, subscribe: Callable[[Listener], None] | None = None,
                 unsubscribe: Callable[[Listener], None] | None = None):
        self.path = socket_path(state_dir)
        self.handler = handler
        self.subscribe, self.unsubscribe = subscribe, unsubscribe
        self._server: asyncio.AbstractServer | None = None
        self._streams: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self._server = await asyncio.start_unix_server(self._serve, path=str(self.path), limit=_LINE_LIMIT)
        os.chmod(self.path, 0o600)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._streams):  # viewers see their stream end: the engine is gone
                writer.close()
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
                if op == "events" and self.subscribe is not None:
                    await self._stream(reader, writer, await self.handler("info", {}))
                    return
                reply = await self.handler(op, args)
            writer.write(json.dumps(reply, default=str).encode() + b"\n")
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away; the command (if it ran) still stands
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


    async def _stream(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, info: dict[str, Any]) -> None:
        """The engine's info, then its events as JSON lines until the viewer hangs up or falls too far behind."""
        assert self.subscribe is not None and self.unsubscribe is not None
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

        def offer(item: dict[str, Any]) -> None:
            if queue.qsize() < STREAM_BACKLOG:
                queue.put_nowait(item)
            elif queue.qsize() == STREAM_BACKLOG:
                queue.put_nowait(None)  # one past the backlog: hang up

        def listener(event: Any) -> None:  # the engine may emit from a worker thread
            loop.call_soon_threadsafe(offer, event.to_dict())

        self.subscribe(listener)
        self._streams.add(writer)
        gone = asyncio.ensure_future(reader.read())  # returns at EOF: the viewer left
        try:
            writer.write(json.dumps(info, default=str).encode() + b"\n")
            await writer.drain()
            while True:
                item = asyncio.ensure_future(queue.get())
                await asyncio.wait({item, gone}, return_when=asyncio.FIRST_COMPLETED)
                if not item.done():
                    item.cancel()
                    return
                if item.result() is None:
                    return
                writer.write(json.dumps(item.result(), default=str).encode() + b"\n")
                await writer.drain()
        finally:
            gone.cancel()
            self._streams.discard(writer)
            self.unsubscribe(listener)


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


async def stream(state_dir: Path, *, timeout: float = 10.0) -> AsyncIterator[dict[str, Any]]:
    """Attach to the engine's event stream: yields its info first, then each event as a dict, until it hangs up.

    `timeout` bounds the connect and the info line only; events may be minutes apart. Leaving the
    loop (or cancelling the task that runs it) hangs up, which leaves the engine running.
    """
    path = socket_path(state_dir)
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(str(path), limit=_LINE_LIMIT), timeout)
    except FileNotFoundError as exc:
        raise Unavailable(f"no control channel at {path}") from exc
    except (ConnectionError, asyncio.TimeoutError, OSError) as exc:
        raise Unavailable(f"{path}: {exc}") from exc
    try:
        writer.write(json.dumps({"op": "events", "args": {}}).encode() + b"\n")
        try:
            info = json.loads(await asyncio.wait_for(reader.readline(), timeout))
        except (ValueError, ConnectionError, asyncio.TimeoutError) as exc:
            raise Unavailable(f"{path} hung up without an answer") from exc
        if not info.get("ok"):
            raise Refused(info.get("error") or "refused")
        yield info
        while True:
            try:
                line = await reader.readline()
            except (ConnectionError, ValueError):
                return  # the engine went away mid-stream, or sent a line past the limit: the stream ends
            if not line.endswith(b"\n"):
                return  # EOF, or a line cut by the engine's death
            with contextlib.suppress(ValueError):
                yield json.loads(line)
    finally:
        writer.close()
