"""The live loop for one problem: save → record → validate → queue → benchmark → profile → decide.

A kernel that raises, hangs or crashes its child becomes a trial with a state; the loop goes on.
Blocking work (child processes) runs in threads; the loop itself stays responsive.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from trialtui.core import tree
from trialtui.core.decide import decide
from trialtui.core.model import Decision, Trial, TrialState
from trialtui.core.verdicts import profile_policy
from trialtui.core.problem import REFERENCE_NAME, Problem, ProblemError, load_problem
from trialtui.core.store import Store
from trialtui.engine import events as ev
from trialtui.engine.bench import BENCH_MODULE, bench_file, child_env, detect_device
from trialtui.engine.jobs import ChildHandle, WarmChildren
from trialtui.engine.lanes import Job, Lane, Lanes
from trialtui.engine.profile import analyze, profile_file, trial_verdicts
from trialtui.engine.validate import validate_file
from trialtui.engine.watcher import saves
from trialtui.render import trial_summary

Subscriber = Callable[[ev.Event], None]


class Engine:
    """Owns one problem directory's store (the lock says so) and feeds its trials to the lanes."""

    def __init__(
        self,
        problem: Problem,
        *,
        device: str | None = None,
        lanes: Lanes | None = None,
        store: Store | None = None,
        validate_workers: int = 2,
        bench: Callable[..., dict[str, Any]] = bench_file,
        validate: Callable[..., dict[str, Any]] = validate_file,
    ):
        self.problem = problem
        self._bench, self._validate_file = bench, validate
        self.device = device or detect_device()
        self.store = store or Store.open(problem.root, writer=True)
        self.lanes = lanes or Lanes.detect(self.device)
        self.lanes.listeners.append(self._queue_changed)
        self.paused = False
        self.saves_while_paused = 0
        self._subscribers: list[Subscriber] = []
        self._pool = ThreadPoolExecutor(max_workers=validate_workers, thread_name_prefix="validate")
        self._compiles: dict[str, asyncio.Future] = {}
        self._handles: dict[str, ChildHandle] = {}
        self._pending: set[asyncio.Task] = set()
        self._stop = asyncio.Event()
        self._warm = WarmChildren() if bench is bench_file else None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reference_sha = self._reference_hash()

    # Subscribers

    def subscribe(self, fn: Subscriber) -> None:
        self._subscribers.append(fn)

    def emit(self, event: ev.Event) -> None:
        for fn in list(self._subscribers):
            fn(event)

    def _queue_changed(self) -> None:
        self.emit(ev.QueueChanged(
            lanes={lane.name: lane.running if lane.job is not None and lane.job.owner is self else None
                   for lane in self.lanes.lanes},
            queued=[job.trial_id for job in self.lanes.queue if job.owner is self],
        ))

    # Running

    async def run(self, *, once: bool = False, watch: bool = True) -> None:
        """Score what is new since last time, then follow saves until stopped (or, with once, until idle)."""
        self._loop = asyncio.get_running_loop()
        if self._warm is not None:  # each lane's next job finds torch and triton already imported
            for lane in self.lanes.lanes:
                self._warm.prime(BENCH_MODULE, {**child_env(self.device), **lane.env})
        self.lanes.start()
        watcher = None
        try:
            for trial_id in self.store.recovered:
                self.emit(ev.Notice(f"{trial_id} was interrupted by a previous session: r re-runs it", "warning"))
            for path in self.problem.candidates():
                await self.on_save(path)
            if once:
                await self.drain()
                return
            if watch:
                watcher = asyncio.create_task(self._watch())
            await self._stop.wait()
        finally:
            self._stop.set()
            if watcher is not None:
                watcher.cancel()
            for handle in self._handles.values():
                handle.cancel()
            await asyncio.gather(*([watcher] if watcher else []), return_exceptions=True)
            await self.lanes.stop()

    async def drain(self) -> None:
        """Wait until nothing of this problem is validating, queued or running."""
        while True:
            await asyncio.sleep(0.05)
            if not self._pending and not self.lanes.busy_for(self):
                return

    def stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        if self._warm is not None:
            self._warm.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.store.close()

    async def _watch(self) -> None:
        root = self.problem.root
        async for changed, deleted in saves(root, quiet_ms=self.problem.config.quiet_ms, stop=self._stop):
            if not root.exists():
                self.emit(ev.EngineError(f"the problem directory {root} was removed; nothing more to watch"))
                self._stop.set()
                return
            for path in sorted(deleted):
                self._file_gone(path)
            for path in sorted(changed):
                if path.name == REFERENCE_NAME and path.parent == root:
                    self._reference_edited()
                elif self.problem.is_candidate(path):
                    if self.paused:
                        self.saves_while_paused += 1
                        continue
                    await self.on_save(path)

    # Saves

    async def on_save(self, path: Path) -> Trial | None:
        """Apply the tree rule to the file's current content; a new trial starts validating at once."""
        try:
            data = path.read_bytes()
        except OSError:
            return None
        save, trial = self.store.record(path.name, data)
        if save.kind != tree.NEW:
            self.emit(ev.SaveIgnored(path.name, save.kind, save.head))
            return None
        self.emit(ev.TrialCreated(trial.id, trial.file, trial.parent, trial.strategy))
        self._track(self._validate(trial))
        return trial

    def _track(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    def _set_state(self, trial_id: str, state: TrialState, message: str = "", **fields: Any) -> Trial:
        trial = self.store.update(trial_id, state=state, **fields)
        self.emit(ev.StateChanged(trial_id, state.value, message))
        return trial

    async def _validate(self, trial: Trial) -> None:
        """Static checks decide invalid-or-queued at once; the compile runs on while the trial waits."""
        self._set_state(trial.id, TrialState.VALIDATING)
        source = self.store.snapshot_path(trial.sha256)
        loop = asyncio.get_running_loop()
        static = await loop.run_in_executor(
            None, lambda: self._validate_file(self.problem, source, compile=False, name=trial.file))
        if not static["ok"]:
            self._invalid(trial.id, static)
            return
        self._compiles[trial.id] = loop.run_in_executor(
            self._pool, lambda: self._validate_file(self.problem, source, compile=True, name=trial.file)
        )
        self._set_state(trial.id, TrialState.QUEUED, validation=static)
        self._enqueue(trial)

    def _invalid(self, trial_id: str, report: dict[str, Any]) -> None:
        first = report["errors"][0]
        where = f"line {first['line']}: " if first.get("line") else ""
        trial = self._set_state(trial_id, TrialState.INVALID, f"{where}{first['message']}", validation=report)
        self._decide(trial)

    def _enqueue(self, trial: Trial, lane: str | None = None) -> None:
        policy = self.problem.config.busy
        if policy in ("latest", "restart"):
            for job in self.lanes.remove(lambda j: j.owner is self and j.file == trial.file and j.trial_id != trial.id):
                self._set_state(job.trial_id, TrialState.SUPERSEDED, f"superseded by {trial.id}")
        if policy == "restart":
            for other in self.lanes.lanes:
                job = other.job
                if job is not None and job.owner is self and job.trial_id != trial.id and job.file == trial.file:
                    self.cancel(job.trial_id)
        self.lanes.submit(Job(trial.id, trial.file, self._job, lane, owner=self))

    # Engine operations (the TUI's keys call these)

    def cancel(self, trial_id: str) -> bool:
        """Cancel a queued or running trial; it stays in the tree as cancelled."""
        if self.lanes.remove(lambda j: j.owner is self and j.trial_id == trial_id):
            self._set_state(trial_id, TrialState.CANCELLED, "cancelled while queued")
            return True
        handle = self._handles.get(trial_id)
        if handle is not None:
            handle.cancel()
            return True
        return False

    def rerun(self, trial_id: str, lane: str | None = None) -> None:
        """Queue an existing trial again (interrupted, superseded, cancelled, or to re-measure)."""
        trial = self.store.get(trial_id)
        if trial.state_enum in (TrialState.QUEUED, TrialState.BENCHMARKING, TrialState.PROFILING):
            return
        if trial.state_enum == TrialState.INVALID:
            self.emit(ev.Notice(f"{trial_id} is invalid: fix the file and save again", "warning"))
            return
        self._set_state(trial_id, TrialState.QUEUED, "queued again")
        self._enqueue(self.store.get(trial_id), lane)

    def toggle_pause(self) -> bool:
        self.paused = not self.paused
        if not self.paused and self.saves_while_paused:
            self.saves_while_paused = 0
            for path in self.problem.candidates():
                self._track(self.on_save(path))
        return self.paused

    def branch(self, trial_id: str) -> Trial | None:
        """Write a trial's source into its file and make it the head; the watcher then sees no new trial."""
        recorded = self.store.branch(trial_id)
        if recorded is not None:
            self.emit(ev.TrialCreated(recorded.id, recorded.file, recorded.parent, recorded.strategy))
            self._track(self._validate(recorded))
        self.emit(ev.Notice(f"{self.store.get(trial_id).file} now holds {trial_id}'s source; the next save grows from it"))
        return recorded

    # The GPU job

    async def _job(self, lane: Lane) -> None:
        trial = self.store.get(lane.job.trial_id)
        compile_future = self._compiles.pop(trial.id, None)
        if compile_future is not None:
            report = await compile_future
            if report.get("invalid", not report["ok"]):  # a CPU run that raised or hung: the bench job decides
                self._invalid(trial.id, report)
                return
            trial = self.store.update(trial.id, validation=report)
        handle = ChildHandle()
        self._handles[trial.id] = handle
        log_rel = f"logs/{trial.id}.log"
        self._set_state(trial.id, TrialState.BENCHMARKING, f"on {lane.name}", log=log_rel)
        loop = asyncio.get_running_loop()

        def progress(event: dict[str, Any]) -> None:
            loop.call_soon_threadsafe(self.emit, ev.Progress(trial.id, event.get("phase", ""), event.get("i"),
                                                             event.get("n"), event.get("runs")))

        source = self.store.snapshot_path(trial.sha256)
        try:
            result = await asyncio.to_thread(
                self._bench, self.problem, source, device=self.device, log_path=self.store.state_dir / log_rel,
                handle=handle, on_progress=progress, env=lane.env, **({"warm": self._warm} if self._warm else {}),
            )
        finally:
            self._handles.pop(trial.id, None)
        await self._finish(trial, result, log_rel, lane)

    async def _finish(self, trial: Trial, result: dict[str, Any], log_rel: str, lane: Lane) -> None:
        others = [t for t in await asyncio.to_thread(self.store.trials) if t.id != trial.id]  # one read, off the loop
        before = tree.best(others, self.problem.config.primary_baseline)
        state = TrialState(result["state"]) if result["state"] in TrialState._value2member_map_ else TrialState.ERROR
        result.pop("log_tail", None)
        trial = self._set_state(trial.id, state, result.get("message", ""), result=result, log=log_rel)
        self.emit(ev.ResultReady(trial.id, state.value, trial_summary(trial, self.problem.config.primary_baseline)))
        after = tree.best([*others, trial], self.problem.config.primary_baseline)
        if after is not None and (before is None or after.id != before.id):
            base = self.problem.config.primary_baseline
            self.emit(ev.NewBest(after.id, after.speedup(base) or 0.0, before.id if before else None,
                                 before.speedup(base) if before else None))
        if trial.median_us is not None:  # a correct trial timed on a GPU: verdicts, maybe counters
            first = not any(t.median_us is not None for t in others)
            event = "first_correct" if first else ("new_best" if after is not None and after.id == trial.id else "correct")
            await self._profile(trial.id, lane, profile_policy(self.problem.config.profile_when, event))
        trial = self.store.get(trial.id)
        decision = await self._decide_async(trial)
        if (decision.action == "switch_approach" and trial.profile is None and trial.median_us is not None
                and profile_policy(self.problem.config.profile_when, "plateau")):
            await self._profile(trial.id, lane, True)  # a plateau: counters choose the new approach
            await self._decide_async(self.store.get(trial.id))

    async def _profile(self, trial_id: str, lane: Lane, with_counters: bool) -> None:
        """Verdicts for a correct GPU trial: from ncu counters when asked for, else analytic."""
        trial = self.store.get(trial_id)
        env = (trial.result or {}).get("env") or {}
        analysis = await asyncio.to_thread(analyze, self.problem, gpu=env.get("gpu"), driver=env.get("driver"))
        profile = None
        if with_counters:
            self._set_state(trial_id, TrialState.PROFILING, f"Nsight Compute on {lane.name}")
            handle = ChildHandle()
            self._handles[trial_id] = handle
            try:
                profile = await asyncio.to_thread(profile_file, self.problem, self.store.snapshot_path(trial.sha256),
                                                  name=trial_id, env=lane.env, handle=handle)
            finally:
                self._handles.pop(trial_id, None)
            profile = {k: v for k, v in profile.items() if k not in ("log_tail", "command")}
        verdicts, sol, roof = trial_verdicts(self.problem, trial, analysis, profile)
        fields: dict[str, Any] = {"verdicts": verdicts, "sol": sol}
        if roof is not None:
            fields["result"] = {**(trial.result or {}), "roofline": roof}
        if profile is not None:
            fields["profile"] = profile
        if self.store.get(trial_id).state != TrialState.CORRECT.value:
            fields["state"] = TrialState.CORRECT
        self.store.update(trial_id, **fields)
        if "state" in fields:
            self.emit(ev.StateChanged(trial_id, TrialState.CORRECT.value, f"{len(verdicts)} verdict(s)"))

    def profile_now(self, trial_id: str) -> None:
        """Queue an Nsight Compute profile of a correct GPU trial on a lane (the `p` key)."""
        trial = self.store.get(trial_id)
        if trial.median_us is None:
            self.emit(ev.Notice(f"{trial_id} has no GPU timing to profile (correct trials on a GPU only)", "warning"))
            return

        async def run(lane: Lane) -> None:
            await self._profile(trial_id, lane, True)
            await self._decide_async(self.store.get(trial_id))

        self.lanes.submit(Job(trial_id, trial.file, run, owner=self))

    def _decision(self, trial: Trial) -> Decision:
        return decide(self.store.trials(), trial, trial.verdicts, self.problem.config,
                      source=self.store.read_source(trial))

    def _record_decision(self, trial: Trial, decision: Decision) -> Decision:
        self.store.update(trial.id, decision=decision.to_dict())
        self.emit(ev.DecisionMade(trial.id, decision.action, decision.reason, decision.key))
        return decision

    def _decide(self, trial: Trial) -> Decision:
        return self._record_decision(trial, self._decision(trial))

    async def _decide_async(self, trial: Trial) -> Decision:
        """Off the event loop: at thousands of trials reading the tree takes long enough to stall a UI."""
        return self._record_decision(trial, await asyncio.to_thread(self._decision, trial))

    # Things that change under the engine

    def _file_gone(self, path: Path) -> None:
        if not self.problem.is_candidate(path):
            return
        queued = self.lanes.remove(lambda j: j.owner is self and j.file == path.name)
        for job in queued:
            self._set_state(job.trial_id, TrialState.CANCELLED, f"{path.name} was deleted while queued")
        self.emit(ev.Notice(f"{path.name} was deleted or renamed; its trials stay in the tree", "warning"))

    def _reference_hash(self) -> str | None:
        from trialtui.core.baselines import reference_hash

        try:
            return reference_hash(self.problem.reference)
        except OSError:
            return None

    def _reference_edited(self) -> None:
        """A new reference invalidates baselines (their key has its hash) and every measured trial."""
        sha = self._reference_hash()
        if sha == self._reference_sha:
            return
        self._reference_sha = sha
        try:
            self.problem = load_problem(self.problem.root)
        except ProblemError as exc:
            self.emit(ev.EngineError(f"reference.py no longer loads: {exc}"))
            return
        stale = [t.id for t in self.store.trials() if t.result is not None and not t.stale]
        for trial_id in stale:
            self.store.update(trial_id, stale=True)
        self.emit(ev.Notice(f"reference.py changed: baselines will be re-measured; {len(stale)} trial(s) marked stale", "warning"))

