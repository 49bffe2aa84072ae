"""GPU lanes: one per visible GPU, strictly one job at a time each (concurrent GPU work gives wrong numbers).

Without a GPU there is one `cpu` lane, so interpreted checks are serialized the same way.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path


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
    running: str | None = None

    @property
    def env(self) -> dict[str, str]:
        return {"CUDA_VISIBLE_DEVICES": self.gpu} if self.gpu is not None else {}


@dataclass
class Job:
    trial_id: str
    file: str
    run: Callable[[Lane], Awaitable[None]]
    lane: str | None = None  # pinned to one lane, else the first free one


@dataclass
class Lanes:
    """The queue and its workers; the next queued job goes to the first free lane."""

    lanes: list[Lane]
    queue: list[Job] = field(default_factory=list)
    on_change: Callable[[], None] = lambda: None

    @classmethod
    def detect(cls, device: str, gpus: list[str] | None = None) -> Lanes:
        if device == "cpu":
            return cls([Lane("cpu", None)])
        ids = gpus if gpus is not None else visible_gpus() or ["0"]
        return cls([Lane(f"gpu{g}", g) for g in ids])

    def __post_init__(self) -> None:
        self._wake = asyncio.Event()

    def submit(self, job: Job) -> None:
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

    @property
    def idle(self) -> bool:
        return not self.queue and all(lane.running is None for lane in self.lanes)

    def _take(self, lane: Lane) -> Job | None:
        for i, job in enumerate(self.queue):
            if job.lane in (None, lane.name):
                return self.queue.pop(i)
        return None

    async def work(self, lane: Lane) -> None:
        """One lane's loop: strictly one job at a time."""
        while True:
            job = self._take(lane)
            if job is None:
                self._wake.clear()
                await self._wake.wait()
                continue
            lane.running = job.trial_id
            self.on_change()
            try:
                await job.run(lane)
            finally:
                lane.running = None
                self._wake.set()  # another lane may have skipped a job pinned elsewhere
                self.on_change()
