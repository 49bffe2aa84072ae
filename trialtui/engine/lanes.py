"""GPU lanes: one per visible GPU, strictly one job at a time each (concurrent GPU work gives wrong numbers).

Without a GPU there is one `cpu` lane, so interpreted checks are serialized the same way. A GPU lane of
this machine also takes its GPU's host-wide lane (engine/gpu_lock.py) around each job's GPU work, so
other trialtui processes wait too.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import threading
import traceback
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from trialtui.engine.gpu_lock import GpuLock, Wait


def visible_gpus() -> list[str]:
    """GPU indices this process may use, from CUDA_VISIBLE_DEVICES or the device nodes; no CUDA init."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [g.strip() for g in env.split(",") if g.strip() and g.strip() != "-1"]
    nodes = sorted(Path("/dev").glob("nvidia[0-9]*"), key=lambda p: int(re.sub(r"\D", "", p.name)))
    return [re.sub(r"\D", "", p.name) for p in nodes]


@dataclass
class Lane:
    name: str
    gpu: str | None  # the CUDA_VISIBLE_DEVICES value its children get; None for the cpu lane
    job: Job | None = None
    host: GpuLock | None = None  # this GPU's lane across the host (a GPU of this machine); see `held`
    preparing: bool = False  # its warm checker was still preparing when a job came: the job waits for it
    carry: bool = False  # set inside a hold: keep it for the lane's next job (a prepare cut short)
    carried: bool = False  # a hold kept for the next job, which takes it without waiting

    @property
    def running(self) -> str | None:
        return self.job.trial_id if self.job is not None else None

    @property
    def env(self) -> dict[str, str]:
        return {"CUDA_VISIBLE_DEVICES": self.gpu} if self.gpu is not None else {}

    @asynccontextmanager
    async def held(self, on_wait: Wait | None = None, give_up: Callable[[], bool] | None = None) -> AsyncIterator[bool]:
        """The GPU's host-wide lane around a lane job's GPU work (engine/gpu_lock.py): True once held, False
        when `give_up` said so while another process held it. The cpu lane, or a remote one, needs none."""
        host = self.host
        if host is None or host.holds():
            yield True
            return
        if self.carried:  # a prepare cut short for this job: its checker may still be on the GPU, so the hold goes on
            self.carried = False
        else:
            stop = threading.Event()
            taking = asyncio.get_running_loop().run_in_executor(
                None, host.acquire, None, on_wait, lambda: stop.is_set() or (give_up is not None and give_up()))
            try:
                took = await asyncio.shield(taking)
            except asyncio.CancelledError:  # the engine stops: the waiting thread gives up, or lets go of what it took
                stop.set()
                taking.add_done_callback(lambda f: host.release() if not f.cancelled() and not f.exception() and f.result() else None)
                raise
            if not took:
                yield False
                return
        try:
            with host.owned():  # the job's threads (asyncio.to_thread copies the context) see it held
                yield True
        finally:
            self.carried, self.carry = self.carry, False
            if not self.carried:
                host.release()

    def let_go(self) -> None:
        """An idle lane keeps no hold carried for a job that never came (it was cancelled meanwhile)."""
        if self.carried and self.host is not None:
            self.carried = False
            self.host.release()


@dataclass
class Job:
    trial_id: str
    file: str
    run: Callable[[Lane], Awaitable[None]]
    lane: str | None = None  # pinned to one lane, else the first free one
    owner: object = None  # the engine whose trial this is (trial ids repeat across problems)
    on_error: Callable[[Job, Exception], None] | None = None  # told when `run` raises; the lane goes on


@dataclass
class Lanes:
    """The queue and its workers; the next queued job goes to the first free lane.

    Several engines (one per problem under a watched root) may share one Lanes: the GPUs stay
    one job at a time each, whichever problem the job belongs to.
    """

    lanes: list[Lane]
    queue: list[Job] = field(default_factory=list)
    listeners: list[Callable[[], None]] = field(default_factory=list)

    @classmethod
    def detect(cls, device: str, gpus: list[str] | None = None) -> Lanes:
        if device == "cpu":
            return cls([Lane("cpu", None)])
        ids = gpus if gpus is not None else visible_gpus() or ["0"]
        return cls([Lane(f"gpu{g}", g) for g in ids])

    def __post_init__(self) -> None:
        self._wake = asyncio.Event()
        self._workers: list[asyncio.Task] = []
        self._users = 0

    def on_change(self) -> None:
        for listener in list(self.listeners):
            listener()

    def start(self) -> None:
        """One worker per lane, however many engines share these lanes."""
        self._users += 1
        if not self._workers:
            self._workers = [asyncio.create_task(self.work(lane)) for lane in self.lanes]

    async def stop(self) -> None:
        self._users -= 1
        if self._users > 0:
            return
        workers, self._workers = self._workers, []
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)

    def submit(self, job: Job, *, front: bool = False) -> None:
        """Queue a job last, or (`front`) before every queued one: the `latest` policy runs the newest save first."""
        if front:
            self.queue.insert(0, job)
        else:
            self.queue.append(job)
        self._wake.set()
        self.on_change()

    def remove(self, predicate: Callable[[Job], bool]) -> list[Job]:
        """Take queued (not running) jobs out; returns them."""
        taken = [j for j in self.queue if predicate(j)]
        self.queue = [j for j in self.queue if not predicate(j)]
        if taken:
            self.on_change()
        return taken

    def wanted(self, lane: Lane) -> bool:
        """Whether a queued job may run on `lane`; safe from another thread (it reads one snapshot of the queue)."""
        return any(job.lane in (None, lane.name) for job in list(self.queue))

    @property
    def idle(self) -> bool:
        return not self.queue and all(lane.job is None for lane in self.lanes)

    def busy_for(self, owner: object) -> bool:
        """Whether any job of `owner` is queued or running."""
        return any(j.owner is owner for j in self.queue) or any(
            lane.job is not None and lane.job.owner is owner for lane in self.lanes)

    def _take(self, lane: Lane) -> Job | None:
        for i, job in enumerate(self.queue):
            if job.lane in (None, lane.name):
                return self.queue.pop(i)
        return None

    async def work(self, lane: Lane) -> None:
        """One lane's loop: strictly one job at a time; a job that raises is reported, never the lane's end."""
        while True:
            job = self._take(lane)
            if job is None:
                lane.let_go()
                self._wake.clear()
                await self._wake.wait()
                continue
            lane.job = job
            self.on_change()
            try:
                await job.run(lane)
            except Exception as exc:  # noqa: BLE001 - whatever the job did, the lane takes the next one
                self._failed(job, exc)
            finally:
                lane.job = None
                self._wake.set()  # another lane may have skipped a job pinned elsewhere
                self.on_change()

    @staticmethod
    def _failed(job: Job, exc: Exception) -> None:
        try:
            if job.on_error is None:
                raise exc
            job.on_error(job, exc)
        except Exception:  # noqa: BLE001 - no handler, or the handler failed too: stderr is all that is left
            traceback.print_exc(file=sys.stderr)
