"""The candidate's process: imports the candidate, runs it on inputs it is sent, sends outputs and times back.

`python -m trialtui.runner.candidate`, started by the checker (bench_job). It holds no reference,
no reference output, no result path and no verdict: its protocol pipes are its only link to the
checker, and what it sends is data the checker checks. The candidate's own prints go to the log
(stdout is moved onto stderr before the candidate is imported).
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from typing import Any, Callable

from trialtui.runner.candidate_errors import describe, where

RAISED_UNDER_RECORDER = "(the call raised under the op recorder)"
NATIVE_UNDER_RECORDER = "(the call ran compiled code of its own, inside which the op recorder sees nothing)"
OPS = ("ready", "load", "run", "prepare_timing", "time", "time_gated", "time_done", "kernel_time", "cpu_prepare", "cpu_time",
       "peak")


class LaunchCounter:
    """Counts Triton kernel launches, compiled or interpreted: a candidate with none is flagged."""

    def __init__(self) -> None:
        self.count = 0
        self.native = 0  # calls into the candidate's own compiled extensions (runner/cuda_launches.py)
        self.own_names: set[str] = set()  # kernels of the candidate's own (not torch.compile's, not a library's)
        self.homes: tuple[str, ...] = ()  # the candidate's directories: a Triton kernel defined under one is its own

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
                fn = getattr(self, "fn", None)
                code = getattr(fn, "__code__", None)
                if code is not None and counter.homes and os.path.realpath(code.co_filename).startswith(counter.homes):
                    counter.own_names.add(fn.__name__)
                return __original(self, *args, **kwargs)

            cls.run = run


class Integrity:
    """The timing functions as they were before the candidate was imported; names what it replaced."""

    def __init__(self) -> None:
        import torch

        self.watched: dict[str, tuple[Any, str, Any]] = {}
        for owner, attr in self._targets(torch):
            self.watched[f"{getattr(owner, '__name__', owner)}.{attr}"] = (owner, attr, getattr(owner, attr, None))

    @staticmethod
    def _targets(torch) -> list[tuple[Any, str]]:
        import time as time_module

        targets = [
            (torch.cuda, "synchronize"), (torch.cuda, "Event"), (torch.cuda.Event, "record"),
            (torch.cuda.Event, "elapsed_time"), (torch.cuda.Event, "synchronize"), (torch.cuda, "Stream"),
            (torch.cuda, "current_stream"), (torch.cuda, "graph"), (torch.cuda.CUDAGraph, "replay"),
            (torch.Tensor, "zero_"), (torch, "empty"), (time_module, "perf_counter"),
            (time_module, "perf_counter_ns"), (time_module, "monotonic"), (time_module, "time"),
        ]
        try:
            import torch.profiler as profiler

            targets.append((profiler, "profile"))
        except ImportError:
            pass
        return targets

    def patched(self) -> list[str]:
        return sorted(name for name, (owner, attr, original) in self.watched.items() if getattr(owner, attr, None) is not original)


class Steps:
    """Seconds per step of one request, sent back with its reply for the phase breakdown."""

    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.seconds: dict[str, float] = {}

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = round(now - self.started, 4)
        self.started = now


class Session:
    """State of one job in the candidate's process: the imported module and the bound timing calls."""

    def __init__(self, channel) -> None:
        self.channel = channel
        self.module = None
        self.load: dict[str, Any] = {}
        self.counter = LaunchCounter()
        self.integrity: Integrity | None = None
        self.calls: list[Callable[[], Any]] = []
        self.input_sets: list[Any] = []
        self.flush = None
        self.imported_reference = False
        self.runs = 0
        self.library_ops: set[str] = set()
        self.mapped = None  # the checker's ring, mapped here (runner/cuda_ipc.Mapped)
        self.landing = None  # the checker's landing pad, mapped here (runner/landing.slots_of)
        self.gate = None  # the timed batches start on the checker's go (runner/go_gate.py)
        self.queued: tuple[int, list, str | None] | None = None  # a gated batch on its way: (n, event pairs, mismatch)
        self.eager_calls: list[Callable[[], Any]] = []
        self.captured = None  # the timed calls as CUDA graphs (runner/timed_batch.capture), where they could be captured

    # -- operations ---------------------------------------------------------------------------
    def op_ready(self, msg: dict[str, Any], payload: Any) -> tuple[dict[str, Any], Any]:
        """Before any candidate is loaded: make the CUDA context and launch Triton once. CUPTI is never
        started here: its first start held a warm lane's next save 3.7-5.3 s on the H200 (2026-12-02, saves
        every 5 s), and a cold bench never had it; `trialtui profile` measures kernel time in a process the
        candidate does not control."""
        import torch

        if msg.get("device") == "cuda" and torch.cuda.is_available():
            torch.empty(1, device="cuda")  # the context
            try:
                from trialtui.runner.triton_warm import launch_once

                launch_once()
            except Exception as exc:  # noqa: BLE001 - only a warm-up: the candidate's own launch says what is wrong
                print(f"trialtui: Triton's warm-up launch failed: {describe(exc)}", file=sys.stderr)
        return {}, None

    def set_homes(self, msg: dict[str, Any]) -> None:
        """Where the candidate's own kernels are defined: the snapshot's directory, and the problem's, which a
        snapshot runs as (loader.load_module), so its kernels' code names that one (for want of it an engine's
        saves were flagged `fallback`, their own kernel counted as a library's: H200, 2026-12-02)."""
        self.counter.homes = tuple(os.path.dirname(os.path.realpath(p)) + os.sep
                                   for p in (msg["candidate"], msg.get("candidate_as")) if p)

    def op_load(self, msg: dict[str, Any], payload: Any) -> tuple[dict[str, Any], Any]:
        import torch

        from trialtui.runner.languages import install_launch_counter
        from trialtui.runner.loader import Reference, load_module

        self.load = msg
        self.device = torch.device(msg["device"])
        self.dtype = getattr(torch, msg["dtype"])
        torch.backends.cuda.matmul.allow_tf32 = bool(msg.get("allow_tf32"))
        torch.backends.cudnn.allow_tf32 = bool(msg.get("allow_tf32"))
        self.set_homes(msg)
        self.counter.install()
        install_launch_counter(msg["candidate"], self.counter)  # launches Triton's JIT does not see (CUDA C++)
        self.integrity = Integrity()
        Reference.importable(msg["reference"], msg.get("support_files", []))  # `from task import ...`
        self.module = load_module(msg["candidate"], "trialtui_candidate", msg.get("candidate_as"))
        if not hasattr(self.module, msg["entry_point"]):
            raise AttributeError(f"candidate defines no {msg['entry_point']}")
        return self.facts(), None

    def facts(self, scan: bool = False) -> dict[str, Any]:
        """Side facts for the checker's flags: timers replaced, and (when `scan`) the reference's code loaded."""
        if scan and not self.imported_reference:
            self.imported_reference = self._reference_loaded()
        return {"patched": self.integrity.patched() if self.integrity else [], "imported_reference": self.imported_reference}

    def describe(self, exc: BaseException) -> str:
        """A failure's one line, led by where in the candidate's own file it happened (`kernel.py:24 in
        forward`); the log has the whole traceback."""
        at = where(exc, tuple(p for p in (self.load.get("candidate"), self.load.get("candidate_as")) if p))
        return f"{at}: {describe(exc)}" if at else describe(exc)

    def _reference_loaded(self) -> bool:
        """Any live function whose code comes from the problem's reference.py: the candidate runs the reference."""
        import gc
        import types

        reference = self.load.get("reference") or ""
        name = os.path.basename(reference)
        for obj in gc.get_objects():
            if type(obj) is not types.FunctionType:
                continue
            filename = obj.__code__.co_filename
            if os.path.basename(filename) == name and os.path.realpath(filename) == reference:
                return True
        return False

    def _build(self, payload: dict[str, Any]) -> Callable[[Any], Any]:
        from trialtui.runner.forms import runner_form

        entry = getattr(self.module, self.load["entry_point"])
        return runner_form(self.load["form"]).build_candidate(entry, payload, self.device, self.dtype)

    def op_run(self, msg: dict[str, Any], payload: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        import torch

        from trialtui.runner.compare import poisoned_allocations
        from trialtui.runner.compare import inputs_changed
        from trialtui.runner.layouts import arrange
        from trialtui.runner.tensors import map_tensors

        steps = Steps()
        fn = self._build(payload)
        given = arrange(payload.get("layout"), payload["inputs"])  # a held-out case's layout (runner/heldout.py), else fenced
        pristine = map_tensors(given, self._keeper(given)) if msg.get("check_inputs") else None
        steps.mark("pristine")
        before = self.counter.count
        with torch.no_grad(), poisoned_allocations():
            output = fn(given)
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        steps.mark("call" if self.runs else "first_call")
        changed = inputs_changed(pristine, given) if pristine is not None else None
        del pristine
        steps.mark("input_check")
        self.runs += 1
        # the reference-imported scan walks every object (0.1 s): on a GPU the kernel-time step makes it
        reply = {"launches": self.counter.count - before, "input_changed": changed, "unshared": getattr(fn, "unshared", None),
                 **self.facts(scan=self.runs == 1 and self.device.type != "cuda")}
        steps.mark("facts")
        return {**reply, "steps_s": steps.seconds}, output

    def _keeper(self, given: Any) -> Callable[[Any], Any]:
        """Where the pristine copy of the inputs waits: beside them on the GPU while it has room for three
        more copies (a device copy and compare: 1 ms for 256 MB on the H200, against 0.4 s through host
        memory), else in host memory, so the GPU holds only what the candidate itself needs."""
        import torch

        from trialtui.runner.tensors import map_tensors

        if self.device.type != "cuda":
            return lambda t: t.clone()
        held = []
        map_tensors(given, lambda t: held.append(t.numel() * t.element_size()) or t)
        free, _ = torch.cuda.mem_get_info(self.device)
        if free > 3 * sum(held) + 2**30:
            return lambda t: t.clone()
        return lambda t: t.to("cpu", copy=True)

    def op_prepare_timing(self, msg: dict[str, Any], payload: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        import torch

        from trialtui.runner import timing
        from trialtui.runner.fresh_inputs import Refresher
        from trialtui.runner.go_gate import Gate
        from trialtui.runner.landing import release, slots_of
        from trialtui.runner.timed_batch import Layout, capture_landing, run_batch

        steps = Steps()
        self.bencher = timing.Bencher.of_words(payload.pop("flush_words", None))  # the checker's: the chain goes through them
        fn = self._build(payload)
        self.input_sets = payload["input_sets"]
        self.calls = [(lambda inputs=inputs: fn(inputs)) for inputs in self.input_sets]
        self.layout = Layout.from_wire(msg["layout"])
        size = int(msg["keep"]) * self.layout.slot_bytes
        if self.mapped is not None:
            self.mapped.close()
            self.mapped = None
        if isinstance(msg.get("ring"), dict):  # the checker's ring: outputs written where it copies them from
            from trialtui.runner.cuda_ipc import Mapped

            self.mapped = Mapped(msg["ring"], size, self.device)
            self.ring = self.mapped.tensor
        else:
            self.ring = torch.empty(size, dtype=torch.uint8, device=self.device)
        release(self.landing)  # each call's hash lands in the checker's pad too (runner/landing.py)
        self.landing = slots_of(msg["landing"], self.device) if isinstance(msg.get("landing"), dict) else None
        landing = self.landing.slots if self.landing else None
        steps.mark("ring")
        self.refresher = Refresher(self.input_sets, flush_words=self.bencher.flush)
        steps.mark("refresher")
        before = self.counter.count
        with torch.no_grad():
            self.library_ops = self._library_ops()
            steps.mark("library_ops")
            for call in self.calls:  # warm-up: JIT and autotuning outside the numbers
                call()
                call()
            torch.cuda.synchronize()
            self.eager_calls = self.calls  # the library split needs torch's functions called, not a replay
            # the loop once as it is, eagerly, a call on each set: every kernel of it built and loaded before capture
            run_batch(self.calls, self.refresher, self.bencher, self.layout, self.ring, 0, len(self.calls), landing=landing)
            steps.mark("warm_up")
            # each timed call's whole sequence a CUDA graph: the host's launches out of its events (else eagerly)
            self.captured, kept, refused = capture_landing(self.calls, self.refresher, self.bencher, self.layout,
                                                           self.ring, int(msg["keep"]), landing, fn=fn)
            if kept is None and self.landing is not None:  # captured without the copy to host memory
                release(self.landing)
                self.landing = None
            self.gate = why_not = None
            if self.captured is not None and self.landing is not None:  # queued ahead, started by the checker
                self.gate, why_not = Gate.of(self.landing, self.refresher.seed)
            if self.captured is None and msg.get("cuda_graph"):
                self.calls = [timing.cuda_graph_call(c) for c in self.calls]
            steps.mark("capture")
        return {"launches": self.counter.count - before, "steps_s": steps.seconds, "graphed": self.captured is not None,
                "deferred": self.captured is not None and self.captured.deferred,
                "graph_refused": refused, "landing": self.landing is not None, "gated": self.gate is not None,
                "gate_refused": why_not, **self.facts()}, None  # at the timed size

    def op_time(self, msg: dict[str, Any], payload: Any) -> tuple[dict[str, Any], Any]:
        """One batch of timed calls (runner/timed_batch.py): before each, its inputs made new from the
        batch's seed and the previous call's output (runner/fresh_inputs.py); after its
        end event, its output copied into its slot and hashed.
        The slots are the checker's ring, or the reply carries them: the checker judges every call."""
        import torch

        from trialtui.runner.timed_batch import run_batch

        n, seed = int(msg["n"]), int(msg["seed"])
        if n * self.layout.slot_bytes > self.ring.numel():
            raise ValueError(f"a batch of {n} calls does not fit the kept outputs' buffer")
        steps = Steps()  # where a batch's fixed cost goes (phases_s: candidate.time.loop, .events)
        with torch.no_grad():
            pending, mismatch = run_batch(self.calls, self.refresher, self.bencher, self.layout, self.ring, seed, n,
                                          self.captured, self.landing.slots if self.landing else None)
        steps.mark("loop")
        return self._answer(n, pending, mismatch, steps)

    def op_time_gated(self, msg: dict[str, Any], payload: Any) -> tuple[dict[str, Any], Any]:
        """A batch queued behind the gate (runner/go_gate.py), answered at once: the checker's go starts it
        and gives its seed; `time_done` waits for it and answers as `time` does."""
        import torch

        from trialtui.runner.timed_batch import launch_batch

        n = int(msg["n"])
        if self.gate is None or n * self.layout.slot_bytes > self.ring.numel():
            raise ValueError("a gated batch was asked of a loop with no gate, or does not fit the kept outputs' buffer")
        with torch.no_grad():
            pending, mismatch = launch_batch(self.calls, self.refresher, self.bencher, self.layout, self.ring, 0, n,
                                             self.captured, self.landing.slots, self.gate)
        self.queued = (n, pending, mismatch)
        return {"queued": True}, None

    def op_time_done(self, msg: dict[str, Any], payload: Any) -> tuple[dict[str, Any], Any]:
        from trialtui.runner.timed_batch import finish_batch

        if self.queued is None:
            raise ValueError("no gated batch is queued")
        (n, pending, mismatch), self.queued = self.queued, None
        steps = Steps()
        finish_batch(self.refresher, self.ring)
        steps.mark("loop")
        return self._answer(n, pending, mismatch, steps)

    def _answer(self, n: int, pending: list, mismatch: str | None, steps: Steps) -> tuple[dict[str, Any], Any]:
        """A batch's reply: each call's events, the first mismatch, and the ring where it is not the checker's."""
        samples = [a.elapsed_time(b) * 1000.0 for pairs in pending for a, b in pairs]
        steps.mark("events")
        reply = {"samples": samples, "mismatch": mismatch, "steps_s": steps.seconds, **self.facts()}
        return reply, None if self.mapped is not None else self.ring[:n * self.layout.slot_bytes]

    def _library_ops(self) -> set[str]:
        """torch's own compute ops in a call (their kernels get weighed), or a mark that CUPTI must weigh it: the
        call raised under the recorder (torch.compile), or went into compiled code of the candidate's own, where
        a C++ `torch::matmul` or a cuBLAS call does the work unseen (a library decoy in CUDA C++)."""
        from trialtui.runner import library_split

        native = self.counter.native
        try:
            with library_split.LibraryOps() as seen:
                self.calls[0]()
        except Exception:  # noqa: BLE001 - e.g. torch.compile under a function mode
            return {RAISED_UNDER_RECORDER}
        return seen.ops | ({NATIVE_UNDER_RECORDER} if self.counter.native > native else set())

    def op_kernel_time(self, msg: dict[str, Any], payload: Any) -> tuple[dict[str, Any], Any]:
        """The host's wall clock around a call (side streams), the peak memory and the library's share of
        the GPU time: weighed by events around each torch compute function (runner/library_split.py), or by
        CUPTI where those functions could not be recorded or may hide in its own compiled code (its start then
        costs this job 3.7-5.3 s)."""
        import torch

        from trialtui.runner import library_split, timing

        with torch.no_grad():
            host_us = timing.host_wall_us(self.calls[0])
            if self.library_ops & {RAISED_UNDER_RECORDER, NATIVE_UNDER_RECORDER}:
                split = library_split.kernel_split(self.calls, self.counter.own_names)
            else:
                split = library_split.library_split(self.eager_calls) if self.library_ops else None
        peak = torch.cuda.max_memory_allocated(self.device)
        return {"host_wall_us": host_us, "peak_mem_bytes": peak, "kernels": split,
                "library_ops": sorted(self.library_ops)[:20], **self.facts(scan=True)}, None

    def op_cpu_prepare(self, msg: dict[str, Any], payload: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        """The inputs cross before the timed request, so the checker's clock around it holds only the calls."""
        self.cpu_call = (self._build(payload), payload["inputs"])
        return self.facts(scan=True), None  # the scan walks every object: not inside the timed request

    def op_cpu_time(self, msg: dict[str, Any], payload: Any) -> tuple[dict[str, Any], Any]:
        import torch

        fn, inputs = self.cpu_call
        samples, outputs = [], []
        with torch.no_grad():
            for _ in range(3):
                t0 = time.perf_counter()
                outputs.append(fn(inputs))
                samples.append((time.perf_counter() - t0) * 1e6)
        return {"samples": samples, **self.facts()}, outputs  # every one checked, like the GPU's timed calls

    def op_peak(self, msg: dict[str, Any], payload: Any) -> tuple[dict[str, Any], Any]:
        import torch

        if self.device.type != "cuda":
            return {"peak_mem_bytes": None}, None
        peak = torch.cuda.max_memory_allocated(self.device)
        torch.cuda.reset_peak_memory_stats(self.device)  # the next phase's peak starts from what is held now
        return {"peak_mem_bytes": peak}, None


def serve_checker(channel) -> None:
    """Answer the checker's requests until it says exit or goes away; each failure is a reply, not a death."""
    session = Session(channel)
    while True:
        try:
            msg, payload = channel.recv(device=session.load.get("device", "cpu"))
        except Exception:  # noqa: BLE001 - the checker is gone or broken: nothing left to serve
            return
        op = msg.get("op")
        if op not in OPS:
            return
        started = time.perf_counter()
        try:
            reply, out = getattr(session, f"op_{op}")(msg, payload)
            reply["ok"] = True
            reply["op_s"] = round(time.perf_counter() - started, 4)  # a claim, for the phase breakdown only
        except BaseException as exc:  # noqa: BLE001 - the kernel may raise anything, SystemExit included
            if isinstance(exc, KeyboardInterrupt):
                return
            trace = traceback.format_exc()[-4000:]
            print(trace, file=sys.stderr)
            reply, out = {"ok": False, "error": session.describe(exc), "traceback": trace}, None
        try:
            channel.send(reply, out)
        except Exception as exc:  # noqa: BLE001 - an output that cannot be sent is a failure of this step
            channel.send({"ok": False, "error": f"the output could not be sent: {describe(exc)}"})
        del out, payload


def preload() -> None:
    """Everything a job needs before the candidate itself, imported while the process waits for its job."""
    import torch.profiler  # noqa: F401
    import triton.language  # noqa: F401
    import triton.runtime.jit  # noqa: F401

    from trialtui.runner import compare, library_split, loader, timing  # noqa: F401


def main() -> None:
    from pathlib import Path

    from trialtui.runner.wire import Channel

    exchange = [Path(a) for a in sys.argv[1:]]
    rfile = os.fdopen(os.dup(0), "rb")
    wfile = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # what the candidate prints goes to the log, never into the protocol
    preload()
    serve_checker(Channel(rfile, wfile, exchange, "cand"))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
