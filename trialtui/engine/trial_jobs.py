"""What happens to a queued trial on its lane: the compile stage beside it, the bench job, the result,
the profile, the decision, and the lane's next job made ready.

A mixin of `Engine` (engine/loop.py), kept apart so loop.py holds saves, operations and the watcher.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any, Awaitable, Callable

from trialtui.core import kernel_split, provenance, tree
from trialtui.core.analysis_result import AnalysisResult
from trialtui.core.bench_result import BenchResult
from trialtui.core.executor import Executor, ran_on
from trialtui.core.model import Decision, Trial, TrialState
from trialtui.core.problem import Problem
from trialtui.core.profilers import source_of
from trialtui.core.store import Store
from trialtui.core.text import compile_summary, trial_summary
from trialtui.core.verdicts import profile_policy
from trialtui.engine import events as ev
from trialtui.engine.bench import BENCH_MODULE, child_env, problem_spec
from trialtui.engine.executors.local import LocalExecutor
from trialtui.engine.gpu_lock import Wait
from trialtui.engine.jobs import ChildHandle, WarmChildren
from trialtui.engine.lanes import Job, Lane, Lanes
from trialtui.engine.profile import trial_verdicts


class TrialJobs:
    """`Engine`'s lane jobs; they use its store, problem, lanes, warm children and events, named below (a test
    holds every `self.` these methods read to this list or their own names, and the list to what Engine sets)."""

    problem: Problem
    store: Store
    executor: Executor
    lanes: Lanes
    device: str  # "cuda" or "cpu": where the bench jobs run
    _bench: Callable[..., BenchResult]  # the executor's bench, or a test's or the demo's
    _analyzer: Callable[..., AnalysisResult] | None  # a test's fake analysis, else None: the executor's
    _analysis: asyncio.Future | None  # the reference's analysis, started with the engine on a GPU
    _compiles: dict[str, asyncio.Future]  # each trial's compile stage, until its GPU job takes it
    _handles: dict[str, ChildHandle]  # each trial's running job, to cancel
    _stages: dict[str, ChildHandle]  # each trial's validation and compile stage, until it reports
    _retried: set[str]  # trials a lost connection interrupted, tried once more
    _stop: asyncio.Event
    _warm: WarmChildren | None  # warm job processes, where the job functions are the real ones
    _watching: bool  # saves are expected: idle lanes make the next job ready
    # Engine's operations these jobs call (engine/loop.py)
    emit: Callable[[ev.Event], None]
    rerun: Callable[..., str | None]
    _set_state: Callable[..., Trial]
    _fail: Callable[..., None]
    _invalid: Callable[..., None]
    _job_failed: Callable[[Job, Exception], None]
    _track: Callable[..., None]
    _decide_async: Callable[[Trial], Awaitable[Decision]]

    async def _job(self, lane: Lane) -> None:
        """The GPU job; a compile stage still running goes on beside it on a GPU lane, and its failure cancels it.

        On the cpu lane the two would share the same cores (both run the interpreter), so there the
        job waits for the compile as before: overlapped on the 2-core machine, save → final went from
        1.25–1.39 s to 1.41–1.50 s (benches/loop_latency.py --device cpu).
        """
        trial = self.store.get(lane.job.trial_id)
        compile_future = self._compiles.pop(trial.id, None)
        if compile_future is not None and (compile_future.done() or lane.gpu is None):
            if not compile_future.done():  # what the lane waits for, as the tree and the status bar say
                self._set_state(trial.id, TrialState.VALIDATING, "compiling and checking on the CPU first")
            trial = await self._compiled(trial, compile_future)
            if trial is None:
                return
            compile_future = None
            if lane.gpu is None and await self._hung_here(trial):
                self._track(self._conclude(trial.id, lane), trial.id)
                return
        handle = ChildHandle()
        self._handles[trial.id] = handle
        try:
            async with lane.held(self._waiting(trial.id), lambda: handle.cancelled) as took:
                if not took:
                    self._set_state(trial.id, TrialState.CANCELLED, f"cancelled while waiting for {lane.name}")
                    return
                if not await self._bench_on(lane, trial, handle, compile_future):
                    return
        finally:
            self._handles.pop(trial.id, None)
        self._track(self._conclude(trial.id, lane), trial.id)  # analysis, verdicts, decision: off the lane
        self._prepare_soon(lane)

    async def _hung_here(self, trial: Trial) -> bool:
        """A candidate whose CPU run hung in validation is `timeout` at once on a CPU lane, whose benchmark would
        run the same interpreter, a run per seed and case, to its own limit (a save that loops forever held the
        queue 3 minutes). Not where that limit leaves room for the runs the validation's could not finish."""
        cfg = self.problem.config
        if cfg.validate_timeout_s * cfg.seeds * max(1, len(self.problem.test_cases)) < cfg.bench_timeout_s:
            return False
        hung = next((f for f in (trial.validation.errors if trial.validation else []) if f.get("code") == "timeout"
                     and f.get("runtime")), None)
        if hung is None:
            return False
        message = (f"validation: timed out after {cfg.validate_timeout_s:g} s (validate_timeout_s in trialtui.toml); "
                   f"{hung['message']} — not benchmarked: on this CPU the benchmark runs the same interpreter")
        log_rel = f"logs/{trial.id}.log"
        await asyncio.to_thread((self.store.state_dir / log_rel).write_text, f"trialtui: timeout: {message}\n")
        await self._finish(trial, BenchResult.failure("timeout", message, env={"device": "cpu"}), log_rel)
        return True

    def _waiting(self, trial_id: str) -> Wait:
        """What a queued trial says while another process holds its GPU (told from the waiting thread, about
        once a second): its state's message, and once a notice, which the TUI shows."""
        loop = asyncio.get_running_loop()
        told: list[str] = []

        def said(text: str) -> None:
            loop.call_soon_threadsafe(self.emit, ev.StateChanged(trial_id, TrialState.QUEUED.value, text))
            if not told:
                told.append(text)
                loop.call_soon_threadsafe(self.emit, ev.Notice(f"{trial_id} is {text}", "warning"))
        return said

    async def _bench_on(self, lane: Lane, trial: Trial, handle: ChildHandle, compile_future: asyncio.Future | None) -> bool:
        """The bench job, and counters where the policy wants them, with the GPU held; False when the trial
        ended otherwise (invalid, retried)."""
        log_rel = f"logs/{trial.id}.log"
        after_warm_up = "; its checker finishes preparing first" if lane.preparing else ""
        lane.preparing = False
        self._set_state(trial.id, TrialState.BENCHMARKING, f"on {lane.name}{after_warm_up}", log=log_rel)
        loop = asyncio.get_running_loop()

        def progress(event: dict[str, Any]) -> None:
            loop.call_soon_threadsafe(self._progress, trial.id, event)

        source = self.store.snapshot_path(trial.sha256)
        bench = asyncio.ensure_future(asyncio.to_thread(
            self._bench, self.problem, source, device=self.device, log_path=self.store.state_dir / log_rel,
            handle=handle, on_progress=progress, env=lane.env, name=trial.file, **({"warm": self._warm} if self._warm else {}),
        ))
        try:
            compiled = await self._compiled(trial, compile_future, handle) if compile_future is not None else trial
        except BaseException:
            handle.cancel()  # the compile stage itself failed: its job must not hold the GPU past the lane
            await asyncio.gather(bench, return_exceptions=True)
            raise
        if compiled is None:
            await asyncio.gather(bench, return_exceptions=True)  # the cancelled job sweeps before the lane frees
            return False
        result: BenchResult = await bench
        if result.state == TrialState.INTERRUPTED.value and trial.id not in self._retried:
            self._retried.add(trial.id)  # a connection lost mid-job (a remote executor): said so, tried once more
            self._set_state(trial.id, TrialState.INTERRUPTED, f"{result.message or ''}; trying once more")
            self.rerun(trial.id, front=True)
            return False
        event = await self._finish(trial, result, log_rel)
        if event is not None and profile_policy(self.problem.config.profile_when, event):
            await self._counters(trial.id, lane)  # a correct trial timed on a GPU, where the policy asks
        return True

    def _prepare_soon(self, lane: Lane) -> None:
        """While watching and nothing of ours waits: the lane's warm checker makes the next job's problem part ready.

        It is a lane job of its own, so that its GPU work (CUDA contexts, CUPTI, the reference's outputs)
        never overlaps another job's. It yields to a save: once a job is queued for the lane it stops
        waiting, and the job takes that very checker, which finishes preparing and then runs it (the H200
        kept saves 1.8-3.3 s in `queued` behind a prepare with nothing else running), and the GPU's
        host-wide hold with it, so no other process starts on the GPU while that checker still prepares.
        """
        if self._warm is None or not self._watching or any(j.owner is self for j in self.lanes.queue):
            return
        env = {**child_env(self.device), **lane.env}

        def wanted() -> bool:
            return self.lanes.wanted(lane)

        def given_up() -> bool:  # a job waits for the lane, or the engine stops: preparing is optional
            return wanted() or self._stop.is_set()

        def let_others_first() -> bool:  # another process waits for this GPU: preparing is optional, its job is not
            return given_up() or (lane.host is not None and lane.host.others_waiting())

        async def run(_: Lane) -> None:
            if let_others_first():
                return
            spec = problem_spec(self.problem, self.device)
            async with lane.held(give_up=let_others_first) as took:
                if took:
                    done = await asyncio.to_thread(self._warm.prepare, BENCH_MODULE, env, spec,
                                                   self.problem.config.bench_timeout_s, given_up)
                    lane.preparing = lane.carry = done is None and wanted()  # the job takes this checker, and this hold

        self.lanes.submit(Job("", "", run, lane.name, owner=self, on_error=lambda job, exc: self._fail(None, exc, "preparing")))

    async def _compiled(self, trial: Trial, compile_future: asyncio.Future,
                        running: ChildHandle | None = None) -> Trial | None:
        """The compile stage's report into the trial; None when it makes the trial invalid or the user cancelled
        it (a running job is cancelled)."""
        report = await compile_future
        stage = self._stages.pop(trial.id, None)
        if stage is not None and stage.cancelled:
            if running is not None:
                running.cancel()
            self._set_state(trial.id, TrialState.CANCELLED, "cancelled while compiling")
            return None
        if report.rejects_file:  # a CPU run that raised or hung is not: the bench job decides
            if running is not None:
                running.cancel()
            self._invalid(trial.id, report)
            return None
        trial = self.store.update(trial.id, validation=report)
        if running is not None:  # the facts arrived while the GPU job runs: views reload the trial
            self.emit(ev.StateChanged(trial.id, trial.state, "compiled: " + compile_summary(report)))
        return trial

    def _progress(self, trial_id: str, event: dict[str, Any]) -> None:
        """A job's progress line; the checker's preliminary median becomes its own event (never stored, never decided on)."""
        if event.get("phase") == "preliminary":
            try:
                self.emit(ev.Preliminary.of(trial_id, event))
            except (TypeError, ValueError, KeyError):
                pass  # a malformed line is not worth a wrong number on screen
            return
        self.emit(ev.Progress(trial_id, event.get("phase", ""), event.get("i"), event.get("n"), event.get("runs")))

    async def _finish(self, trial: Trial, result: BenchResult, log_rel: str) -> str | None:
        """The result into the trial and its events; for a trial timed on a GPU, which profile event it is."""
        others = [t for t in await asyncio.to_thread(self.store.trials) if t.id != trial.id]  # one read, off the loop
        before = tree.best(others, self.problem.config.primary_baseline)
        state = TrialState(result.state) if result.state in TrialState._value2member_map_ else TrialState.ERROR
        result = result.without("log_tail")  # the trial keeps its whole log
        trial = self._set_state(trial.id, state, result.message or "", result=result, log=log_rel)
        where = ran_on(result)  # a remote executor's result says where it ran
        self.emit(ev.ResultReady(trial.id, state.value, trial_summary(trial, self.problem.config.primary_baseline)
                                 + (f" — ran on {where}" if where else "")))
        after = tree.best([*others, trial], self.problem.config.primary_baseline)
        if after is not None and (before is None or after.id != before.id):
            base = self.problem.config.primary_baseline
            self.emit(ev.NewBest(after.id, after.speedup(base) or 0.0, before.id if before else None,
                                 before.speedup(base) if before else None, provenance.short(after.result)))
        if trial.median_us is None:
            return None
        if not any(t.median_us is not None for t in others):
            return "first_correct"
        return "new_best" if after is not None and after.id == trial.id else "correct"

    async def _conclude(self, trial_id: str, lane: Lane) -> None:
        """Verdicts and the decision, off the lane: they wait for the reference's analysis (13 s of a problem's
        first job on the H200), and the next save must not. A plateau queues counters, then decides again."""
        trial = self.store.get(trial_id)
        if trial.median_us is not None:
            await self._verdicts(trial_id)
            trial = self.store.get(trial_id)
        decision = await self._decide_async(trial)
        if (decision.action == "switch_approach" and trial.profile is None and trial.median_us is not None
                and profile_policy(self.problem.config.profile_when, "plateau")):
            self.profile_now(trial_id, lane.name)  # counters choose the new approach

    async def _counters(self, trial_id: str, lane: Lane) -> None:
        """The best profiler's pass over a correct GPU trial, on its lane (the GPU held); stored with the trial."""
        trial = self.store.get(trial_id)
        self._set_state(trial_id, TrialState.PROFILING, f"profiling on {lane.name}")
        handle = ChildHandle()
        self._handles[trial_id] = handle
        try:
            profile = await asyncio.to_thread(self.executor.profile, self.problem, self.store.snapshot_path(trial.sha256),
                                              name=trial_id, env=lane.env, handle=handle)
        finally:
            self._handles.pop(trial_id, None)
        profile = profile.without("log_tail", "command")
        fields: dict[str, Any] = {"profile": profile}
        weighed = kernel_split.of_trial(replace(trial, profile=profile), self.store)
        flagged = kernel_split.flagged(trial.result, weighed) if trial.result is not None else None
        if flagged is not None:  # library kernels did the work, out of the bench recorder's sight: never best
            fields["result"] = flagged
            self.emit(ev.Notice(f"{trial_id} flagged fallback — {flagged.flags[-1]['message']}", "warning"))
        self._set_state(trial_id, TrialState.CORRECT, f"profiled: {profile.label or source_of(profile)}",
                        **fields)  # correct again before the lane frees: the next job ranks it as best

    def _analyze(self, problem: Problem, gpu: str | None = None, driver: str | None = None) -> AnalysisResult:
        """The reference's analysis (a roofline at `gpu`'s ceilings where given); a local one forks from this
        engine's fork server rather than importing torch again (3.6 CPU-s a problem on a 2-core CPU)."""
        if self._analyzer is not None:
            return self._analyzer(problem, gpu=gpu, driver=driver)
        warm = self._warm if isinstance(self.executor, LocalExecutor) else None
        return self.executor.analyze(problem, gpu=gpu, driver=driver, warm=warm)

    async def _verdicts(self, trial_id: str) -> None:
        """Verdicts for a correct GPU trial: from its profile where counters ran, else analytic."""
        trial = self.store.get(trial_id)
        env = (trial.result.env if trial.result else None) or {}
        # started when the first trial was queued (Engine._enqueue), so this seldom waits for it
        analysis = await asyncio.shield(self._analysis) if self._analysis is not None else None
        if analysis is None or not analysis.ok:
            analysis = await asyncio.to_thread(self._analyze, self.problem, gpu=env.get("gpu"), driver=env.get("driver"))
        profile = trial.profile
        verdicts, sol, roof = trial_verdicts(self.problem, trial, analysis, profile)
        fields: dict[str, Any] = {"verdicts": verdicts, "sol": sol}
        if roof is not None and trial.result is not None:
            fields["result"] = replace(trial.result, roofline=roof)
        self.store.update(trial_id, **fields)
        if profile is not None:  # the counters' verdicts: views reload the trial (the decision follows in any case)
            said = f" from {profile.label or source_of(profile)}"
            self.emit(ev.StateChanged(trial_id, TrialState.CORRECT.value, f"{len(verdicts)} verdict(s){said}"))

    def profile_now(self, trial_id: str, lane: str | None = None) -> None:
        """Queue a profile of a correct GPU trial on a lane (the `p` key, or a plateau)."""
        trial = self.store.get(trial_id)
        if trial.median_us is None:
            self.emit(ev.Notice(f"{trial_id} has no GPU timing to profile (correct trials on a GPU only)", "warning"))
            return

        async def run(on: Lane) -> None:
            async with on.held(self._waiting(trial_id)):
                await self._counters(trial_id, on)
            self._track(self._conclude(trial_id, on), trial_id)

        self.lanes.submit(Job(trial_id, trial.file, run, lane, owner=self, on_error=self._job_failed))
