"""A front end's view of an engine that another process runs: the same face as `Engine`, over the control channel.

One engine runs per problem directory (it holds `.trialtui/lock`). A TUI or `trialtui mcp` started second
attaches to it: `RemoteEngine` follows the engine's event stream, reads trials from the store on disk
(reopened as a reader whenever an event says it changed) and sends keys and tool calls as control
commands. Stopping it hangs up and leaves the engine running: `q` in a viewer never stops another front
end's engine.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from trialtui.core.model import Trial
from trialtui.core.problem import Problem
from trialtui.core.report_card import Finalized
from trialtui.core.store import STATE_DIR, Store, StoreError
from trialtui.engine import control
from trialtui.engine import events as ev

# Events after which what is on disk differs from what a reader opened before them.
_STORE_CHANGES = frozenset({"trial_created", "state_changed", "result", "decision", "save_ignored", "new_best"})


class LiveStore:
    """Reads of a store another process writes: a reader `Store`, reopened on the first read after a change.

    A reader sees the store as it was when it opened (store.py), so this one reopens when the writer's
    events say something changed; a reopen that fails (it raced a checkpoint) keeps the old view and
    tries again on the next read.
    """

    writer = False
    recovery = None

    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        self._store = Store.open(self.root, writer=False)
        self.state_dir = self._store.state_dir
        self._stale = False
        self._mutex = threading.Lock()

    def changed(self) -> None:
        self._stale = True

    def _current(self) -> Store:
        with self._mutex:
            if self._stale:
                self._stale = False
                try:
                    self._store = Store.open(self.root, writer=False)
                except StoreError:
                    self._stale = True
            return self._store

    def trials(self) -> list[Trial]:
        return self._current().trials()

    def get(self, trial_id: str) -> Trial:
        return self._current().get(trial_id)

    @property
    def heads(self) -> dict[str, str]:
        return self._current().heads

    def head(self, file: str) -> Trial | None:
        return self._current().head(file)

    def snapshot_path(self, sha: str) -> Path:
        return self._current().snapshot_path(sha)

    def read_source(self, trial: Trial) -> str:
        return self._current().read_source(trial)

    def blob_path(self, kind: str, name: str) -> Path:
        return self._current().blob_path(kind, name)

    def read_blob(self, relpath: str) -> str:
        return self._current().read_blob(relpath)

    def close(self) -> None:
        self._store.close()


class _RemoteLanes:
    """The engine's lanes as a viewer sees them: their names, and whether they are idle now (asked each time)."""

    class Named:
        def __init__(self, name: str):
            self.name = name

    def __init__(self, engine: RemoteEngine, names: list[str]):
        self._engine = engine
        self.lanes = [self.Named(name) for name in names]

    @property
    def idle(self) -> bool:
        return bool(self._engine.info().get("idle", True))


class RemoteEngine:
    """An attached front end's engine: events from the stream, reads from disk, operations as commands."""

    def __init__(self, problem: Problem):
        self.problem = problem
        self.state_dir = problem.root / STATE_DIR
        first = self._send("info")
        self.pid: int | None = first.get("pid")
        self.host: str = first.get("host") or "trialtui"
        self.where: str = first.get("where") or "this machine"  # where that engine's jobs run
        self.device: str = first.get("device") or "cpu"
        self.paused: bool = bool(first.get("paused"))
        self.saves_while_paused: int = int(first.get("saves_while_paused") or 0)
        self.lanes = _RemoteLanes(self, list(first.get("lanes") or []))
        self.store = LiveStore(problem.root)
        self._subscribers: list[Any] = []
        self._stop = asyncio.Event()

    def _send(self, op: str, args: dict[str, Any] | None = None, timeout: float | None = 10.0) -> dict[str, Any]:
        return control.send(self.state_dir, op, args, timeout=timeout)

    def info(self) -> dict[str, Any]:
        try:
            reply = self._send("info")
        except (control.Unavailable, control.Refused):
            return {}
        self.paused = bool(reply.get("paused"))
        self.saves_while_paused = int(reply.get("saves_while_paused") or 0)
        return reply

    # Events

    def subscribe(self, fn: Any) -> None:
        self._subscribers.append(fn)

    def unsubscribe(self, fn: Any) -> None:
        if fn in self._subscribers:
            self._subscribers.remove(fn)

    def emit(self, event: ev.Event) -> None:
        for fn in list(self._subscribers):
            fn(event)

    async def run(self, **_: Any) -> None:
        """Follow the engine's events until stopped; raises when the engine itself goes away."""
        self._stop.clear()
        follow = asyncio.ensure_future(self._follow())
        stopped = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({follow, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (follow, stopped):
                task.cancel()
            await asyncio.gather(follow, stopped, return_exceptions=True)
        if follow.done() and not follow.cancelled() and follow.exception() is not None:
            raise follow.exception()  # type: ignore[misc]
        if not self._stop.is_set():
            raise RuntimeError(f"the engine that {self.host} ran (pid {self.pid}) stopped; "
                               "the trials stay on disk: open the directory again to run one here")

    async def _follow(self) -> None:
        first = True
        async for data in control.stream(self.state_dir):
            if first:
                first = False
                self.emit(ev.Notice(f"attached to the engine that {self.host} runs (pid {self.pid}): "
                                    "quitting here leaves it running"))
                continue
            if data.get("event") in _STORE_CHANGES:
                self.store.changed()
            event = ev.from_dict(data)
            if event is not None:
                self.emit(event)

    def stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        self.store.close()

    # Operations: each is a control command, applied on the engine's own loop

    def branch(self, trial_id: str, *, from_outside: bool = True) -> None:
        try:
            self._send("branch", {"trial": trial_id})
        except control.Refused as exc:
            raise StoreError(str(exc)) from exc
        self.store.changed()

    def _try(self, op: str, args: dict[str, Any]) -> dict[str, Any] | None:
        """A command whose refusal is a notice, not an exception: the TUI's keys do not expect one."""
        try:
            return self._send(op, args)
        except (control.Unavailable, control.Refused) as exc:
            self.emit(ev.Notice(f"{op} was not applied: {exc}", "warning"))
            return None

    def rerun(self, trial_id: str, lane: str | None = None, *, front: bool | None = None) -> str | None:
        reply = self._try("rerun", {"trials": [trial_id]})
        if reply is None:
            return f"{trial_id} was not queued"
        return (reply.get("skipped") or {}).get(trial_id)

    def cancel(self, trial_id: str) -> bool:
        reply = self._try("cancel", {"trial": trial_id})
        return bool(reply and reply.get("cancelled"))

    def profile_now(self, trial_id: str) -> None:
        self._try("profile", {"trial": trial_id})

    def toggle_pause(self) -> bool:
        reply = self._try("pause", {"paused": not self.paused})
        if reply is not None:
            self.paused = bool(reply.get("paused"))
        return self.paused

    async def finalize(self, trial_id: str | None, device: str | None = None) -> Finalized:
        """The engine's finalize (it pauses watching and drains its lanes first); FinalizeError-like refusals raise."""
        from trialtui.engine.finalize import FinalizeError

        try:
            reply = await asyncio.to_thread(self._send, "finalize", {"trial": trial_id, "device": device}, None)
        except control.Refused as exc:
            raise FinalizeError(str(exc)) from exc
        return Finalized.from_wire(reply)


def attach(problem: Problem) -> RemoteEngine | None:
    """The engine another front end runs on this problem, if one answers on its control channel."""
    try:
        return RemoteEngine(problem)
    except (control.Unavailable, control.Refused):
        return None
