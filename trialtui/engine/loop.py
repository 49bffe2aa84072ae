"""The live loop for one problem: save → record → validate → queue → benchmark → profile → decide.

A kernel that raises, hangs or crashes its child becomes a trial with a state; the loop goes on.
So does a bug of trialtui's own: every lane job and engine task has a top-level handler that turns an
exception into an `engine_error` event and (if it was in flight) an errored trial, never a silent end.
Blocking work (child processes) runs in threads; the loop itself stays responsive."""

from __future__ import annotations

import asyncio
import sys
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from trialtui.core import tree
from trialtui.core.analysis_result import AnalysisResult
from trialtui.core.bench_result import BenchResult
from trialtui.core.decide import decide
from trialtui.core.executor import Executor, parse_target
from trialtui.core.languages import DEFAULT, get_language
from trialtui.core.model import Decision, Trial, TrialState
from trialtui.core.problem import REFERENCE_NAME, Problem, ProblemError
from trialtui.core.problem_dir import load_problem
from trialtui.core.report_card import Finalized
from trialtui.core.store import Store
from trialtui.core.validation_report import ValidationReport
from trialtui.engine import control, stale
from trialtui.engine import events as ev
from trialtui.engine.background import in_background
from trialtui.engine.bench import BENCH_MODULE, bench_file, child_env
from trialtui.engine.control_ops import answer, finalize_running
from trialtui.engine.executors.local import LocalExecutor
from trialtui.engine.gpu_lock import GpuLock
from trialtui.engine.interrupted import newest_first, sort_out
from trialtui.engine.jobs import ChildHandle, WarmChildren
from trialtui.engine.lanes import Job, Lane, Lanes
from trialtui.engine.scan import WATCH_START_S, changed_since, reference_sha, scan
from trialtui.engine.shared import Shared
from trialtui.engine.trial_jobs import TrialJobs
from trialtui.engine.validate import compile_env, finding_message
from trialtui.engine.watcher import saves, until_stopped

Subscriber = Callable[[ev.Event], None]


class Engine(TrialJobs):
    """Owns one problem directory's store (the lock says so) and feeds its trials to the lanes."""

    def __init__(
        self,
        problem: Problem,
        *,
        device: str | None = None,
        lanes: Lanes | None = None,
        store: Store | None = None,
        validate_workers: int = 2,
        bench: Callable[..., BenchResult] | None = None,
        validate: Callable[..., dict[str, Any]] | None = None,
        analyze: Callable[..., AnalysisResult] | None = None,
        executor: Executor | None = None,
        shared: Shared | None = None,
    ):
        """`executor` (opened) says where jobs run and gives the lanes; without it, this machine's.
        Engines of one watch share `shared`: one set of warm processes and one compile pool for all."""
        self.problem = problem
        self._owns_executor = executor is None
        self.executor = executor or LocalExecutor(parse_target("local"), problem.config.executor, device)
        if self._owns_executor:
            self.executor.open()
        self._bench, self._validate_file = bench or self.executor.bench, validate or self.executor.validate
        self.device = device or self.executor.device
        self.where = self.executor.describe()  # the status bar names a remote host
        self.store = store or Store.open(problem.root, writer=True)
        self.lanes = lanes or Lanes([Lane(slot.name, slot.gpu) for slot in self.executor.slots])
        self.lanes.listeners.append(self._queue_changed)
        if isinstance(self.executor, LocalExecutor) and self.device == "cuda":
            for lane in self.lanes.lanes:  # this machine's GPUs: every trialtui process takes their host-wide lanes
                if lane.gpu is not None and lane.host is None:
                    lane.host = GpuLock(lane.gpu, lane.name)
        self.paused = False
        self.saves_while_paused = 0
        self._subscribers: list[Subscriber] = []
        self._shared = shared
        self._pool = shared.pool if shared else ThreadPoolExecutor(max_workers=validate_workers, thread_name_prefix="validate")
        self._compiles: dict[str, asyncio.Future] = {}
        self._handles: dict[str, ChildHandle] = {}
        self._stages: dict[str, ChildHandle] = {}  # each trial's validation and compile stage, until it reports
        self._pending: set[asyncio.Task] = set()
        self._stop = asyncio.Event()
        # warm job processes for the real job functions (the demo's replay wraps them); a test's fake takes none
        warm = getattr(self._bench, "uses_warm_children", self._bench is bench_file)
        self._warm = (shared.warm if shared else WarmChildren()) if warm else None
        self._analyzer = analyze  # a test's fake, else the executor's
        self._analysis: asyncio.Future | None = None  # the reference's analysis, started with the engine on a GPU
        self._retried: set[str] = set()  # trials a lost connection interrupted, tried once more
        self._loop: asyncio.AbstractEventLoop | None = None
        self._control: control.Server | None = None
        self._reference_sha = reference_sha(self.problem)
        stale.mark(self.store, self._reference_sha, edited=False)  # an edit while no engine watched
        self._watching = False  # saves are expected: idle lanes make the next job ready (warm checkers)
        self.host = "trialtui"  # the front end that runs this engine, as attached viewers are told

    # Subscribers

    def subscribe(self, fn: Subscriber) -> None:
        self._subscribers.append(fn)

    def unsubscribe(self, fn: Subscriber) -> None:
        if fn in self._subscribers:
            self._subscribers.remove(fn)

    def emit(self, event: ev.Event) -> None:
        for fn in list(self._subscribers):
            try:
                fn(event)
            except Exception:  # noqa: BLE001 - one broken subscriber must not stop the loop or the others
                traceback.print_exc(file=sys.stderr)

    def _queue_changed(self) -> None:
        self.emit(ev.QueueChanged(
            lanes={lane.name: (lane.running or None) if lane.job is not None and lane.job.owner is self else None
                   for lane in self.lanes.lanes},
            queued=[job.trial_id for job in self.lanes.queue if job.owner is self and job.trial_id],
        ))

    # Running

    async def run(self, *, once: bool = False, watch: bool = True, only: list[str] | None = None) -> None:
        """Score what is new since last time, then follow saves until stopped (or, with once, until idle).

        With `only`, re-run just those trials and return once they are done (`trialtui trials rerun`).
        """
        self._loop = asyncio.get_running_loop()
        if self._warm is not None:  # each lane's next job, and the next compile stage, find their imports done
            for lane in self.lanes.lanes:  # two checkers wait on a GPU lane: short jobs back to back never wait for one
                self._warm.prime(BENCH_MODULE, {**child_env(self.device), **lane.env}, depth=2 if lane.gpu is not None else 1)
            triton = get_language(DEFAULT)
            self._warm.prime(triton.compile_job, compile_env(triton))
        self.lanes.start()
        await self._open_control()
        watcher = None
        try:
            if self.store.recovery:
                self.emit(ev.Notice(f"the store was repaired: {self.store.recovery}", "warning"))
            if only is not None:
                self.rerun_many(only)
                await self.drain()
                return
            scanned = scan(self.problem)
            for path in scanned:
                await self.on_save(path)
            self._track(self._recover_interrupted())
            if once:
                await self.drain()
                return
            if watch:
                self._watching = True
                for lane in self.lanes.lanes:
                    self._prepare_soon(lane)
                watcher = asyncio.create_task(self._watch())
                self._track(self._catch_up(scanned))
            await (until_stopped(self._stop, self.problem.root, self._root_removed) if watch else self._stop.wait())
        finally:
            self._stop.set()
            if watcher is not None:
                watcher.cancel()
            for handle in [*self._handles.values(), *self._stages.values()]:
                handle.cancel()
            await asyncio.gather(*([watcher] if watcher else []), return_exceptions=True)
            if self._control is not None:
                await self._control.stop()
            await self.lanes.stop()

    async def _open_control(self) -> None:
        self._control = control.Server(self.store.state_dir, self.command, subscribe=self.subscribe,
                                       unsubscribe=self.unsubscribe)
        try:
            await self._control.start()
        except OSError as exc:
            self._control = None
            self.emit(ev.Notice(f"no control channel ({exc}): trials branch/note/rerun/finalize from another "
                                "terminal will be refused while this runs", "warning"))

    async def drain(self) -> None:
        """Wait until nothing of this problem is validating, queued or running."""
        while True:
            await asyncio.sleep(0.05)
            if not self._pending and not self.lanes.busy_for(self):
                return

    @property
    def idle(self) -> bool:
        """No lane has a job, and nothing of this engine's is validating or starting."""
        return self.lanes.idle and not self._pending

    def stop(self) -> None:
        self._stop.set()

    def close(self) -> None:
        if self._shared is None:  # shared ones are closed by their owner, once all engines are done
            if self._warm is not None:
                self._warm.close()
            self._pool.shutdown(wait=False, cancel_futures=True)
        if self._owns_executor:
            self.executor.close()
        self.store.close()

    async def _catch_up(self, scanned: dict[Path, str | None]) -> None:
        """Saves made after the first scan but before the watcher watched (watchfiles starts on its first
        poll): one more look once it runs, at files whose bytes differ from what the scan read. A window
        that takes over from an engine that went away lost a save this way."""
        await asyncio.sleep(WATCH_START_S)
        for path in changed_since(self.problem, scanned):
            await self.on_save(path)

    async def _watch(self) -> None:
        root = self.problem.root
        try:
            async for changed, deleted in saves(root, quiet_ms=self.problem.config.quiet_ms, stop=self._stop):
                if not root.exists():
                    return self._root_removed()
                for path in sorted(deleted):
                    self._guarded(self._file_gone, path)
                for path in sorted(changed):
                    if path.name == REFERENCE_NAME and path.parent == root:
                        self._guarded(self._reference_edited)
                    elif self.problem.is_candidate(path):
                        if self.paused:
                            self.saves_while_paused += 1
                            continue
                        await self.on_save(path)
        except Exception as exc:  # noqa: BLE001 - the watcher itself failed: say so, the lanes go on
            if not root.exists():  # removed before watchfiles' first poll, which then cannot watch it
                return self._root_removed()
            self._fail(None, exc, "watching stopped")

    def _root_removed(self) -> None:
        self.emit(ev.EngineError(f"the problem directory {self.problem.root} was removed; nothing more to watch"))
        self._stop.set()

    def _guarded(self, fn: Callable[..., Any], *args: Any) -> None:
        try:
            fn(*args)
        except Exception as exc:  # noqa: BLE001
            self._fail(None, exc)

    def _fail(self, trial_id: str | None, exc: BaseException, what: str = "") -> None:
        """The top-level handler: an engine_error event, and an in-flight trial errored rather than stuck."""
        where = f"{trial_id}: " if trial_id else ""
        message = f"{where}{what + ': ' if what else ''}{type(exc).__name__}: {exc}"
        self.emit(ev.EngineError(message))
        if trial_id is None:
            return
        try:
            if not self.store.get(trial_id).state_enum.is_final:
                self._set_state(trial_id, TrialState.ERROR, f"trialtui failed: {type(exc).__name__}: {exc}")
        except Exception as again:  # noqa: BLE001 - the store itself is failing: the event is all we can give
            self.emit(ev.EngineError(f"{trial_id} could not be marked errored: {type(again).__name__}: {again}"))

    # Saves

    async def on_save(self, path: Path) -> Trial | None:
        """Apply the tree rule to the file's current content; a new trial starts validating at once."""
        try:
            data = path.read_bytes()
        except OSError:
            return None
        try:
            save, trial = self.store.record(path.name, data)
        except Exception as exc:  # noqa: BLE001 - e.g. a full disk: this save is not recorded, the next may be
            self._fail(None, exc, f"the save of {path.name} was not recorded")
            return None
        if save.kind != tree.NEW:
            self.emit(ev.SaveIgnored(path.name, save.kind, save.head))
            return None
        self.emit(ev.TrialCreated(trial.id, trial.file, trial.parent, trial.strategy))
        self._track(self._validate(trial), trial.id)
        return trial

    def _track(self, coro, trial_id: str | None = None) -> None:
        task = asyncio.ensure_future(self._handled(coro, trial_id))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _handled(self, coro, trial_id: str | None) -> None:
        try:
            await coro
        except Exception as exc:  # noqa: BLE001 - see _fail
            self._fail(trial_id, exc)

    def _set_state(self, trial_id: str, state: TrialState, message: str = "", **fields: Any) -> Trial:
        trial = self.store.update(trial_id, state=state, **fields)
        self.emit(ev.StateChanged(trial_id, state.value, message))
        return trial

    async def _validate(self, trial: Trial, *, front: bool | None = None) -> None:
        """Static checks decide invalid-or-queued at once; the compile runs on while the trial waits."""
        self._set_state(trial.id, TrialState.VALIDATING)
        stage = self._stages[trial.id] = ChildHandle()  # `cancel` stops the trial in this stage too
        source = self.store.snapshot_path(trial.sha256)
        loop = asyncio.get_running_loop()
        static = await loop.run_in_executor(
            None, lambda: self._validate_file(self.problem, source, compile=False, name=trial.file))
        if stage.cancelled or not static.ok:
            self._stages.pop(trial.id, None)
            if stage.cancelled:
                self._set_state(trial.id, TrialState.CANCELLED, "cancelled while validating")
            else:
                self._invalid(trial.id, static)
            return
        warm = {"warm": self._warm} if self._warm is not None else {}
        self._compiles[trial.id] = loop.run_in_executor(
            self._pool, lambda: self._validate_file(self.problem, source, compile=True, name=trial.file,
                                                    handle=stage, **warm))
        self._set_state(trial.id, TrialState.QUEUED, validation=static)
        self._enqueue(trial, front=front)

    def _invalid(self, trial_id: str, report: ValidationReport) -> None:
        trial = self._set_state(trial_id, TrialState.INVALID, finding_message(report.errors[0]), validation=report)
        self._decide(trial)

    def _enqueue(self, trial: Trial, lane: str | None = None, *, front: bool | None = None) -> None:
        """Queue a trial's GPU job; under `latest` it goes first and older queued saves of its file are superseded."""
        policy = self.problem.config.busy
        if policy in ("latest", "restart"):
            for job in self.lanes.remove(lambda j: j.owner is self and j.file == trial.file and j.trial_id != trial.id):
                self._set_state(job.trial_id, TrialState.SUPERSEDED, f"superseded by {trial.id}")
        if policy == "restart":
            for other in self.lanes.lanes:
                job = other.job
                if job is not None and job.owner is self and job.trial_id != trial.id and job.file == trial.file:
                    self.cancel(job.trial_id)
        self.lanes.submit(Job(trial.id, trial.file, self._job, lane, owner=self, on_error=self._job_failed),
                          front=policy == "latest" if front is None else front)
        if self._analysis is None and self.device == "cuda" and self._loop is not None:
            self._analysis = in_background(self._loop, self._analyze, self.problem)

    def _job_failed(self, job: Job, exc: Exception) -> None:
        self._fail(job.trial_id, exc)

    # Engine operations (the TUI's keys call these)

    def cancel(self, trial_id: str) -> bool:
        """Cancel a trial in any stage (validating, compiling, queued, running); it stays in the tree as cancelled."""
        stage = self._stages.get(trial_id)
        if stage is not None:  # its compile job (the CPU preview) stops too, wherever the trial waits
            stage.cancel()
        if self.lanes.remove(lambda j: j.owner is self and j.trial_id == trial_id):
            self._stages.pop(trial_id, None)
            self._compiles.pop(trial_id, None)
            self._set_state(trial_id, TrialState.CANCELLED, "cancelled while queued")
            return True
        handle = self._handles.get(trial_id)
        if handle is not None:
            handle.cancel()
        return handle is not None or stage is not None  # a job waiting on its compile stage ends when it reports

    def rerun(self, trial_id: str, lane: str | None = None, *, front: bool | None = None) -> str | None:
        """Queue an existing trial again (interrupted, superseded, cancelled, or to re-measure).

        Returns why it was not queued, or None. One that never passed validation validates first.
        """
        trial = self.store.get(trial_id)
        if not trial.state_enum.is_final:
            return f"{trial_id} is {trial.state}: it already has a job"
        if trial.state_enum == TrialState.INVALID:
            self.emit(ev.Notice(f"{trial_id} is invalid: fix the file and save again", "warning"))
            return f"{trial_id} is invalid: fix the file and save again"
        if trial.validation is None or not trial.validation.ok:
            self._track(self._validate(trial), trial.id)
            return None
        self._set_state(trial_id, TrialState.QUEUED, "queued again", stale=False)  # measured anew
        self._enqueue(self.store.get(trial_id), lane, front=front)
        return None

    def rerun_many(self, trial_ids: list[str]) -> dict[str, str]:
        """Queue these trials again in this order; returns {id: why not} for those that were not."""
        skipped = {}
        for trial_id in trial_ids:
            why = self.rerun(trial_id, front=False)
            if why:
                skipped[trial_id] = why
        return skipped

    def interrupted(self) -> list[Trial]:
        """Interrupted trials, newest save first."""
        return newest_first(self.store.trials())

    async def _recover_interrupted(self) -> None:
        """On start: interrupted trials run again or are superseded (engine.interrupted says which)."""
        found = self.interrupted()
        if not found:
            return
        if not self.problem.config.rerun_interrupted:
            ids = ", ".join(t.id for t in found)
            self.emit(ev.Notice(f"interrupted by a previous session: {ids}; `trialtui trials rerun --interrupted` "
                                "re-runs them", "warning"))
            return
        again, superseded = sort_out(found, self.problem.root, self.problem.config.busy)
        for trial in superseded:
            self._set_state(trial.id, TrialState.SUPERSEDED, f"interrupted, and {trial.file} has changed since")
        self.emit(ev.Notice(f"{len(again)} trial(s) interrupted by a previous session run again, "
                            "newest save first", "warning"))
        for trial in again:
            if trial.validation is not None and trial.validation.ok:
                self.rerun(trial.id, front=False)
            else:
                await self._validate(trial, front=False)

    def toggle_pause(self) -> bool:
        self.paused = not self.paused
        if not self.paused and self.saves_while_paused:
            self.saves_while_paused = 0
            for path in self.problem.candidates():
                self._track(self.on_save(path))
        return self.paused

    def branch(self, trial_id: str, *, from_outside: bool = False) -> Trial | None:
        """Write a trial's source into its file and make it the head; the watcher then sees no new trial.

        A branch from outside the app (the CLI, through the control channel) is announced as a
        checkout: that is the event on which the TUI moves its head marks itself.
        """
        recorded = self.store.branch(trial_id)
        if recorded is not None:
            self.emit(ev.TrialCreated(recorded.id, recorded.file, recorded.parent, recorded.strategy))
            self._track(self._validate(recorded), recorded.id)
        file = self.store.get(trial_id).file
        if from_outside:
            self.emit(ev.SaveIgnored(file, tree.CHECKOUT, trial_id))
        else:
            self.emit(ev.Notice(f"{file} now holds {trial_id}'s source; the next save grows from it"))
        return recorded

    def note(self, trial_id: str, text: str | None) -> Trial:
        """Label a trial (None clears it); announced as a state change so every view reloads the trial."""
        trial = self.store.update(trial_id, note=text or None)
        self.emit(ev.StateChanged(trial.id, trial.state, f"noted: {tree.label(trial) or '(no label)'}"))
        return trial

    async def finalize(self, trial_id: str | None, device: str | None = None) -> Finalized:
        """`trials finalize` for a running engine: watching pauses and the lanes drain first, as for the TUI's F."""
        return await finalize_running(self, trial_id, device or self.device, self._bench, self.executor.profile)

    async def command(self, op: str, args: dict[str, Any]) -> dict[str, Any]:
        """One control-channel command (engine.control_ops): the reply's fields, or ok False and why."""
        try:
            return await answer(self, op, args)
        except Exception as exc:  # noqa: BLE001 - a bug here is reported, and the engine goes on
            self._fail(None, exc, f"the {op} command failed")
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}

    def _decision(self, trial: Trial) -> Decision:
        return decide(self.store.trials(), trial, trial.verdicts, self.problem.config, source=self.store.read_source(trial))

    def _record_decision(self, trial: Trial, decision: Decision) -> Decision:
        self.store.update(trial.id, decision=decision)
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

    def _reference_edited(self) -> None:
        """A new reference invalidates baselines (their key has its hash) and every measured trial."""
        sha = reference_sha(self.problem)
        if sha == self._reference_sha:
            return
        self._reference_sha = sha
        self._analysis = None  # the old reference's
        try:
            self.problem = load_problem(self.problem.root)
        except ProblemError as exc:
            self.emit(ev.EngineError(f"reference.py no longer loads: {exc}"))
            return
        became = stale.mark(self.store, sha, edited=True)
        self.emit(ev.Notice(f"reference.py changed: baselines will be re-measured; {became} trial(s) marked stale", "warning"))
        self.rerun_many([t.id for t in self.store.trials() if t.result and t.result.reference_failed])  # not judged yet
        for lane in self.lanes.lanes:  # what the lanes made ready, or are making ready, was the old reference's
            if lane.job is None or (lane.job.owner is self and not lane.job.trial_id):
                self._prepare_soon(lane)

