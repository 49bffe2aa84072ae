"""The SSH executor: `--executor ssh://user@host[:port]`, jobs on a GPU box that has trialtui and its runner.

One connection (asyncssh, which reads ~/.ssh/config, known_hosts, keys and the agent as OpenSSH does) runs
one `python -m trialtui.engine.executors.host` there, which says what GPUs it has: one lane each. Jobs
go to it as JSON lines and their progress and outcomes come back the same way, multiplexed by job id. A
lost connection ends every job in flight as `interrupted` (the far side sweeps them when it sees EOF);
the next job connects again.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import json
import shlex
import threading
import time
from pathlib import Path
from typing import Any

from trialtui.core.executor import JOB_VERSION, ExecutorError, JobData, Progress, Slot
from trialtui.core.install import install_command
from trialtui.engine.executors.remote import Interrupted, RemoteExecutor, deadline_for, dumps

HOST_MODULE = "trialtui.engine.executors.host"
HELLO_S = 60.0  # beyond the connection's own timeout: the host's interpreter starting on a loaded machine
KEEPALIVE_S = 15  # with 3 missed answers, a silent network counts as lost after about 45 s
STDERR_TAIL = 4000


class _Session:
    """One connection and the host process at its far end."""

    def __init__(self, conn: Any, process: Any, hello: dict[str, Any]) -> None:
        self.conn = conn
        self.process = process
        self.hello = hello
        self.pending: dict[str, tuple[concurrent.futures.Future, Progress | None]] = {}
        self.lost: str | None = None
        self._lock = threading.Lock()  # jobs are added from the engine's threads, answered on the loop's

    def add(self, job_id: str, future: concurrent.futures.Future, on_progress: Progress | None) -> None:
        with self._lock:
            if self.lost is not None:
                future.set_exception(Interrupted(self.lost))
            else:
                self.pending[job_id] = (future, on_progress)

    def answer(self, job_id: str, outcome: dict[str, Any]) -> None:
        with self._lock:
            entry = self.pending.pop(job_id, None)
        if entry is not None and not entry[0].done():
            entry[0].set_result(outcome)

    def forget(self, job_id: str) -> None:
        with self._lock:
            self.pending.pop(job_id, None)

    def end(self, why: str) -> None:
        """The connection is gone: every job still waiting for its outcome is interrupted."""
        with self._lock:
            if self.lost is None:
                self.lost = why
            waiting, self.pending = list(self.pending.values()), {}
        for future, _ in waiting:
            if not future.done():
                future.set_exception(Interrupted(why))


class SshExecutor(RemoteExecutor):
    scheme = "ssh"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._session: _Session | None = None
        self._connecting = threading.Lock()
        self._ids = itertools.count(1)
        self.hello: dict[str, Any] = {}
        self._lanes_env: list[dict[str, str]] = []

    def describe(self) -> str:
        t = self.target
        return f"ssh {t.user + '@' if t.user else ''}{t.host}{':' + str(t.port) if t.port else ''}"

    # Connecting

    def open(self) -> list[Slot]:
        try:
            import asyncssh  # noqa: F401 - said here, before any thread starts
        except ImportError as exc:
            raise ExecutorError("the SSH executor needs asyncssh: pip install asyncssh") from exc
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="ssh-executor", daemon=True)
        self._thread.start()
        session = self._session = self._connect()
        hello = self.hello = session.hello
        self.device = self.requested_device or hello.get("device") or "cpu"
        host = self.target.host or "?"
        if self.device == "cuda" and hello.get("gpus"):
            slots = [Slot(f"{host}:gpu{g['index']}", str(g["index"]), hello.get("host", host), g.get("name"))
                     for g in hello["gpus"]]
        else:
            slots = [Slot(f"{host}:{'gpu0' if self.device == 'cuda' else 'cpu'}", "0" if self.device == "cuda" else None,
                          hello.get("host", host))]
        self._lanes_env = [{"CUDA_VISIBLE_DEVICES": s.gpu} if s.gpu is not None else {} for s in slots]
        self._prime(session)
        self.slots = slots
        return slots

    def _connect(self) -> _Session:
        future = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        try:
            return future.result(timeout=2 * (float(self.settings.connect_timeout_s) + HELLO_S))
        except concurrent.futures.TimeoutError as exc:
            future.cancel()
            raise ExecutorError(f"{self.describe()}: no answer from the host") from exc

    async def _start(self) -> _Session:
        import asyncssh

        t, s = self.target, self.settings
        options: dict[str, Any] = {"port": t.port or 22, "connect_timeout": s.connect_timeout_s,
                                   "keepalive_interval": KEEPALIVE_S, "keepalive_count_max": 3}
        if t.user:
            options["username"] = t.user
        if s.known_hosts:
            options["known_hosts"] = str(Path(s.known_hosts).expanduser())
        if s.identity:
            options["client_keys"] = [str(Path(s.identity).expanduser())]
        try:
            conn = await asyncssh.connect(t.host, **options)
        except (OSError, asyncssh.Error, asyncio.TimeoutError) as exc:
            raise ExecutorError(f"cannot reach {self.describe()}: {_reason(exc)}") from exc
        command = f"{s.python} -m {HOST_MODULE}" + (f" --workdir {shlex.quote(s.workdir)}" if s.workdir else "")
        try:
            process = await conn.create_process(command, encoding=None)
        except (OSError, asyncssh.Error) as exc:
            conn.close()
            raise ExecutorError(f"{self.describe()}: cannot start `{command}`: {_reason(exc)}") from exc
        stderr_task = asyncio.ensure_future(self._tail(process))
        try:
            line = await asyncio.wait_for(process.stdout.readline(), timeout=s.connect_timeout_s + HELLO_S)
            hello = json.loads(line) if line else None
        except (ValueError, asyncio.TimeoutError, asyncssh.Error, OSError):
            hello = None
        if not isinstance(hello, dict) or hello.get("event") != "hello":
            await asyncio.wait([stderr_task], timeout=5)
            conn.close()
            said = stderr_task.result().decode("utf-8", "replace").strip() if stderr_task.done() else ""
            raise ExecutorError(f"{self.describe()}: `{command}` did not start trialtui's job host"
                                f"{': ' + said.splitlines()[-1] if said else ''}. The host needs trialtui with its "
                                f"runner ({install_command('runner', here=False)}); [executor] python names its interpreter")
        if hello.get("version") != JOB_VERSION:
            conn.close()
            raise ExecutorError(f"{self.describe()} runs trialtui {hello.get('trialtui')}, whose jobs are version "
                                f"{hello.get('version')}; this one sends version {JOB_VERSION}: install the same "
                                "trialtui on both")
        if hello.get("runner"):
            conn.close()
            raise ExecutorError(f"{self.describe()}: {hello['runner']}")
        session = _Session(conn, process, hello)
        asyncio.ensure_future(self._read(session))
        return session

    async def _tail(self, process: Any) -> bytes:
        """The end of what the host process says on stderr: why it did not start, if it did not."""
        tail = b""
        try:
            while data := await process.stderr.read(1 << 16):
                tail = (tail + data)[-STDERR_TAIL:]
        except Exception:  # noqa: BLE001 - the connection went: what was said so far is all there is
            pass
        return tail

    def _prime(self, session: _Session) -> None:
        self._send(session, {"op": "prime", "device": self.device, "lanes": self._lanes_env})

    def _live(self) -> _Session:
        """The session, connecting again if the last one was lost (ExecutorError when that fails)."""
        with self._connecting:
            if self._session is None:
                raise ExecutorError(f"{self.describe()}: not connected (open it first)")
            if self._session.lost is not None:
                self._session = self._connect()
                self._prime(self._session)
            return self._session

    async def _read(self, session: _Session) -> None:
        why = "the connection closed"
        try:
            while True:
                line = await session.process.stdout.readline()
                if not line:
                    break
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                job_id = str(message.get("id"))
                entry = session.pending.get(job_id)
                if entry is None:
                    continue
                if message.get("event") == "progress" and entry[1] is not None:
                    try:
                        entry[1](message.get("data") or {})
                    except Exception:  # noqa: BLE001 - a view's bug must not end the connection
                        pass
                elif message.get("event") == "done":
                    session.answer(job_id, message.get("outcome") or {})
        except Exception as exc:  # noqa: BLE001 - asyncssh's ConnectionLost and friends: the session is over
            why = _reason(exc)
        session.end(why)
        session.conn.close()

    # Jobs

    def _send(self, session: _Session, message: dict[str, Any]) -> None:
        async def write() -> None:
            try:
                session.process.stdin.write(dumps(message))
                await session.process.stdin.drain()
            except Exception as exc:  # noqa: BLE001 - a write on a lost connection: the session is over
                session.end(_reason(exc))

        asyncio.run_coroutine_threadsafe(write(), self._loop).result()

    def run(self, job: JobData, *, on_progress: Progress | None, handle: Any) -> dict[str, Any]:
        try:
            session = self._live()
        except ExecutorError as exc:
            return {"error": str(exc)}
        job_id = f"j{next(self._ids)}"
        future: concurrent.futures.Future = concurrent.futures.Future()
        session.add(job_id, future, on_progress)
        self._send(session, {"op": "job", "id": job_id, "job": job.to_dict()})
        deadline, cancelled = deadline_for(job), False
        while True:
            try:
                return future.result(timeout=0.1)
            except concurrent.futures.TimeoutError:
                pass
            if handle is not None and getattr(handle, "cancelled", False) and not cancelled:
                cancelled = True
                self._send(session, {"op": "cancel", "id": job_id})
            if time.monotonic() > deadline:
                self._send(session, {"op": "cancel", "id": job_id})
                session.forget(job_id)
                raise Interrupted("the host stopped answering about this job")

    def drop(self) -> None:
        """Close the connection as a network fault would (tests, and `close`)."""
        session = self._session
        if session is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(session.conn.abort)

    def close(self) -> None:
        """EOF to the host (it cancels and sweeps what still runs, then exits), then the connection and loop go."""
        session, self._session = self._session, None
        loop, self._loop = self._loop, None
        if loop is None:
            return

        async def hang_up() -> None:
            if session is not None:
                try:
                    session.process.stdin.write_eof()
                    await asyncio.wait_for(session.process.wait_closed(), timeout=30)
                except Exception:  # noqa: BLE001 - already gone
                    pass
                session.conn.close()
                try:
                    await asyncio.wait_for(session.conn.wait_closed(), timeout=10)
                except Exception:  # noqa: BLE001
                    pass
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in others:
                task.cancel()
            await asyncio.gather(*others, return_exceptions=True)

        try:
            asyncio.run_coroutine_threadsafe(hang_up(), loop).result(timeout=60)
        except Exception:  # noqa: BLE001 - closing is best effort; the far side sweeps on EOF anyway
            pass
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=10)
        if not loop.is_running():
            loop.close()


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text.strip()
