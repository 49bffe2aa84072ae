"""The local executor: this machine's lanes, one per visible GPU (or one `cpu` lane), as trialtui always ran."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trialtui.core.analysis_result import AnalysisResult
from trialtui.core.executor import Executor, Slot
from trialtui.core.problem import Problem
from trialtui.core.profile_result import ProfileResult
from trialtui.engine import profile as profile_module
from trialtui.engine.bench import bench_file, detect_device
from trialtui.engine.lanes import Lanes
from trialtui.engine.validate import validate_file


class LocalExecutor(Executor):
    scheme = "local"
    # The functions themselves, not wrappers: the engine keeps warm job processes for exactly these.
    bench = staticmethod(bench_file)
    validate = staticmethod(validate_file)

    def open(self) -> list[Slot]:
        self.device = self.requested_device or detect_device()
        self.slots = [Slot(lane.name, lane.gpu) for lane in Lanes.detect(self.device).lanes]
        return self.slots

    def describe(self) -> str:
        return "this machine"

    def profile(self, problem: Problem, path: Path | str, *, name: str, env: dict[str, str] | None = None,
                handle: Any = None, device: str = "cuda") -> ProfileResult:
        return profile_module.profile_file(problem, Path(path), name=name, env=env, handle=handle, device=device)

    def analyze(self, problem: Problem, *, gpu: str | None = None, driver: str | None = None,
                use_cache: bool = True, warm: Any = None) -> AnalysisResult:
        return profile_module.analyze(problem, gpu=gpu, driver=driver, use_cache=use_cache, warm=warm)
