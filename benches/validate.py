"""How long `trialtui validate` takes per candidate: static stage and compile stage, median and p95.

python benches/validate.py [--repeat N] [--static-repeat N] [--arch sm_90[,sm_80]] [ROOT ...]

Every candidate of every problem under ROOT (default sample_kernels/*/, else tests/problems/*/)
is validated in a copy of its problem directory. The compile stage is measured cold (a fresh,
empty Triton cache, as on a first save) once per file, then warm (the cache this run filled, as
on every later save) --repeat times. Targets: static <= 20 ms, compile stage <= 3 s per file.
Wall time is what a user waits; on a shared 2-core machine other work inflates it, so the CPU
time the validation's processes used (user + sys, all children) is printed beside it, and the
load average before and after.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from trialtui.core.problem import ProblemError  # noqa: E402
from trialtui.core.problem_dir import load_problem  # noqa: E402
from trialtui.engine.validate import validate_file  # noqa: E402

STATIC_TARGET_MS = 20.0
COMPILE_TARGET_MS = 3000.0


def p95(values: list[float]) -> float:
    """Nearest-rank 95th percentile: with few samples, the largest but one or the largest."""
    ordered = sorted(values)
    return ordered[max(0, -(-95 * len(ordered) // 100) - 1)]


def problem_dirs(roots: list[str]) -> list[Path]:
    if roots:
        return [Path(r) for r in roots]
    for pattern in ("sample_kernels/*/", "tests/problems/*/"):
        found = sorted(p for p in REPO.glob(pattern) if (p / "reference.py").exists())
        if found:
            return found
    return []


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_validate(problem, path, arch) -> tuple[dict, float]:
    """validate_file's report and the CPU seconds its child processes used."""
    before = children_cpu_s()
    report = validate_file(problem, path, arch=arch)
    return report, children_cpu_s() - before


def row(label: str, values: list[float], unit: str, target: float | None) -> str:
    if not values:
        return f"{label:<24}{'n=0':>6}"
    median, high = statistics.median(values), p95(values)
    verdict = "" if target is None else ("  ok" if high <= target else f"  OVER {target:g}")
    return f"{label:<24}{len(values):>6}{median:>10.1f}{high:>10.1f}{max(values):>10.1f} {unit}{verdict}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="*", help="problem directories (default: sample_kernels/*/)")
    parser.add_argument("--repeat", type=int, default=3, help="warm compile-stage runs per file")
    parser.add_argument("--static-repeat", type=int, default=50, help="static-stage runs per file")
    parser.add_argument("--arch", default=None, help="sm_90 (default: the problem's arch)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="trialtui-bench-validate-"))
    os.environ["TRITON_CACHE_DIR"] = str(work / "triton-cache")  # the children inherit it: cold, then warm
    load_before = os.getloadavg()
    static_ms: list[float] = []
    cold_ms: list[float] = []
    warm_ms: list[float] = []
    cold_cpu: list[float] = []
    warm_cpu: list[float] = []
    lines = []
    try:
        for source in problem_dirs(args.roots):
            root = work / source.name
            shutil.copytree(source, root, ignore=shutil.ignore_patterns(".trialtui", "demo", "__pycache__"))
            try:
                problem = load_problem(root)
            except ProblemError as exc:
                lines.append(f"  {source.name}: skipped, {exc}")
                continue
            for path in problem.candidates():
                validate_file(problem, path, compile=False)  # the first call also imports the checker
                static = [validate_file(problem, path, compile=False)["static_ms"] for _ in range(args.static_repeat)]
                cold, cpu = timed_validate(problem, path, args.arch)
                warm_runs = [timed_validate(problem, path, args.arch) for _ in range(args.repeat)]
                warm = [r for r, _ in warm_runs]
                static_ms += static
                stage = [r["compile_ms"] for r in [cold, *warm] if r["compile_ms"] is not None]
                if stage:
                    cold_ms.append(stage[0])
                    warm_ms.extend(stage[1:])
                    cold_cpu.append(cpu)
                    warm_cpu.extend(c for _, c in warm_runs)
                kernels = ", ".join(f"{k['name']}@{k['arch']} {k['registers']} regs" for k in cold["kernels"]) or "-"
                codes = ", ".join(f["code"] for f in cold["errors"] + cold["warnings"]) or "-"
                lines.append(
                    f"  {source.name}/{path.name}: static {statistics.median(static):.1f} ms, "
                    f"compile cold {stage[0] / 1000 if stage else float('nan'):.2f} s ({cpu:.2f} s CPU), "
                    f"warm {statistics.median(stage[1:]) / 1000 if len(stage) > 1 else float('nan'):.2f} s; "
                    f"ok={cold['ok']} kernels: {kernels}; findings: {codes}"
                )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()

    import triton

    print(f"trialtui validate latency: {os.cpu_count()} CPUs, triton {triton.__version__}, "
          f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    print(f"{'stage':<24}{'n':>6}{'median':>10}{'p95':>10}{'max':>10}")
    print(row("static", static_ms, "ms", STATIC_TARGET_MS))
    print(row("compile, cold cache", [v / 1000 for v in cold_ms], "s", COMPILE_TARGET_MS / 1000))
    print(row("compile, warm cache", [v / 1000 for v in warm_ms], "s", COMPILE_TARGET_MS / 1000))
    print(row("  CPU, cold cache", cold_cpu, "s", None))
    print(row("  CPU, warm cache", warm_cpu, "s", None))
    print("per file:")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
