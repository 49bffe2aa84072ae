"""What a control-channel command does to the running engine (engine.control carries it): `trials
branch|note|rerun|finalize` from another terminal, and an attached viewer's info, pause, cancel and
profile. Each maps to the engine's own operation, so every view hears the same events as for the TUI's
keys."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

from trialtui.core import tree
from trialtui.core.bench_result import BenchResult
from trialtui.core.model import Trial
from trialtui.core.problem import Problem
from trialtui.core.report_card import Finalized
from trialtui.core.store import Store, StoreError, UnknownTrial
from trialtui.engine import events as ev
from trialtui.engine.finalize import FinalizeError
from trialtui.engine.finalize import finalize as finalize_trial
from trialtui.engine.lanes import Lanes


class RunningEngine(Protocol):
    """What a command uses of the engine (engine.loop.Engine)."""

    host: str
    where: str
    device: str
    paused: bool
    saves_while_paused: int
    problem: Problem
    store: Store
    lanes: Lanes

    def emit(self, event: ev.Event) -> None: ...

    @property
    def idle(self) -> bool: ...

    def toggle_pause(self) -> bool: ...

    def cancel(self, trial_id: str) -> bool: ...

    def profile_now(self, trial_id: str, lane: str | None = None) -> None: ...

    def branch(self, trial_id: str, *, from_outside: bool = False) -> Trial | None: ...

    def note(self, trial_id: str, text: str | None) -> Trial: ...

    def interrupted(self) -> list[Trial]: ...

    def rerun_many(self, trial_ids: list[str]) -> dict[str, str]: ...

    async def finalize(self, trial_id: str | None, device: str | None = None) -> Finalized: ...


async def answer(engine: RunningEngine, op: str, args: dict[str, Any]) -> dict[str, Any]:
    """One command's reply: its fields, or ok False and why. A bug of trialtui's own raises (the engine
    reports it)."""
    try:
        if op == "ping":
            reply: dict[str, Any] = {}
        elif op == "info":  # what an attached viewer shows of the engine it watches
            reply = {"pid": os.getpid(), "host": engine.host, "where": engine.where, "device": engine.device,
                     "lanes": [lane.name for lane in engine.lanes.lanes],
                     "paused": engine.paused, "saves_while_paused": engine.saves_while_paused,
                     "idle": engine.idle}
        elif op == "pause":
            if bool(args["paused"]) != engine.paused:
                engine.toggle_pause()
            reply = {"paused": engine.paused}
        elif op == "cancel":
            reply = {"cancelled": engine.cancel(str(args["trial"]))}
        elif op == "profile":
            engine.profile_now(str(args["trial"]))
            reply = {"trial": str(args["trial"])}
        elif op == "branch":
            recorded = engine.branch(str(args["trial"]), from_outside=True)
            reply = {"head": args["trial"], "file": engine.store.get(str(args["trial"])).file,
                     "recorded": recorded.id if recorded else None}
        elif op == "note":
            trial = engine.note(str(args["trial"]), args.get("text"))
            reply = {"trial": trial.id, "label": tree.label(trial)}
        elif op == "rerun":
            ids = [t.id for t in engine.interrupted()] if args.get("interrupted") else [str(t) for t in args["trials"]]
            for trial_id in ids:
                engine.store.get(trial_id)  # every id known before any is queued
            skipped = engine.rerun_many(ids)
            reply = {"queued": [t for t in ids if t not in skipped], "skipped": skipped}
        elif op == "finalize":
            reply = (await engine.finalize(args.get("trial"), args.get("device"))).to_wire()
        else:
            return {"ok": False, "error": f"unknown command {op!r}"}
    except UnknownTrial as exc:
        return {"ok": False, "error": exc.args[0]}
    except (StoreError, FinalizeError, OSError, KeyError, ValueError) as exc:
        return {"ok": False, "error": str(exc) if not isinstance(exc, KeyError) else f"missing {exc}"}
    return {"ok": True, "pid": os.getpid(), **reply}


@contextlib.asynccontextmanager
async def gpu_to_itself(engine: RunningEngine) -> AsyncIterator[None]:
    """The engine paused and its lanes idle for the body: an on-demand GPU job (the finalize's re-benchmark, a
    held-out check) never shares the GPU with a save's; resumed after, unless the user paused it meanwhile."""
    was_paused = engine.paused
    if not was_paused:
        engine.toggle_pause()
    try:
        while not engine.lanes.idle:
            await asyncio.sleep(0.2)
        yield
    finally:
        if not was_paused and engine.paused:
            engine.toggle_pause()


async def finalize_running(engine: RunningEngine, trial_id: str | None, device: str,
                           bench: Callable[..., BenchResult], profile: Callable[..., Any] | None = None) -> Finalized:
    """`trials finalize` in a running engine: watching pauses and the lanes drain first, as for the TUI's F."""
    store, config = engine.store, engine.problem.config
    trial = store.get(trial_id) if trial_id else tree.best(store.trials(), config.primary_baseline)
    if trial is None:
        raise FinalizeError(f"nothing to finalize: {tree.no_best_reason(store.trials(), config.primary_baseline)}")
    if tree.disqualified(trial):
        raise FinalizeError(f"{trial.id} is never finalized: {'; '.join(tree.disqualified(trial))}")
    async with gpu_to_itself(engine):
        engine.emit(ev.Notice(f"finalizing {trial.id}: re-benchmarking with no cached baseline"))
        done = await asyncio.to_thread(finalize_trial, engine.problem, store, trial, device=device, bench=bench,
                                      profile=profile)
    engine.emit(ev.Notice(f"finalized {trial.id}: wrote {done.out_dir}"))
    return done
