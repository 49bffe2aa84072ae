"""How the trial store scales: open + status with 10,000 trials, and what one write costs there.

Targets (issue 4): open + `trials status --json` ≤ 1 s, add a trial and update its state ≤ 20 ms
median, at 10,000 trials. Records are shaped like the engine's (bench result, validation findings,
verdicts, decision: ~2.5 kB each). The 10,000 are laid down through the store's own checkpoint write,
since adding them one by one would only time the setup. For contrast it also times one insert
through plain TinyDB (JSONStorage), which rewrites the whole file per write.

    python benches/store.py [--trials 10000] [--writes 200]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from click.testing import CliRunner
from tinydb import TinyDB

from trialtui.cli.trials import trials as trials_cli
from trialtui.core import tree
from trialtui.core.bench_result import BenchResult
from trialtui.core.model import Decision, Trial, Verdict
from trialtui.core.validation_report import ValidationReport
from trialtui.core.store import DB_NAME, META, META_ID, STATE_DIR, TRIALS, JournaledStorage, Store


def bench_result(rng: random.Random) -> BenchResult:
    median = rng.uniform(20, 200)
    eager = median * rng.uniform(0.8, 3.0)

    def stats(m: float) -> dict:
        return {"median_us": m, "min_us": m * 0.97, "p20_us": m * 0.99, "p80_us": m * 1.02, "mean_us": m * 1.01,
                "std_us": m * 0.02, "n": 200, "rse": 0.0014}

    return BenchResult.from_json({
        "version": 1, "state": "correct",
        "correctness": {"seeds": 5, "cases": 1, "passed": True, "max_abs_err": 1.2e-6, "max_rel_err": 3.4e-6,
                        "mismatch_frac": 0.0, "first_mismatch": None, "message": "", "launches": 5},
        "timing": {**stats(median), "kernel_us": median * 0.95, "host_wall_us": median * 1.1, "cuda_graph": False,
                   "label": "GPU, CUDA events, L2 flushed, median"},
        "baselines": {"eager": {**stats(eager), "cached": True}, "compile": {**stats(eager * 0.7), "cached": True}},
        "speedup": {"eager": eager / median, "compile": eager * 0.7 / median},
        "flags": [{"code": "tie", "message": "vs compile: 1.012× is inside the noise band ±1.9%: a tie"}],
        "env": {"device": "cuda", "torch": "2.11.0", "triton": "3.6.0", "python": "3.11.9", "gpu": "NVIDIA H200",
                "sm_count": 132, "l2_bytes": 62914560, "capability": "9.0", "cuda": "12.8", "driver": "570.86.15"},
        "sizes": [{"batch_size": 4096, "dim": 8192}], "dtype": "float16", "message": "",
        "log": ".trialtui/logs/bench-kernel-1795941647414.log",
    })


def trial_record(number: int, parent: int | None, rng: random.Random) -> dict:
    state = rng.choices(["correct", "incorrect", "invalid", "error"], [70, 15, 10, 5])[0]
    finding = {"severity": "warning", "code": "W-MASK", "message": "tl.load without mask at a block edge",
               "line": 14, "col": 8, "hint": "pass mask=offs < n"}
    verdict = {"severity": "warning", "title": "DRAM throughput at 41% of peak", "hint": "fuse the epilogue",
               "evidence": "dram__throughput 41.2%, sm__throughput 18.0%", "source": "ncu"}
    return Trial(
        id=f"t{number}",
        file="kernel.py",
        sha256=f"{number:064x}",
        created=1.79e9 + number,
        state=state,
        parent=f"t{parent}" if parent else None,
        strategy=f"tile {rng.choice([32, 64, 128])}, {rng.choice([4, 8])} warps",
        validation=ValidationReport(ok=True, warnings=[finding],
                                    kernels=[{"registers": 64, "spills": 0, "shared_bytes": 16384}]),
        result=bench_result(rng) if state == "correct" else None,
        verdicts=[Verdict(id=f"V{k}", **verdict) for k in range(3)],
        decision=Decision("continue", "improved 1.31× over the parent", ["1.31×"], ["try BLOCK 256"], "c"),
        sol=rng.uniform(0.2, 0.9),
        log=f"logs/t{number}.bench.log",
    ).to_dict()


def lay_down(root: Path, count: int, rng: random.Random) -> int:
    """`count` trials in long runs of saves with a branch back now and then, as one checkpoint."""
    records = {}
    for number in range(1, count + 1):
        parent = None if number == 1 else (rng.randint(1, number - 1) if rng.random() < 0.05 else number - 1)
        records[str(number)] = trial_record(number, parent, rng)
    state = root / STATE_DIR
    (state / "snapshots").mkdir(parents=True)
    heads = {str(META_ID): {"heads": {"kernel.py": f"t{count}"}}}
    JournaledStorage(state / DB_NAME).write({TRIALS: records, META: heads})
    return (state / DB_NAME).stat().st_size


def cpu_seconds() -> float:
    """This process's CPU time plus its finished children's: what a run costs on an idle machine."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def timed(fn, repeat: int) -> list[tuple[float, float]]:
    """(wall ms, CPU ms) per run."""
    times = []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), cpu_seconds()
        fn()
        times.append(((time.perf_counter() - wall) * 1000, (cpu_seconds() - cpu) * 1000))
    return times


def status_in_process(root: Path) -> None:
    with Store.open(root, writer=False) as store:
        found, heads = store.trials(), store.heads
    top = tree.best(found)
    tree.render_tree(found, best_id=top.id if top else None, heads=heads)


def status_json(root: Path) -> None:
    result = CliRunner().invoke(trials_cli, ["status", "--json", "--dir", str(root)])
    assert result.exit_code == 0, result.output


def status_fresh_process(root: Path) -> None:
    code = f"from trialtui.cli.trials import trials; trials(['status', '--json', '--dir', {str(root)!r}])"
    subprocess.run([sys.executable, "-c", code], check=True, stdout=subprocess.DEVNULL)


def measure(root: Path, trials: int, writes: int, rng: random.Random) -> list[tuple[str, list[tuple[float, float]]]]:
    rows = [
        ("open + status, tree drawn (in process)", timed(lambda: status_in_process(root), 5)),
        ("open + `trials status --json` (in process)", timed(lambda: status_json(root), 5)),
        ("`trials status --json`, fresh interpreter", timed(lambda: status_fresh_process(root), 3)),
        ("writer open (migrate check + checkpoint)", timed(lambda: Store.open(root).close(), 3)),
    ]
    store = Store.open(root)
    final = bench_result(rng)
    added: list[str] = []

    def add_and_finish() -> None:
        trial = store.add_trial("kernel.py", f"x = {rng.random()}\n", parent=f"t{trials}")
        store.update(trial.id, state="correct", result=final)
        added.append(trial.id)

    def intermediate() -> None:
        store.update(rng.choice(added), state="benchmarking")

    def save() -> None:
        store.record("kernel.py", f"y = {rng.random()}\n")

    rows += [
        ("add + update to a final state (both fsync'd)", timed(add_and_finish, writes)),
        ("update to an intermediate state (no fsync)", timed(intermediate, writes)),
        ("record(): save rule + add", timed(save, 50)),
        ("close (checkpoint of the journal)", timed(store.close, 1)),
    ]
    plain = root.parent / "plain.json"
    shutil.copy(root / STATE_DIR / DB_NAME, plain)
    with TinyDB(plain) as db:
        table = db.table(TRIALS)
        rows.append(("contrast: one insert via plain TinyDB", timed(lambda: table.insert({"x": 1}), 10)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--writes", type=int, default=200)
    args = parser.parse_args()
    rng = random.Random(4)
    work = Path(tempfile.mkdtemp(prefix="trialtui-bench-"))
    try:
        size = lay_down(work / "prob", args.trials, rng)
        rows = measure(work / "prob", args.trials, args.writes, rng)
    finally:
        shutil.rmtree(work)
    print(f"{args.trials:,} trials, trials.json {size / 1e6:.1f} MB ({size / args.trials / 1e3:.1f} kB a record); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs\n")
    print("| operation | runs | wall median ms | wall p95 ms | CPU median ms |")
    print("|---|---|---|---|---|")
    for name, times in rows:
        walls = sorted(wall for wall, _ in times)
        p95 = walls[max(0, round(0.95 * len(walls)) - 1)]
        cpu = statistics.median(c for _, c in times)
        print(f"| {name} | {len(times)} | {statistics.median(walls):.1f} | {p95:.1f} | {cpu:.1f} |")


if __name__ == "__main__":
    main()
