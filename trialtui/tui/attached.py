"""Whose engine a window watches: a window attached to another process's engine must say so, since its `q`
leaves that engine running (engine/attach.py) where a window's own engine stops with it."""

from __future__ import annotations

from trialtui.core.problem import Problem
from trialtui.core.store import lock_holder
from trialtui.engine.attach import RemoteEngine
from trialtui.engine.front import EngineFront


def attached_to(engine: EngineFront, problem: Problem) -> str:
    """"trialtui mcp's engine (pid 4242)" for an engine another process runs; "" for this process's own.

    The pid is the engine's own word, else the one its store's lock file holds."""
    if not isinstance(engine, RemoteEngine):
        return ""
    holder = lock_holder(problem.root)
    pid = engine.pid or (holder.pid if holder else None)
    return f"{engine.host}'s engine ({f'pid {pid}' if pid else 'another process'})"
