"""Per-job overhead of the SSH and Ray executors over the local one, side by side in one run.

python benches/executor_overhead.py [--rounds 5] [--pause 4] [--no-ray] [--no-ssh]

Every row benchmarks the same candidate (tests/conftest.py's bias+ReLU, KernelBench form, fp32, 8x32,
5 seeds) the way the engine does: one `bench` call per save, the result back in the caller. On this
machine the jobs run on the CPU (Triton's interpreter): the figures are what each executor adds to a
job, not GPU timings. `local` is this machine's lane with its warm job process (as the engine runs it);
`ssh` goes through a real SSH server on 127.0.0.1 (asyncssh's, the one the tests start) to
`python -m trialtui.engine.executors.host`, which keeps its own warm job processes; `ray` is a task on
a local Ray instance with declared GPU slots. Rounds are interleaved; between jobs each executor gets
`--pause` seconds, as an editing pause gives a warm job process time to import torch. The first job of
each executor (connection, cold imports) is shown apart.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests"))

from conftest import KB_GOOD, write_problem  # noqa: E402
from trialtui.core.config import ExecutorSettings  # noqa: E402
from trialtui.core.problem_dir import load_problem  # noqa: E402
from trialtui.engine.bench import BENCH_MODULE, bench_file, child_env  # noqa: E402
from trialtui.engine.executors import executor_for  # noqa: E402
from trialtui.engine.jobs import WarmChildren  # noqa: E402


class Local:
    name = "local"

    def __init__(self) -> None:
        self.warm = WarmChildren()
        self.warm.prime(BENCH_MODULE, child_env("cpu"))

    def bench(self, problem, path, log):
        return bench_file(problem, path, device="cpu", log_path=log, warm=self.warm)

    def close(self) -> None:
        self.warm.close()


class Remote:
    def __init__(self, name: str, executor) -> None:
        self.name = name
        self.executor = executor

    def bench(self, problem, path, log):
        return self.executor.bench(problem, path, device="cpu", log_path=log)

    def close(self) -> None:
        self.executor.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--pause", type=float, default=4.0, help="seconds between a runner's jobs (an editing pause)")
    ap.add_argument("--no-ssh", action="store_true")
    ap.add_argument("--no-ray", action="store_true")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="executor-overhead-"))
    root = write_problem(work / "prob", files={"kernel.py": KB_GOOD})
    problem = load_problem(root)
    runners, opened, server = [], {}, None

    t0 = time.perf_counter()
    runners.append(Local())
    opened["local"] = time.perf_counter() - t0
    if not args.no_ssh:
        from ssh_server import SshServer

        server = SshServer(work / "sshd")
        settings = ExecutorSettings(url=server.url(), python=sys.executable, identity=str(server.identity),
                                    known_hosts=str(server.known_hosts))
        t0 = time.perf_counter()
        ssh = executor_for(None, settings, "cpu")
        ssh.open()
        opened["ssh"] = time.perf_counter() - t0
        runners.append(Remote("ssh", ssh))
    if not args.no_ray:
        import ray

        t0 = time.perf_counter()
        ray.init(num_cpus=2, num_gpus=1, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
        ray_executor = executor_for("ray://local", ExecutorSettings(), "cpu")
        ray_executor.open()
        opened["ray"] = time.perf_counter() - t0
        runners.append(Remote("ray", ray_executor))

    first: dict[str, float] = {}
    times: dict[str, list[float]] = {r.name: [] for r in runners}
    try:
        for round_ in range(args.rounds + 1):
            for runner in runners:
                time.sleep(args.pause)
                t0 = time.perf_counter()
                result = runner.bench(problem, root / "kernel.py", root / ".trialtui" / "logs" / f"{runner.name}-{round_}.log")
                took = time.perf_counter() - t0
                if result.get("state") != "correct":
                    raise SystemExit(f"{runner.name}: {result.get('state')}: {result.get('message')}")
                (times[runner.name].append(took) if round_ else first.__setitem__(runner.name, took))
                print(f"  round {round_} {runner.name:<5} {took:6.3f} s", flush=True)
    finally:
        for runner in runners:
            runner.close()
        if server is not None:
            server.close()

    local = statistics.median(times["local"])
    print()
    print(f"executor overhead per job, {datetime.date.today().isoformat()}, {platform.node()}: CPU only "
          f"({os.cpu_count()} cores), jobs in Triton's interpreter; KernelBench bias+ReLU fp32 8x32, 5 seeds; "
          f"{args.rounds} rounds after a first job, {args.pause:g} s pause between jobs")
    print(f"{'executor':<8} {'open s':>7} {'first job s':>12} {'median s':>9} {'min s':>7} {'max s':>7} {'over local s':>13}")
    for runner in runners:
        t = times[runner.name]
        med = statistics.median(t)
        over = "—" if runner.name == "local" else f"{med - local:+.3f}"
        print(f"{runner.name:<8} {opened[runner.name]:7.2f} {first[runner.name]:12.3f} {med:9.3f} {min(t):7.3f} "
              f"{max(t):7.3f} {over:>13}")


if __name__ == "__main__":
    main()
