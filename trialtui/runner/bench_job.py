"""Child job, the checker: judge a candidate against the reference on every case and seed, then time it if correct.

`python -m trialtui.runner.bench_job SPEC.json RESULT.json`. The reference, its outputs and the
verdict live here; the candidate runs in a process of its own (runner/candidate.py) that receives
inputs and hands back outputs and timings as data. Correctness comes first and a speed number
exists only for a correct candidate. Every failure becomes a result, not a crash.
"""

from __future__ import annotations

import json
import os
import random
import select
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable

from trialtui.core.model import REFERENCE_FAILED
from trialtui.core.result import CPU_TIMING_LABEL, RESULT_VERSION, flag
from trialtui.runner.candidate import describe
from trialtui.core.prctl import seal
from trialtui.runner.candidate_link import CandidateFailed, CandidateProcess, Deadline
from trialtui.runner import heldout
from trialtui.runner.child import serve
from trialtui.runner.prepared import Prepared, prepare, problem_key

SUSPICIOUS_SPEEDUP = 10.0
LIBRARY_SHARE = 0.5  # the candidate's own kernels did less of the timed calls' GPU time than this: `fallback`
# On the CPU one request holds the three calls and its reply: the samples stand unless under a tenth of the checker's figure (a busy machine stretches the reply, never the calls).
CPU_CONFIRM_TOL = 0.9


class Splits:
    """Seconds per step of a phase, summed over cases and seeds (`phases_s`): where a save's time goes."""

    def __init__(self, sync: bool):
        self.sync = sync  # on a GPU the marks wait for the queued work, so each step is charged its own
        self.started = time.perf_counter()
        self.seconds: dict[str, float] = {}

    def mark(self, name: str) -> None:
        if self.sync:
            import torch

            torch.cuda.synchronize()
        now = time.perf_counter()
        self.seconds[name] = round(self.seconds.get(name, 0.0) + now - self.started, 3)
        self.started = now


class Progress:
    """Progress lines for the parent (seed i/n, timing runs), one JSON object per line."""

    def __init__(self, path: str | None):
        self.fh = open(path, "a", buffering=1) if path else None

    def __call__(self, **event: Any) -> None:
        if self.fh:
            self.fh.write(json.dumps(event) + "\n")


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


def _case_list(spec: dict[str, Any], on_gpu: bool) -> list[dict[str, Any]]:
    """CPU: the test sizes. GPU: the test sizes (small, odd shapes that expose masking bugs) and the bench sizes."""
    cases = list(spec["test_cases"])
    if on_gpu:
        cases += [c for c in spec["bench_cases"] if c not in cases]
    return cases


def _higher_precision(reference, ref_model, inputs):
    """The reference again on upcast inputs (float64 under fp32, float32 under fp16/bf16), TF32 off."""
    import copy

    import torch

    from trialtui.runner.compare import HIGHER
    from trialtui.runner.loader import map_tensors

    wide = HIGHER.get(reference.dtype, torch.float64)
    up = map_tensors(inputs, lambda t: t.to(wide) if t.is_floating_point() else t)
    inputs.clear()  # the caller's list: the device keeps one copy of the inputs, the wide one
    was = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        model = copy.deepcopy(ref_model).to(wide)
        with torch.no_grad():
            return model(*up)
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = was


def _tolerance(spec: dict[str, Any], kind) -> tuple[float | None, float | None]:
    """Where the problem's own check judges values (GPU MODE), trialtui's dtype defaults do not apply."""
    if kind.judges_values and not spec.get("explicit_tolerance"):
        return None, None
    return spec["atol"], spec["rtol"]


def check_correctness(spec, reference, link: CandidateProcess, cases, seeds, progress, deadline, facts,
                      prepared=None, splits: Splits | None = None) -> dict[str, Any]:
    """Every case under every seed: inputs made here, the candidate's outputs received as data and judged here.

    A (case, seed) the warm checker prepared (runner/prepared.py) comes with its inputs, outputs and
    truth made ahead; the others are made here, the truth after the candidate's run so that the device
    holds one copy of the inputs at a time.
    """
    import torch

    from trialtui.runner.compare import is_trivial, looks_like_tf32, normwise
    from trialtui.runner.loader import DTYPES, clone

    atol, rtol = _tolerance(spec, reference.kind)
    declared = DTYPES[spec["dtype"]] if reference.emulated else None  # bf16 run as fp32 on the CPU
    device = reference.device.type
    report: dict[str, Any] = {
        "seeds": len(seeds), "cases": len(cases), "passed": True, "max_abs_err": 0.0, "max_rel_err": 0.0,
        "mismatch_frac": 0.0, "first_mismatch": None, "message": "", "warnings": [], "launches": 0,
        "normwise_err": None, "normwise_bound": None, "case_bytes": 0, "prepared": 0,
        "rounding_floor": [],  # (case, seed)s accepted at the dtype's rounding floor (compare.within_rounding_floor)
    }
    trivial = True
    total = len(cases) * len(seeds)
    splits = splits or Splits(sync=False)
    for ci, case in enumerate(cases):
        for si, seed in enumerate(seeds):
            progress(phase="correctness", i=ci * len(seeds) + si + 1, n=total)
            where = f"case {ci + 1} {case or '(defaults)'} seed {seed}"
            ready = prepared.get(ci, seed) if prepared is not None else None
            if ready is not None:
                report["prepared"] += 1
                inputs, expected, ref_model = ready.inputs, ready.expected, None
                payload: dict[str, Any] = {"inputs": inputs, "seed": seed, **ready.payload}
            else:
                inputs = reference.make_inputs(case, seed)
                call = reference.call(case, seed)
                payload = {"inputs": inputs, "seed": seed, **call.payload}
                ref_model = call.model
                with torch.no_grad():
                    expected = call.fn(clone(inputs))
                del call
            splits.mark("correctness.inputs_and_reference")
            out_bytes = _bytes(expected)
            report["case_bytes"] = max(report["case_bytes"], _bytes(inputs) + out_bytes)
            reply, output = link.request(
                "run", payload, timeout_s=deadline.left(), into=device, max_bytes=64 * out_bytes + 2**20,
                check_inputs=reference.kind.checks_input_mutation, case=case,
            )
            del payload
            splits.mark("correctness.candidate_and_transfer")
            facts.see(reply)
            report["launches"] += int(reply.get("launches") or 0)
            truth = ready.truth if ready is not None else None
            skipped = ready.skipped if ready is not None else None
            if ref_model is not None:  # a module to run again in float64 (KernelBench)
                try:
                    truth = _higher_precision(reference, ref_model, inputs)
                except Exception as exc:  # noqa: BLE001 - e.g. an op with no float64 kernel
                    skipped = describe(exc)
            if skipped:
                note = f"normwise check skipped: the reference does not run in higher precision ({skipped})"
                if note not in report["warnings"]:
                    report["warnings"].append(note)
            del ref_model
            splits.mark("correctness.truth")
            trivial = trivial and is_trivial(expected)
            if reply.get("input_changed"):
                return _fail(report, f"{where}: the candidate modified its input {reply['input_changed']}")
            result = judge(spec, reference, expected, output, inputs, truth, report["rounding_floor"], where)
            norm = normwise(expected, output, truth, spec.get("allow_tf32", False), declared) if truth is not None and result.passed else None
            if norm is not None:
                report["normwise_err"] = max(report["normwise_err"] or 0.0, norm.err)
                report["normwise_bound"] = norm.bound if report["normwise_bound"] is None else min(report["normwise_bound"], norm.bound)
                if not norm.passed:
                    result.fail(norm.message())
            splits.mark("correctness.compare")
            report["max_abs_err"] = max(report["max_abs_err"], result.max_abs_err)
            report["max_rel_err"] = max(report["max_rel_err"], result.max_rel_err)
            report["mismatch_frac"] = max(report["mismatch_frac"], result.mismatch_frac)
            tf32 = atol is not None and looks_like_tf32(result, expected, spec.get("allow_tf32", False), declared)
            del inputs, expected, output, truth
            if not result.passed:
                message = f"{where}: {result.message}"
                if tf32:
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
    return report


def _fail(report: dict[str, Any], message: str) -> dict[str, Any]:
    report["passed"] = False
    report["message"] = message
    return report


class Facts:
    """What the candidate's process reported on the side (patched timers, the reference imported): flags."""

    def __init__(self) -> None:
        self.patched: set[str] = set()
        self.imported_reference = False

    def see(self, reply: dict[str, Any]) -> None:
        patched = reply.get("patched") or []
        if isinstance(patched, list):
            self.patched.update(str(p)[:100] for p in patched[:50])
        self.imported_reference = self.imported_reference or bool(reply.get("imported_reference"))

    def flags(self) -> list[dict[str, str]]:
        flags = []
        if self.patched:
            flags.append(flag("timing-patched", f"the candidate replaced {', '.join(sorted(self.patched))}: its timing cannot be trusted"))
        if self.imported_reference:
            flags.append(flag("fallback", "the candidate imported the problem's reference.py: it may be running the reference"))
        return flags


def time_all(spec, reference, link: CandidateProcess, case, device, progress, deadline, facts,
             splits: Splits | None = None, own_kernels: bool = True) -> tuple[dict, dict, list]:
    """Candidate (in its process) and baselines (here) timed in alternating batches, same method, same inputs.

    The baselines never run where the candidate can reach them; the candidate's own event times are
    cross-checked against this process's wall clock around each of its batches. `own_kernels`: the
    correctness runs launched kernels of the candidate's own, so the timed calls must too.
    """
    import torch

    from trialtui.core.roofline import impossible_message, physical_floor
    from trialtui.runner import timing
    from trialtui.runner.timed_batch import KEEP_BYTES
    from trialtui.runner.timed_checker import TimedCalls

    flags = []
    splits = splits or Splits(sync=True)
    inputs = reference.make_inputs(case, 0)
    props = torch.cuda.get_device_properties(device)
    sets = [inputs]
    if _bytes(inputs) * 2 < getattr(props, "L2_cache_size", 0):
        sets.append(reference.make_inputs(case, 1))  # rotate when inputs fit in L2
    ref_call = reference.call(case, 0)
    payload: dict[str, Any] = {"input_sets": sets, "seed": 0, **ref_call.payload}
    ref_fn = ref_call.fn
    use_graph = bool(spec.get("cuda_graph", False))
    layout, work = _work(ref_call, sets[0])  # the sets are one case: one output structure, one amount of work
    batches = layout.batch_sizes(min(KEEP_BYTES, props.total_memory // 16))
    splits.mark("timing.work")
    timed = TimedCalls(link, deadline, sets, ref_fn, layout, see=facts.see, keep=batches[-1], judge=lambda expected, output, inputs, where: check_timed(
        spec, reference, expected, output, inputs, lambda: _timing_truth(reference, ref_call, inputs), where))
    with timed:  # the ring of timed outputs is freed however timing ends
        reply, _ = link.request("prepare_timing", payload, timeout_s=deadline.left(), into="cuda", cuda_graph=use_graph,
                                layout=layout.to_wire(), keep=batches[-1], ring=timed.ring_wire)
        splits.mark("timing.prepare_candidate")
        facts.see(reply)
        if reply.get("launches") == 0 and own_kernels:
            flags.append(flag("fallback", f"no kernel of the candidate's own ran at the timed size {case or '(defaults)'} "
                              "(it did at the test sizes): it falls back to PyTorch or a library there, so the number is not its kernel's"))
        given = dict(spec.get("given_baselines") or {})
        del payload  # the candidate's process has its own copy of the sets; eager and compile share these
        fns: dict[str, list] = {}
        for kind in spec.get("baselines", ["eager"]):
            if kind in given:
                continue
            fn = torch.compile(ref_fn) if kind == "compile" else ref_fn
            fns[kind] = [_bind(fn, s) for s in sets]
        bencher = timing.Bencher.for_device(device)
        with torch.no_grad():
            for calls in fns.values():  # warm-up: torch.compile and cuDNN autotuning outside the numbers
                for call in calls:
                    call()
                    call()
            torch.cuda.synchronize()
            if use_graph:
                fns = {name: [timing.cuda_graph_call(c) for c in calls] for name, calls in fns.items()}
            flush_us = bencher.flush_cost_us()

            splits.mark("timing.baselines_warm_up")
            overhead_us = timed.overhead_us(bencher, batches)
            splits.mark("timing.overhead")

            def candidate_batch(start: int, n: int) -> tuple[list[float], float]:
                batch = timed.batch(start, n)
                return batch.samples, batch.wall_us

            def first_number(so_far: dict[str, list[float]], walls_so_far: list) -> None:
                progress(**timing.preliminary(so_far))

            splits.mark("timing.prepare")
            samples, walls = timing.time_alternating(
                bencher, candidate_batch, fns, on_run=lambda r: progress(phase="timing", runs=r),
                time_cap_s=spec.get("time_cap_s", timing.TIME_CAP_S), on_preliminary=first_number, batches=batches,
            )
            splits.mark("timing.loop")
            stats = {name: timing.summarize(s) for name, s in samples.items()}
            progress(phase="kernel_time")
            reply, _ = link.request("kernel_time", timeout_s=deadline.left(), into="cuda")
            facts.see(reply)
            splits.mark("timing.kernel_time")
    cand = timing.confirmed_stats(stats.pop("candidate"), walls, overhead_us)
    cand["kernel_us"] = _number(reply.get("kernel_us"))
    cand["host_wall_us"] = _number(reply.get("host_wall_us"))
    cand["cuda_graph"] = use_graph
    cand["label"] = ("GPU, CUDA events, L2 flushed, median" if cand["confirmed"] else
                     "GPU, the checker's clock per call, L2 flushed, median (the candidate's own events were not confirmed)")
    cand["peak_mem_bytes"] = _number(reply.get("peak_mem_bytes"))
    split = _kernel_split(reply.get("kernels"))
    cand["kernels"] = split
    if split is not None and split["own_share"] < LIBRARY_SHARE:
        names = ", ".join(name.split("(")[0][:60] for name, _ in split["library_top"][:3])
        flags.append(flag("fallback", f"library kernels did {1 - split['own_share']:.0%} of the GPU time of the timed "
                          f"calls ({names}); the candidate's own kernels {split['own_share']:.0%}: the number is "
                          "mostly not its kernel's"))
    cand["checker_wall_us_per_call"] = timing.wall_per_call(walls)
    cand["checker_us_per_call"] = timing.checker_per_call_us(walls)
    cand["flush_us"] = flush_us
    cand["overhead_us"] = overhead_us  # per call besides the call (flush, new inputs, the output's copies): off the checker's clock
    cand["checked_calls"] = sum(n for _, n, _ in walls)  # every timed call's output was judged
    kernel_us = cand["kernel_us"]
    if kernel_us and kernel_us > 1.5 * cand["median_us"] + 5.0:
        flags.append(
            flag(
                "side-stream",
                f"GPU kernels ran {kernel_us:.1f} µs inside the call but the events measured "
                f"{cand['median_us']:.1f} µs: work escapes the timed stream (side stream?)",
            )
        )
    fastest = min((b["median_us"] for b in [*stats.values(), *given.values()] if b.get("median_us")), default=None)
    if fastest is not None and cand["median_us"] < fastest:  # no floor lies above a baseline that ran the work
        work["flops"] = _flops(ref_call, sets[0])
    floor = physical_floor(work["flops"], work["min_bytes"], spec["dtype"], props.name, bool(spec.get("allow_tf32")))
    cand["work"] = {**work, "floor_us": floor.floor_us if floor else None, "floor_gpu": floor.gpu if floor else None}
    impossible = impossible_message(floor, cand["median_us"]) if floor else None
    if impossible:
        flags.append(flag("impossible", impossible))
    mismatch = timing.wall_mismatch(walls, (cand.get("claimed") or cand)["median_us"], overhead_us)
    if mismatch:
        flags.append(flag("timing-mismatch", mismatch))
    baselines = {kind: {**s, "cached": False} for kind, s in stats.items()}
    for kind, s in given.items():
        baselines[kind] = {**s, "cached": False}
    return cand, baselines, flags


def _kernel_split(value: Any) -> dict[str, Any] | None:
    """The candidate's process's kernel split (timing.kernel_split), checked as data."""
    if not isinstance(value, dict):
        return None
    own, library, share = (_number(value.get(k)) for k in ("own_us", "library_us", "own_share"))
    if own is None or library is None or share is None or not 0 <= share <= 1:
        return None
    top = [[str(n)[:120], float(us)] for n, us in (value.get("library_top") or [])[:5]
           if isinstance(us, (int, float)) and not isinstance(us, bool)]
    return {"own_us": own, "library_us": library, "own_share": share, "library_top": top}


def _work(ref_call, inputs) -> tuple[Any, dict[str, float]]:
    """The reference once at the timed size: its output's layout (the timed calls' slots) and the least
    traffic any kernel must make (every input and weight read once, every output written once)."""
    import torch

    from trialtui.runner.loader import clone
    from trialtui.runner.timed_batch import Layout

    model = ref_call.model
    weights = list(model.parameters()) + list(model.buffers()) if model is not None else []
    with torch.no_grad():
        output = ref_call.fn(clone(inputs))
    return Layout.of_output(output), {"flops": 0.0, "min_bytes": float(_bytes(inputs) + _bytes(weights) + _bytes(output))}


def _flops(ref_call, inputs) -> float:
    """The reference's FLOPs at the timed size, counted by torch; only a candidate faster than every
    baseline asks (no floor lies above a baseline that did the work)."""
    import torch
    from torch.utils import flop_counter

    from trialtui.runner.loader import clone

    _count_without_dynamo(flop_counter)
    with torch.no_grad(), flop_counter.FlopCounterMode(display=False) as counter:
        ref_call.fn(clone(inputs))
    return float(counter.get_total_flops())


def _count_without_dynamo(flop_counter) -> None:
    """torch wraps its counting mode's dispatch so that dynamo never traces it, and that wrapper imports
    torch._dynamo on first use: 5 s on a 2-core CPU, 2.3 s on the H200 (a cold bench of a softmax that
    beat eager spent 3.7 s of its timing phase after its last step, 2026-12-02). Nothing here is compiled, so the wrapper is handed the function
    itself as its dynamo-disabled form (where this torch has the wrapper; else it pays the import)."""
    mode = getattr(flop_counter, "_FlopCounterMode", None)
    raw = getattr(getattr(mode, "__torch_dispatch__", None), "__wrapped__", None)
    if raw is not None and getattr(raw, "__dynamo_disable", None) is None:
        raw.__dynamo_disable = raw


def judge(spec, reference, expected, output, inputs, truth, floor_notes: list[str] | None = None, where: str = ""):
    """One output against the reference's, by the same rules for untimed and timed calls: the tolerance,
    the dtype's rounding floor against the higher-precision truth, the problem's own check."""
    from trialtui.runner.compare import Comparison, compare, within_rounding_floor
    from trialtui.runner.loader import clone

    atol, rtol = _tolerance(spec, reference.kind)
    result = compare(expected, output, atol, rtol)
    if not result.passed and atol is not None and truth is not None and within_rounding_floor(expected, output, truth, atol, rtol):
        if floor_notes is not None:  # every value off eager is no farther from the truth than eager is, plus a step
            floor_notes.append(f"{where}: {result.message}")
        result = Comparison()
    own = reference.check(clone(inputs), output) if result.passed else None
    if own is not None and not own[0]:
        result.fail(f"check_implementation: {own[1]}")
    return result


def check_timed(spec, reference, expected, output, inputs, truth_of: Callable[[], Any], where: str) -> None:
    """A timed call's output against the reference's for the same input (on a GPU, made new for that call):
    a candidate that computes something else when it is timed, or hands back an answer it kept, is
    incorrect, whatever its untimed calls returned. Within the tolerance at once is a pass (1.5 ms for
    256 MB on the H200); anything else gets the full judge, with the higher-precision truth made then."""
    atol, rtol = _tolerance(spec, reference.kind)
    from trialtui.runner.compare import close_at_once

    if atol is not None and not reference.kind.judges_values and close_at_once(expected, output, atol, rtol):
        return
    result = judge(spec, reference, expected, output, inputs, truth_of())
    if not result.passed:
        raise CandidateFailed(f"{where} differs from the reference's output for the same input, though its "
                              f"untimed calls passed: it computes something else when timed ({result.message})",
                              state="incorrect")


def _timing_truth(reference, call, inputs):
    """The higher-precision run for a timing input set (KernelBench's module), or None (GPU MODE, no float64 kernel)."""
    if call.model is None:
        return None
    try:
        return _higher_precision(reference, call.model, list(inputs))  # a copy of the list: it is emptied
    except Exception:  # noqa: BLE001 - the timed check then holds to the tolerance alone
        return None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


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


def run(spec: dict[str, Any]) -> dict[str, Any]:
    import torch

    from trialtui.runner.loader import BF16_NOTE, Reference

    seal()
    # first, before any CUDA call or the reference: on the CPU the candidate's process is a fork of this one
    link = _READY.pop() if _READY else CandidateProcess(fork=_JOB_PROCESS)  # a new one imports torch while the reference loads here
    progress = Progress(spec.get("progress"))
    deadline = Deadline(float(spec.get("timeout_s", 120)))
    device_name = spec.get("device") or ("cuda" if torch.cuda.is_available() else "cpu")
    if device_name == "cuda" and not torch.cuda.is_available():
        link.close()
        return {"version": RESULT_VERSION, "state": "error", "message": "--device cuda asked for, but CUDA is not available"}
    device = torch.device(device_name)
    if device.type == "cuda":
        link.warm_up()  # this job holds the lane: the candidate's context is made while the reference loads
    torch.backends.cuda.matmul.allow_tf32 = bool(spec.get("allow_tf32"))
    torch.backends.cudnn.allow_tf32 = bool(spec.get("allow_tf32"))
    on_gpu = device.type == "cuda"
    cases = _case_list(spec, on_gpu)
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
        "sizes": spec["bench_cases"][:1] if on_gpu else cases[:1],  # what the timing ran at: the label's sizes
        "checked_sizes": cases,
        "dtype": spec["dtype"],
        "message": "",
        "measured_at": time.strftime("%Y-%m-%d %H:%M"),
    }
    stage = "starting the candidate's process"
    phases = result["phases_s"] = {}
    mark = time.perf_counter()

    def phase(name: str) -> None:
        nonlocal mark
        now = time.perf_counter()
        phases[name] = round(now - mark, 3)
        mark = now

    facts = Facts()
    splits: Splits | None = None
    ledger = MemoryLedger(device)
    prepared = _PREPARED.pop() if _PREPARED else None
    if prepared is not None and prepared.key != problem_key(spec):
        prepared = None  # another problem part, or the reference's files changed since
    result["prepared"] = len(prepared.cases) if prepared is not None else 0
    try:
        stage = "loading the reference"
        reference = prepared.reference if prepared is not None else Reference(spec, device_name)
        if reference.emulated:
            result["flags"].append(flag("bf16-emulated", BF16_NOTE))
        stage = "importing the candidate"
        reply, _ = link.request(
            "load", timeout_s=deadline.left(), candidate=spec["candidate"], candidate_as=spec.get("candidate_as"),
            entry_point=spec["entry_point"],
            form=reference.form, device=device_name, dtype=str(reference.dtype).removeprefix("torch."),
            allow_tf32=bool(spec.get("allow_tf32")), reference=str(Path(spec["reference"]).resolve()),
            support_files=spec.get("support_files", []),
        )
        facts.see(reply)
        phase("load")
        stage = "checking correctness"
        splits = Splits(sync=on_gpu)
        if spec.get("heldout"):  # cases derived at finalize or on demand (runner/heldout.py), each on its own
            correctness = heldout.check_each(spec, reference, link, deadline, facts, check_correctness)
        else:
            correctness = check_correctness(spec, reference, link, cases, seeds, progress, deadline, facts, prepared, splits)
        del prepared
        phase("correctness")
        result["correctness"] = correctness
        for warning in correctness.pop("warnings", []):
            code = "trivial-reference" if "constant" in warning else "normwise-skipped"
            result["flags"].append(flag(code, warning))
        if not correctness["passed"]:
            result["state"] = "incorrect"
            result["message"] = correctness["message"]
            return result
        if correctness["launches"] == 0:
            result["flags"].append(
                flag("no-custom-kernel", "no kernel of the candidate's own was launched (no Triton kernel, no call "
                     "into a CUDA extension that defines a __global__ kernel): it runs PyTorch or a library only")
            )
        if spec.get("correctness_only"):
            result["state"] = "correct"
            return result
        ledger.close_phase(stage, link, deadline)
        stage = "timing"
        if on_gpu:
            splits.started = time.perf_counter()
            cand, baselines, flags = time_all(spec, reference, link, spec["bench_cases"][0], device, progress, deadline,
                                              facts, splits, own_kernels=correctness["launches"] > 0)
            result["timing"] = cand
            result["baselines"] = baselines
            result["flags"] += flags
            result["speedup"], more = speedups(cand, baselines)
            result["flags"] += more
            phase("timing")
        else:
            result["timing"] = _cpu_timing(spec, reference, link, cases[0], deadline, facts)
        result["state"] = "correct"
        return result
    except CandidateFailed as exc:
        result["state"] = exc.state
        result["speedup"] = None
        result["message"] = f"{stage}: {exc}"
        if exc.state == "timeout":
            result["message"] = f"{stage}: timed out after {spec.get('timeout_s', 120):g} s; {exc}"
        if exc.traceback:
            result["traceback"] = exc.traceback
        return result
    except BaseException as exc:  # noqa: BLE001 - the reference may raise anything too
        if isinstance(exc, KeyboardInterrupt):
            raise
        result["state"] = "error"
        result["speedup"] = None
        result["message"] = f"{stage}: {describe(exc)}"
        if stage == "loading the reference":  # the problem's failure, not the candidate's
            result[REFERENCE_FAILED] = True
        result["traceback"] = traceback.format_exc()[-4000:]
        print(result["traceback"], file=sys.stderr)
        return result
    finally:
        result["flags"] += facts.flags()
        if splits is not None:
            phases.update(splits.seconds)
        phases.update(link.breakdown())
        ledger.close_phase(stage, link, deadline)
        ledger.record(result)
        link.close(wait=False)


class MemoryLedger:
    """Peak GPU memory per phase, this process's plus the candidate's, beside one case's inputs and outputs.

    Phases are separated by resetting both processes' peak counters, so a phase's sum is a true upper
    bound of what the job held at once during it; the job's peak is the largest phase sum.
    """

    def __init__(self, device) -> None:
        self.device = device
        self.phases: dict[str, dict[str, Any]] = {}

    def close_phase(self, name: str, link: CandidateProcess, deadline: Deadline) -> None:
        import torch

        if self.device.type != "cuda":
            return
        checker = torch.cuda.max_memory_allocated(self.device)
        torch.cuda.reset_peak_memory_stats(self.device)
        candidate = None
        if link.process.poll() is None:
            try:
                reply, _ = link.request("peak", timeout_s=min(5.0, deadline.left()))
                candidate = _number(reply.get("peak_mem_bytes"))
            except CandidateFailed:
                candidate = None
        self.phases[name] = {"checker_bytes": checker, "candidate_bytes": candidate, "total_bytes": checker + int(candidate or 0)}

    def record(self, result: dict[str, Any]) -> None:
        if not self.phases:
            return
        case_bytes = (result.get("correctness") or {}).get("case_bytes")
        peak = max(p["total_bytes"] for p in self.phases.values())
        result["memory"] = {"phases": self.phases, "case_bytes": case_bytes,
                            "peak_over_case": round(peak / case_bytes, 2) if case_bytes else None}
        result["peak_mem_bytes"] = peak


def _cpu_timing(spec, reference, link: CandidateProcess, case, deadline, facts: Facts) -> dict[str, Any]:
    """Three host-timed calls in the candidate's process: a CPU figure, labelled as such, never a GPU number.

    Its samples are claims: they stand only where the checker's own clock around the request bears
    them out (runner/timing.py, confirmed_stats); the timed calls' outputs are checked.
    """
    import torch

    from trialtui.runner.loader import clone
    from trialtui.runner.timing import confirmed_stats, summarize

    inputs = reference.make_inputs(case, 0)
    call = reference.call(case, 0)
    with torch.no_grad():
        expected = call.fn(clone(inputs))
    payload: dict[str, Any] = {"inputs": inputs, "seed": 0, **call.payload}
    reply, _ = link.request("cpu_prepare", payload, timeout_s=deadline.left())
    facts.see(reply)
    t0 = time.perf_counter()
    reply, outputs = link.request("cpu_time", timeout_s=deadline.left(), max_bytes=2 * 64 * _bytes(expected) + 2**20)
    wall_us = (time.perf_counter() - t0) * 1e6
    facts.see(reply)
    if not isinstance(outputs, list) or len(outputs) != 3:
        raise CandidateFailed("the candidate's process did not send the outputs of its timed calls")
    for where, output in zip(("timed call 1", "timed call 2", "timed call 3"), outputs):
        check_timed(spec, reference, expected, output, inputs, lambda: _timing_truth(reference, call, inputs), where)
    samples = [float(x) for x in reply.get("samples") or [] if isinstance(x, (int, float)) and x >= 0][:3] or [0.0]
    stats = confirmed_stats(summarize(samples), [(wall_us, len(samples), samples)], 0.0, tol=CPU_CONFIRM_TOL)
    return {**stats, "kernel_us": None, "label": CPU_TIMING_LABEL}


# what a warm checker imports before it waits; a GPU's also torch._dynamo (2.3 s on the H200), which a
# `compile` baseline needs, and the FLOP counter (the CPU's checkers time nothing on a GPU)
WARM_IMPORTS = ("torch", "triton", "triton.language") + (
    ("torch._dynamo", "torch.utils.flop_counter") if os.environ.get("TRITON_INTERPRET") != "1" else ())
_READY: list[CandidateProcess] = []
_PREPARED: list[Prepared] = []
_JOB_PROCESS = False  # True in `python -m trialtui.runner.bench_job`: nothing but imports has run before the job


def prewarm() -> None:
    """A warm checker starts its job's candidate process at once (before any CUDA call or reference:
    on the CPU it is a fork of this process), so that process's imports are done too. Nothing touches
    the GPU here: a warm checker starts while another job may be timing on it; its CUDA contexts, Triton
    launch and CUPTI wait for the engine's `prepare`, sent only while it holds the lane."""
    if not _READY:
        _READY.append(CandidateProcess(fork=_JOB_PROCESS))


def _gpu_job() -> bool:
    """Decided before the spec is read: jobs for the interpreter (the CPU) carry TRITON_INTERPRET=1."""
    return os.environ.get("TRITON_INTERPRET") != "1"


def prepare_problem(message: dict[str, Any]) -> None:
    """The engine's `prepare` line (the lane is idle): everything of the next job that is not the candidate's.

    Ends with a `prepared` progress line: the engine holds the lane until it comes.
    """
    import torch

    started = time.perf_counter()
    spec = message["prepare"]
    on_gpu = (spec.get("device") or ("cuda" if torch.cuda.is_available() else "cpu")) == "cuda"
    done = None
    if not on_gpu or torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = bool(spec.get("allow_tf32"))
        seeds = spec.get("seeds_list") or list(range(spec.get("seeds", 5)))
        done = prepare(spec, _case_list(spec, on_gpu), seeds, _higher_precision, _bytes, _READY[0] if _READY else None,
                       idle=lambda: not select.select([sys.stdin], [], [], 0)[0])  # no spec waits yet
    _PREPARED[:] = [done] if done is not None else []
    if _READY and _READY[0].process.poll() is not None:  # the candidate's process died making its context
        _READY.pop().close()  # the job starts a fresh one
    progress = Progress(message.get("progress"))
    progress(phase="prepared", cases=len(done.cases) if done else 0, held_bytes=done.held_bytes if done else 0,
             seconds=round(time.perf_counter() - started, 3))
    if progress.fh is not None:
        progress.fh.close()


def main(argv: list[str]) -> None:
    global _JOB_PROCESS
    _JOB_PROCESS = True
    seal()  # before any process of the job exists
    if _gpu_job():  # the candidate's interpreter imports torch beside this one's: 3 s off a cold GPU job
        _READY.append(CandidateProcess(fork=False))
    serve(run, argv, prewarm=prewarm, prepare=prepare_problem, warm_imports=WARM_IMPORTS)


if __name__ == "__main__":
    main(sys.argv)
