"""Trace: run a Triton candidate once under Triton's interpreter on CPU tensors, recording every launch.

Each launch is recorded as what `triton.compile` needs to build the same kernel for a GPU
(signature, constexprs, divisibility, num_warps/num_stages) and published to the spec's
`launches` file as soon as the candidate returns, so compiling can start while the output is
compared with the reference: the CPU correctness preview. A helper, not a job: the compile job runs
`run` in a process it forks after importing torch (one torch import for both), and trace_job.py
serves it as a child job of its own.
"""

from __future__ import annotations

import inspect
import itertools
import json
import math
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from trialtui.core.job_spec import TraceSpec
from trialtui.core.result import RESULT_VERSION
from trialtui.runner.candidate_errors import candidate_line, describe_capped
from trialtui.runner.job_progress import Progress
from trialtui.runner.compare import poisoned_allocations

# Launch options the compile child passes on to triton.compile (the rest are kernel arguments).
OPTION_NAMES = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "launch_pdl")
# Exception texts that blame the CPU run (no CUDA, no CPU kernel, the interpreter), not the candidate.
CPU_ONLY_SIGNS = (
    "Torch not compiled with CUDA",
    "Found no NVIDIA driver",
    "No CUDA GPUs are available",
    "CUDA driver",
    "cuda is not available",
    "not implemented for 'Half'",
    "not implemented for 'BFloat16'",
    "interpreter",
    "Interpreter",
)


class Unsupported(ValueError):
    """A launch argument the compile stage cannot rebuild from JSON."""


def encode_constexpr(value: Any) -> Any:
    """A constexpr value as JSON: scalars as is, dtypes and jit functions by name, tuples tagged."""
    import triton.language as tl

    if isinstance(value, tl.constexpr):
        value = value.value
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tl.dtype):
        return {"dtype": value.name}
    if isinstance(value, (tuple, list)):
        return {"tuple": [encode_constexpr(v) for v in value]}
    fn = getattr(value, "fn", None)
    if fn is not None and hasattr(fn, "__qualname__"):
        return {"jit": {"module": fn.__module__, "qualname": fn.__qualname__}}
    raise Unsupported(f"constexpr value {value!r} of type {type(value).__name__}")


def def_line(fn) -> int | None:
    """The line of `def` (not of the first decorator), where compile errors are counted from."""
    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("def ", "async def ")):
            return start + i
    return start


def _specializer():
    """Triton's own argument specialization (types, divisibility by 16, ints equal to 1), or None."""
    from triton.backends.compiler import BaseBackend

    try:
        from triton._C.libtriton import native_specialize_impl
    except ImportError:  # older triton specializes in Python, with another interface
        return None
    return lambda arg, is_const, specialize, align: native_specialize_impl(BaseBackend, arg, is_const, specialize, align)


class LaunchRecorder:
    """Patches the interpreter so each launch leaves a compile recipe; autotuning picks its first config.

    The interpreter cannot time configs, so the autotuner is told the first (pruned) config is the
    fastest: the trace is fast and deterministic, and the recorded config is the one that ran.
    """

    def __init__(self) -> None:
        self.launches: dict[str, dict[str, Any]] = {}
        self.module = None  # the candidate module, once imported: names kernels by their binding
        self.bf16_as_fp32 = False
        self.kernel_error: tuple[str, BaseException] | None = None
        self.skipped: list[str] = []
        self._tuning: list[tuple[str, Any]] = []
        self._specialize = None

    def install(self) -> None:
        from triton.runtime.autotuner import Autotuner, Heuristics
        from triton.runtime.interpreter import InterpretedFunction

        recorder = self
        self._specialize = _specializer()
        interpreted_run = InterpretedFunction.run

        def run(fn, *args, grid, warmup, **kwargs):
            if not warmup:
                recorder.record(fn, args, kwargs, grid)
            try:
                return interpreted_run(fn, *args, grid=grid, warmup=warmup, **kwargs)
            except BaseException as exc:
                recorder.kernel_error = (fn.fn.__name__, exc)
                raise

        InterpretedFunction.run = run
        order = itertools.count()
        Autotuner._bench = lambda self, *args, config, **meta: [float(next(order))] * 3
        Autotuner.run = self._tagged(Autotuner.run, "autotune")
        Heuristics.run = self._tagged(Heuristics.run, "heuristics")

    def _tagged(self, original, kind: str):
        recorder = self

        def run(wrapper, *args, **kwargs):
            recorder._tuning.append((kind, wrapper))
            try:
                return original(wrapper, *args, **kwargs)
            finally:
                recorder._tuning.pop()

        return run

    def failed_kernel(self, exc: BaseException) -> str | None:
        """The kernel whose interpreted run raised `exc` (or an exception it wraps), if any."""
        if self.kernel_error is None:
            return None
        name, raised = self.kernel_error
        for _ in range(16):  # the exception chain, as far as any wrapper goes
            if exc is None or exc is raised:
                break
            exc = exc.__cause__ or exc.__context__
        return name if exc is raised else None

    def record(self, fn, args: tuple, kwargs: dict[str, Any], grid: Any) -> None:
        """Turn one launch into {signature, constexprs, divisible, options}; identical ones are counted."""
        name = fn.fn.__name__
        if self._specialize is None:
            import triton

            self.skipped.append(f"{name}: triton {triton.__version__} lacks native_specialize_impl, "
                                "which the trace reads argument types with")
            return
        try:
            launch = self._recipe(fn, args, kwargs)
        except Unsupported as exc:
            self.skipped.append(f"{name}: {exc}")
            return
        except TypeError:
            return  # arguments that do not bind: the interpreter raises the user-facing error
        key = json.dumps(launch, sort_keys=True, default=str)
        if key in self.launches:
            self.launches[key]["count"] += 1
            return
        launch["grid"] = self._grid(grid, fn, args, kwargs)
        launch["count"] = 1
        self.launches[key] = launch

    def _recipe(self, fn, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
        from triton.runtime.jit import KernelParam

        py_fn = fn.fn
        sig = inspect.signature(py_fn)
        bound = sig.bind(*args, **{k: v for k, v in kwargs.items() if k in sig.parameters})
        bound.apply_defaults()
        no_spec = set(fn.kwargs.get("do_not_specialize") or [])
        no_align = set(fn.kwargs.get("do_not_specialize_on_alignment") or [])
        signature: dict[str, str] = {}
        constexprs: dict[str, Any] = {}
        divisible: list[str] = []
        widened: list[str] = []
        for i, (pname, param) in enumerate(sig.parameters.items()):
            kp = KernelParam(i, param, i in no_spec or pname in no_spec, i in no_align or pname in no_align)
            value = bound.arguments[pname]
            if kp.is_constexpr:
                signature[pname] = "constexpr"
                constexprs[pname] = encode_constexpr(value)
                continue
            if isinstance(value, (tuple, list)):
                raise Unsupported(f"argument {pname} is a tuple")
            ty, attr = self._specialize(value, kp.is_const, not kp.do_not_specialize, not kp.do_not_specialize_on_alignment)
            if kp.annotation_type:
                no_attr = kp.annotation_type == "u1" or kp.annotation_type[:2] in ("fp", "bf")
                ty, attr = kp.annotation_type, (None if no_attr or kp.do_not_specialize else attr)
            if ty == "constexpr":  # ints equal to 1 and None, as the JIT specializes them
                signature[pname] = "constexpr"
                constexprs[pname] = encode_constexpr(attr)
                continue
            if self.bf16_as_fp32 and (ty in ("*fp32", "*kfp32") or ty.startswith("tensordesc<fp32[")):
                ty = ty.replace("fp32", "bf16", 1)  # a TMA descriptor's element type too
                widened.append(pname)
            signature[pname] = ty
            if isinstance(attr, str) and "D" in attr:
                divisible.append(pname)
        options = {k: kwargs[k] for k in OPTION_NAMES if kwargs.get(k) is not None}
        launch = {
            "kernel": py_fn.__name__,
            "module": py_fn.__module__,
            "qualname": py_fn.__qualname__,
            "attr": self._binding(fn),
            "line": def_line(py_fn),
            "signature": signature,
            "constexprs": constexprs,
            "divisible": divisible,
            "options": {"num_warps": 4, "num_stages": 3, **options},
            "tuning": self._tuning_info(),
        }
        if widened:
            launch["bf16_from_fp32"] = widened
        return launch

    def _binding(self, fn) -> str | None:
        """The name the candidate module binds this kernel to (through autotune/heuristics wrappers)."""
        if self.module is None:
            return None
        for name, value in vars(self.module).items():
            for _ in range(8):
                if value is fn:
                    return name
                if value is None or inspect.isfunction(value):
                    break
                value = getattr(value, "fn", None)
        return None

    def _tuning_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {}
        for kind, wrapper in self._tuning:
            if kind == "autotune":
                params = sorted({k for config in wrapper.configs for k in config.kwargs})
                info["autotune"] = {"configs": len(wrapper.configs), "params": params, "key": list(wrapper.keys)}
            else:
                info["heuristics"] = sorted(wrapper.values)
        return info

    @staticmethod
    def _grid(grid: Any, fn, args: tuple, kwargs: dict[str, Any]) -> list[int] | None:
        try:
            if callable(grid):
                grid = grid({**dict(zip(fn.arg_names, args)), **kwargs})
            grid = [int(g) for g in grid]
        except Exception:  # noqa: BLE001 - the grid is a nicety; the launch itself will report errors
            return None
        return (grid + [1, 1])[:3]


def publish(path: str | None, launches: list[dict[str, Any]], skipped: list[str]) -> None:
    """Write the launches file atomically: the compile side polls for it."""
    if not path:
        return
    tmp = Path(path).with_suffix(".tmp")
    tmp.write_text(json.dumps({"launches": launches, "skipped": skipped}, default=str))
    os.replace(tmp, path)


def preview(spec: TraceSpec, reference, case: dict[str, Any], expected: Any, output: Any, inputs: Any) -> dict[str, Any]:
    from trialtui.runner.compare import compare
    from trialtui.runner.tensors import clone

    result = compare(expected, output, spec.atol, spec.rtol, inputs if reference.kind.judges_values else None)
    own = reference.check(clone(inputs), output) if result.passed else None
    if own is not None and not own[0]:
        result.fail(f"check_implementation: {own[1]}")
    return {
        "correct": result.passed,
        "max_abs_err": _finite(result.max_abs_err),
        "max_rel_err": _finite(result.max_rel_err),
        "mismatch_frac": result.mismatch_frac,
        "message": result.message,
        "case": case,
        "seed": 0,
    }


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def run(spec: TraceSpec) -> dict[str, Any]:
    """The trace result: launches, preview, or the stage that failed and why."""
    os.environ["TRITON_INTERPRET"] = "1"  # read when @triton.jit decorates, i.e. at candidate import
    progress = Progress(spec.progress)
    import torch

    from trialtui.runner.judging import random_reference
    from trialtui.runner.layouts import arrange
    from trialtui.runner.loader import Candidate, Reference, build_pair, unshared_note
    from trialtui.runner.tensors import clone

    recorder = LaunchRecorder()
    recorder.install()
    result: dict[str, Any] = {"version": RESULT_VERSION, "state": "error", "launches": [], "preview": None, "message": ""}
    case = spec.test_cases[0] if spec.test_cases else {}
    wire = spec.to_wire()  # what the loader reads
    stage = "reference"
    published = False
    try:
        progress(job="trace", phase="reference")
        reference = Reference(wire, "cpu")
        recorder.bf16_as_fp32 = bool(getattr(reference, "emulated", False))
        stage = "import"
        progress(job="trace", phase="import")
        candidate = Candidate(wire, spec.candidate, reference)
        recorder.module = candidate.module
        stage = "build"
        ref_fn, cand_fn = build_pair(reference, candidate, case, 0)
        stage = "inputs"
        inputs = reference.make_inputs(case, 0)
        stage = "run"
        progress(job="trace", phase="run")
        with torch.no_grad(), poisoned_allocations():
            output = cand_fn(arrange(None, clone(inputs)))  # fenced: a read past an input's end reads NaN
        result["launches"] = list(recorder.launches.values())
        publish(spec.launches, result["launches"], recorder.skipped)
        published = True
        stage = "compare"
        progress(job="trace", phase="compare")
        with torch.no_grad():
            expected = ref_fn(clone(inputs))
        result["preview"] = preview(spec, reference, case, expected, output, inputs)
        random = None if result["preview"]["correct"] else random_reference(ref_fn, None, inputs, spec.atol, spec.rtol)
        if random:  # the reference's fault, not the candidate's: said as the bench will say it
            result["preview"].update(message=random, reference_random=True)
        elif not result["preview"]["correct"]:
            result["preview"]["message"] += unshared_note(getattr(cand_fn, "unshared", None))
        result["state"] = "ok"
        progress(job="trace", phase="done")
    except BaseException as exc:  # noqa: BLE001 - the candidate may raise anything, SystemExit included
        if isinstance(exc, KeyboardInterrupt):
            raise
        result["launches"] = list(recorder.launches.values())
        result["stage"] = stage
        result["message"] = describe_capped(exc)
        result["exception"] = type(exc).__name__
        result["line"] = candidate_line(exc, spec.candidate)
        result["in_kernel"] = recorder.failed_kernel(exc)
        result["cpu_only"] = any(sign in str(exc) for sign in CPU_ONLY_SIGNS)
        result["traceback"] = traceback.format_exc()[-4000:]
        print(result["traceback"], file=sys.stderr)
    finally:
        if not published:
            publish(spec.launches, list(recorder.launches.values()), recorder.skipped)
    result["skipped"] = recorder.skipped
    result["case"] = case
    return result

