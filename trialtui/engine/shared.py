"""What the engines of one multi-problem watch share: their lanes are one queue, so one set of warm job
processes and one compile pool serve them all."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from trialtui.engine.jobs import WarmChildren


@dataclass
class Shared:
    """One set of warm job processes and one compile pool for every engine of a watch, not one per problem
    (eleven problems started 22 warm processes and 22 compiles at once: the H200's first job waited 27 s)."""

    warm: WarmChildren = field(default_factory=WarmChildren)
    pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(max_workers=2, thread_name_prefix="validate"))

    def close(self) -> None:
        self.warm.close()
        self.pool.shutdown(wait=False, cancel_futures=True)
