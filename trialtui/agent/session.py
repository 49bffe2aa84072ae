"""What the MCP tools do, without MCP: a coding agent's front end on its problem's one engine.

`AgentSession` starts the problem's engine when no front end runs one, or attaches to the one a TUI or
watcher runs (engine/attach.py), and re-resolves that on each call, so an agent outlives the TUI it
started beside. It writes candidates the way an editor saves them, so a submitted source meets the same
watcher, validation, containment and checks as a person's save; it has no call that writes a result, the
store, a baseline or the reference. Every refusal is an `AgentError` with the reason in its message.
"""

from __future__ import annotations

import asyncio
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trialtui.core import tree
from trialtui.core.model import Trial, TrialState
from trialtui.core.languages.cuda import CUDA_SUFFIXES
from trialtui.core.problem import REFERENCE_NAME, Problem, ProblemError
from trialtui.core.problem_dir import load_problem
from trialtui.core.report import FINAL_DIR
from trialtui.core.store import STATE_DIR, StoreError, StoreLocked, UnknownTrial, lock_holder, sha256_of
from trialtui.demo.story import editor_save
from trialtui.engine import events as ev
from trialtui.engine.attach import RemoteEngine, attach
from trialtui.engine.control_ops import gpu_to_itself
from trialtui.engine.front import EngineFront
from trialtui.engine.finalize import FinalizeError
from trialtui.engine.runner_deps import missing_runner
from trialtui.engine.generalize import check_file
from trialtui.engine.validate import validate_file
from trialtui.agent import views

MAX_SOURCE_BYTES = 256 * 1024  # a kernel file; the largest sample is under 20 KB
MAX_STRATEGY_CHARS = 200
MAX_WAIT_S = 600.0
SAVE_WAIT_S = 20.0  # the watcher reports a save within its quiet window; this is for a loaded machine
LOG_TAIL_BYTES = 64 * 1024
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}\.(py|cu|cuh)$")
_NO_DECISION = frozenset({TrialState.CANCELLED, TrialState.SUPERSEDED, TrialState.INTERRUPTED})


class AgentError(Exception):
    """A tool call refused or failed; the message says why and what to do."""


class AgentSession:
    """One problem directory's engine, as a coding agent uses it."""

    def __init__(self, root: Path, *, device: str | None = None,
                 make_engine: Callable[[Problem], EngineFront] | None = None):
        try:
            self.problem = load_problem(Path(root).resolve())
        except ProblemError as exc:
            raise AgentError(str(exc)) from exc
        self.device = device
        self._make_engine = make_engine
        self.engine: EngineFront | None = None
        self.owns_engine = False
        self._task: asyncio.Task | None = None
        self._changed = asyncio.Event()

    # The engine: ours, or another front end's

    async def start(self) -> None:
        if self._task is not None and not self._task.done():
            return
        if self.engine is not None:
            self.engine.unsubscribe(self._wake)
            if self.owns_engine:
                self.engine.close()
        self.engine = self._engine()
        self.owns_engine = not isinstance(self.engine, RemoteEngine)
        self.engine.subscribe(self._wake)
        self._task = asyncio.ensure_future(self.engine.run())

    def _engine(self) -> Any:
        """Start the engine if no front end runs one; else attach to the one that does."""
        if lock_holder(self.problem.root) is None:
            try:
                if self._make_engine is not None:
                    engine = self._make_engine(self.problem)
                else:
                    from trialtui.engine.loop import Engine

                    engine = Engine(self.problem, device=self.device)
                engine.host = "trialtui mcp"
                return engine
            except StoreLocked:
                pass  # another front end took the lock meanwhile: attach to it
            except StoreError as exc:  # e.g. a read-only directory: a refusal that says what to do
                raise AgentError(str(exc)) from None
        remote = attach(self.problem)
        if remote is None:
            raise AgentError(f"{lock_holder(self.problem.root) or 'another process holds the store'}; and its "
                             "control channel does not answer, so this server can neither start an engine nor attach")
        return remote

    async def _live(self) -> Any:
        """The engine, restarted or re-attached if the one we had went away (a TUI that quit)."""
        if self._task is None or self._task.done():
            await self.start()
        return self.engine

    async def close(self) -> None:
        if self.engine is None:
            return
        self.engine.stop()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
        self.engine.close()
        self.engine = None

    def _wake(self, event: ev.Event) -> None:
        self._changed.set()

    async def _until(self, ready: Callable[[], Any], deadline: float) -> Any:
        """Poll `ready` whenever the engine emits (and every half second) until it is truthy or the deadline."""
        while True:
            self._changed.clear()
            found = ready()
            if found or time.monotonic() >= deadline:
                return found
            try:
                await asyncio.wait_for(self._changed.wait(), min(0.5, max(0.0, deadline - time.monotonic())))
            except asyncio.TimeoutError:
                pass

    # Reads

    def _machine(self) -> dict[str, Any]:
        local = getattr(self.engine, "where", "this machine") == "this machine"
        return views.machine_view(self.engine.device, missing_runner() if local else None)

    def _trials(self) -> list[Trial]:
        return self.engine.store.trials()

    def _get(self, trial_id: str) -> Trial:
        try:
            return self.engine.store.get(str(trial_id))
        except UnknownTrial as exc:
            raise AgentError(exc.args[0]) from None

    async def problem_info(self) -> dict[str, Any]:
        engine = await self._live()
        return views.problem_view(self.problem, self._trials(), engine.device, self._machine())

    async def tree(self) -> dict[str, Any]:
        await self._live()
        return views.tree_view(self.problem, self._trials(), self.engine.store.heads)

    async def best(self) -> dict[str, Any]:
        await self._live()
        return views.best_view(self.problem, self._trials(), self._machine())

    async def log(self, trial_id: str) -> dict[str, Any]:
        await self._live()
        trial = self._get(trial_id)
        said = {"trial_id": trial.id, "state": trial.state, "message": views.what_happened(trial)}  # before the noise
        if not trial.log:
            return {**said, "log": "", "truncated": False, "message": said["message"] or f"{trial.id} has no job log yet"}
        path = self.engine.store.state_dir / trial.log
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise AgentError(f"{trial.id}'s log cannot be read: {exc}") from None
        return {**said, "log": data[-LOG_TAIL_BYTES:].decode("utf-8", errors="replace"),
                "truncated": len(data) > LOG_TAIL_BYTES}

    async def result(self, trial_id: str, wait_s: float) -> dict[str, Any]:
        """The trial once it is final and decided, or as it stands after `wait_s` (then `done` is false)."""
        await self._live()
        self._get(trial_id)
        wait = min(max(float(wait_s), 0.0), MAX_WAIT_S)

        def settled() -> Trial | None:
            trial = self._get(trial_id)
            state = trial.state_enum
            return trial if state.is_final and (trial.decision is not None or state in _NO_DECISION) else None

        trial = await self._until(settled, time.monotonic() + wait)
        return views.result_view(self.problem, trial or self._get(trial_id), self._trials(), self._machine(),
                                 done=trial is not None)

    # Candidates: checked, then written as an editor saves

    def _target(self, name: str, source: str) -> Path:
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise AgentError(f"{name!r} is not a candidate file name: a plain name ending in .py (or .cu/.cuh for a "
                             "CUDA candidate's source), no directories (e.g. kernel.py)")
        path = self.problem.root / name
        if name == REFERENCE_NAME:
            raise AgentError(f"{name} is the reference: it is never written through this interface")
        if path.resolve().parent != self.problem.root.resolve() or STATE_DIR in Path(name).parts:
            raise AgentError(f"{name} is outside the problem directory {self.problem.root}")
        why = None if path.suffix in CUDA_SUFFIXES else self.problem.why_not_candidate(path)
        if why:
            raise AgentError(f"{name} is not a candidate of {self.problem.name}: {why}; candidates: "
                             f"{', '.join(p.name for p in self.problem.candidates()) or 'none yet'}")
        size = len(source.encode("utf-8"))
        if size > MAX_SOURCE_BYTES:
            raise AgentError(f"the source is {size} bytes; a candidate may be at most {MAX_SOURCE_BYTES} bytes")
        return path

    async def validate(self, name: str, source: str) -> dict[str, Any]:
        """The CPU stages on a copy outside the problem directory: no trial, no file written here."""
        if self._target(name, source).suffix in CUDA_SUFFIXES:
            raise AgentError(f"{name} is a CUDA source, checked with the candidate that loads it: submit {name}, "
                             "then validate that .py candidate")
        with tempfile.TemporaryDirectory(prefix="trialtui-validate-") as scratch:
            path = Path(scratch) / name
            path.write_text(source, encoding="utf-8")
            report = await asyncio.to_thread(validate_file, self.problem, path, compile=True, name=name)
        return report.to_json()

    async def submit(self, name: str, source: str, strategy: str = "") -> dict[str, Any]:
        """Save the source into the candidate file; the engine's watcher records it. Returns the trial it became."""
        path = self._target(name, source)
        if path.suffix in CUDA_SUFFIXES:
            return self._save_cuda_source(path, source)
        strategy = " ".join(str(strategy or "").split())[:MAX_STRATEGY_CHARS]
        if strategy and tree.parse_strategy(source) is None:  # last: each line the agent sent keeps its number
            source += ("" if source.endswith("\n") or not source else "\n") + f"# strategy: {strategy}\n"
        data = source.encode("utf-8")
        if len(data) > MAX_SOURCE_BYTES:
            raise AgentError(f"the source is {len(data)} bytes; a candidate may be at most {MAX_SOURCE_BYTES} bytes")
        engine = await self._live()
        if isinstance(engine, RemoteEngine):
            engine.info()  # the pause state now: another front end may have paused it
        if engine.paused:
            raise AgentError("watching is paused (space in the TUI): a save now would wait, unscored, until it resumes")
        sha = sha256_of(data)
        known = {t.id for t in self._trials()}
        try:
            editor_save(path, data)
        except OSError as exc:
            raise AgentError(f"{name} could not be written: {exc}") from None

        def recorded() -> Trial | None:
            head = engine.store.head(name)
            return head if head is not None and head.sha256 == sha else None

        trial = await self._until(recorded, time.monotonic() + SAVE_WAIT_S)
        if trial is None:
            raise AgentError(f"the engine did not record the save of {name} within {SAVE_WAIT_S:.0f} s; "
                             "tree() shows whether it arrived later")
        return {"trial_id": trial.id, "file": name, "new": trial.id not in known, "parent": trial.parent,
                "state": trial.state, "sha256": sha}

    def _save_cuda_source(self, path: Path, source: str) -> dict[str, Any]:
        """A `.cu` file a candidate's `load(sources=[...])` builds: written beside it, scored through it."""
        data = source.encode("utf-8")
        try:
            editor_save(path, data)
        except OSError as exc:
            raise AgentError(f"{path.name} could not be written: {exc}") from None
        return {"trial_id": None, "file": path.name, "new": False, "parent": None, "state": None,
                "sha256": sha256_of(data), "message": f"{path.name} saved beside the candidates; it is not a trial "
                "itself: submit the .py candidate that loads it (a changed source makes a new trial) to score both"}

    # Operations on the engine

    async def branch(self, trial_id: str) -> dict[str, Any]:
        engine = await self._live()
        trial = self._get(trial_id)
        try:
            engine.branch(trial.id, from_outside=True)
        except (StoreError, OSError) as exc:
            raise AgentError(f"could not branch from {trial.id}: {exc}") from None
        return {"head": trial.id, "file": trial.file,
                "message": f"{trial.file} now holds {trial.id}'s source; the next submit of {trial.file} grows from it"}

    async def cancel(self, trial_id: str) -> dict[str, Any]:
        """Stop a trial wherever it is (validating, queued, on the GPU): it stays in the tree as cancelled."""
        engine = await self._live()
        trial = self._get(trial_id)
        if trial.state_enum.is_final:
            raise AgentError(f"{trial.id} is {trial.state}: it has no job to cancel")
        if not engine.cancel(trial.id):
            raise AgentError(f"{trial.id} is {trial.state} but has no job to stop yet; tree() shows it later")
        return {"trial_id": trial.id, "cancelled": True,
                "message": f"cancelling {trial.id}: result({trial.id!r}, wait_s) returns once it is stopped"}

    async def profile(self, trial_id: str) -> dict[str, Any]:
        engine = await self._live()
        trial = self._get(trial_id)
        if trial.state_enum is not TrialState.CORRECT or trial.median_us is None:
            raise AgentError(f"{trial.id} is {trial.state}{' on the CPU' if tree.correct_on_cpu(trial) else ''}: "
                             "only a correct trial timed on a GPU is profiled")
        engine.profile_now(trial.id)
        return {"trial_id": trial.id, "queued": True,
                "message": f"profiling {trial.id}: result({trial.id!r}, wait_s) returns its verdicts once done"}

    async def finalize(self) -> dict[str, Any]:
        engine = await self._live()
        try:
            done = await engine.finalize(None)
        except FinalizeError as exc:
            raise AgentError(str(exc)) from None
        return {"generalizes": done.card.generalizes, "report": done.text, "report_json": done.card.to_json(),
                "out_dir": str(done.out_dir)}

    async def generalize(self, trial_id: str) -> dict[str, Any]:
        """Finalize's held-out check on a trial now, untimed, with watching paused and the lanes idle meanwhile."""
        engine = await self._live()
        trial = self._get(trial_id)
        source = engine.store.snapshot_path(trial.sha256)
        executor = getattr(engine, "executor", None)
        async with gpu_to_itself(engine):
            found = await asyncio.to_thread(check_file, self.problem, source, device=engine.device,
                                            bench=executor.bench if executor is not None else None, on_demand=True)
        return views.generalization_view(trial, found)

    # Resources

    def reference_text(self) -> str:
        return self.problem.reference.read_text(encoding="utf-8")

    def config_text(self) -> str:
        path = self.problem.root / "trialtui.toml"
        return path.read_text(encoding="utf-8") if path.exists() else "# no trialtui.toml: every key has its default\n"

    def report_text(self) -> str:
        path = self.problem.root / FINAL_DIR / "REPORT.md"
        if not path.exists():
            raise AgentError("no REPORT.md yet: finalize() writes it")
        return path.read_text(encoding="utf-8")
