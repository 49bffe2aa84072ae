"""What a front end drives, as a type: the TUI and the agent session hold an `EngineFront`, which both the
engine of this process (engine/loop.Engine) and one attached to over its control socket
(engine/attach.RemoteEngine) are. tests/test_engine_front.py holds both to every member and call shape."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from trialtui.core.problem import Problem
    from trialtui.core.store import Store
    from trialtui.engine.attach import LiveStore
    from trialtui.engine.events import Event


class EngineFront(Protocol):
    """The engine as a front end sees it: its problem, its trials, its lanes, and the operations of a key."""

    problem: Problem
    store: Store | LiveStore  # the trials: the writer's own store, or a reader that follows the writer
    device: str  # "cuda" or "cpu": where its jobs run
    paused: bool  # saves are noted, not queued
    saves_while_paused: int  # how many saves the pause held back
    lanes: Any  # its lanes by name, each idle or busy (engine/lanes.Lanes, attach's remote view)

    def subscribe(self, fn: Callable[[Event], None]) -> None: ...
    def unsubscribe(self, fn: Callable[[Event], None]) -> None: ...
    async def run(self) -> None: ...  # until stopped: scan, watch, queue, judge
    def stop(self) -> None: ...
    def close(self) -> None: ...
    def toggle_pause(self) -> bool: ...  # paused now
    def branch(self, trial_id: str) -> Any: ...  # the editor's file made that trial's source again
    def rerun(self, trial_id: str) -> str | None: ...  # the new trial's id, or None where it cannot run
    def cancel(self, trial_id: str) -> bool: ...  # it was queued or running
    def profile_now(self, trial_id: str) -> None: ...
