"""The Ray executor: `--executor ray://ADDRESS` (the `ray` extra), each job a Ray task asking for one GPU.

Ray's own accounting keeps one job per GPU, so there is no scheduler here: the engine gets one lane per
GPU slot of the cluster (a cap on trials in flight) and Ray places the tasks. GPU models are Ray's
`accelerator_type:<model>` resources (Ray declares them for the GPUs it detects; `ray start --resources`
declares others): with `[executor] models = "every"` a trial is benchmarked on every model at once and
its result lists the speedups per model, the baseline cache keeping each model's own. The task runs the
job exactly as the SSH host does (`host.run_job`: the same supervisor, limits, checker and candidate).

ADDRESS: `local` starts a Ray instance in this process (or uses the one already started), `auto`
joins the cluster this machine belongs to, anything else (`ray://head:10001`) is Ray Client's address.
Progress lines are not streamed back (the result comes whole); cancelling a job cancels its task.
"""

from __future__ import annotations

import os
import socket
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from trialtui.core.bench_result import BenchResult
from trialtui.core.executor import ExecutorError, JobData, Progress, Slot
from trialtui.core.install import install_command
from trialtui.core.job_options import BenchOptions, JobOptions, ProfileOptions
from trialtui.core.problem import Problem
from trialtui.engine.executors.remote import Interrupted, RemoteExecutor, deadline_for, state_rel

MODEL_PREFIX = "accelerator_type:"
MODEL_SHARE = 0.001  # how much of a model's resource a task asks for: it only says "on that model"
CANCEL_GRACE_S = 30.0


_warm: Any = None  # a Ray worker process's warm job processes: its next task finds torch imported


def run_on_worker(data: dict[str, Any]) -> dict[str, Any]:
    """The body of every trialtui Ray task: the job in a directory of this node's, run as the SSH host runs it.

    Ray reuses a worker process for the next task, so the job process started ahead for it (torch and
    triton imported) waits there, keyed by the GPU Ray gave this task; when Ray ends the worker, the
    warm supervisor sees EOF and sweeps its job process."""
    global _warm
    from trialtui.engine.executors.host import Workspace, run_job
    from trialtui.engine.jobs import WarmChildren

    started = time.time()
    job = JobData.from_dict(data)
    job.options = _gpu_env(job.options, os.environ.get("CUDA_VISIBLE_DEVICES", ""))
    if _warm is None:
        _warm = WarmChildren()
    base = Path(tempfile.gettempdir()) / f"trialtui-ray-{os.getuid()}"
    outcome = run_job(job, Workspace(base), warm=_warm)
    outcome["ran"] = {"host": socket.gethostname(), "started": started, "ended": time.time(),
                      "gpu_ids": _gpu_ids(), "model": _model(job.options)}
    return outcome


def _gpu_env(options: JobOptions, gpu: str | None) -> JobOptions:
    """The options with CUDA_VISIBLE_DEVICES the GPU Ray gave the task (None: unset, for Ray to say); only
    bench and profile jobs are given an environment."""
    if not isinstance(options, (BenchOptions, ProfileOptions)):
        return options
    env = {k: v for k, v in options.env.items() if k != "CUDA_VISIBLE_DEVICES"}
    return replace(options, env=env if gpu is None else {**env, "CUDA_VISIBLE_DEVICES": gpu})


def _model(options: JobOptions) -> str | None:
    return options.model if isinstance(options, BenchOptions) else None


def _gpu_ids() -> list[Any]:
    try:
        import ray

        return list(ray.get_gpu_ids())
    except Exception:  # noqa: BLE001 - outside a task
        return []


class RayExecutor(RemoteExecutor):
    scheme = "ray"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.models: list[str] = []
        self._task: Any = None
        self._started_ray = False

    def describe(self) -> str:
        return f"ray {self.target.address}"

    def open(self) -> list[Slot]:
        try:
            import ray
        except ImportError as exc:
            raise ExecutorError(f"the Ray executor needs ray: {install_command('ray')}") from exc
        if not ray.is_initialized():
            address = {"local": None, "auto": "auto"}.get(self.target.address, f"ray://{self.target.address}")
            try:
                ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
            except Exception as exc:  # noqa: BLE001 - Ray raises ConnectionError, RuntimeError, ValueError...
                raise ExecutorError(f"cannot reach {self.describe()}: {type(exc).__name__}: {exc}") from exc
            self._started_ray = True
        resources = ray.cluster_resources()
        gpus = int(resources.get("GPU", 0))
        if gpus < 1:
            raise ExecutorError(f"{self.describe()} declares no GPU: each job is a task asking for one "
                                "(ray start --num-gpus N declares them, on a CPU machine too)")
        self.models = sorted(k[len(MODEL_PREFIX):] for k in resources if k.startswith(MODEL_PREFIX))
        self.device = self.requested_device or "cuda"
        # max_calls=0: a worker serves task after task (Ray ends a GPU task's worker by default, to free
        # memory it may hold; ours never touches CUDA, its job processes do), so warm job processes wait there
        self._task = ray.remote(num_gpus=1, max_retries=0, max_calls=0)(run_on_worker)
        every = self.settings.models == "every" and len(self.models) > 1
        lanes = max(1, gpus // len(self.models)) if every else gpus  # a trial takes a GPU of each model
        self.slots = [Slot(f"ray:gpu{i}" if self.device == "cuda" else f"ray:slot{i}",
                           str(i) if self.device == "cuda" else None, self.target.address) for i in range(lanes)]
        return self.slots

    def run(self, job: JobData, *, on_progress: Progress | None, handle: Any) -> dict[str, Any]:
        import ray

        del on_progress  # a task's result comes whole
        job.options = _gpu_env(job.options, None)  # Ray says which GPU the task has
        model = _model(job.options)
        task = self._task.options(resources={MODEL_PREFIX + model: MODEL_SHARE}) if model else self._task
        ref = task.remote(job.to_dict())
        deadline, cancelled_at = deadline_for(job), None
        while True:
            done, _ = ray.wait([ref], timeout=0.1)
            if done:
                try:
                    return ray.get(ref)
                except ray.exceptions.TaskCancelledError:
                    return {"error": "cancelled"}
                except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError,
                        ray.exceptions.ObjectLostError) as exc:
                    raise Interrupted(f"the Ray worker or its node was lost: {type(exc).__name__}") from exc
                except ray.exceptions.RayError as exc:
                    return {"error": f"the Ray task failed: {type(exc).__name__}: {exc}"}
            if handle is not None and getattr(handle, "cancelled", False) and cancelled_at is None:
                cancelled_at = time.monotonic()
                ray.cancel(ref)  # a KeyboardInterrupt in the task: run_child's supervisor sweeps the job
            if cancelled_at is not None and time.monotonic() > cancelled_at + CANCEL_GRACE_S:
                ray.cancel(ref, force=True)
                return {"error": "cancelled"}
            if time.monotonic() > deadline:
                ray.cancel(ref, force=True)
                raise Interrupted("the Ray task stopped answering")

    def bench_job(self, problem: Problem, path: Path | str, options: BenchOptions, log_path: Path, *,
                  handle: Any, on_progress: Progress | None) -> BenchResult:
        """With `models = "every"`, one task per GPU model at once; the first model's result leads, and
        `models` holds each model's outcome and speedups."""
        if self.settings.models != "every" or len(self.models) < 2:
            return super().bench_job(problem, path, options, log_path, handle=handle, on_progress=on_progress)

        def one(model: str) -> BenchResult:
            log = log_path if model == self.models[0] else log_path.with_name(f"{log_path.stem}-{_safe(model)}.log")
            there = replace(options, model=model, log=state_rel(problem, log))
            return super(RayExecutor, self).bench_job(problem, path, there, log, handle=handle, on_progress=on_progress)

        with ThreadPoolExecutor(len(self.models), thread_name_prefix="ray-model") as pool:
            results = list(pool.map(one, self.models))
        return replace(results[0], models={model: _per_model(result) for model, result in zip(self.models, results)})

    def close(self) -> None:
        if self._started_ray:
            import ray

            ray.shutdown()
            self._started_ray = False


def _per_model(result: BenchResult) -> dict[str, Any]:
    timing = result.timing or {}
    env = result.env or {}
    return {"state": result.state, "median_us": timing.get("median_us"), "speedup": result.speedup,
            "gpu": env.get("gpu"), "host": env.get("host"), "message": result.message, "log": result.log}


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
