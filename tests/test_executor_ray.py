"""The Ray executor on a local Ray instance on the CPU: two declared GPU slots of two declared models,
CPU-mode jobs. Ray's accounting keeps jobs to the slots, a job's result is the local executor's, and a
trial measured on every model gets a result per model.

One test: a Ray instance takes seconds to start, and the suite's workers would each start their own."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from trialtui.core.config import ExecutorSettings
from trialtui.core.job_options import BenchOptions
from trialtui.core.problem_dir import load_problem
from trialtui.engine.bench import bench_file
from trialtui.engine.executors import executor_for
from trialtui.engine.executors.ray_cluster import MODEL_PREFIX
from trialtui.engine.executors.remote import pack

from conftest import KB_GOOD, write_problem

ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'trialtui[ray]'): no Ray instance to test against")

pytestmark = pytest.mark.slow
SLOTS = 2


def most_at_once(spans: list[tuple[float, float]]) -> int:
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most


def test_ray_jobs_keep_to_the_gpu_slots_give_the_local_result_and_cover_every_model(tmp_path):
    root = write_problem(tmp_path / "prob", files={"kernel.py": KB_GOOD})
    problem = load_problem(root)
    ray.init(num_cpus=4, num_gpus=SLOTS, resources={MODEL_PREFIX + "TEST-A": 1, MODEL_PREFIX + "TEST-B": 1},
             include_dashboard=False, log_to_driver=False, logging_level="WARNING")
    try:
        executor = executor_for("ray://local", ExecutorSettings(), "cpu")
        assert len(executor.open()) == SLOTS and executor.models == ["TEST-A", "TEST-B"]

        here = bench_file(problem, root / "kernel.py", device="cpu").to_json()
        there = executor.bench(problem, root / "kernel.py", device="cpu", log_path=root / ".trialtui" / "logs" / "ray.log").to_json()
        assert here["state"] == there["state"] == "correct", there.get("message")
        for key in ("seeds", "passed", "max_abs_err", "mismatch_frac", "launches"):
            assert there["correctness"][key] == here["correctness"][key], key
        assert there["env"]["executor"] == "ray://local" and there["env"]["host"]
        assert (root / ".trialtui" / "logs" / "ray.log").is_file()

        def one(i: int) -> dict:
            options = BenchOptions(device="cpu", log=f"logs/many-{i}.log", timeout_s=300.0)
            return executor.run(pack(problem, root / "kernel.py", options), on_progress=None, handle=None)

        with ThreadPoolExecutor(SLOTS + 1) as pool:  # one more job than slots, all at once: one waits
            outcomes = list(pool.map(one, range(SLOTS + 1)))
        assert all(o["result"]["state"] == "correct" for o in outcomes), [o.get("error") for o in outcomes]
        assert most_at_once([(o["ran"]["started"], o["ran"]["ended"]) for o in outcomes]) <= SLOTS
        assert all(len(o["ran"]["gpu_ids"]) == 1 for o in outcomes)  # each task held one GPU slot

        every = executor_for("ray://local", ExecutorSettings(models="every"), "cpu")
        assert len(every.open()) == SLOTS // 2  # a trial takes a slot of each model
        result = every.bench(problem, root / "kernel.py", device="cpu").to_json()
        assert result["state"] == "correct"
        assert sorted(result["models"]) == ["TEST-A", "TEST-B"]
        assert all(m["state"] == "correct" for m in result["models"].values())
    finally:
        ray.shutdown()
