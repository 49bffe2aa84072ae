"""Child job: check a candidate against the reference on several seeds, then time it if correct.

`python -m trialtui.runner.bench_job SPEC.json RESULT.json`. Correctness comes first and a
speed number exists only for a correct candidate. Every failure becomes a result, not a crash.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from trialtui.core.baselines import matching
from trialtui.core.result import CPU_TIMING_LABEL, RESULT_VERSION, flag
from trialtui.runner.child import serve

SUSPICIOUS_SPEEDUP = 10.0


class Progress:
    """Progress lines for the parent (seed i/n, timing runs), one JSON object per line."""

    def __init__(self, path: str | None):
        self.fh = open(path, "a", buffering=1) if path else None

    def __call__(self, **event: Any) -> None:
        if self.fh:
            self.fh.write(json.dumps(event) + "\n")


class LaunchCounter:
    """Counts Triton kernel launches, compiled or interpreted: a candidate with none is flagged."""

    def __init__(self) -> None:
        self.count = 0
        self._patched: list[tuple[type, Any]] = []

    def install(self) -> None:
        import triton.runtime.jit as jit

        classes = [jit.JITFunction]
        try:
            from triton.runtime.interpreter import InterpretedFunction

            classes.append(InterpretedFunction)
        except ImportError:
            pass
        for cls in classes:
            original = cls.run
            counter = self

            def run(self, *args, __original=original, **kwargs):
                counter.count += 1
                return __original(self, *args, **kwargs)

            cls.run = run
            self._patched.append((cls, original))


@contextmanager
def poisoned_allocations() -> Iterator[None]:
    """Fresh allocations filled with NaN, so outputs the kernel never wrote cannot pass.

    The C switch under torch.use_deterministic_algorithms does the same without importing
    torch._inductor (1.5 s of CPU). Warn-only: the candidate's own nondeterministic ops still run.
    """
    import torch
    import torch.utils.deterministic as deterministic

    was = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    was_fill = deterministic.fill_uninitialized_memory
    torch._C._set_deterministic_algorithms(True, warn_only=True)
    deterministic.fill_uninitialized_memory = True
    try:
        yield
    finally:
        deterministic.fill_uninitialized_memory = was_fill
        torch._C._set_deterministic_algorithms(was[0], warn_only=was[1])


def environment(device) -> dict[str, Any]:
    import torch
    import triton

    env: dict[str, Any] = {
        "device": device.type,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": sys.version.split()[0],
        "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),  # the lane this job was pinned to
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        env.update(
            gpu=props.name,
            sm_count=props.multi_processor_count,
            l2_bytes=getattr(props, "L2_cache_size", None),
            capability=f"{props.major}.{props.minor}",
            cuda=torch.version.cuda,
            driver=_driver_version(),
        )
    else:
        env.update(gpu=None, interpreted=os.environ.get("TRITON_INTERPRET") == "1")
    return env


def _driver_version() -> str | None:
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
    except OSError:
        return None
    for word in text.split():
        if word.count(".") >= 1 and word.replace(".", "").isdigit():
            return word
    return None


def check_correctness(spec, reference, candidate, cases, seeds, progress, counter) -> dict[str, Any]:
    """Every case under every seed: clones in, structure/shape/dtype/values compared."""
    import torch

    from trialtui.runner.compare import compare, inputs_changed, is_trivial, looks_like_tf32
    from trialtui.runner.loader import build_pair, clone

    atol, rtol = spec["atol"], spec["rtol"]
    report: dict[str, Any] = {
        "seeds": len(seeds),
        "cases": len(cases),
        "passed": True,
        "max_abs_err": 0.0,
        "max_rel_err": 0.0,
        "mismatch_frac": 0.0,
        "first_mismatch": None,
        "message": "",
        "warnings": [],
    }
    trivial = True
    total = len(cases) * len(seeds)
    for ci, case in enumerate(cases):
        for si, seed in enumerate(seeds):
            progress(phase="correctness", i=ci * len(seeds) + si + 1, n=total)
            ref_fn, cand_fn = build_pair(reference, candidate, case, seed)
            inputs = reference.make_inputs(case, seed)
            with torch.no_grad():
                expected = ref_fn(clone(inputs))
                given = clone(inputs)
                pristine = clone(given)
                with poisoned_allocations():
                    output = cand_fn(given)
            if reference.device.type == "cuda":
                torch.cuda.synchronize()
            trivial = trivial and is_trivial(expected)
            where = f"case {ci + 1} {case or '(defaults)'} seed {seed}"
            if reference.form == "kernelbench":
                changed = inputs_changed(pristine, given)
                if changed:
                    return _fail(report, f"{where}: the candidate modified its input {changed}")
            result = compare(expected, output, atol, rtol)
            if result.passed and reference.form == "gpumode":
                ok, why = reference.check(clone(inputs), output)
                if not ok:
                    result.fail(f"check_implementation: {why}")
            report["max_abs_err"] = max(report["max_abs_err"], result.max_abs_err)
            report["max_rel_err"] = max(report["max_rel_err"], result.max_rel_err)
            report["mismatch_frac"] = max(report["mismatch_frac"], result.mismatch_frac)
            if not result.passed:
                message = f"{where}: {result.message}"
                if looks_like_tf32(result, reference.dtype, spec.get("allow_tf32", False)):
                    message += (
                        f" (relative error {result.max_rel_err:.1e} looks like TF32 rounding: "
                        "set allow_tf32 = true in trialtui.toml if TF32 is acceptable)"
                    )
                report["first_mismatch"] = result.first_mismatch
                return _fail(report, message)
    if trivial:
        report["warnings"].append(
            "the reference output is constant on these inputs: the check cannot tell a right kernel from a trivial one"
        )
    report["launches"] = counter.count
    return report


def _fail(report: dict[str, Any], message: str) -> dict[str, Any]:
    report["passed"] = False
    report["message"] = message
    return report


def time_all(spec, reference, candidate, case, device, progress) -> tuple[dict, dict, list]:
    """Candidate and baselines timed interleaved, same method, same inputs; kernel time from CUPTI."""
    import torch

    from trialtui.runner import timing
    from trialtui.runner.loader import build_pair, clone

    flags = []
    ref_fn, cand_fn = build_pair(reference, candidate, case, 0)
    inputs = reference.make_inputs(case, 0)
    input_bytes = _bytes(inputs)
    props = torch.cuda.get_device_properties(device)
    sets = [inputs]
    if input_bytes * 2 < getattr(props, "L2_cache_size", 0):
        sets.append(reference.make_inputs(case, 1))  # rotate when inputs fit in L2
    env = environment(device)
    cached = matching(spec.get("baseline_cache") or [], env.get("gpu"), env["torch"], spec.get("baselines", ["eager"]))
    cached.update(spec.get("given_baselines") or {})
    fns: dict[str, list] = {"candidate": [_bind(cand_fn, clone(s)) for s in sets]}
    for kind in spec.get("baselines", ["eager"]):
        if kind in cached:
            continue
        fn = ref_fn
        if kind == "compile":
            fn = torch.compile(ref_fn)
        fns[kind] = [_bind(fn, clone(s)) for s in sets]
    bencher = timing.Bencher.for_device(device)
    with torch.no_grad():
        for calls in fns.values():  # warm-up: JIT, autotuning and torch.compile outside the numbers
            for call in calls:
                call()
                call()
        torch.cuda.synchronize()
        use_graph = spec.get("cuda_graph", False)
        if use_graph:
            fns = {name: [timing.cuda_graph_call(c) for c in calls] for name, calls in fns.items()}
        samples = timing.time_interleaved(
            bencher, fns, on_run=lambda r: progress(phase="timing", runs=r), time_cap_s=spec.get("time_cap_s", timing.TIME_CAP_S)
        )
        stats = {name: timing.summarize(s) for name, s in samples.items()}
        progress(phase="kernel_time")
        kernel_us = timing.kernel_time_us(bencher, fns["candidate"])
        host_us = timing.host_wall_us(fns["candidate"][0])
    cand = stats.pop("candidate")
    cand["kernel_us"] = kernel_us
    cand["host_wall_us"] = host_us
    cand["cuda_graph"] = use_graph
    cand["label"] = "GPU, CUDA events, L2 flushed, median"
    if kernel_us and kernel_us > 1.5 * cand["median_us"] + 5.0:
        flags.append(
            flag(
                "side-stream",
                f"GPU kernels ran {kernel_us:.1f} µs inside the call but the events measured "
                f"{cand['median_us']:.1f} µs: work escapes the timed stream (side stream?)",
            )
        )
    baselines = {kind: {**s, "cached": False} for kind, s in stats.items()}
    for kind, s in cached.items():
        baselines[kind] = {**s, "cached": not s.get("given")}
    return cand, baselines, flags


def _bind(fn, inputs):
    return lambda: fn(inputs)


def _bytes(value) -> int:
    import torch

    from trialtui.runner.loader import map_tensors

    total = 0

    def add(t: torch.Tensor) -> None:
        nonlocal total
        total += t.numel() * t.element_size()

    map_tensors(value, add)
    return total


def speedups(cand: dict[str, Any], baselines: dict[str, dict[str, Any]]) -> tuple[dict[str, float], list[dict]]:
    """Speedup per baseline; a tie inside the measured noise band and a >10x win are flagged."""
    result: dict[str, float] = {}
    flags = []
    for kind, base in baselines.items():
        ratio = base["median_us"] / cand["median_us"]
        result[kind] = ratio
        noise = 2 * ((cand.get("rse") or 0) ** 2 + (base.get("rse") or 0) ** 2) ** 0.5
        band = max(noise, _iqr_band(cand), _iqr_band(base))
        if abs(ratio - 1) <= band:
            flags.append(flag("tie", f"vs {kind}: {ratio:.3f}× is inside the noise band ±{band:.1%}: a tie"))
        if ratio > SUSPICIOUS_SPEEDUP:
            flags.append(flag("suspicious", f"vs {kind}: {ratio:.1f}× is above {SUSPICIOUS_SPEEDUP:g}×: suspicious, verify"))
    return result, flags


def _iqr_band(stats: dict[str, Any]) -> float:
    """Half the p20–p80 spread relative to the median."""
    median = stats.get("median_us") or 0
    if not median or stats.get("p20_us") is None:
        return 0.0
    return (stats["p80_us"] - stats["p20_us"]) / 2 / median


def cpu_timing(candidate_call) -> dict[str, Any]:
    samples = []
    for _ in range(3):
        t0 = time.perf_counter()
        candidate_call()
        samples.append((time.perf_counter() - t0) * 1e6)
    from trialtui.runner.timing import summarize

    return {**summarize(samples), "kernel_us": None, "label": CPU_TIMING_LABEL}


def run(spec: dict[str, Any]) -> dict[str, Any]:
    import torch

    from trialtui.runner.loader import BF16_NOTE, Candidate, Reference, build_pair

    progress = Progress(spec.get("progress"))
    device_name = spec.get("device") or ("cuda" if torch.cuda.is_available() else "cpu")
    if device_name == "cuda" and not torch.cuda.is_available():
        return {"version": RESULT_VERSION, "state": "error", "message": "--device cuda asked for, but CUDA is not available"}
    device = torch.device(device_name)
    torch.backends.cuda.matmul.allow_tf32 = bool(spec.get("allow_tf32"))
    torch.backends.cudnn.allow_tf32 = bool(spec.get("allow_tf32"))
    on_gpu = device.type == "cuda"
    cases = spec["bench_cases"] if on_gpu else spec["test_cases"]
    seeds = spec.get("seeds_list") or list(range(spec.get("seeds", 5)))
    result: dict[str, Any] = {
        "version": RESULT_VERSION,
        "state": "error",
        "correctness": None,
        "timing": None,
        "baselines": {},
        "speedup": None,
        "flags": [],
        "env": environment(device),
        "sizes": cases,
        "dtype": spec["dtype"],
        "message": "",
        "measured_at": time.strftime("%Y-%m-%d %H:%M"),
    }
    counter = LaunchCounter()
    counter.install()
    stage = "loading the reference"
    phases = result["phases_s"] = {}
    mark = time.perf_counter()

    def phase(name: str) -> None:
        nonlocal mark
        now = time.perf_counter()
        phases[name] = round(now - mark, 3)
        mark = now

    try:
        reference = Reference(spec, device_name)
        if reference.emulated:
            result["flags"].append(flag("bf16-emulated", BF16_NOTE))
        stage = "importing the candidate"
        candidate = Candidate(spec, spec["candidate"], reference)
        phase("load")
        stage = "checking correctness"
        correctness = check_correctness(spec, reference, candidate, cases, seeds, progress, counter)
        phase("correctness")
        result["correctness"] = correctness
        for warning in correctness.pop("warnings", []):
            result["flags"].append(flag("trivial-reference", warning))
        if not correctness["passed"]:
            result["state"] = "incorrect"
            result["message"] = correctness["message"]
            return result
        if counter.count == 0:
            result["flags"].append(
                flag("no-custom-kernel", "no Triton kernel was launched: this candidate runs PyTorch only")
            )
        result["state"] = "correct"
        stage = "timing"
        if on_gpu:
            cand, baselines, flags = time_all(spec, reference, candidate, cases[0], device, progress)
            result["timing"] = cand
            result["baselines"] = baselines
            result["flags"] += flags
            result["speedup"], more = speedups(cand, baselines)
            result["flags"] += more
            phase("timing")
        else:
            _, cand_fn = build_pair(reference, candidate, cases[0], 0)
            inputs = reference.make_inputs(cases[0], 0)
            with torch.no_grad():
                result["timing"] = cpu_timing(lambda: cand_fn(inputs))
        return result
    except BaseException as exc:  # noqa: BLE001 - the kernel may raise anything, SystemExit included
        if isinstance(exc, KeyboardInterrupt):
            raise
        result["state"] = "error"
        result["speedup"] = None
        result["message"] = f"{stage}: {_describe(exc)}"
        result["traceback"] = traceback.format_exc()[-4000:]
        print(result["traceback"], file=sys.stderr)
        return result


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"the candidate called sys.exit({exc.code!r})"
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    if "out of memory" in first.lower():
        return f"out of memory: {first}"
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def wait_for_job() -> list[str]:
    """A warm child: import what every job needs, then block until the parent sends a job.

    CUDA is not touched here, so the job still gets a fresh context. Output goes to the job's log.
    """
    import torch  # noqa: F401
    import triton  # noqa: F401
    import triton.language  # noqa: F401

    line = sys.stdin.readline().rstrip("\n")
    if not line:
        os._exit(0)  # the parent went away
    spec_path, result_path, log_path = line.split("\t")
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    return [sys.argv[0], spec_path, result_path]


def main(argv: list[str]) -> None:
    if argv[1:] == ["--wait"]:
        argv = wait_for_job()
    serve(run, argv)


if __name__ == "__main__":
    main(sys.argv)
